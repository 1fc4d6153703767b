//! Round trips of every codec against the input (the independent path), over random
//! values and the edge cases: empty, one value, all equal, spans that overflow a naive
//! `max - min`, exceptions at the first and last positions, every width; and decoding
//! arbitrary bytes never panics.

use proptest::prelude::*;

use super::*;

/// Values that stress PFOR: a narrow cluster with outliers anywhere, including the
/// extremes of `i64`.
fn clustered() -> impl Strategy<Value = Vec<i64>> {
    (
        any::<i64>(),
        0u32..=64,
        proptest::collection::vec((any::<u64>(), 0u8..20), 0..400),
    )
        .prop_map(|(base, width, raw)| {
            let mask = if width >= 64 {
                u64::MAX
            } else {
                (1u64 << width) - 1
            };
            raw.into_iter()
                .map(|(r, pick)| match pick {
                    0 => i64::MIN,
                    1 => i64::MAX,
                    2 => r as i64,
                    _ => base.wrapping_add((r & mask) as i64),
                })
                .collect()
        })
}

fn edge_cases() -> Vec<Vec<i64>> {
    vec![
        vec![],
        vec![7],
        vec![i64::MIN],
        vec![5; 1000],
        vec![i64::MIN, i64::MAX],
        vec![i64::MAX, 0, 0, 0, i64::MIN],
        (0..1000)
            .map(|i| if i == 0 || i == 999 { 1 << 40 } else { i % 3 })
            .collect(),
        (0..1000).collect(),
        (0..1000).rev().collect(),
        (0..65)
            .map(|w| {
                if w == 64 {
                    -1
                } else {
                    (1i64 << w).wrapping_sub(1)
                }
            })
            .collect(),
    ]
}

fn every_keep(rows: usize) -> Vec<Range<usize>> {
    let mut keeps = vec![0..rows, 0..0, rows..rows];
    if rows > 2 {
        keeps.extend([1..rows - 1, 0..1, rows - 1..rows, rows / 3..rows / 2]);
    }
    keeps
}

fn pfor_round_trip(values: &[i64]) {
    let plan = pfor::plan(values);
    let mut bytes = Vec::new();
    pfor::encode(values, &plan, &mut bytes);
    assert_eq!(bytes.len(), plan.encoded_len());
    for keep in every_keep(values.len()) {
        let mut out = Vec::new();
        pfor::decode::<i64>(&bytes, values.len(), keep.clone(), &mut out).expect("decodes");
        assert_eq!(out, values[keep], "PFOR of {values:?}");
    }
}

fn delta_round_trip(values: &[i64]) {
    let mut deltas = Vec::new();
    pfor::deltas(values, &mut deltas);
    let plan = pfor::plan(&deltas);
    let mut bytes = Vec::new();
    pfor::encode(&deltas, &plan, &mut bytes);
    for keep in every_keep(values.len()) {
        let (mut out, mut scratch) = (Vec::new(), Vec::new());
        pfor::decode_delta::<i64>(&bytes, values.len(), keep.clone(), &mut out, &mut scratch)
            .expect("decodes");
        assert_eq!(out, values[keep], "PFOR-DELTA of {values:?}");
    }
}

fn pdict_round_trip(values: &[i64]) {
    let mut bytes = Vec::new();
    pdict::encode_ints(values, &mut bytes);
    let Some(len) = pdict::int_len(values) else {
        assert!(bytes.is_empty());
        return;
    };
    assert_eq!(bytes.len(), len);
    for keep in every_keep(values.len()) {
        let mut out = Vec::new();
        pdict::decode_ints::<i64>(&bytes, values.len(), keep.clone(), &mut out).expect("decodes");
        assert_eq!(out, values[keep], "PDICT of {values:?}");
    }
}

#[test]
fn edge_cases_round_trip_through_every_integer_codec() {
    for values in edge_cases() {
        pfor_round_trip(&values);
        delta_round_trip(&values);
        pdict_round_trip(&values);
    }
}

