//! Decode throughput of the DSM page codecs against the LZ4 path they replace, on one
//! page of values shaped like TPC-H lineitem's columns (values per second; a Q6 scan
//! decodes l_shipdate, l_discount, l_quantity and l_extendedprice).
//!
//! Run: `cargo bench -p coopscan-storage --bench codecs -- --measurement-time 2`

use std::hint::black_box;

use coopscan_storage::codec::{decode_page, pdict, pfor, Codec, Scratch, StoredPage};
use coopscan_storage::column::ColumnValues;
use coopscan_storage::encoding::encode_minipage;
use coopscan_storage::types::Physical;
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// Values per page: about what a 64 KiB page of 8-bit codes holds.
const ROWS: usize = 65_536;

struct Column {
    name: &'static str,
    physical: Physical,
    values: ColumnValues,
}

fn columns() -> Vec<Column> {
    let mut rng = ChaCha8Rng::seed_from_u64(6);
    let mut ints = |lo: i64, hi: i64| {
        (0..ROWS)
            .map(|_| rng.random_range(lo..=hi))
            .collect::<Vec<i64>>()
    };
    let shipdate = ints(8036, 10_561).into_iter().map(|d| d as i32).collect();
    let discount = ints(0, 10);
    let quantity = ints(1, 50).into_iter().map(|q| q * 100).collect();
    let price = ints(90_000, 10_494_950);
    let mut key = 0;
    let orderkey = ints(0, 7)
        .into_iter()
        .map(|step| {
            key += step / 4;
            key
        })
        .collect();
    let words = [
        "furiously",
        "regular",
        "deposits",
        "sleep",
        "quickly",
        "final",
        "ironic",
        "packages",
        "nag",
        "blithely",
        "bold",
        "accounts",
        "haggle",
        "carefully",
        "express",
        "pending",
    ];
    let mut comments = ColumnValues::empty(Physical::VarBytes);
    let mut flags = ColumnValues::empty(Physical::FixedBytes(1));
    for _ in 0..ROWS {
        let n = rng.random_range(2..6);
        let text: Vec<&str> = (0..n)
            .map(|_| words[rng.random_range(0..words.len())])
            .collect();
        comments.push_str(text.join(" ").as_bytes()).expect("small");
        let flag = ["A", "N", "R"][rng.random_range(0..3)];
        flags.push_str(flag.as_bytes()).expect("small");
    }
    vec![
        Column {
            name: "l_shipdate (date, 12 bits)",
            physical: Physical::I32,
            values: ColumnValues::I32(shipdate),
        },
        Column {
            name: "l_discount (11 values)",
            physical: Physical::I64,
            values: ColumnValues::I64(discount),
        },
        Column {
            name: "l_quantity (50 values)",
            physical: Physical::I64,
            values: ColumnValues::I64(quantity),
        },
        Column {
            name: "l_extendedprice (24 bits)",
            physical: Physical::I64,
            values: ColumnValues::I64(price),
        },
        Column {
            name: "l_orderkey (sorted)",
            physical: Physical::I64,
            values: ColumnValues::I64(orderkey),
        },
        Column {
            name: "l_returnflag (char(1), 3 values)",
            physical: Physical::FixedBytes(1),
            values: flags,
        },
        Column {
            name: "l_comment (words)",
            physical: Physical::VarBytes,
            values: comments,
        },
    ]
}

/// The column's page in `codec` (the plain minipage's length is its `raw_len`).
fn encode(column: &Column, codec: Codec) -> (Vec<u8>, usize) {
    let mut raw = Vec::new();
    encode_minipage(&column.values, column.physical, 0..ROWS, &mut raw);
    let mut out = Vec::new();
    let ints: Vec<i64> = match &column.values {
        ColumnValues::I32(v) => v.iter().map(|&x| i64::from(x)).collect(),
        ColumnValues::I64(v) => v.clone(),
        ColumnValues::Bytes { .. } => {
            match codec {
                Codec::Lz4 => out = lz4_flex::block::compress(&raw),
                Codec::Zstd => out = zstd::bulk::compress(&raw, 3).expect("zstd"),
                Codec::Pdict => pdict::encode_bytes(&column.values, 0..ROWS, &mut out),
                Codec::Pfor | Codec::PforDelta => {}
            }
            return (out, raw.len());
        }
    };
    match codec {
        Codec::Zstd => {}
        Codec::Lz4 => out = lz4_flex::block::compress(&raw),
        Codec::Pfor => pfor::encode(&ints, &pfor::plan(&ints), &mut out),
        Codec::PforDelta => {
            let mut deltas = Vec::new();
            pfor::deltas(&ints, &mut deltas);
            pfor::encode(&deltas, &pfor::plan(&deltas), &mut out);
        }
        Codec::Pdict => pdict::encode_ints(&ints, &mut out),
    }
    (out, raw.len())
}

fn bench(c: &mut Criterion) {
    for column in columns() {
        let mut group = c.benchmark_group(format!("decode/{}", column.name));
        group.throughput(Throughput::Elements(ROWS as u64));
        for codec in Codec::ALL {
            let (payload, raw_len) = encode(&column, codec);
            if payload.is_empty() {
                continue; // a codec this kind of column cannot take
            }
            let page = StoredPage {
                codec,
                payload: &payload,
                physical: column.physical,
                rows: ROWS,
                raw_len,
            };
            let id = format!("{} ({} bytes)", codec.name(), payload.len());
            let mut scratch = Scratch::default();
            group.bench_function(id, |b| {
                b.iter(|| {
                    let mut out = ColumnValues::empty(column.physical);
                    decode_page(&page, 0..ROWS, &mut out, &mut scratch).expect("valid page");
                    black_box(out)
                })
            });
        }
        group.finish();
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
