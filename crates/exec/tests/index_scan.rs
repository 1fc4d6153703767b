//! Index scans (Clotho's SI-scan): after `CREATE INDEX`, queries whose comparisons
//! constrain an indexed column give the in-memory reference's rows and aggregates in
//! every layout, through Scan and CScan sessions, whether the planner must take the
//! index (`IndexScans::Always`) or may (`Auto`: a selective comparison takes it, a
//! broad one scans); a changed table is scanned, never read through its index, until a
//! checkpoint builds the index again over the merged image;
//! and what cannot be indexed is refused with a clear error.

mod common;

use std::sync::Arc;

use coopscan_exec::{
    plan_read_or_change, query_session, query_session_config, CoopTable, IndexPageCost, IndexScans,
    ScanMode,
};
use coopscan_runtime::{PolicyKind, Runtime, RuntimeConfig};
use coopscan_storage::{Layout, Table};
use coopscan_tpch::{import_table, ImportOptions, TpchTable};
use datafusion::prelude::{SessionConfig, SessionContext};
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

use common::*;

const SEED: u64 = 0x51_5ca9;
const CASES: usize = 16;
const FRAMES: u32 = 6;
const INDEXED: [&str; 3] = ["l_orderkey", "l_shipdate", "l_extendedprice"];

/// lineitem at SF 0.01 in `layout`, in a directory of its own (indexes are written
/// beside the table, so the shared fixture is not used).
fn own_table(dir: &std::path::Path, layout: Layout) -> Table {
    let opts = ImportOptions {
        sf: SF,
        layout,
        chunk_bytes: CHUNK_BYTES,
        out_dir: dir.to_path_buf(),
        overwrite: true,
        threads: 2,
    };
    import_table(TpchTable::Lineitem, &opts, &|_| {}).expect("import lineitem");
    Table::open(&dir.join("lineitem")).expect("open")
}

fn scan_session(table: &Table, mode: IndexScans) -> SessionContext {
    scan_session_with(
        table,
        query_session_config(1).with_extension(Arc::new(mode)),
    )
}

/// A session of in-order Scans of `table` as `lineitem`.
fn scan_session_with(table: &Table, config: SessionConfig) -> SessionContext {
    let provider = CoopTable::new(table.clone(), device(), ScanMode::Scan).expect("scan");
    let ctx = query_session(config);
    ctx.register_table("lineitem", Arc::new(provider))
        .expect("register");
    ctx
}

fn cscan_session(table: &Table, mode: IndexScans) -> SessionContext {
    let config = query_session_config(2).with_extension(Arc::new(mode));
    cscan_session_with(table, PolicyKind::Relevance, config).0
}

/// A session of CScans of `table` as `lineitem` in a buffer of its own under `policy`,
/// and that buffer's runtime.
fn cscan_session_with(
    table: &Table,
    policy: PolicyKind,
    config: SessionConfig,
) -> (SessionContext, Arc<Runtime>) {
    let abm = RuntimeConfig::new(FRAMES, policy);
    let runtime = Arc::new(Runtime::new(table.clone(), device(), abm).expect("runtime"));
    let ctx = query_session(config);
    let provider = CoopTable::cooperative(Arc::clone(&runtime));
    ctx.register_table("lineitem", Arc::new(provider))
        .expect("register");
    (ctx, runtime)
}

