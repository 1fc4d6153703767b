//! Comparisons the scan evaluates itself (Exact pushdown): seeded random conjunctions of
//! comparisons on integer, decimal and date columns of lineitem — literals on either
//! side, `BETWEEN`, `_rowid` bounds, string lists (`=`, `IN`, ORs of equalities), and
//! conjuncts DataFusion keeps (`<>`, `NOT IN`, `LIKE`, other `OR`s) mixed in — give the in-memory reference's rows and aggregates, through Scans and
//! through CScans of one and two workers, in every layout.

mod common;

use std::sync::Arc;

use coopscan_exec::{query_session, query_session_config, CoopTable, ScanMode, ScanWorkers};
use coopscan_runtime::{PolicyKind, Runtime, RuntimeConfig};
use coopscan_storage::Layout;
use datafusion::prelude::SessionContext;
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

use common::*;

const SEED: u64 = 0x9u64 << 40 | 0xf11;
const CASES: usize = 30;
const FRAMES: u32 = 6;

/// A pushable comparison's column and a literal of its kind.
fn comparison(rng: &mut ChaCha8Rng) -> String {
    let op = ["<", "<=", ">", ">=", "="][rng.random_range(0..5)];
    let (column, literal) = match rng.random_range(0..7) {
        0 => ("l_orderkey", rng.random_range(0..60_000).to_string()),
        1 => ("l_linenumber", rng.random_range(0..8).to_string()),
        2 => ("l_quantity", format!("{}.00", rng.random_range(0..52))),
        3 => ("l_discount", format!("0.0{}", rng.random_range(0..10))),
        4 => (
            "l_extendedprice",
            format!(
                "{}.{:02}",
                rng.random_range(900..100_000),
                rng.random_range(0..100)
            ),
        ),
        5 => {
            let day = rng.random_range(1..28);
            let month = rng.random_range(1..13);
            let year = rng.random_range(1992..1999);
            ("l_shipdate", format!("DATE '{year}-{month:02}-{day:02}'"))
        }
        _ => ("l_partkey", rng.random_range(0..2_000).to_string()),
    };
    if rng.random_bool(0.2) {
        format!("{literal} {} {column}", flip(op))
    } else {
        format!("{column} {op} {literal}")
    }
}

fn flip(op: &str) -> &str {
    match op {
        "<" => ">",
        "<=" => ">=",
        ">" => "<",
        ">=" => "<=",
        other => other,
    }
}

/// A string conjunct: `=`, `IN`, an OR of equalities (all evaluated by the scan), or
/// forms DataFusion keeps (`<>`, `NOT IN`, `LIKE`); values absent from the data too.
fn string_conjunct(rng: &mut ChaCha8Rng) -> String {
    let modes = [
        "'AIR'",
        "'REG AIR'",
        "'MAIL'",
        "'SHIP'",
        "'TRUCK'",
        "'RAIL'",
        "'NOPE'",
    ];
    let which = rng.random_range(0..8);
    let mut pick = |n: usize| {
        (0..n)
            .map(|_| modes[rng.random_range(0..modes.len())])
            .collect::<Vec<_>>()
            .join(", ")
    };
    match which {
        0 => format!("l_shipmode = {}", pick(1)),
        1 => format!("l_shipmode IN ({})", pick(3)),
        2 => "(l_returnflag = 'A' OR l_returnflag = 'N')".into(),
        3 => "l_linestatus = 'F'".into(),
        4 => "l_shipinstruct IN ('DELIVER IN PERSON', 'TAKE BACK RETURN')".into(),
        5 => format!("l_shipmode NOT IN ({})", pick(2)),
        6 => "l_shipmode <> 'AIR'".into(),
        _ => "l_shipinstruct LIKE 'DELIVER%'".into(),
    }
}

