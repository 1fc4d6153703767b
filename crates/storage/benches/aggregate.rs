//! Aggregation in the scan: tuples per second that `GroupedSums::add` counts and sums,
//! on one chunk shaped like TPC-H Q1's input (grouped by two one-character columns,
//! four groups, half the tuples in one; Q1's five distinct sums of decimal arithmetic).
//!
//! Run: `cargo bench -p coopscan-storage --bench aggregate -- --measurement-time 3`

use std::hint::black_box;

use coopscan_storage::aggregate::{AggregateSpec, ArithOp, GroupedSums, ValueExpr};
use coopscan_storage::column::ColumnValues;
use coopscan_storage::packed_chars;
use coopscan_storage::types::{ColumnDef, ColumnType, TableSchema};
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// Tuples of one chunk.
const ROWS: usize = 100_000;

fn schema() -> TableSchema {
    let def = |name: &str, ty| ColumnDef {
        name: name.into(),
        ty,
    };
    let money = ColumnType::Decimal {
        precision: 15,
        scale: 2,
    };
    TableSchema::new(vec![
        def("returnflag", ColumnType::Char { len: 1 }),
        def("linestatus", ColumnType::Char { len: 1 }),
        def("quantity", money),
        def("price", money),
        def("discount", money),
        def("tax", money),
    ])
    .expect("schema")
}

/// `left op right`, both at the same scale.
fn binary(op: ArithOp, left: ValueExpr, right: ValueExpr, left_factor: i64) -> ValueExpr {
    ValueExpr::Binary {
        op,
        left: Box::new(left),
        right: Box::new(right),
        left_factor,
        right_factor: 1,
    }
}

/// Q1's sums: quantity, price, price × (1 − discount), that × (1 + tax), discount.
fn q1() -> AggregateSpec {
    let col = ValueExpr::Column;
    let one_minus = binary(ArithOp::Sub, ValueExpr::Literal(1), col(4), 100);
    let one_plus = binary(ArithOp::Add, ValueExpr::Literal(1), col(5), 100);
    let disc_price = binary(ArithOp::Mul, col(3), one_minus, 1);
    let charge = binary(ArithOp::Mul, disc_price.clone(), one_plus, 1);
    AggregateSpec {
        groups: vec![0, 1],
        values: vec![col(2), col(3), disc_price, charge, col(4)],
    }
}

/// The chunk's columns, group columns as packed words (how a scan delivers them).
fn chunk() -> Vec<ColumnValues> {
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    let word = |c: &str| packed_chars::pack(c.as_bytes(), 1).expect("packs") as i64;
    let (mut flag, mut status) = (Vec::new(), Vec::new());
    for _ in 0..ROWS {
        let (f, s) = match rng.random_range(0..100) {
            0..25 => ("A", "F"),
            25..50 => ("R", "F"),
            50..51 => ("N", "F"),
            _ => ("N", "O"),
        };
        flag.push(word(f));
        status.push(word(s));
    }
    let mut ints =
        |lo: i64, hi: i64| -> Vec<i64> { (0..ROWS).map(|_| rng.random_range(lo..=hi)).collect() };
    vec![
        ColumnValues::I64(flag),
        ColumnValues::I64(status),
        ColumnValues::I64(ints(1, 50).into_iter().map(|q| q * 100).collect()),
        ColumnValues::I64(ints(90_000, 10_494_950)),
        ColumnValues::I64(ints(0, 10)),
        ColumnValues::I64(ints(0, 8)),
    ]
}

fn aggregate(c: &mut Criterion) {
    let (schema, columns) = (schema(), chunk());
    let mut group = c.benchmark_group("aggregate");
    group.throughput(Throughput::Elements(ROWS as u64));
    group.bench_function("q1_chunk", |b| {
        let mut sums = GroupedSums::new(q1(), &schema).expect("spec");
        b.iter(|| {
            sums.add(ROWS, |c| columns.get(c), None).expect("add");
            black_box(sums.groups())
        })
    });
    group.finish();
}

criterion_group!(benches, aggregate);
criterion_main!(benches);
