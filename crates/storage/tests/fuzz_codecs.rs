//! A fuzz target per DSM page decoder (LZ4, PFOR, PFOR-DELTA, PDICT, zstd), with every
//! size the page header declares under the attacker's control: `decode_page` never
//! panics, and what it returns is what was asked for and no bigger than the page may
//! be — the rows kept, and for strings at most [`MAX_EXPANSION`] bytes per byte stored.
//! Payloads are random bytes, or a real page of random values (the writer's own
//! encoder) with bytes flipped and its declared row count and length perturbed.
//!
//! Each target runs `COOPSCAN_FUZZ_CASES` cases (default 64, a few seconds in the test
//! suite and so in CI); a longer run:
//!
//! ```sh
//! COOPSCAN_FUZZ_CASES=20000 cargo test --release -p coopscan-storage --test fuzz_codecs
//! ```
#![allow(clippy::unwrap_used)] // test code: an unwrap that fails is a failed test

use coopscan_storage::codec::{decode_page, Codec, Encoder, Scratch, StoredPage, MAX_EXPANSION};
use coopscan_storage::column::ColumnValues;
use coopscan_storage::encoding::encode_minipage;
use coopscan_storage::types::Physical;
use proptest::prelude::*;

const DEFAULT_CASES: u32 = 64;
/// The page reader's bound on a page's rows (docs/reliability.md, "Limits").
const MAX_ROWS: usize = 65_536;

fn config() -> ProptestConfig {
    let cases = std::env::var("COOPSCAN_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(DEFAULT_CASES);
    ProptestConfig {
        cases,
        ..ProptestConfig::default()
    }
}

fn physical() -> impl Strategy<Value = Physical> {
    prop_oneof![
        Just(Physical::I32),
        Just(Physical::I64),
        (1usize..=16).prop_map(Physical::FixedBytes),
        Just(Physical::VarBytes),
    ]
}

/// Random values of `physical`, `rows` of them.
fn values(physical: Physical, rows: usize, seed: u64) -> ColumnValues {
    let mut x = seed | 1;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let mut out = ColumnValues::empty(physical);
    match (&mut out, physical) {
        (ColumnValues::I32(v), _) => v.extend((0..rows).map(|_| (next() % 1000) as i32)),
        (ColumnValues::I64(v), _) => v.extend((0..rows).map(|_| (next() >> 20) as i64)),
        (_, Physical::FixedBytes(w)) => {
            for _ in 0..rows {
                let s: Vec<u8> = (0..w).map(|_| b'a' + (next() % 4) as u8).collect();
                out.push_str(&s).unwrap();
            }
        }
        _ => {
            for _ in 0..rows {
                let len = (next() % 12) as usize;
                let s: Vec<u8> = (0..len).map(|_| b'a' + (next() % 3) as u8).collect();
                out.push_str(&s).unwrap();
            }
        }
    }
    out
}

/// Decodes the page; on success checks the rows and the size appended.
fn check(page: &StoredPage<'_>, keep: std::ops::Range<usize>) {
    let mut out = ColumnValues::empty(page.physical);
    let mut scratch = Scratch::default();
    if decode_page(page, keep.clone(), &mut out, &mut scratch).is_err() {
        return;
    }
    assert_eq!(out.len(), keep.len(), "{page:?}");
    if let ColumnValues::Bytes { data, .. } = &out {
        let most = page
            .payload
            .len()
            .saturating_mul(MAX_EXPANSION)
            .max(page.raw_len);
        assert!(data.len() <= most, "{} bytes from {page:?}", data.len());
    }
}

/// A sub-range of `0..rows`.
fn keep_of(rows: usize, a: usize, b: usize) -> std::ops::Range<usize> {
    if rows == 0 {
        return 0..0;
    }
    let (a, b) = (a % (rows + 1), b % (rows + 1));
    a.min(b)..a.max(b)
}

/// Random bytes declared as a page of `codec`, with any row count and length.
fn random_page(codec: Codec) -> impl Strategy<Value = ()> {
    (
        physical(),
        prop::collection::vec(any::<u8>(), 0..2048),
        0usize..=MAX_ROWS,
        any::<u32>(),
        any::<usize>(),
        any::<usize>(),
    )
        .prop_map(move |(physical, payload, rows, raw_len, a, b)| {
            let page = StoredPage {
                codec,
                payload: &payload,
                physical,
                rows,
                raw_len: raw_len as usize,
            };
            check(&page, keep_of(rows, a, b));
        })
}

/// A real page of random values, flipped and with perturbed declarations, decoded as
/// the codec the encoder chose (so every decoder sees its own format damaged).
fn mutated_page() -> impl Strategy<Value = Codec> {
    (
        physical(),
        1usize..600,
        any::<u64>(),
        // Mostly intact, so that the decoders also run to the end and their output is
        // checked; otherwise a few flipped bytes and declarations off by a little.
        prop_oneof![
            2 => Just(Vec::new()),
            1 => prop::collection::vec((any::<usize>(), any::<u8>()), 1..4),
        ],
        prop_oneof![3 => Just(0i64), 1 => -2i64..=2],
        prop_oneof![3 => Just(0i64), 1 => -64i64..=64],
        any::<usize>(),
        any::<usize>(),
    )
        .prop_map(|(physical, rows, seed, flips, drow, dlen, a, b)| {
            let column = values(physical, rows, seed);
            let mut encoder = Encoder::default();
            let codec = encoder.encode(&column, physical, 0..rows);
            let mut payload = encoder.out.clone();
            for (at, byte) in flips {
                if !payload.is_empty() {
                    let i = at % payload.len();
                    payload[i] ^= byte;
                }
            }
            // The plain minipage's length, as the writer declares it.
            let mut plain = Vec::new();
            encode_minipage(&column, physical, 0..rows, &mut plain);
            let plain = plain.len();
            let rows = rows.saturating_add_signed(drow as isize);
            let page = StoredPage {
                codec,
                payload: &payload,
                physical,
                rows,
                raw_len: plain.saturating_add_signed(dlen as isize),
            };
            check(&page, keep_of(rows, a, b));
            codec
        })
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn lz4_pages_never_panic(() in random_page(Codec::Lz4)) {}

    #[test]
    fn pfor_pages_never_panic(() in random_page(Codec::Pfor)) {}

    #[test]
    fn pfor_delta_pages_never_panic(() in random_page(Codec::PforDelta)) {}

    #[test]
    fn pdict_pages_never_panic(() in random_page(Codec::Pdict)) {}

    #[test]
    fn zstd_pages_never_panic(() in random_page(Codec::Zstd)) {}

    #[test]
    fn damaged_real_pages_never_panic(_codec in mutated_page()) {}
}
