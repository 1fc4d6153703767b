//! Zonemap pruning skips chunks: lineitem is ordered by `l_orderkey`, so a predicate on
//! it rules out most chunks, through Scan and through CScan — and the answer still
//! equals the in-memory reference, because the scan evaluates the comparison on the
//! tuples of the chunks it reads (an Exact filter).

mod common;

use std::sync::Arc;

use coopscan_exec::{CoopTable, ScanMode};
use coopscan_runtime::{PolicyKind, Runtime, RuntimeConfig};
use coopscan_storage::{Layout, Table};
use datafusion::prelude::SessionContext;

use common::*;

const FRAMES: u32 = 4;
/// An order key inside the first few chunks of SF 0.01 (keys go up to 60 000).
const ORDERKEY_CUT: i64 = 4_000;

fn sql() -> String {
    format!(
        "SELECT count(*) AS n, sum(l_extendedprice * l_discount) AS revenue FROM lineitem \
         WHERE l_orderkey < {ORDERKEY_CUT} AND l_shipdate >= DATE '1994-01-01'"
    )
}

/// Chunks of `table` whose zonemap says `l_orderkey < ORDERKEY_CUT` may hold.
fn chunks_needed(table: &coopscan_storage::Table) -> u64 {
    let col = table.schema().index_of("l_orderkey").expect("column");
    (0..table.chunk_count())
        .filter(|&k| match &table.chunk(k).columns[col].zonemap {
            Some(coopscan_storage::zonemap::Zonemap::Int { min, .. }) => *min < ORDERKEY_CUT,
            _ => true,
        })
        .count() as u64
}

/// `table` as `lineitem` read by in-order Scans straight from storage.
fn scan_session(table: &Table) -> (Arc<CoopTable>, SessionContext) {
    let scan = Arc::new(CoopTable::new(table.clone(), device(), ScanMode::Scan).expect("scan"));
    let ctx = SessionContext::new();
    ctx.register_table("lineitem", scan.clone())
        .expect("register");
    (scan, ctx)
}

/// `table` as `lineitem` read by CScans of a runtime of `FRAMES` frames under relevance.
fn cscan_session(table: Table) -> (Arc<Runtime>, Arc<CoopTable>, SessionContext) {
    let config = RuntimeConfig::new(FRAMES, PolicyKind::Relevance);
    let runtime = Arc::new(Runtime::new(table, device(), config).expect("runtime"));
    let cscan = Arc::new(CoopTable::cooperative(Arc::clone(&runtime)));
    let ctx = SessionContext::new();
    ctx.register_table("lineitem", cscan.clone())
        .expect("register");
    (runtime, cscan, ctx)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn orderkey_predicate_skips_chunks() {
    let want = run(&reference_context(), &sql()).await;
    for layout in LAYOUTS {
        let table = table(layout);
        let needed = chunks_needed(&table);
        let total = table.chunk_count() as u64;
        assert!(
            needed * 4 < total,
            "{layout}: cut prunes too little ({needed}/{total})"
        );

        let (scan, ctx) = scan_session(&table);
        assert_eq!(run(&ctx, &sql()).await, want, "{layout} scan");
        assert_eq!(
            scan.counters().chunks,
            needed,
            "{layout}: Scan read pruned chunks"
        );

        let (runtime, cscan, ctx) = cscan_session(table);
        assert_eq!(run(&ctx, &sql()).await, want, "{layout} cscan");
        assert_eq!(
            cscan.counters().chunks,
            needed,
            "{layout}: CScan got pruned chunks"
        );
        assert_eq!(
            runtime.stats().chunk_loads,
            needed,
            "{layout}: ABM loaded pruned chunks"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn filters_are_pushed_as_documented() {
    let table = table(Layout::Pax);
    let provider = CoopTable::new(table, device(), ScanMode::Scan).expect("provider");
    let ctx = SessionContext::new();
    ctx.register_table("lineitem", Arc::new(provider))
        .expect("register");
    let text = explain(
        &ctx,
        "SELECT count(*) FROM lineitem WHERE _rowid >= 100 AND _rowid < 200 \
         AND l_orderkey < 50",
    )
    .await;
    // The _rowid bounds became the scan's range and the orderkey conjunct its filter,
    // neither left behind as a DataFusion filter (both Exact).
    assert!(text.contains("ranges=[100..200]"), "{text}");
    assert!(text.contains("filter=[l_orderkey < 50]"), "{text}");
    assert!(!text.contains("FilterExec"), "{text}");
    assert!(!text.contains("_rowid@"), "{text}");
    // A comparison the zonemaps say nearly every tuple passes (order keys go up to
    // 60 000) only prunes: DataFusion keeps it (Inexact), the scan has no filter.
    let text = explain(
        &ctx,
        "SELECT count(*) FROM lineitem WHERE l_orderkey < 59000",
    )
    .await;
    assert!(text.contains("l_orderkey@0 < 59000"), "{text}");
    assert!(!text.contains("filter=["), "{text}");
}

/// The text of `EXPLAIN sql`.
async fn explain(ctx: &SessionContext, sql: &str) -> String {
    let plan = ctx
        .sql(&format!("EXPLAIN {sql}"))
        .await
        .expect("plan")
        .collect()
        .await
        .expect("explain");
    canonical(&plan).concat().join("\n")
}

/// A LIMIT with no filter left above the scan reaches the provider, which reads only the
/// first tuples: one chunk, through Scan and through CScan; the rows are the table's
/// first ones (any rows would do; these are the reference's first ones too).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_limit_reads_only_the_chunks_it_needs() {
    let sql = "SELECT l_orderkey, l_linenumber FROM lineitem LIMIT 7";
    let ranged = "SELECT l_orderkey FROM lineitem WHERE _rowid >= 5000 LIMIT 3";
    let reference = reference_context();
    let first = run(
        &reference,
        "SELECT l_orderkey, l_linenumber FROM lineitem WHERE _rowid < 7",
    )
    .await;
    let ranged_want = run(
        &reference,
        "SELECT l_orderkey FROM lineitem WHERE _rowid >= 5000 AND _rowid < 5003",
    )
    .await;
    for layout in LAYOUTS {
        let table = table(layout);
        let (scan, ctx) = scan_session(&table);
        // The plan's scan covers the first 7 tuples only (not a table-wide scan cut
        // short by the limit above it, which may stop after one chunk by luck).
        let explain = run(&ctx, &format!("EXPLAIN {sql}")).await;
        let plan: Vec<&String> = explain.iter().flatten().collect();
        assert!(
            plan.iter().any(|l| l.contains("ranges=[0..7], rows=7")),
            "{layout}: {plan:?}"
        );
        assert_eq!(run(&ctx, sql).await, first, "{layout} scan");
        assert_eq!(scan.counters().chunks, 1, "{layout}: Scan read one chunk");
        assert_eq!(
            run(&ctx, ranged).await,
            ranged_want,
            "{layout} scan, ranged"
        );

        let (runtime, cscan, ctx) = cscan_session(table);
        assert_eq!(run(&ctx, sql).await, first, "{layout} cscan");
        assert_eq!(cscan.counters().chunks, 1, "{layout}: CScan got one chunk");
        assert_eq!(runtime.stats().chunk_loads, 1, "{layout}: one load");
    }
}