#[test]
fn pfor_picks_a_narrow_width_and_patches_outliers_at_both_ends() {
    let mut values: Vec<i64> = (0..1000).map(|i| i % 16).collect();
    values[0] = i64::MAX;
    values[999] = i64::MIN;
    let plan = pfor::plan(&values);
    // With the minimum (i64::MIN) as base every value would need 64 bits; the
    // percentile base makes both outliers exceptions and packs the rest in 4 bits.
    assert!(plan.encoded_len() <= 1000 / 2 + 13 + 2 * 12, "{plan:?}");
    pfor_round_trip(&values);
    let sorted: Vec<i64> = (0..1000).map(|i| 1_000_000 + i * 3).collect();
    let mut deltas = Vec::new();
    pfor::deltas(&sorted, &mut deltas);
    let plan = pfor::plan(&deltas);
    assert!(
        plan.encoded_len() < 300,
        "sorted keys as 2-bit deltas: {plan:?}"
    );
}

#[test]
fn int32_columns_refuse_values_that_do_not_fit() {
    let values = [0i64, 1 << 40];
    let plan = pfor::plan(&values);
    let mut bytes = Vec::new();
    pfor::encode(&values, &plan, &mut bytes);
    let mut out: Vec<i32> = Vec::new();
    assert!(pfor::decode::<i32>(&bytes, 2, 0..2, &mut out).is_err());
}

fn strings(values: &[&str]) -> ColumnValues {
    let mut c = ColumnValues::empty(Physical::VarBytes);
    for v in values {
        c.push_str(v.as_bytes()).expect("small");
    }
    c
}

fn page_round_trip(values: &ColumnValues, physical: Physical) -> Codec {
    let mut enc = Encoder::default();
    let codec = enc.encode(values, physical, 0..values.len());
    let rows = values.len();
    let mut raw = Vec::new();
    encode_minipage(values, physical, 0..rows, &mut raw);
    for keep in every_keep(rows) {
        let mut out = ColumnValues::empty(physical);
        let mut scratch = Scratch::default();
        decode_page(
            &StoredPage {
                codec,
                payload: &enc.out,
                physical,
                rows,
                raw_len: raw.len(),
            },
            keep.clone(),
            &mut out,
            &mut scratch,
        )
        .expect("decodes");
        let mut want = ColumnValues::empty(physical);
        want.extend_from(values, keep.clone()).expect("same kind");
        assert_eq!(out, want, "{codec:?}");
        if let Physical::FixedBytes(n @ ..=7) = physical {
            let page = (codec, enc.out.as_slice(), raw.len());
            packed_words_match(page, physical, rows, &want, n, keep.clone());
        }
        if let ColumnValues::Bytes { .. } = values {
            // Tested on the page (PDICT: on its codes) as on the decoded values.
            let page = StoredPage {
                codec,
                payload: &enc.out,
                physical,
                rows,
                raw_len: raw.len(),
            };
            let test = |v: &[u8]| v.first() == Some(&b'a') || v.is_empty();
            let mut answers = vec![true];
            let (mut values_scratch, mut scratch) =
                (ColumnValues::empty(physical), Scratch::default());
            test_page(
                &page,
                keep.clone(),
                &test,
                &mut answers,
                &mut values_scratch,
                &mut scratch,
            )
            .expect("tests");
            let expected: Vec<bool> = std::iter::once(true)
                .chain(keep.map(|i| test(values.str_at(i))))
                .collect();
            assert_eq!(answers, expected, "{codec:?}");
        }
    }
    codec
}

/// Flags in short runs (as `l_returnflag` follows the dates): zstd makes the page smaller
/// than PDICT, but not [`PDICT_OVER_ZSTD`] times smaller, so PDICT is chosen; in runs
/// long enough for zstd to win by more, zstd is.
#[test]
fn zstd_takes_a_page_from_pdict_only_when_much_smaller() {
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    for (longest_run, want) in [(4, Codec::Pdict), (400, Codec::Zstd)] {
        let mut picks = Vec::new();
        while picks.len() < 4000 {
            let flag = ["A", "N", "R"][(next() % 3) as usize];
            let run = 1 + (next() % longest_run) as usize;
            picks.extend(std::iter::repeat_n(flag, run));
        }
        picks.truncate(4000);
        let flags = strings(&picks);
        let physical = Physical::FixedBytes(1);
        let mut raw = Vec::new();
        encode_minipage(&flags, physical, 0..flags.len(), &mut raw);
        let zstd = zstd::bulk::compress(&raw, ZSTD_LEVEL).expect("zstd").len();
        let dict = pdict::bytes_len(&flags, 0..flags.len()).expect("few values");
        assert!(
            zstd < dict,
            "runs of {longest_run}: zstd {zstd} bytes, PDICT {dict}"
        );
        assert_eq!(
            zstd * PDICT_OVER_ZSTD < dict,
            want == Codec::Zstd,
            "runs of {longest_run}: zstd {zstd} bytes, PDICT {dict}"
        );
        assert_eq!(
            page_round_trip(&flags, physical),
            want,
            "runs of {longest_run}"
        );
    }
}

