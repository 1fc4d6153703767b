//! `sum` over integers in a coopscan session fails on overflow (`CheckedSum`) instead
//! of wrapping: random columns (small values, values near the limits, nulls) summed
//! globally, per group, under `FILTER`, over several partitions and over sliding window
//! frames give exactly the 128-bit total when it fits in 64 bits and an overflow error
//! when the total does not; never a wrapped number. With one partition the rows are
//! added in order, so the test knows exactly when a running total leaves 64 bits.
#![allow(clippy::unwrap_used)] // test code: an unwrap that fails is a failed test

use std::sync::Arc;

use coopscan_exec::query_session;
use datafusion::arrow::array::{Array, ArrayRef, AsArray, Int64Array, RecordBatch};
use datafusion::arrow::datatypes::{DataType, Field, Int64Type, Schema};
use datafusion::datasource::MemTable;
use datafusion::prelude::SessionConfig;
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

const SEED: u64 = 0x5e_ed5u64;
const CASES: usize = 120;
const ROWS: usize = 48;
const GROUPS: i64 = 3;

/// A row: its number `k`, its group `g`, its value `a`.
type Row = (i64, i64, Option<i64>);

/// Mostly small values, often near `i64`'s limits so that totals overflow.
fn value(rng: &mut ChaCha8Rng) -> Option<i64> {
    match rng.random_range(0..12) {
        0 => None,
        1 | 2 => Some(i64::MAX / 4 - rng.random_range(0..1000)),
        3 => Some(i64::MIN / 4 + rng.random_range(0..1000)),
        _ => Some(rng.random_range(-1000..1000)),
    }
}

/// The sum of `values` added in order: `Err(())` if a running total leaves `i64`,
/// `Ok(None)` if no value is non-null.
fn in_order(values: impl Iterator<Item = Option<i64>>) -> Result<Option<i64>, ()> {
    let mut total: Option<i64> = None;
    for v in values.flatten() {
        total = Some(total.unwrap_or(0).checked_add(v).ok_or(())?);
    }
    Ok(total)
}

/// The exact total of `values`, if it fits in `i64` (`Some(None)`: no values).
fn exact(values: impl Iterator<Item = Option<i64>>) -> Option<Option<i64>> {
    let values: Vec<i64> = values.flatten().collect();
    if values.is_empty() {
        return Some(None);
    }
    let total: i128 = values.iter().map(|&v| i128::from(v)).sum();
    i64::try_from(total).ok().map(Some)
}

fn table(rows: &[Row], partitions: usize) -> Arc<MemTable> {
    let schema = Arc::new(Schema::new(vec![
        Field::new("k", DataType::Int64, false),
        Field::new("g", DataType::Int64, false),
        Field::new("a", DataType::Int64, true),
    ]));
    let per = rows.len().div_ceil(partitions);
    let parts = rows
        .chunks(per)
        .map(|part| {
            let columns: Vec<ArrayRef> = vec![
                Arc::new(Int64Array::from_iter_values(part.iter().map(|r| r.0))),
                Arc::new(Int64Array::from_iter_values(part.iter().map(|r| r.1))),
                Arc::new(Int64Array::from_iter(part.iter().map(|r| r.2))),
            ];
            vec![RecordBatch::try_new(Arc::clone(&schema), columns).unwrap()]
        })
        .collect();
    Arc::new(MemTable::try_new(schema, parts).unwrap())
}

/// The last column of `sql`'s result, or the error's text.
async fn run(sql: &str, rows: &[Row], partitions: usize) -> Result<Vec<Option<i64>>, String> {
    let ctx = query_session(SessionConfig::new().with_target_partitions(partitions));
    ctx.register_table("t", table(rows, partitions)).unwrap();
    let batches = async { ctx.sql(sql).await?.collect().await }
        .await
        .map_err(|e| e.to_string())?;
    let mut out = Vec::new();
    for b in batches {
        let col = b.column(b.num_columns() - 1).as_primitive::<Int64Type>();
        out.extend((0..col.len()).map(|i| col.is_valid(i).then(|| col.value(i))));
    }
    Ok(out)
}

/// `got` is `want`, an overflow error exactly when `want` is `Err`.
fn check(got: Result<Vec<Option<i64>>, String>, want: Result<Vec<Option<i64>>, ()>, what: &str) {
    match (got, want) {
        (Ok(got), Ok(want)) => assert_eq!(got, want, "{what}"),
        (Err(err), Err(())) => assert!(err.contains("verflow"), "{what}: {err}"),
        (Ok(got), Err(())) => panic!("{what}: overflows but returned {got:?}"),
        (Err(err), Ok(_)) => panic!("{what}: failed without overflow: {err}"),
    }
}

