//! Aggregations done by the cooperative scan (`coopscan_exec::scan_aggregate`): seeded
//! random `GROUP BY`s of lineitem's columns (none, a few `CHAR(1)` flags, integers,
//! dates, long strings, the order key's 15 000 groups) with `count`, `sum` and `avg` of
//! decimal arithmetic, under random filters (some the scan absorbs, some it cannot, so
//! the plan stays DataFusion's) and `_rowid` ranges, give the in-memory reference's
//! results through CScans of one to three workers, with one and two partitions, in
//! every layout; the rule fires where it should and not where it should not.

mod common;

use std::sync::Arc;

use coopscan_exec::{query_session, query_session_config, CoopTable, ScanWorkers};
use coopscan_runtime::{PolicyKind, Runtime, RuntimeConfig};
use coopscan_storage::Layout;
use datafusion::prelude::SessionContext;
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

use common::*;

const SEED: u64 = 0xa66 << 32 | 0x5ca7;
const CASES: usize = 24;
const FRAMES: u32 = 6;

const GROUPS: [&str; 7] = [
    "",
    "l_returnflag, l_linestatus",
    "l_returnflag",
    "l_linestatus, l_linenumber",
    "l_shipdate",
    "l_shipinstruct",
    "l_orderkey",
];

const AGGREGATES: [&str; 10] = [
    "count(*)",
    "sum(l_quantity)",
    "avg(l_extendedprice)",
    "sum(l_extendedprice * (1 - l_discount))",
    "sum(l_extendedprice * (1 - l_discount) * (1 + l_tax))",
    "avg(l_discount)",
    "count(l_orderkey)",
    "avg(l_quantity + l_tax * 2)",
    "sum(l_linenumber)",
    "sum(l_orderkey)",
];

/// Conjuncts: the scan evaluates the first ones; the last two it cannot (the plan then
/// stays DataFusion's).
const CONJUNCTS: [&str; 9] = [
    "l_shipdate <= DATE '1998-09-02'",
    "l_shipdate >= DATE '1994-01-01' AND l_shipdate < DATE '1995-01-01'",
    "l_discount BETWEEN 0.05 AND 0.07",
    "l_quantity < 24",
    "l_shipmode = 'AIR'",
    "l_returnflag IN ('R', 'A')",
    "_rowid >= 20000",
    "l_shipmode LIKE 'R%'",
    "l_extendedprice * l_discount > 100",
];

fn query(rng: &mut ChaCha8Rng) -> String {
    let groups = GROUPS[rng.random_range(0..GROUPS.len())];
    let mut select: Vec<String> = Vec::new();
    if !groups.is_empty() {
        select.push(groups.to_string());
    }
    for i in 0..rng.random_range(1..=4) {
        let aggregate = AGGREGATES[rng.random_range(0..AGGREGATES.len())];
        select.push(format!("{aggregate} AS a{i}"));
    }
    let conjuncts: Vec<&str> = (0..rng.random_range(0..=2))
        .map(|_| CONJUNCTS[rng.random_range(0..CONJUNCTS.len())])
        .collect();
    let mut sql = format!("SELECT {} FROM lineitem", select.join(", "));
    if !conjuncts.is_empty() {
        sql += &format!(" WHERE {}", conjuncts.join(" AND "));
    }
    if !groups.is_empty() {
        sql += &format!(" GROUP BY {groups}");
    }
    sql
}

/// CScan sessions of `workers` workers with `threads` partitions.
fn session(layout: Layout, workers: usize, threads: usize) -> SessionContext {
    let config = RuntimeConfig::new(FRAMES, PolicyKind::Relevance);
    let runtime = Arc::new(Runtime::new(table(layout), device(), config).expect("runtime"));
    let config = query_session_config(threads).with_extension(Arc::new(ScanWorkers(workers)));
    let ctx = query_session(config);
    ctx.register_table("lineitem", Arc::new(CoopTable::cooperative(runtime)))
        .expect("register");
    ctx
}