#[test]
fn the_encoder_picks_the_codec_each_kind_of_column_needs() {
    let mut state = 0x9e37_79b9_7f4a_7c15u64; // xorshift: no period LZ4 could find
    let picks: Vec<&str> = (0..3000)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            ["A", "N", "R"][(state % 3) as usize]
        })
        .collect();
    let flags = strings(&picks);
    assert_eq!(
        page_round_trip(&flags, Physical::FixedBytes(1)),
        Codec::Pdict
    );
    let keys = ColumnValues::I64((0..5000).map(|i| 1_000_000 + i / 4).collect());
    assert_eq!(page_round_trip(&keys, Physical::I64), Codec::PforDelta);
    let dates = ColumnValues::I32((0..5000).map(|i| 8000 + (i * 7919) % 2500).collect());
    assert_eq!(page_round_trip(&dates, Physical::I32), Codec::Pfor);
    let comments: Vec<String> = (0..300)
        .map(|i| format!("comment number {i} {}", i * 7919))
        .collect();
    let refs: Vec<&str> = comments.iter().map(String::as_str).collect();
    let codec = page_round_trip(&strings(&refs), Physical::VarBytes);
    assert!(matches!(codec, Codec::Lz4 | Codec::Zstd), "{codec:?}");
    // An empty page: LZ4's one byte beats every header.
    assert_eq!(
        page_round_trip(&ColumnValues::I32(vec![]), Physical::I32),
        Codec::Lz4
    );
}

#[test]
fn char_dictionaries_longer_than_the_column_are_refused() {
    let values = strings(&["ABC", "DEF"]);
    let mut bytes = Vec::new();
    pdict::encode_bytes(&values, 0..2, &mut bytes);
    let mut out = ColumnValues::empty(Physical::FixedBytes(2));
    assert!(pdict::decode_bytes(&bytes, 2, 0..2, Some(2), usize::MAX, &mut out).is_err());
}

/// A `CHAR(n)` page (`codec`, payload, plain length) of `rows` values decoded as packed
/// words gives each kept value's word (`packed_chars::pack`), or an error where a value
/// does not pack.
fn packed_words_match(
    (codec, payload, raw_len): (Codec, &[u8], usize),
    physical: Physical,
    rows: usize,
    want: &ColumnValues,
    n: usize,
    keep: Range<usize>,
) {
    let page = StoredPage {
        codec,
        payload,
        physical,
        rows,
        raw_len,
    };
    let mut words = ColumnValues::I64(Vec::new());
    let got = decode_page(&page, keep, &mut words, &mut Scratch::default());
    let expected: Option<Vec<i64>> = (0..want.len())
        .map(|i| crate::packed_chars::pack(want.str_at(i), n).map(|w| w as i64))
        .collect();
    match expected {
        Some(expected) => assert_eq!(
            got.map(|()| words),
            Ok(ColumnValues::I64(expected)),
            "{codec:?}"
        ),
        None => assert!(got.is_err(), "{codec:?}: a value that does not pack"),
    }
}

/// Short `CHAR(n)` pages as packed words, through PDICT (written as such: the encoder
/// picks zstd for small samples) and the compressed minipages (the encoder's choice).
#[test]
fn short_char_pages_decode_to_packed_words() {
    let few: Vec<&str> = (0..3000u64)
        .map(|i| ["A", "N", "R", ""][(i.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 62) as usize])
        .collect();
    let few = strings(&few);
    let physical = Physical::FixedBytes(1);
    let mut dict = Vec::new();
    pdict::encode_bytes(&few, 0..few.len(), &mut dict);
    let mut raw = Vec::new();
    encode_minipage(&few, physical, 0..few.len(), &mut raw);
    for keep in every_keep(few.len()) {
        let mut want = ColumnValues::empty(physical);
        want.extend_from(&few, keep.clone()).expect("same kind");
        let page = (Codec::Pdict, dict.as_slice(), raw.len());
        packed_words_match(page, physical, few.len(), &want, 1, keep);
    }
    let many: Vec<String> = (0..500)
        .map(|i| format!("{:x}", i * 7919 % 1_000_003))
        .collect();
    let many: Vec<&str> = many.iter().map(String::as_str).collect();
    for n in [7, 5] {
        let codec = page_round_trip(&strings(&many), Physical::FixedBytes(n));
        assert!(matches!(codec, Codec::Lz4 | Codec::Zstd), "{codec:?}");
    }
}