fn predicate(rng: &mut ChaCha8Rng) -> String {
    let mut conjuncts: Vec<String> = (0..rng.random_range(1..=3))
        .map(|_| comparison(rng))
        .collect();
    if rng.random_bool(0.5) {
        conjuncts.push(string_conjunct(rng));
    }
    match rng.random_range(0..6) {
        0 => conjuncts.push("l_discount BETWEEN 0.02 AND 0.06".into()),
        1 => conjuncts.push(format!("_rowid >= {}", rng.random_range(0..40_000))),
        2 => conjuncts.push("l_returnflag = 'R'".into()),
        3 => conjuncts.push("(l_linenumber = 1 OR l_quantity > 40)".into()),
        _ => {}
    }
    conjuncts.join(" AND ")
}

fn sessions(layout: Layout) -> Vec<(String, SessionContext)> {
    let table = table(layout);
    let mut out = Vec::new();
    let scan = CoopTable::new(table.clone(), device(), ScanMode::Scan).expect("scan");
    let ctx = query_session(query_session_config(1));
    ctx.register_table("lineitem", Arc::new(scan))
        .expect("register");
    out.push((format!("{layout} scan"), ctx));
    for workers in [1usize, 2] {
        let config = RuntimeConfig::new(FRAMES, PolicyKind::Relevance);
        let runtime = Arc::new(Runtime::new(table.clone(), device(), config).expect("runtime"));
        let session = query_session_config(2).with_extension(Arc::new(ScanWorkers(workers)));
        let ctx = query_session(session);
        ctx.register_table("lineitem", Arc::new(CoopTable::cooperative(runtime)))
            .expect("register");
        out.push((format!("{layout} cscan x{workers}"), ctx));
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pushed_comparisons_give_the_references_rows() {
    let reference = reference_context();
    let mut rng = ChaCha8Rng::seed_from_u64(SEED);
    let queries: Vec<String> = (0..CASES)
        .flat_map(|_| {
            let p = predicate(&mut rng);
            [
                format!("SELECT l_orderkey, l_linenumber, l_shipdate, l_quantity, l_shipmode, l_returnflag FROM lineitem WHERE {p}"),
                format!("SELECT count(*), sum(l_extendedprice * l_discount), min(_rowid), max(_rowid) FROM lineitem WHERE {p}"),
            ]
        })
        .collect();
    let mut nonempty = 0;
    let mut wants = Vec::new();
    for sql in &queries {
        let want = run(&reference, sql).await;
        nonempty += usize::from(!want.is_empty() && want[0][0] != "0");
        wants.push(want);
    }
    assert!(
        nonempty > CASES / 2,
        "{nonempty} of {} queries match rows",
        queries.len()
    );
    for layout in LAYOUTS {
        for (name, ctx) in sessions(layout) {
            for (sql, want) in queries.iter().zip(&wants) {
                assert_eq!(&run(&ctx, sql).await, want, "{name}: {sql}");
            }
        }
    }
}

/// A LIMIT over a filtered scan: the scan's first tuples may not pass, so the limit is
/// not turned into the first tuples' range.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_limit_over_a_pushed_comparison_still_finds_its_rows() {
    for layout in LAYOUTS {
        for (name, ctx) in sessions(layout) {
            let sql = "SELECT count(*) FROM (SELECT l_orderkey FROM lineitem WHERE l_orderkey > 50000 LIMIT 5)";
            assert_eq!(run(&ctx, sql).await, [["5".to_string()]], "{name}");
        }
    }
}

/// String lists are the scan's (`filter=[…]` in its line, no filter above it); `<>` is
/// DataFusion's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn string_lists_are_evaluated_by_the_scan() {
    let (_, ctx) = sessions(Layout::Dsm).remove(1);
    let plan = |sql: &str| {
        let ctx = ctx.clone();
        let sql = format!("EXPLAIN {sql}");
        async move { run(&ctx, &sql).await.concat().join("\n") }
    };
    let pushed = plan("SELECT count(*) FROM lineitem WHERE l_shipmode IN ('AIR', 'MAIL') AND (l_returnflag = 'R' OR l_returnflag = 'A')").await;
    assert!(
        pushed.contains("l_shipmode IN ('AIR', 'MAIL') AND l_returnflag IN ('R', 'A')")
            || pushed.contains("l_returnflag IN ('R', 'A') AND l_shipmode IN ('AIR', 'MAIL')"),
        "{pushed}"
    );
    assert!(!pushed.contains("FilterExec"), "{pushed}");
    let kept = plan("SELECT count(*) FROM lineitem WHERE l_shipmode <> 'AIR'").await;
    assert!(kept.contains("FilterExec"), "{kept}");
}