/// A narrow range (or point) on an indexed column, sometimes with other conjuncts.
fn predicate(rng: &mut ChaCha8Rng) -> String {
    let indexed = match rng.random_range(0..3) {
        0 => {
            let k = rng.random_range(1..60_000);
            match rng.random_bool(0.5) {
                true => format!("l_orderkey = {k}"),
                false => format!(
                    "l_orderkey BETWEEN {k} AND {}",
                    k + rng.random_range(0..200)
                ),
            }
        }
        1 => {
            let (y, m, d) = (
                rng.random_range(1992..1999),
                rng.random_range(1..13),
                rng.random_range(1..28),
            );
            format!("l_shipdate >= DATE '{y}-{m:02}-{d:02}' AND l_shipdate < DATE '{y}-{m:02}-{d:02}' + INTERVAL '3' DAY")
        }
        _ => {
            let p = rng.random_range(900..100_000);
            format!(
                "l_extendedprice > {p}.50 AND l_extendedprice <= {}.00",
                p + 40
            )
        }
    };
    match rng.random_range(0..4) {
        0 => format!("{indexed} AND l_quantity < 30"),
        1 => format!("{indexed} AND l_returnflag = 'R'"),
        2 => format!("{indexed} AND _rowid >= {}", rng.random_range(0..40_000)),
        _ => indexed,
    }
}

/// The leaf of `sql`'s physical plan, its name, and the row count it tells the planner.
async fn leaf_rows(ctx: &SessionContext, sql: &str) -> (String, Option<usize>) {
    use datafusion::physical_plan::statistics::{StatisticsArgs, StatisticsContext};
    let plan = ctx.sql(sql).await.expect("plan");
    let mut leaf = plan.create_physical_plan().await.expect("physical plan");
    while let Some(child) = leaf.children().first() {
        leaf = Arc::clone(child);
    }
    let stats = StatisticsContext::default().compute(leaf.as_ref(), &StatisticsArgs::new());
    let rows = stats.expect("statistics").num_rows.get_value().copied();
    (leaf.name().to_string(), rows)
}