fn decode_any(codec: Codec, bytes: &[u8], physical: Physical, rows: usize, keep: Range<usize>) {
    let mut out = ColumnValues::empty(physical);
    let mut scratch = Scratch::default();
    let raw_len = rows.saturating_mul(8).min(1 << 20);
    let page = StoredPage {
        codec,
        payload: bytes,
        physical,
        rows,
        raw_len,
    };
    let _ = decode_page(&page, keep.clone(), &mut out, &mut scratch);
    if let Physical::FixedBytes(_) = physical {
        let mut words = ColumnValues::I64(Vec::new());
        let _ = decode_page(&page, keep.clone(), &mut words, &mut scratch);
    }
    let mut answers = Vec::new();
    let mut values = ColumnValues::empty(physical);
    let _ = test_page(
        &page,
        keep,
        &|v| v.len() == 2,
        &mut answers,
        &mut values,
        &mut scratch,
    );
}

fn physical() -> impl Strategy<Value = Physical> {
    prop_oneof![
        Just(Physical::I32),
        Just(Physical::I64),
        (1usize..8).prop_map(Physical::FixedBytes),
        Just(Physical::VarBytes),
    ]
}

proptest! {
    #[test]
    fn pfor_round_trips(values in clustered()) {
        pfor_round_trip(&values);
    }

    #[test]
    fn pfor_delta_round_trips(values in clustered()) {
        delta_round_trip(&values);
    }

    #[test]
    fn sorted_values_round_trip_through_pfor_delta(mut values in clustered()) {
        values.sort_unstable();
        delta_round_trip(&values);
    }

    #[test]
    fn pdict_round_trips(values in proptest::collection::vec(prop_oneof![any::<i64>(), -3i64..3], 0..400)) {
        pdict_round_trip(&values);
    }

    #[test]
    fn string_pages_round_trip(values in proptest::collection::vec(proptest::string::string_regex("[a-c]{0,3}|[a-zé ]{0,40}").expect("regex"), 0..300), fixed in any::<bool>()) {
        let refs: Vec<&str> = values.iter().map(String::as_str).collect();
        let physical = if fixed { Physical::FixedBytes(120) } else { Physical::VarBytes };
        page_round_trip(&strings(&refs), physical);
    }

    #[test]
    fn integer_pages_round_trip_through_the_chosen_codec(values in clustered()) {
        page_round_trip(&ColumnValues::I64(values.clone()), Physical::I64);
        let narrow: Vec<i32> = values.iter().map(|&v| v as i32).collect();
        page_round_trip(&ColumnValues::I32(narrow), Physical::I32);
    }

    #[test]
    fn arbitrary_bytes_never_panic(codec in proptest::sample::select(Codec::ALL.to_vec()), bytes in proptest::collection::vec(any::<u8>(), 0..200), physical in physical(), rows in 0usize..3000, a in 0usize..3000, b in 0usize..3000) {
        decode_any(codec, &bytes, physical, rows, a.min(b)..a.max(b));
    }

    #[test]
    fn mutated_valid_pages_never_panic(values in clustered(), at in any::<usize>(), byte in any::<u8>(), cut in any::<bool>()) {
        let mut enc = Encoder::default();
        for (physical, column) in [(Physical::I64, ColumnValues::I64(values.clone())), (Physical::FixedBytes(3), strings(&["ab", "c", "ab", ""]))] {
            let codec = enc.encode(&column, physical, 0..column.len());
            let mut bytes = enc.out.clone();
            if !bytes.is_empty() {
                let i = at % bytes.len();
                if cut { bytes.truncate(i) } else { bytes[i] = byte }
            }
            for codec in Codec::ALL.into_iter().chain([codec]) {
                decode_any(codec, &bytes, physical, column.len(), 0..column.len());
            }
        }
    }
}