/// A hash join hands its build side's keys to the probe side's scan while the query
/// runs (DataFusion's dynamic filters): the scan takes them (`runtime_filters=1`), and
/// the answers stay the reference's through every scan and layout. The build side has
/// few keys, so the filter is an IN list the scan applies (in the one-partition Scan
/// session, where the join collects its build side whole).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_join_filters_its_probe_scan_while_it_runs() {
    let reference = reference_context();
    let sql = "SELECT count(*), sum(a.l_quantity) FROM lineitem a \
               JOIN (SELECT l_orderkey FROM lineitem WHERE l_orderkey < 300 AND l_linenumber = 1) b \
               ON a.l_orderkey = b.l_orderkey";
    let want = run(&reference, sql).await;
    assert_ne!(want[0][0], "0", "the join matches tuples");
    for layout in LAYOUTS {
        for (name, ctx) in sessions(layout) {
            let plan = run(&ctx, &format!("EXPLAIN {sql}"))
                .await
                .concat()
                .join("\n");
            assert!(plan.contains("runtime_filters=1"), "{name}: {plan}");
            assert_eq!(run(&ctx, sql).await, want, "{name}");
        }
    }
}

/// The tuples a plan's topmost hash join took from its probe side, from `EXPLAIN
/// ANALYZE`'s `input_rows=` (DataFusion prints `60.18 K` for 60 180).
fn probe_rows(analyzed: &str) -> f64 {
    let join = analyzed.split("HashJoinExec").nth(1).expect("a hash join");
    let value = join.split(", input_rows=").nth(1).expect("its probe rows");
    let mut words = value.split([' ', ',']);
    let number: f64 = words.next().expect("a value").parse().expect("a number");
    match words.next() {
        Some("K") => number * 1e3,
        Some("M") => number * 1e6,
        _ => number,
    }
}

/// A join built whole on one partition whose build side holds more distinct keys than
/// DataFusion hands over as an IN list per partition (150), but no more than its limit
/// times the session's cores (`query_session_config`), still filters its probe scan:
/// on 2 cores, 200-odd orders' keys keep the probe side to their tuples.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_join_of_a_few_hundred_keys_filters_its_probe_scan_on_two_cores() {
    let reference = reference_context();
    let build = "SELECT l_orderkey FROM lineitem WHERE l_orderkey < 800 AND l_linenumber = 1";
    let keys = run(&reference, &format!("SELECT count(*) FROM ({build})")).await;
    let keys: usize = keys[0][0].parse().unwrap();
    assert!((151..=300).contains(&keys), "{keys} keys");
    let sql = format!(
        "SELECT count(*), sum(a.l_quantity) FROM lineitem a JOIN ({build}) b \
         ON a.l_orderkey = b.l_orderkey"
    );
    let want = run(&reference, &sql).await;
    let (name, ctx) = sessions(Layout::Dsm).remove(2);
    assert_eq!(run(&ctx, &sql).await, want, "{name}");
    let analyzed = run(&ctx, &format!("EXPLAIN ANALYZE {sql}"))
        .await
        .concat()
        .join("\n");
    assert!(analyzed.contains("mode=CollectLeft"), "{analyzed}");
    let table_rows = run(&reference, "SELECT count(*) FROM lineitem").await;
    let table_rows: f64 = table_rows[0][0].parse().unwrap();
    let probed = probe_rows(&analyzed);
    assert!(
        probed < table_rows / 10.0,
        "{probed} of {table_rows}: {analyzed}"
    );
}
