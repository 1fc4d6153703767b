//! What scans tell the planner: an exact tuple count (so `count(*)` may be answered
//! from it), column bounds that contain every value (checked against the in-memory
//! reference's own min and max), no nulls, and a per-partition share for parallel
//! CScans.

mod common;

use std::sync::Arc;

use coopscan_exec::{CoopTable, ScanMode, ScanWorkers};
use coopscan_runtime::{PolicyKind, Runtime, RuntimeConfig};
use coopscan_storage::Layout;
use datafusion::common::stats::Precision;
use datafusion::common::{ColumnStatistics, ScalarValue, Statistics};
use datafusion::physical_plan::statistics::{StatisticsArgs, StatisticsContext};
use datafusion::physical_plan::ExecutionPlan;
use datafusion::prelude::{SessionConfig, SessionContext};

use common::*;

/// The statistics of the leaf scan of `sql`'s physical plan (the plan's only leaf), with
/// its columns' names.
async fn leaf_statistics(
    ctx: &SessionContext,
    sql: &str,
    partition: Option<usize>,
) -> (Vec<String>, Statistics) {
    let plan = ctx
        .sql(sql)
        .await
        .expect("plan")
        .create_physical_plan()
        .await
        .expect("physical plan");
    let mut leaf: Arc<dyn ExecutionPlan> = plan;
    while let Some(child) = leaf.children().first() {
        leaf = Arc::clone(child);
    }
    assert!(leaf.name().contains("Scan"), "leaf is {}", leaf.name());
    let mut args = StatisticsArgs::new();
    args.set_partition(partition);
    let stats = StatisticsContext::default()
        .compute(leaf.as_ref(), &args)
        .expect("statistics");
    let names = leaf
        .schema()
        .fields()
        .iter()
        .map(|f| f.name().clone())
        .collect();
    (names, stats.as_ref().clone())
}

/// The statistics of column `name`.
fn column<'s>((names, stats): &'s (Vec<String>, Statistics), name: &str) -> &'s ColumnStatistics {
    let i = names
        .iter()
        .position(|n| n == name)
        .expect("column scanned");
    &stats.column_statistics[i]
}

fn scalar(p: &Precision<ScalarValue>) -> ScalarValue {
    p.get_value().cloned().expect("a bound")
}

#[tokio::test]
async fn scans_report_exact_rows_and_bounds_that_hold_every_value() {
    let reference = reference_context();
    let want = run(
        &reference,
        "select min(l_shipdate), max(l_shipdate), min(l_extendedprice), max(l_extendedprice), \
         count(*) from lineitem",
    )
    .await;
    let rows: usize = want[0][4].parse().expect("count");
    for layout in LAYOUTS {
        let ctx = SessionContext::new();
        let provider = CoopTable::new(table(layout), device(), ScanMode::Scan).expect("provider");
        ctx.register_table("lineitem", Arc::new(provider))
            .expect("register");
        let sql = "select l_shipdate, l_extendedprice from lineitem";
        let stats = leaf_statistics(&ctx, sql, None).await;
        assert_eq!(stats.1.num_rows, Precision::Exact(rows), "{layout}");
        let (date, price) = (
            column(&stats, "l_shipdate"),
            column(&stats, "l_extendedprice"),
        );
        for column in [date, price] {
            assert_eq!(column.null_count, Precision::Exact(0));
            assert!(!column.min_value.is_exact().unwrap_or(true));
        }
        // The bounds are the zonemaps' union over all chunks: exactly the table's.
        assert_eq!(scalar(&date.min_value).to_string(), want[0][0], "{layout}");
        assert_eq!(scalar(&date.max_value).to_string(), want[0][1], "{layout}");
        assert_eq!(scalar(&price.min_value).to_string(), want[0][2], "{layout}");
        assert_eq!(scalar(&price.max_value).to_string(), want[0][3], "{layout}");
        // A `_rowid` range is delivered exactly, so its count is exact too.
        let ranged = leaf_statistics(
            &ctx,
            "select l_shipdate, _rowid from lineitem where _rowid >= 100 and _rowid < 1100",
            None,
        )
        .await;
        assert_eq!(ranged.1.num_rows, Precision::Exact(1000), "{layout}");
        let rowid = column(&ranged, "_rowid");
        assert_eq!(scalar(&rowid.min_value), ScalarValue::Int64(Some(100)));
        assert_eq!(scalar(&rowid.max_value), ScalarValue::Int64(Some(1099)));
        let counted = run(&ctx, "select count(*) from lineitem").await;
        assert_eq!(counted[0][0], want[0][4], "{layout}");
    }
}

#[tokio::test]
async fn a_parallel_cscan_reports_each_partition_a_share() {
    let t = table(Layout::Dsm);
    let rows = usize::try_from(t.rows()).expect("rows");
    let runtime = Arc::new(
        Runtime::new(t, device(), RuntimeConfig::new(8, PolicyKind::Relevance)).expect("runtime"),
    );
    let config = SessionConfig::new().with_extension(Arc::new(ScanWorkers(2)));
    let ctx = SessionContext::new_with_config(config);
    ctx.register_table("lineitem", Arc::new(CoopTable::cooperative(runtime)))
        .expect("register");
    let sql = "select l_quantity from lineitem";
    let (_, whole) = leaf_statistics(&ctx, sql, None).await;
    assert_eq!(whole.num_rows, Precision::Exact(rows));
    let (_, part) = leaf_statistics(&ctx, sql, Some(1)).await;
    assert_eq!(part.num_rows, Precision::Inexact(rows.div_ceil(2)));
}