#[test]
fn lz4_pages_of_tables_written_before_the_codecs_still_decode() {
    // What the previous writer stored: LZ4 over the plain minipage, flag 1.
    assert_eq!(Codec::from_flags(1), Some(Codec::Lz4));
    let values = ColumnValues::I64((0..3000).map(|i| i * 7919 % 100_000).collect());
    let mut raw = Vec::new();
    encode_minipage(&values, Physical::I64, 0..3000, &mut raw);
    let payload = lz4_flex::block::compress(&raw);
    let page = StoredPage {
        codec: Codec::Lz4,
        payload: &payload,
        physical: Physical::I64,
        rows: 3000,
        raw_len: raw.len(),
    };
    let mut out = ColumnValues::empty(Physical::I64);
    decode_page(&page, 100..2900, &mut out, &mut Scratch::default()).expect("decodes");
    let mut want = ColumnValues::empty(Physical::I64);
    want.extend_from(&values, 100..2900).expect("same kind");
    assert_eq!(out, want);
    // Flags that name no codec, or two, are refused.
    for flags in [0u8, 3, 32, 0xff] {
        assert_eq!(Codec::from_flags(flags), None, "{flags:#x}");
    }
}

#[test]
fn lz4_never_decodes_to_more_than_the_expansion_bound() {
    // Zeros are LZ4's best case: one long match, at most 255 bytes out per length byte.
    let zeros = vec![0u8; 16 << 20];
    let block = lz4_flex::block::compress(&zeros);
    assert!(
        zeros.len() <= block.len() * MAX_EXPANSION,
        "{} bytes from {}",
        zeros.len(),
        block.len()
    );
}

#[test]
fn string_pages_the_encoder_writes_stay_within_the_expansion_bound() {
    // Values zstd and PDICT shrink far past MAX_EXPANSION: the encoder falls back to
    // LZ4, and the reader accepts the page.
    let long = "a".repeat(200_000);
    let distinct: Vec<String> = (0..40).map(|i| format!("{long}{i}")).collect();
    let distinct: Vec<&str> = distinct.iter().map(String::as_str).collect();
    for values in [strings(&distinct), strings(&[long.as_str(); 40])] {
        let mut enc = Encoder::default();
        let codec = enc.encode(&values, Physical::VarBytes, 0..values.len());
        let mut raw = Vec::new();
        encode_minipage(&values, Physical::VarBytes, 0..values.len(), &mut raw);
        assert!(raw.len() <= enc.out.len() * MAX_EXPANSION, "{codec:?}");
        let page = StoredPage {
            codec,
            payload: &enc.out,
            physical: Physical::VarBytes,
            rows: values.len(),
            raw_len: raw.len(),
        };
        let mut out = ColumnValues::empty(Physical::VarBytes);
        decode_page(&page, 0..values.len(), &mut out, &mut Scratch::default()).expect("decodes");
        assert_eq!(out, values, "{codec:?}");
    }
}