/// With several partitions the additions' order is the engine's: a total that fits
/// may still pass the limit on the way (an error then is allowed), but a total that
/// does not fit is always an error, and a value returned is always the exact one.
fn check_never_wrapped(
    got: Result<Vec<Option<i64>>, String>,
    exact: &[Option<Option<i64>>],
    what: &str,
) {
    match got {
        Ok(got) => {
            let want: Vec<Option<Option<i64>>> = got.iter().map(|&v| Some(v)).collect();
            assert_eq!(want, exact, "{what}: a value that is not the exact total");
        }
        Err(err) => assert!(err.contains("verflow"), "{what}: {err}"),
    }
}

fn rows(rng: &mut ChaCha8Rng) -> Vec<Row> {
    (0..ROWS as i64)
        .map(|k| (k, rng.random_range(0..GROUPS), value(rng)))
        .collect()
}

#[tokio::test]
async fn integer_sums_are_exact_or_an_overflow_error_never_wrapped() {
    let mut rng = ChaCha8Rng::seed_from_u64(SEED);
    let (mut errors, mut values) = (0, 0);
    for case in 0..CASES {
        let rows = rows(&mut rng);
        let a = || rows.iter().map(|r| r.2);
        // Global, in row order.
        let want = in_order(a()).map(|v| vec![v]);
        if want.is_ok() {
            values += 1;
        } else {
            errors += 1;
        }
        check(
            run("SELECT sum(a) FROM t", &rows, 1).await,
            want,
            &format!("case {case}: sum"),
        );
        // Per group, each group's rows in row order.
        let want: Result<Vec<Option<i64>>, ()> = (0..GROUPS)
            .filter(|g| rows.iter().any(|r| r.1 == *g))
            .map(|g| in_order(rows.iter().filter(|r| r.1 == g).map(|r| r.2)))
            .collect();
        let sql = "SELECT g, sum(a) FROM t GROUP BY g ORDER BY g";
        check(
            run(sql, &rows, 1).await,
            want,
            &format!("case {case}: {sql}"),
        );
        // Under an aggregate FILTER.
        let want = in_order(rows.iter().filter(|r| r.0 % 2 == 0).map(|r| r.2)).map(|v| vec![v]);
        let sql = "SELECT sum(a) FILTER (WHERE k % 2 = 0) FROM t";
        check(
            run(sql, &rows, 1).await,
            want,
            &format!("case {case}: {sql}"),
        );
        // Four partitions: partial sums merged.
        let sql = "SELECT sum(a) FROM t";
        check_never_wrapped(
            run(sql, &rows, 4).await,
            &[exact(a())],
            &format!("case {case}: 4 partitions"),
        );
        let sql = "SELECT g, sum(a) FROM t GROUP BY g ORDER BY g";
        let want: Vec<Option<Option<i64>>> = (0..GROUPS)
            .filter(|g| rows.iter().any(|r| r.1 == *g))
            .map(|g| exact(rows.iter().filter(|r| r.1 == g).map(|r| r.2)))
            .collect();
        check_never_wrapped(
            run(sql, &rows, 4).await,
            &want,
            &format!("case {case}: 4 partitions, {sql}"),
        );
        // A sliding frame of three rows (values added and retracted).
        let sql = "SELECT k, sum(a) OVER (ORDER BY k ROWS BETWEEN 2 PRECEDING AND CURRENT ROW) FROM t ORDER BY k";
        let want: Vec<Option<Option<i64>>> = (0..rows.len())
            .map(|i| exact(rows[i.saturating_sub(2)..=i].iter().map(|r| r.2)))
            .collect();
        check_never_wrapped(
            run(sql, &rows, 1).await,
            &want,
            &format!("case {case}: {sql}"),
        );
    }
    assert!(
        errors > 10 && values > 10,
        "{errors} errors, {values} values"
    );
}

#[tokio::test]
async fn the_total_that_passes_2_pow_63_is_an_error_and_small_integers_still_sum() {
    let rows: Vec<Row> = (0..4).map(|k| (k, 0, Some(i64::MAX / 3))).collect();
    let err = run("SELECT sum(a) FROM t", &rows, 1).await.unwrap_err();
    assert!(err.contains("verflow"), "{err}");
    // INT columns are widened to BIGINT and summed as before.
    let ok = run("SELECT sum(CAST(k AS INT)) FROM t", &rows, 1)
        .await
        .unwrap();
    assert_eq!(ok, [Some(6)]);
    let none = run("SELECT sum(a) FROM t WHERE k > 10", &rows, 1)
        .await
        .unwrap();
    assert_eq!(none, [None]);
}