async fn plan(ctx: &SessionContext, sql: &str) -> String {
    run(ctx, &format!("EXPLAIN {sql}"))
        .await
        .concat()
        .join("\n")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn aggregating_scans_give_the_references_results() {
    let reference = reference_context();
    let mut rng = ChaCha8Rng::seed_from_u64(SEED);
    let queries: Vec<String> = (0..CASES).map(|_| query(&mut rng)).collect();
    let mut wants = Vec::new();
    for sql in &queries {
        wants.push(run(&reference, sql).await);
    }
    let mut pushed = 0;
    for layout in LAYOUTS {
        for (workers, threads) in [(1, 1), (2, 2), (3, 1)] {
            let ctx = session(layout, workers, threads);
            for (sql, want) in queries.iter().zip(&wants) {
                let name = format!("{layout} x{workers} t{threads}: {sql}");
                assert_eq!(&run(&ctx, sql).await, want, "{name}");
                pushed += usize::from(plan(&ctx, sql).await.contains("aggregate=[groups="));
            }
        }
    }
    let runs = LAYOUTS.len() * 3 * CASES;
    assert!(
        pushed > runs / 2,
        "the scan aggregated {pushed} of {runs} runs"
    );
}

/// TPC-H Q1 and Q6 are done by the scan, their filter absorbed (no `FilterExec`, no
/// partial aggregation above the scan); a filter the scan cannot evaluate, `min`, a
/// group key that is an expression, a sum of integer arithmetic and integer keys whose
/// ranges allow more than `MAX_GROUPS` groups leave the plan to DataFusion.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_rule_fires_where_the_scan_can_aggregate() {
    let ctx = session(Layout::Dsm, 2, 2);
    let q1 = "SELECT l_returnflag, l_linestatus, sum(l_quantity), sum(l_extendedprice), \
              sum(l_extendedprice * (1 - l_discount)), \
              sum(l_extendedprice * (1 - l_discount) * (1 + l_tax)), avg(l_quantity), \
              avg(l_extendedprice), avg(l_discount), count(*) FROM lineitem \
              WHERE l_shipdate <= DATE '1998-12-01' - INTERVAL '90' DAY \
              GROUP BY l_returnflag, l_linestatus ORDER BY l_returnflag, l_linestatus";
    let q6 = "SELECT sum(l_extendedprice * l_discount) FROM lineitem \
              WHERE l_shipdate >= DATE '1994-01-01' AND l_shipdate < DATE '1995-01-01' \
              AND l_discount BETWEEN 0.05 AND 0.07 AND l_quantity < 24";
    for sql in [q1, q6] {
        let p = plan(&ctx, sql).await;
        assert!(p.contains("aggregate=[groups="), "{p}");
        assert!(!p.contains("FilterExec"), "{p}");
        assert!(!p.contains("mode=Partial"), "{p}");
        assert_eq!(run(&ctx, sql).await, run(&reference_context(), sql).await);
    }
    for sql in [
        "SELECT l_returnflag, count(*) FROM lineitem WHERE l_shipmode LIKE 'R%' GROUP BY l_returnflag",
        "SELECT l_returnflag, min(l_quantity) FROM lineitem GROUP BY l_returnflag",
        "SELECT l_linenumber + 1, count(*) FROM lineitem GROUP BY l_linenumber + 1",
        "SELECT l_returnflag, sum(l_linenumber + 1) FROM lineitem GROUP BY l_returnflag",
        "SELECT l_orderkey, l_partkey, count(*) FROM lineitem GROUP BY l_orderkey, l_partkey",
    ] {
        let p = plan(&ctx, sql).await;
        assert!(!p.contains("aggregate=[groups="), "{sql}: {p}");
        assert_eq!(run(&ctx, sql).await, run(&reference_context(), sql).await, "{sql}");
    }
}

/// No tuple passes: no group at all, and without `GROUP BY` the one row of a count of
/// zero and NULL sums and averages, as DataFusion answers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nothing_selected_gives_the_empty_answers() {
    let reference = reference_context();
    for (workers, threads) in [(1, 1), (2, 2)] {
        let ctx = session(Layout::Pax, workers, threads);
        for sql in [
            "SELECT count(*), sum(l_quantity), avg(l_discount) FROM lineitem WHERE l_quantity > 1000",
            "SELECT l_returnflag, count(*) FROM lineitem WHERE l_quantity > 1000 GROUP BY l_returnflag",
        ] {
            assert!(plan(&ctx, sql).await.contains("aggregate=[groups="), "{sql}");
            assert_eq!(run(&ctx, sql).await, run(&reference, sql).await, "{sql}");
        }
    }
}

/// A worker holding more groups than its limit sends them and starts afresh; the final
/// aggregation merges the rows of a group sent several times (the order key's 15 000
/// groups through a limit of 100, one and two workers).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn workers_flush_their_groups_past_the_limit() {
    use coopscan_exec::scan_aggregate::ScanAggregates;
    use datafusion::execution::SessionStateBuilder;

    let reference = reference_context();
    let sql = "SELECT l_orderkey, count(*), sum(l_quantity), avg(l_extendedprice) \
               FROM lineitem WHERE l_shipdate >= DATE '1993-01-01' GROUP BY l_orderkey";
    let want = run(&reference, sql).await;
    assert!(want.len() > 1000, "{} groups", want.len());
    for workers in [1, 2] {
        let config = RuntimeConfig::new(FRAMES, PolicyKind::Relevance);
        let runtime =
            Arc::new(Runtime::new(table(Layout::Dsm), device(), config).expect("runtime"));
        let config = query_session_config(workers).with_extension(Arc::new(ScanWorkers(workers)));
        let state = SessionStateBuilder::new()
            .with_config(config)
            .with_default_features()
            .with_physical_optimizer_rule(Arc::new(ScanAggregates { flush_groups: 100 }))
            .build();
        let ctx = SessionContext::new_with_state(state);
        ctx.register_table("lineitem", Arc::new(CoopTable::cooperative(runtime)))
            .expect("register");
        let p = plan(&ctx, sql).await;
        assert!(p.contains("aggregate=[groups="), "{p}");
        assert_eq!(run(&ctx, sql).await, want, "x{workers}");
    }
}

/// A LIMIT DataFusion pushes into the filter below an aggregation (the provider left
/// the date to DataFusion: it passes nearly every tuple) keeps the plan DataFusion's:
/// the scan would count every passing tuple, not the first ten.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_limited_filter_is_not_absorbed() {
    let sql = "SELECT count(*), sum(l_quantity) FROM \
               (SELECT * FROM lineitem WHERE l_shipdate <= DATE '1998-12-01' LIMIT 10) s";
    let ctx = session(Layout::Dsm, 1, 1);
    let p = plan(&ctx, sql).await;
    assert!(!p.contains("aggregate=[groups="), "{p}");
    let got = run(&ctx, sql).await;
    assert_eq!(got[0][0], "10", "{got:?}");
}