/// Heap bytes a decoded column holds.
fn held_bytes(values: &ColumnValues) -> usize {
    match values {
        ColumnValues::I32(v) => 4 * v.capacity(),
        ColumnValues::I64(v) => 8 * v.capacity(),
        ColumnValues::Bytes { offsets, data } => 4 * offsets.capacity() + data.capacity(),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Every DSM decoder (bitpack under PFOR and PDICT, PFOR-DELTA, LZ4, zstd) fed
    /// arbitrary bytes with an attacker's row count and declared size (up to 4 GiB):
    /// no panic, and what it allocates is bounded by the bytes stored and the rows,
    /// never by the declared size.
    #[test]
    fn declared_sizes_never_drive_allocation(
        codec in 0usize..5,
        kind in 0usize..4,
        rows in 0usize..=4096,
        raw_len in any::<u32>(),
        payload in proptest::collection::vec(any::<u8>(), 0..600),
    ) {
        let physical = [
            Physical::I32,
            Physical::I64,
            Physical::FixedBytes(3),
            Physical::VarBytes,
        ][kind];
        let page = StoredPage {
            codec: Codec::ALL[codec],
            payload: &payload,
            physical,
            rows,
            raw_len: raw_len as usize,
        };
        let mut out = ColumnValues::empty(physical);
        let mut scratch = Scratch::default();
        let _ = decode_page(&page, 0..rows, &mut out, &mut scratch);
        let stored_bound = payload.len() * MAX_EXPANSION;
        prop_assert!(scratch.raw.capacity() <= stored_bound + 64);
        prop_assert!(8 * scratch.ints.capacity() <= 16 * rows + 64);
        prop_assert!(held_bytes(&out) <= 2 * stored_bound + 32 * rows + 4096);
    }
}

/// Ascending positions of `rows` values picked by `picks` (cycled).
fn picked(rows: usize, picks: &[bool]) -> Vec<u32> {
    if picks.is_empty() {
        return Vec::new();
    }
    (0..rows)
        .filter(|&i| picks[i % picks.len()])
        .map(|i| i as u32)
        .collect()
}

/// Random access (`decode_page_at` and the codecs' `_at` forms) against the input.
fn positions_decode(values: &[i64], picks: &[bool]) {
    let at = picked(values.len(), picks);
    let want: Vec<i64> = at.iter().map(|&p| values[p as usize]).collect();
    let plan = pfor::plan(values);
    let mut bytes = Vec::new();
    pfor::encode(values, &plan, &mut bytes);
    let mut out = vec![-1i64];
    pfor::decode_at(&bytes, values.len(), &at, &mut out).expect("PFOR decodes");
    assert_eq!(out[1..], want[..], "PFOR at {at:?} of {values:?}");
    let mut bytes = Vec::new();
    pdict::encode_ints(values, &mut bytes);
    if pdict::int_len(values).is_some() {
        let mut out: Vec<i64> = Vec::new();
        pdict::decode_ints_at(&bytes, values.len(), &at, &mut out).expect("PDICT decodes");
        assert_eq!(out, want, "PDICT at {at:?}");
    }
    // Through the page, for whatever codec the encoder picks; `false` only for codecs
    // without random access, and then `out` is untouched.
    let column = ColumnValues::I64(values.to_vec());
    let mut enc = Encoder::default();
    let codec = enc.encode(&column, Physical::I64, 0..values.len());
    let page = StoredPage {
        codec,
        payload: &enc.out,
        physical: Physical::I64,
        rows: values.len(),
        raw_len: values.len() * 8,
    };
    let mut out = ColumnValues::I64(Vec::new());
    if decode_page_at(&page, &at, &mut out).expect("decodes") {
        assert_eq!(out, ColumnValues::I64(want), "{codec:?}");
    } else {
        assert!(!matches!(codec, Codec::Pfor | Codec::Pdict), "{codec:?}");
        assert_eq!(out, ColumnValues::I64(Vec::new()));
    }
}

#[test]
fn positions_out_of_order_or_range_are_errors() {
    let values: Vec<i64> = (0..100).collect();
    let mut bytes = Vec::new();
    pfor::encode(&values, &pfor::plan(&values), &mut bytes);
    let mut out: Vec<i64> = Vec::new();
    assert!(pfor::decode_at(&bytes, 100, &[3, 100], &mut out).is_err());
    assert!(pfor::decode_at(&bytes, 100, &[5, 5], &mut out).is_err());
    assert!(pfor::decode_at(&bytes, 100, &[7, 2], &mut out).is_err());
    let mut out: Vec<i32> = Vec::new();
    pfor::decode_at(&bytes, 100, &[0, 99], &mut out).expect("in range");
    assert_eq!(out, vec![0, 99]);
}

#[test]
fn edge_cases_decode_at_positions() {
    for values in edge_cases() {
        for picks in [vec![true], vec![false, false, true], vec![true, false]] {
            positions_decode(&values, &picks);
        }
    }
}

proptest! {
    #[test]
    fn values_at_positions_match_the_input(values in clustered(), picks in proptest::collection::vec(any::<bool>(), 1..9)) {
        positions_decode(&values, &picks);
    }

    #[test]
    fn small_domains_at_positions_match_the_input(values in proptest::collection::vec(-3i64..40, 0..600), picks in proptest::collection::vec(any::<bool>(), 1..9)) {
        positions_decode(&values, &picks);
    }
}
