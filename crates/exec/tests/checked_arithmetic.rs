//! Integer `+`, `-` and `*` in a coopscan session fail on overflow (`CheckedArithmetic`)
//! instead of wrapping: random expressions over random `BIGINT` columns (small values,
//! values near the limits, nulls) give exactly the values of exact 128-bit arithmetic
//! when no step leaves 64 bits, and an overflow error when one does; the reported
//! `sum(l_orderkey * 9223372036854775807)` is an error, as is an overflow in a group
//! key or an aggregate's `FILTER` clause.
#![allow(clippy::unwrap_used)] // test code: an unwrap that fails is a failed test

use std::sync::Arc;

use coopscan_exec::query_session;
use datafusion::arrow::array::{Array, ArrayRef, Int64Array, RecordBatch};
use datafusion::arrow::datatypes::{DataType, Field, Schema};
use datafusion::datasource::MemTable;
use datafusion::prelude::SessionConfig;
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

const SEED: u64 = 0xc4ec_ed01;
const CASES: usize = 300;
const ROWS: usize = 64;
const COLUMNS: [&str; 3] = ["a", "b", "c"];

/// An expression over the columns: the test's own model of it, evaluated exactly.
#[derive(Clone, Debug)]
enum Expr {
    Column(usize),
    Literal(i64),
    Binary(Box<Expr>, char, Box<Expr>),
}

impl Expr {
    fn sql(&self) -> String {
        match self {
            Expr::Column(i) => COLUMNS[*i].to_string(),
            // Negative literals in parentheses: `a - -5` is not SQL.
            Expr::Literal(v) => format!("({v})"),
            Expr::Binary(l, op, r) => format!("({} {op} {})", l.sql(), r.sql()),
        }
    }

    /// Exact value on `row`; `Err(())` when a step leaves `i64` (what a checked
    /// evaluation must report), `Ok(None)` for null.
    fn eval(&self, row: &[Option<i64>]) -> Result<Option<i64>, ()> {
        match self {
            Expr::Column(i) => Ok(row[*i]),
            Expr::Literal(v) => Ok(Some(*v)),
            Expr::Binary(l, op, r) => {
                let (Some(x), Some(y)) = (l.eval(row)?, r.eval(row)?) else {
                    return Ok(None);
                };
                let (x, y) = (i128::from(x), i128::from(y));
                let exact = match op {
                    '+' => x + y,
                    '-' => x - y,
                    _ => x * y,
                };
                i64::try_from(exact).map(Some).map_err(|_| ())
            }
        }
    }
}

/// Mostly small values, sometimes near `i64`'s limits so that sums and products
/// overflow.
fn value(rng: &mut ChaCha8Rng) -> i64 {
    match rng.random_range(0..10) {
        0 => i64::MAX - rng.random_range(0..1000),
        // Not i64::MIN itself: its literal `-9223372036854775808` is not a BIGINT in SQL.
        1 => i64::MIN + 1 + rng.random_range(0..1000),
        2 => rng.random_range(-3_000_000_000..3_000_000_000),
        _ => rng.random_range(-1000..1000),
    }
}

/// A tree whose every operator has a column below it: a subtree of literals alone
/// would be folded by DataFusion's planner before any rule sees it. No literal is 0 or
/// 1, which the planner simplifies away.
fn expr(rng: &mut ChaCha8Rng, depth: u32) -> Expr {
    if depth == 0 || rng.random_bool(0.25) {
        return Expr::Column(rng.random_range(0..COLUMNS.len()));
    }
    let op = ['+', '-', '*'][rng.random_range(0..3)];
    let left = expr(rng, depth - 1);
    let right = if rng.random_bool(0.3) {
        let v = value(rng);
        Expr::Literal(if (0..=1).contains(&v) { 7 } else { v })
    } else {
        expr(rng, depth - 1)
    };
    if rng.random_bool(0.5) {
        Expr::Binary(Box::new(left), op, Box::new(right))
    } else {
        Expr::Binary(Box::new(right), op, Box::new(left))
    }
}

