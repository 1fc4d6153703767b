//! A lineitem-shaped DSM table round-trips through the page codecs: written by the
//! table writer, read back chunk by chunk (chunks straddle pages, so pages are decoded
//! in part), equal to the input; and every lightweight codec is in use.

mod common;

use std::collections::BTreeSet;

use arrow_array::{ArrayRef, RecordBatch};
use coopscan_storage::read::page_codecs;
use coopscan_storage::{ColumnDef, ColumnType, Layout, TableSchema};
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

use common::{array_for, read_all, write_table};

const ROWS: usize = 120_000;
const BATCH: usize = 10_000;

fn schema() -> TableSchema {
    let dec = ColumnType::Decimal {
        precision: 15,
        scale: 2,
    };
    let col = |name: &str, ty| ColumnDef {
        name: name.into(),
        ty,
    };
    TableSchema::new(vec![
        col("l_orderkey", ColumnType::Int64),
        col("l_partkey", ColumnType::Int64),
        col("l_quantity", dec),
        col("l_extendedprice", dec),
        col("l_discount", dec),
        col("l_shipdate", ColumnType::Date32),
        col("l_returnflag", ColumnType::Char { len: 1 }),
        col("l_shipmode", ColumnType::Char { len: 10 }),
        col("l_comment", ColumnType::Utf8),
    ])
    .expect("valid schema")
}

/// Column values as lineitem has them: sorted keys with repeats, narrow decimals, a few
/// distinct strings, free text.
fn columns() -> Vec<ArrayRef> {
    let mut rng = ChaCha8Rng::seed_from_u64(11);
    let mut key = 1i64;
    let mut ints: Vec<Vec<i64>> = vec![Vec::new(); 6];
    let (mut flags, mut modes, mut comments) = (vec![], vec![], vec![]);
    let words = [
        "final", "ironic", "deposits", "sleep", "quickly", "bold", "requests",
    ];
    for _ in 0..ROWS {
        key += i64::from(rng.random_range(0..8u8) / 6) * rng.random_range(1..30);
        ints[0].push(key);
        ints[1].push(rng.random_range(1..=200_000));
        ints[2].push(100 * rng.random_range(1..=50));
        ints[3].push(rng.random_range(90_000..=10_494_950));
        ints[4].push(rng.random_range(0..=10));
        ints[5].push(rng.random_range(8036..=10_561));
        flags.push(["A", "N", "R"][rng.random_range(0..3)].to_string());
        modes.push(["AIR", "MAIL", "TRUCK", "REG AIR"][rng.random_range(0..4)].to_string());
        let n = rng.random_range(1..6);
        let text: Vec<&str> = (0..n)
            .map(|_| words[rng.random_range(0..words.len())])
            .collect();
        comments.push(text.join(" "));
    }
    let s = schema();
    let ty = |c: usize| s.columns[c].ty;
    let mut out: Vec<ArrayRef> = (0..6).map(|c| array_for(ty(c), &ints[c], &[])).collect();
    out.push(array_for(ty(6), &[], &flags));
    out.push(array_for(ty(7), &[], &modes));
    out.push(array_for(ty(8), &[], &comments));
    out
}

#[test]
fn a_lineitem_shaped_dsm_table_round_trips_through_every_codec() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let input = columns();
    let batches: Vec<RecordBatch> = (0..ROWS)
        .step_by(BATCH)
        .map(|at| {
            let cols = input.iter().map(|a| a.slice(at, BATCH)).collect();
            RecordBatch::try_new(schema().arrow_schema(), cols).expect("batch")
        })
        .collect();
    let table = write_table(tmp.path(), &schema(), Layout::Dsm, 4096, 16, &batches);
    assert!(table.chunk_count() > 3, "several chunks, straddling pages");
    let all: Vec<usize> = (0..schema().len()).collect();
    let read = read_all(&table, &all);
    for (c, (got, want)) in read.iter().zip(&input).enumerate() {
        assert_eq!(
            got.as_ref(),
            want.as_ref(),
            "column {}",
            schema().columns[c].name
        );
    }
    let mut used = BTreeSet::new();
    for c in 0..schema().len() {
        used.extend(page_codecs(&table, c).expect("headers").into_keys());
    }
    for codec in ["pfor", "pfor-delta", "pdict"] {
        assert!(used.contains(codec), "{codec} unused: {used:?}");
    }
    assert!(!used.contains("unknown"), "{used:?}");
}

#[test]
fn columns_packed_on_several_threads_make_the_same_table() {
    let input = columns();
    let write = |threads: usize| {
        let tmp = tempfile::tempdir().expect("tempdir");
        let mut opts = coopscan_storage::write::WriteOptions::new(Layout::Dsm);
        opts.page_bytes = 4096;
        opts.chunk_bytes = 4096 * 16;
        opts.threads = threads;
        let dir = tmp.path().join("t");
        let mut w =
            coopscan_storage::TableWriter::create(&dir, "t", schema(), opts).expect("create");
        for at in (0..ROWS).step_by(BATCH) {
            let cols = input.iter().map(|a| a.slice(at, BATCH)).collect();
            w.write_batch(&RecordBatch::try_new(schema().arrow_schema(), cols).expect("batch"))
                .expect("write");
        }
        let manifest = w.finish().expect("finish");
        let table = coopscan_storage::Table::open(&dir).expect("open");
        let all: Vec<usize> = (0..schema().len()).collect();
        (manifest, read_all(&table, &all), tmp)
    };
    let (one, one_read, _a) = write(1);
    let (four, four_read, _b) = write(4);
    // The same pages of every column and the same chunks (extents, sizes, zonemaps);
    // only the table's random id differs.
    assert_eq!(one.files, four.files);
    assert_eq!(one.chunks, four.chunks);
    assert_eq!(one_read, four_read);
    assert_eq!(four_read, input);
}