async fn explain(ctx: &SessionContext, sql: &str) -> String {
    run(ctx, &format!("EXPLAIN {sql}")).await.concat().join(" ")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn index_scans_give_the_references_rows_in_every_layout() {
    let reference = reference_context();
    let mut rng = ChaCha8Rng::seed_from_u64(SEED);
    let queries: Vec<String> = (0..CASES)
        .flat_map(|_| {
            let p = predicate(&mut rng);
            [
                format!("SELECT l_orderkey, l_linenumber, l_shipdate, l_comment, _rowid FROM lineitem WHERE {p}"),
                format!("SELECT count(*), sum(l_extendedprice * l_discount), min(_rowid) FROM lineitem WHERE {p}"),
            ]
        })
        .collect();
    let mut wants = Vec::new();
    let mut nonempty = 0;
    for sql in &queries {
        let want = run(&reference, sql).await;
        nonempty += usize::from(!want.is_empty() && want[0][0] != "0");
        wants.push(want);
    }
    assert!(nonempty > CASES / 2, "{nonempty} queries match rows");
    for layout in Layout::ALL {
        let tmp = tempfile::tempdir().expect("tempdir");
        let table = own_table(tmp.path(), layout);
        let scan = scan_session(&table, IndexScans::Always);
        for column in INDEXED {
            let sql = format!("CREATE INDEX ON lineitem ({column})");
            plan_read_or_change(&scan, &sql)
                .await
                .expect("create index");
        }
        // A session opened after the indexes exist finds them too.
        let cscan = cscan_session(&table, IndexScans::Always);
        for (name, ctx) in [("scan", &scan), ("cscan", &cscan)] {
            for (sql, want) in queries.iter().zip(&wants) {
                assert!(
                    explain(ctx, sql).await.contains("IndexScanExec"),
                    "{layout} {name}: {sql}"
                );
                assert_eq!(&run(ctx, sql).await, want, "{layout} {name}: {sql}");
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_planner_takes_the_index_for_few_rows_and_scans_for_many() {
    let tmp = tempfile::tempdir().expect("tempdir");
    // PAX: a fetched page holds every column, and the scan reads the whole table.
    let table = own_table(tmp.path(), Layout::Pax);
    // A device whose random page read costs what streaming 4 KiB does (flash): at SF
    // 0.01 the table is a few MB, so a disk's 1 MiB per fetch would always scan.
    let cost = Arc::new(IndexPageCost(4096));
    let session = |mode: IndexScans| {
        let config = query_session_config(1).with_extension(Arc::new(mode));
        scan_session_with(&table, config.with_extension(Arc::clone(&cost)))
    };
    let ctx = session(IndexScans::Auto);
    // About 30 rows of 60 000, scattered over the table (l_partkey is not clustered).
    let point = "SELECT l_orderkey, l_partkey FROM lineitem WHERE l_partkey = 77";
    let broad = "SELECT count(*) FROM lineitem WHERE l_partkey >= 100";
    assert!(
        !explain(&ctx, point).await.contains("IndexScanExec"),
        "no index yet"
    );
    plan_read_or_change(&ctx, "CREATE INDEX p ON lineitem (l_partkey)")
        .await
        .expect("index");
    plan_read_or_change(&ctx, "CREATE INDEX IF NOT EXISTS p ON lineitem (l_partkey)")
        .await
        .expect("again");
    assert!(explain(&ctx, point).await.contains("IndexScanExec"));
    assert!(!explain(&ctx, broad).await.contains("IndexScanExec"));
    let never = session(IndexScans::Never);
    assert!(!explain(&never, point).await.contains("IndexScanExec"));
    // At a disk's cost per fetch, even the point query scans this small table.
    let disk = scan_session(&table, IndexScans::Auto);
    assert!(!explain(&disk, point).await.contains("IndexScanExec"));
    let reference = reference_context();
    for sql in [point, broad] {
        assert_eq!(run(&ctx, sql).await, run(&reference, sql).await, "{sql}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_changed_table_is_scanned_until_a_checkpoint_rebuilds_its_index() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let table = own_table(tmp.path(), Layout::Pax);
    let ctx = scan_session(&table, IndexScans::Always);
    plan_read_or_change(&ctx, "CREATE INDEX ON lineitem (l_orderkey)")
        .await
        .expect("index");
    let sql = "SELECT count(*) FROM lineitem WHERE l_orderkey = 7";
    let before = run(&ctx, sql).await;
    assert!(explain(&ctx, sql).await.contains("IndexScanExec"));
    let copy = "INSERT INTO lineitem SELECT * FROM lineitem WHERE l_orderkey = 7";
    plan_read_or_change(&ctx, copy)
        .await
        .expect("plan")
        .collect()
        .await
        .expect("insert");
    assert!(!explain(&ctx, sql).await.contains("IndexScanExec"));
    let n: u64 = before[0][0].parse().expect("count");
    assert!(n > 0);
    assert_eq!(run(&ctx, sql).await, [[(2 * n).to_string()]]);
    // A checkpoint merges the change into a new image and builds its index again (the
    // session, which holds the table's log, is closed first).
    drop(ctx);
    let done = coopscan_exec::delta::checkpoint::checkpoint(table.clone(), device())
        .await
        .expect("checkpoint");
    assert_eq!(done.rows_after, table.rows() + n);
    assert!(done.lost_indexes.is_empty(), "{:?}", done.lost_indexes);
    let merged = Table::open(table.dir()).expect("reopen");
    let ctx = scan_session(&merged, IndexScans::Always);
    assert!(explain(&ctx, sql).await.contains("IndexScanExec"));
    assert_eq!(run(&ctx, sql).await, [[(2 * n).to_string()]]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_cannot_be_indexed_is_refused_clearly() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let table = own_table(tmp.path(), Layout::Csm);
    let ctx = scan_session(&table, IndexScans::Auto);
    for (sql, says) in [
        ("CREATE INDEX ON lineitem (l_comment)", "only integer"),
        ("CREATE INDEX ON lineitem (l_nosuch)", "no stored column"),
        (
            "CREATE INDEX ON lineitem (l_orderkey, l_partkey)",
            "exactly one",
        ),
        (
            "CREATE UNIQUE INDEX ON lineitem (l_orderkey)",
            "plain index",
        ),
        ("CREATE INDEX ON nosuch (l_orderkey)", "nosuch"),
    ] {
        let err = plan_read_or_change(&ctx, sql)
            .await
            .expect_err(sql)
            .to_string();
        assert!(err.contains(says), "{sql}: {err}");
    }
}

/// A selection of a row or two: at a disk's cost per fetch, reading the one or two
/// chunks holding them beats fetching their pages, so the scan reads only those chunks
/// (the index prunes what zonemaps cannot: prices are not clustered).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_few_rows_scattered_read_only_their_chunks() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let table = own_table(tmp.path(), Layout::Pax);
    let ctx = scan_session(&table, IndexScans::Auto);
    plan_read_or_change(&ctx, "CREATE INDEX ON lineitem (l_extendedprice)")
        .await
        .expect("index");
    let reference = reference_context();
    let price = run(
        &reference,
        "SELECT l_extendedprice FROM lineitem WHERE _rowid = 30000",
    )
    .await;
    let price = &price[0][0];
    let sql = &format!(
        "SELECT l_orderkey, l_extendedprice, _rowid FROM lineitem WHERE l_extendedprice = {price}"
    );
    let want = run(&reference, sql).await;
    assert!(!want.is_empty() && want.len() <= 4, "{want:?}");
    let plan = explain(&ctx, sql).await;
    assert!(!plan.contains("IndexScanExec"), "{plan}");
    let rows: u64 = plan
        .split("rows=")
        .nth(1)
        .and_then(|r| r.split(|c: char| !c.is_ascii_digit()).next())
        .and_then(|n| n.parse().ok())
        .expect("rows= in the plan");
    assert!(
        rows < table.rows() / 4,
        "{rows} of {} rows scanned: {plan}",
        table.rows()
    );
    assert_eq!(run(&ctx, sql).await, want);
}

/// Four concurrent selections of about 5 % each (past the break-even: most pages hold a
/// selected tuple) in one cooperative session: fetched page by page they read the table
/// about once each; through the Active Buffer Manager, which loads each chunk for all
/// of them, fewer bytes in all. Either way every query gets the reference's answer
/// (no tuple twice).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn index_selections_through_the_abm_read_fewer_bytes_past_the_break_even() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let table = own_table(tmp.path(), Layout::Pax);
    let scan = scan_session(&table, IndexScans::Always);
    plan_read_or_change(&scan, "CREATE INDEX ON lineitem (l_extendedprice)")
        .await
        .expect("index");
    let reference = reference_context();
    let queries: Vec<String> = [10_000, 25_000, 40_000, 55_000]
        .iter()
        .map(|lo| {
            format!(
                "SELECT count(*), sum(l_quantity), min(_rowid), max(_rowid) FROM lineitem \
                 WHERE l_extendedprice >= {lo} AND l_extendedprice < {}",
                lo + 4_000
            )
        })
        .collect();
    let mut bytes = Vec::new();
    for mode in [IndexScans::Always, IndexScans::Auto] {
        let config = query_session_config(2).with_extension(Arc::new(mode));
        let (ctx, runtime) = cscan_session_with(&table, PolicyKind::Relevance, config);
        let uses_index = explain(&ctx, &queries[0]).await.contains("IndexScanExec");
        assert_eq!(uses_index, mode == IndexScans::Always, "{mode:?}");
        let runs = queries.iter().map(|sql| run(&ctx, sql));
        let answers = futures::future::join_all(runs).await;
        for (sql, got) in queries.iter().zip(answers) {
            assert_eq!(got, run(&reference, sql).await, "{mode:?}: {sql}");
        }
        bytes.push(runtime.device_stats().bytes);
    }
    let table_bytes: u64 = (0..table.chunk_count())
        .map(|k| {
            table
                .chunk_extents(k, &[0])
                .iter()
                .map(|e| e.len)
                .sum::<u64>()
        })
        .sum();
    let (fetched, through_abm) = (bytes[0], bytes[1]);
    eprintln!("bytes read: fetched {fetched}, through the ABM {through_abm}, table {table_bytes}");
    assert!(
        fetched > 2 * table_bytes,
        "fetched {fetched} of a {table_bytes}-byte table"
    );
    assert!(
        through_abm < fetched,
        "through the ABM {through_abm}, fetched {fetched}"
    );
}

/// A damaged leaf never fails a query: the lookup that meets it drops the index and the
/// table is scanned, with the reference's answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_damaged_index_is_dropped_and_the_table_scanned() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let table = own_table(tmp.path(), Layout::Dsm);
    let ctx = scan_session(&table, IndexScans::Always);
    plan_read_or_change(&ctx, "CREATE INDEX ON lineitem (l_partkey)")
        .await
        .expect("index");
    let path = coopscan_storage::index::index_path(table.dir(), 1);
    let mut bytes = std::fs::read(&path).expect("index file");
    for leaf in bytes.chunks_mut(4096).take(60_175 / 255) {
        leaf[100] ^= 0x10;
    }
    std::fs::write(&path, bytes).expect("damage");
    let ctx = scan_session(&table, IndexScans::Always);
    let sql = "SELECT count(*), sum(l_quantity) FROM lineitem WHERE l_partkey = 77";
    assert!(!explain(&ctx, sql).await.contains("IndexScanExec"));
    assert_eq!(run(&ctx, sql).await, run(&reference_context(), sql).await);
}

/// Index selections read through the ABM (`IndexPlan::Chunks`: only the chunks holding
/// rows the index names) under every policy, all at once in one buffer: each query gets
/// the reference's answer, nothing twice.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn index_selections_through_the_abm_are_right_under_every_policy() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let table = own_table(tmp.path(), Layout::Dsm);
    let scan = scan_session(&table, IndexScans::Auto);
    plan_read_or_change(&scan, "CREATE INDEX ON lineitem (l_partkey)")
        .await
        .expect("index");
    let reference = reference_context();
    let queries: Vec<String> = [77, 501, 1234, 1999]
        .iter()
        .map(|p| {
            format!(
                "SELECT count(*), sum(l_quantity), min(_rowid), max(_rowid) FROM lineitem \
                 WHERE l_partkey BETWEEN {p} AND {}",
                p + 1
            )
        })
        .collect();
    let mut wants = Vec::new();
    for sql in &queries {
        wants.push(run(&reference, sql).await);
    }
    // A disk on which a page fetch costs more than any chunk: the index only prunes.
    let cost = Arc::new(IndexPageCost(1 << 30));
    for policy in PolicyKind::ALL {
        let config = query_session_config(2).with_extension(Arc::new(IndexScans::Auto));
        let config = config.with_extension(Arc::clone(&cost));
        let (ctx, _runtime) = cscan_session_with(&table, policy, config);
        let plan = explain(&ctx, &queries[0]).await;
        assert!(
            plan.contains("CScanExec") && !plan.contains(&format!("rows={}", table.rows())),
            "{policy}: {plan}"
        );
        let answers = futures::future::join_all(queries.iter().map(|sql| run(&ctx, sql))).await;
        for ((sql, want), got) in queries.iter().zip(&wants).zip(answers) {
            assert_eq!(&got, want, "{policy}: {sql}");
        }
    }
}

/// Row layouts: index selections through the ABM name the pages of their rows, so a
/// chunk only they need is read as the union of those pages (the 2004 report's scatter
/// read). On NSM and PAX with 1 MiB chunks (16 pages), under every policy: four
/// selections of a few orders at once (lineitem is in order-key order, so each needs a
/// page or two of a chunk; two share a chunk; order keys run in blocks of 8 of every
/// 32, so each range holds orders), then four point selections on the part
/// key (rows spread over every chunk). Every answer (rows included, so none twice) is
/// the reference's; the order selections' loads are scattered, and the pool keeps
/// fewer bytes than their chunks hold.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn index_selections_read_only_their_pages_of_a_chunk_only_they_need() {
    let reference = reference_context();
    let select = "SELECT _rowid, l_quantity, l_extendedprice FROM lineitem WHERE";
    let orders: Vec<String> = [100, 130, 30_017, 59_009]
        .iter()
        .map(|k| format!("{select} l_orderkey BETWEEN {k} AND {}", k + 7))
        .collect();
    let parts: Vec<String> = [77, 501, 1234, 1999]
        .iter()
        .map(|p| format!("{select} l_partkey = {p}"))
        .collect();
    // Unordered (an ORDER BY _rowid would make it an in-order Scan): sorted here.
    let sorted = |mut rows: Vec<Vec<String>>| {
        rows.sort();
        rows
    };
    let mut wants = Vec::new();
    for sql in orders.iter().chain(&parts) {
        wants.push(sorted(run(&reference, sql).await));
    }
    let cost = Arc::new(IndexPageCost(1 << 30));
    for layout in [Layout::Nsm, Layout::Pax] {
        let tmp = tempfile::tempdir().expect("tempdir");
        let opts = ImportOptions {
            sf: SF,
            layout,
            chunk_bytes: 1 << 20,
            out_dir: tmp.path().to_path_buf(),
            overwrite: true,
            threads: 2,
        };
        import_table(TpchTable::Lineitem, &opts, &|_| {}).expect("import lineitem");
        let table = Table::open(&tmp.path().join("lineitem")).expect("open");
        let scan = scan_session(&table, IndexScans::Auto);
        for column in ["l_orderkey", "l_partkey"] {
            plan_read_or_change(&scan, &format!("CREATE INDEX ON lineitem ({column})"))
                .await
                .expect("index");
        }
        let chunk_bytes = table.chunk(0).columns[0].extent.len;
        for policy in PolicyKind::ALL {
            let config = query_session_config(2).with_extension(Arc::new(IndexScans::Auto));
            let config = config.with_extension(Arc::clone(&cost));
            let (ctx, runtime) = cscan_session_with(&table, policy, config);
            let got = futures::future::join_all(orders.iter().map(|sql| run(&ctx, sql))).await;
            let stats = runtime.abm_stats();
            assert!(stats.deliveries >= 3, "{layout:?} {policy}: {stats:?}");
            let more = futures::future::join_all(parts.iter().map(|sql| run(&ctx, sql))).await;
            let got = got.into_iter().chain(more);
            for ((sql, want), got) in orders.iter().chain(&parts).zip(&wants).zip(got) {
                assert_eq!(&sorted(got), want, "{layout:?} {policy}: {sql}");
            }
            assert!(stats.scatter_loads > 0, "{layout:?} {policy}: {stats:?}");
            assert!(
                stats.bytes_loaded < stats.loads * chunk_bytes,
                "{layout:?} {policy}: {stats:?}, chunks of {chunk_bytes} bytes"
            );
        }
    }
}

/// An index scan tells the planner the rows it fetched, not the scan's estimate: prices
/// are skewed (most are low), so the zonemaps' even spread over-estimates a high range
/// several times over, while the index knows its rows.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_index_scan_tells_the_planner_the_rows_it_fetched() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let table = own_table(tmp.path(), Layout::Pax);
    let ctx = scan_session(&table, IndexScans::Always);
    plan_read_or_change(&ctx, "CREATE INDEX ON lineitem (l_extendedprice)")
        .await
        .expect("index");
    let sql = "SELECT l_orderkey FROM lineitem WHERE l_extendedprice > 90000";
    let count = sql.replace("l_orderkey FROM", "count(*) FROM");
    let want: usize = run(&reference_context(), &count).await[0][0]
        .parse()
        .expect("count");
    let (leaf, fetched) = leaf_rows(&ctx, sql).await;
    assert_eq!(leaf, "IndexScanExec");
    assert!(fetched.is_some_and(|n| n <= want), "{fetched:?} of {want}");
    let (leaf, scanned) = leaf_rows(&scan_session(&table, IndexScans::Never), sql).await;
    assert_eq!(leaf, "ScanExec");
    assert!(
        scanned.is_some_and(|n| n > 2 * want),
        "the scan's estimate {scanned:?} of {want}"
    );
}