fn table(rows: &[Vec<Option<i64>>]) -> Arc<MemTable> {
    let fields: Vec<Field> = COLUMNS
        .iter()
        .map(|n| Field::new(*n, DataType::Int64, true))
        .collect();
    let schema = Arc::new(Schema::new(fields));
    let arrays: Vec<ArrayRef> = (0..COLUMNS.len())
        .map(|c| Arc::new(Int64Array::from_iter(rows.iter().map(|r| r[c]))) as ArrayRef)
        .collect();
    let batch = RecordBatch::try_new(Arc::clone(&schema), arrays).unwrap();
    Arc::new(MemTable::try_new(schema, vec![vec![batch]]).unwrap())
}

async fn run(sql: &str, table: Arc<MemTable>) -> datafusion::error::Result<Vec<Option<i64>>> {
    // One partition keeps the rows in the table's order.
    let ctx = query_session(SessionConfig::new().with_target_partitions(1));
    ctx.register_table("t", table)?;
    let batches = ctx.sql(sql).await?.collect().await?;
    let mut out = Vec::new();
    for b in batches {
        let col = b
            .column(0)
            .as_any()
            .downcast_ref::<Int64Array>()
            .expect("an Int64 result")
            .clone();
        out.extend((0..col.len()).map(|i| (!col.is_null(i)).then(|| col.value(i))));
    }
    Ok(out)
}

#[tokio::test]
async fn random_integer_expressions_give_exact_values_or_an_overflow_error() {
    let mut rng = ChaCha8Rng::seed_from_u64(SEED);
    let (mut errors, mut values) = (0, 0);
    for case in 0..CASES {
        let rows: Vec<Vec<Option<i64>>> = (0..ROWS)
            .map(|_| {
                (0..COLUMNS.len())
                    .map(|_| (!rng.random_bool(0.05)).then(|| value(&mut rng)))
                    .collect()
            })
            .collect();
        let e = expr(&mut rng, 3);
        let sql = format!("SELECT {} FROM t", e.sql());
        let expected: Result<Vec<Option<i64>>, ()> = rows.iter().map(|r| e.eval(r)).collect();
        match (run(&sql, table(&rows)).await, expected) {
            (Ok(got), Ok(want)) => {
                assert_eq!(got, want, "case {case}: {sql}");
                values += 1;
            }
            (Err(err), Err(())) => {
                let text = err.to_string();
                assert!(text.contains("verflow"), "case {case}: {sql}: {text}");
                errors += 1;
            }
            (Ok(got), Err(())) => {
                panic!("case {case}: {sql} overflows but returned {got:?}")
            }
            (Err(err), Ok(_)) => panic!("case {case}: {sql} failed without overflow: {err}"),
        }
    }
    // Both outcomes were exercised.
    assert!(
        errors > 20 && values > 20,
        "{errors} errors, {values} values"
    );
}

#[tokio::test]
async fn an_overflowing_product_under_sum_in_a_filter_a_group_key_or_a_filter_clause_is_an_error() {
    let rows: Vec<Vec<Option<i64>>> = (1..=5).map(|k| vec![Some(k), Some(1), None]).collect();
    for sql in [
        "SELECT sum(a * 9223372036854775807) FROM t",
        "SELECT count(*) FROM t WHERE a * 9223372036854775807 > 0",
        "SELECT a + 9223372036854775807 FROM t",
        // A group key and an aggregate's FILTER clause.
        "SELECT count(*) FROM t GROUP BY a * 9223372036854775807",
        "SELECT count(*) FILTER (WHERE a * 9223372036854775807 > 0) FROM t",
    ] {
        let err = run(sql, table(&rows)).await.unwrap_err().to_string();
        assert!(err.contains("verflow"), "{sql}: {err}");
    }
    // The same query without overflow still answers.
    let ok = run("SELECT sum(a * 3) FROM t", table(&rows)).await.unwrap();
    assert_eq!(ok, [Some(45)]);
}
