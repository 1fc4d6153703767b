//! INSERT, DELETE and UPDATE on coopscan tables (changes kept in a Positional Delta Tree,
//! merged into every scan) against the same statements on DataFusion's `MemTable` over
//! tpchgen's batches in memory: every query after the changes returns the same rows, as
//! a Scan, as CScans under several policies and as parallel CScans, over NSM and DSM;
//! `_rowid` is the row's position in the changed table.

mod common;

use std::sync::Arc;

use coopscan_exec::{CoopTable, ScanMode, ScanWorkers};
use coopscan_runtime::{PolicyKind, Runtime, RuntimeConfig};
use coopscan_storage::{Layout, Table};
use datafusion::physical_plan::collect;
use datafusion::prelude::{SessionConfig, SessionContext};

use common::*;

/// Few frames relative to the table's chunks, so scans evict and share.
const FRAMES: u32 = 6;

const COLUMNS: &str = LINEITEM_COLUMNS;

/// The changes, in order: deletes spread over the table, an update of many rows
/// (including a sort of value no zonemap knows), inserts in the middle of nothing (they
/// append), an update and a delete that touch inserted rows.
fn statements() -> Vec<String> {
    vec![
        "DELETE FROM lineitem WHERE l_orderkey % 7 = 3".into(),
        "UPDATE lineitem SET l_quantity = l_quantity + 1, l_returnflag = 'X' WHERE l_suppkey < 20".into(),
        "UPDATE lineitem SET l_shipdate = DATE '2001-01-01' WHERE l_orderkey = 5".into(),
        format!(
            "INSERT INTO lineitem ({COLUMNS}) VALUES \
             (900000001, 1, 2, 1, 17.00, 1000.50, 0.05, 0.02, 'N', 'O', DATE '1996-03-13', DATE '1996-02-12', DATE '1996-03-22', 'NONE', 'AIR', 'first new'), \
             (900000002, 7, 3, 2, 36.00, 2000.00, 0.09, 0.06, 'R', 'F', DATE '2002-02-02', DATE '1996-02-28', DATE '1996-04-20', 'NONE', 'MAIL', 'second new'), \
             (900000003, 9, 4, 3, 8.00, 300.25, 0.10, 0.02, 'A', 'F', DATE '1994-01-29', DATE '1994-03-05', DATE '1994-01-31', 'NONE', 'SHIP', 'third new')"
        ),
        "UPDATE lineitem SET l_comment = 'changed twice' WHERE l_orderkey = 900000002 OR l_suppkey < 5".into(),
        "DELETE FROM lineitem WHERE l_orderkey = 900000003 OR l_partkey % 11 = 0".into(),
    ]
}

/// Queries after the changes: aggregates, zonemap-prunable filters that only changed
/// rows match (comparisons and string lists), whole rows.
fn queries() -> Vec<String> {
    vec![
        "SELECT count(*), sum(l_quantity), sum(l_extendedprice) FROM lineitem".into(),
        "SELECT l_returnflag, l_linestatus, count(*), sum(l_quantity), avg(l_discount) FROM lineitem GROUP BY 1, 2".into(),
        "SELECT l_orderkey, l_linenumber, l_comment FROM lineitem WHERE l_shipdate > DATE '1999-01-01'".into(),
        "SELECT count(*) FROM lineitem WHERE l_orderkey > 800000000".into(),
        format!("SELECT {COLUMNS} FROM lineitem WHERE l_suppkey < 6"),
        // String lists the scan evaluates, on values only changed rows hold.
        "SELECT l_orderkey, l_linenumber FROM lineitem WHERE l_returnflag = 'X' AND l_shipmode IN ('AIR', 'MAIL')".into(),
        "SELECT count(*) FROM lineitem WHERE l_comment = 'changed twice' OR l_comment = 'first new'".into(),
    ]
}

fn reference() -> SessionContext {
    let ctx = SessionContext::new_with_config(SessionConfig::new().with_target_partitions(1));
    ctx.register_table("lineitem", lineitem_memtable())
        .expect("register");
    ctx
}

/// `count` of each statement on `ctx`.
async fn change(ctx: &SessionContext) -> Vec<Vec<Vec<String>>> {
    run_each(ctx, &statements()).await
}

async fn answers(ctx: &SessionContext) -> Vec<Vec<Vec<String>>> {
    run_each(ctx, &queries()).await
}

/// The whole table in `_rowid` order (ours) must be the reference's rows in its order.
async fn in_rowid_order(ctx: &SessionContext) -> (Vec<Vec<String>>, Vec<i64>) {
    let sql = format!("SELECT {COLUMNS}, _rowid FROM lineitem ORDER BY _rowid");
    let batches = ctx
        .sql(&sql)
        .await
        .expect("plan")
        .collect()
        .await
        .expect("run");
    let mut rows = Vec::new();
    let mut ids = Vec::new();
    for b in &batches {
        let rowid = b.column(b.num_columns() - 1);
        let rowid = rowid
            .as_any()
            .downcast_ref::<datafusion::arrow::array::Int64Array>()
            .expect("int64");
        ids.extend(rowid.values().iter().copied());
        let without = b
            .project(&(0..b.num_columns() - 1).collect::<Vec<_>>())
            .expect("project");
        rows.extend(unsorted(&without));
    }
    (rows, ids)
}

fn unsorted(batch: &datafusion::arrow::array::RecordBatch) -> Vec<Vec<String>> {
    use datafusion::arrow::util::display::{ArrayFormatter, FormatOptions};
    let options = FormatOptions::default();
    let formatters: Vec<ArrayFormatter> = batch
        .columns()
        .iter()
        .map(|c| ArrayFormatter::try_new(c.as_ref(), &options).expect("fmt"))
        .collect();
    (0..batch.num_rows())
        .map(|r| formatters.iter().map(|f| f.value(r).to_string()).collect())
        .collect()
}

async fn reference_in_order(ctx: &SessionContext) -> Vec<Vec<String>> {
    let batches = ctx
        .sql(&format!("SELECT {COLUMNS} FROM lineitem"))
        .await
        .expect("plan")
        .collect()
        .await
        .expect("run");
    batches.iter().flat_map(unsorted).collect()
}

/// A copy of the shared fixture's `layout` table that this test may change (its delta
/// log is written into the table's directory).
fn private_table(layout: Layout) -> (tempfile::TempDir, Table) {
    let shared = table(layout);
    let dir = tempfile::tempdir().expect("tempdir");
    for entry in std::fs::read_dir(shared.dir()).expect("read dir") {
        let entry = entry.expect("entry");
        std::fs::copy(entry.path(), dir.path().join(entry.file_name())).expect("copy");
    }
    let copy = Table::open(dir.path()).expect("open copy");
    (dir, copy)
}

/// A session whose `lineitem` is read by CScans of `workers` workers under relevance.
fn relevance_session(table: Table, workers: usize) -> SessionContext {
    let config = RuntimeConfig::new(FRAMES, PolicyKind::Relevance);
    let runtime = Runtime::new(table, device(), config).expect("runtime");
    session(CoopTable::cooperative(Arc::new(runtime)), workers)
}

fn session(provider: CoopTable, workers: usize) -> SessionContext {
    let config = SessionConfig::new().with_extension(Arc::new(ScanWorkers(workers)));
    let ctx = SessionContext::new_with_config(config);
    ctx.register_table("lineitem", Arc::new(provider))
        .expect("register");
    ctx
}

async fn check(
    ctx: &SessionContext,
    want_counts: &[Vec<Vec<String>>],
    want: &[Vec<Vec<String>>],
    want_order: &[Vec<String>],
    what: &str,
) {
    assert_eq!(&change(ctx).await, want_counts, "{what}: rows changed");
    assert_eq!(&answers(ctx).await, want, "{what}: answers");
    let (rows, ids) = in_rowid_order(ctx).await;
    assert_eq!(
        ids,
        (0..ids.len() as i64).collect::<Vec<_>>(),
        "{what}: _rowid is the position"
    );
    assert!(
        rows == want_order,
        "{what}: the table in _rowid order differs from the reference's order"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn changes_match_memtable_under_scan_and_cscans() {
    let reference = reference();
    let want_counts = change(&reference).await;
    let want = answers(&reference).await;
    let want_order = reference_in_order(&reference).await;
    assert!(
        want[2].len() >= 2,
        "the date query must see changed rows only: {:?}",
        want[2]
    );

    for layout in [Layout::Nsm, Layout::Dsm] {
        // Every run changes its own copy of the stable table (and its own delta log).
        let (_dir, table) = private_table(layout);
        let scan = CoopTable::new(table.clone(), device(), ScanMode::Scan).expect("provider");
        check(
            &session(scan, 1),
            &want_counts,
            &want,
            &want_order,
            &format!("{layout:?} Scan"),
        )
        .await;
        for (policy, workers) in [
            (PolicyKind::Relevance, 1),
            (PolicyKind::Pbm, 1),
            (PolicyKind::Relevance, 3),
            (PolicyKind::Normal, 2),
        ] {
            let (_dir, table) = private_table(layout);
            let runtime = Runtime::new(table.clone(), device(), RuntimeConfig::new(FRAMES, policy))
                .expect("runtime");
            let provider = CoopTable::cooperative(Arc::new(runtime));
            let what = format!("{layout:?} CScan {policy:?} x{workers}");
            check(
                &session(provider, workers),
                &want_counts,
                &want,
                &want_order,
                &what,
            )
            .await;
        }
    }
}

/// Snapshot isolation for a statement: a plan made before a DELETE is published reads
/// the table as it was when the plan was made, and a plan made after reads the change.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scan_planned_before_a_change_sees_the_old_rows() {
    let (_dir, table) = private_table(Layout::Dsm);
    let provider = CoopTable::new(table.clone(), device(), ScanMode::Scan).expect("provider");
    let ctx = session(provider, 1);
    let sql = "SELECT count(*), sum(l_orderkey) FROM lineitem WHERE l_comment <> ''";
    let before = run(&ctx, sql).await;
    let planned = ctx
        .sql(sql)
        .await
        .expect("plan")
        .create_physical_plan()
        .await
        .expect("physical plan");
    assert_eq!(
        run(&ctx, "DELETE FROM lineitem WHERE l_orderkey < 1000")
            .await
            .len(),
        1
    );
    let old = canonical(&collect(planned, ctx.task_ctx()).await.expect("run"));
    assert_eq!(old, before, "a plan made before the DELETE");
    let after = run(&ctx, sql).await;
    assert_ne!(after, before, "a plan made after the DELETE");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_changes_are_clear_errors_and_change_nothing() {
    let (_dir, table) = private_table(Layout::Nsm);
    let provider = CoopTable::new(table.clone(), device(), ScanMode::Scan).expect("provider");
    let ctx = session(provider, 1);
    let nulls = format!("INSERT INTO lineitem ({COLUMNS}) SELECT {COLUMNS} FROM lineitem WHERE l_orderkey < 10 UNION ALL SELECT NULL, l_partkey, l_suppkey, l_linenumber, l_quantity, l_extendedprice, l_discount, l_tax, l_returnflag, l_linestatus, l_shipdate, l_commitdate, l_receiptdate, l_shipinstruct, l_shipmode, l_comment FROM lineitem WHERE l_orderkey = 1");
    for (sql, says) in [
        (nulls.as_str(), "null"),
        ("UPDATE lineitem SET _rowid = 5", "_rowid"),
        (
            "UPDATE lineitem SET l_comment = NULL WHERE l_orderkey = 1",
            "cannot be NULL",
        ),
        ("UPDATE lineitem SET nope = 1", "nope"),
    ] {
        let err = try_run(&ctx, sql).await.expect_err(sql);
        assert!(err.contains(says), "{sql}: {err}");
    }
    assert_eq!(
        run(&ctx, "SELECT count(*) FROM lineitem").await,
        vec![vec![table.rows().to_string()]]
    );
}

/// Committed changes are in the table's delta log: a provider opened later (a new
/// session, a new process) sees them, under a Scan and under CScans; a damaged log makes
/// scans fail rather than answer without the changes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn changes_outlive_their_session() {
    let reference = reference();
    change(&reference).await;
    let want = answers(&reference).await;
    let (_dir, table) = private_table(Layout::Dsm);
    let first = CoopTable::new(table.clone(), device(), ScanMode::Scan).expect("provider");
    change(&session(first, 1)).await;
    let reopened = Table::open(table.dir()).expect("reopen");
    let scan = CoopTable::new(reopened.clone(), device(), ScanMode::Scan).expect("provider");
    assert_eq!(answers(&session(scan, 1)).await, want, "a new Scan session");
    let cscan = relevance_session(reopened.clone(), 2);
    assert_eq!(answers(&cscan).await, want, "a new CScan session");

    let log = table.dir().join(coopscan_exec::delta::LOG_FILE);
    let mut bytes = std::fs::read(&log).expect("read log");
    bytes[10] ^= 0x55;
    std::fs::write(&log, bytes).expect("write log");
    let damaged = CoopTable::new(reopened, device(), ScanMode::Scan).expect("provider");
    let err = try_run(
        &session(damaged, 1),
        "SELECT count(*) FROM lineitem WHERE l_comment <> ''",
    )
    .await
    .expect_err("damaged log");
    assert!(
        err.contains("delta.log") && err.contains("changes cannot be read"),
        "{err}"
    );
}

/// A log's successor left by a crashed bulk append is settled when the table is opened:
/// moved over the log when it belongs to the table's image (the append committed), else
/// dropped (it did not); either way the committed changes are read.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crashed_appends_log_successor_is_settled_on_open() {
    let reference = reference();
    change(&reference).await;
    let want = answers(&reference).await;
    let (_dir, table) = private_table(Layout::Pax);
    let first = CoopTable::new(table.clone(), device(), ScanMode::Scan).expect("provider");
    change(&session(first, 1)).await;
    let log = table.dir().join(coopscan_exec::delta::LOG_FILE);
    let next = coopscan_delta::log::successor_path(&log);
    // The image's own successor: the log moved there, as between the manifest's
    // rename and the move.
    std::fs::rename(&log, &next).expect("move");
    let opened = CoopTable::new(table.clone(), device(), ScanMode::Scan).expect("provider");
    assert_eq!(answers(&session(opened, 1)).await, want, "moved back");
    assert!(log.exists() && !next.exists());
    // Another image's successor (its header names other stable rows): dropped.
    let mut foreign = std::fs::read(&log).expect("read log");
    foreign[8] ^= 0x01;
    std::fs::write(&next, foreign).expect("write");
    let opened = CoopTable::new(table, device(), ScanMode::Scan).expect("provider");
    assert_eq!(answers(&session(opened, 1)).await, want, "kept");
    assert!(log.exists() && !next.exists());
}

/// A checkpoint writes the table with its changes merged as the new stable image: no
/// log left, the same answers and order as the reference, zonemaps that describe the new
/// data; a second checkpoint has nothing to do.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_checkpoint_merges_the_changes_into_a_new_image() {
    use coopscan_exec::delta::checkpoint::checkpoint;
    let reference = reference();
    change(&reference).await;
    let want = answers(&reference).await;
    let want_order = reference_in_order(&reference).await;
    for layout in [Layout::Nsm, Layout::Dsm] {
        let (_dir, table) = private_table(layout);
        let provider = CoopTable::new(table.clone(), device(), ScanMode::Scan).expect("provider");
        change(&session(provider, 1)).await;
        let done = checkpoint(table.clone(), device())
            .await
            .expect("checkpoint");
        assert!(
            done.changes > 0 && done.rows_after == want_order.len() as u64,
            "{layout:?}: {done:?}"
        );
        assert!(
            !table.dir().join(coopscan_exec::delta::LOG_FILE).exists(),
            "{layout:?}: the log went with the old image"
        );
        let merged = Table::open(table.dir()).expect("reopen");
        assert_eq!(merged.rows(), want_order.len() as u64);
        assert_eq!(merged.manifest().layout, layout);
        let files = merged.open_files(&device()).expect("files");
        let all: Vec<usize> = (0..merged.schema().len()).collect();
        for k in 0..merged.chunk_count() {
            let batch = merged
                .read_chunk_batch(&device(), &files, k, &all, None)
                .expect("chunk");
            merged
                .check_chunk_contents(k, &batch)
                .expect("zonemaps describe the new data");
        }
        let scan = CoopTable::new(merged.clone(), device(), ScanMode::Scan).expect("provider");
        let ctx = session(scan, 1);
        assert_eq!(
            answers(&ctx).await,
            want,
            "{layout:?}: answers after the checkpoint"
        );
        assert!(
            in_rowid_order(&ctx).await.0 == want_order,
            "{layout:?}: order after the checkpoint"
        );
        let cscan = relevance_session(merged.clone(), 2);
        let what = format!("{layout:?}: CScans after the checkpoint");
        assert_eq!(answers(&cscan).await, want, "{what}");
        let again = checkpoint(merged, device())
            .await
            .expect("second checkpoint");
        assert_eq!(again.changes, 0);
        let log = table.dir().join(coopscan_exec::delta::LOG_FILE);
        assert!(!log.exists(), "{layout:?}: no log made");
    }
}

/// `CHECKPOINT` in a session, from storage and through the shared buffer: a query
/// planned before it still answers from the old image and its changes (whose files the
/// checkpoint has replaced), a query after it reads the new image with no changes left
/// to merge; both equal the reference. In the shared buffer the old image is a version
/// of its own until the old plan is gone (2012 §2.1, case (iv)).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_checkpoint_in_a_session_serves_plans_of_both_images() {
    use coopscan_buffer::TableId;
    use coopscan_exec::{query_session, query_session_config};
    let reference = reference();
    change(&reference).await;
    let want = answers(&reference).await;
    let rows = reference_in_order(&reference).await.len();
    for cooperative in [false, true] {
        let what = if cooperative { "CScans" } else { "Scan" };
        let (_dir, table) = private_table(Layout::Dsm);
        let runtime = cooperative.then(|| {
            let config = RuntimeConfig::new(FRAMES, PolicyKind::Relevance);
            Arc::new(Runtime::new(table.clone(), device(), config).expect("runtime"))
        });
        let provider = match &runtime {
            Some(runtime) => CoopTable::cooperative(Arc::clone(runtime)),
            None => CoopTable::new(table.clone(), device(), ScanMode::Scan).expect("provider"),
        };
        let ctx = query_session(query_session_config(2));
        ctx.register_table("lineitem", Arc::new(provider))
            .expect("register");
        for sql in statements() {
            statement(&ctx, &sql).await.expect("change");
        }
        let planned = ctx.sql(&queries()[0]).await.expect("plan before");
        statement(&ctx, "BEGIN").await.expect("begin");
        let in_transaction = statement(&ctx, "CHECKPOINT").await;
        assert!(
            in_transaction.is_err(),
            "{what}: a checkpoint in a transaction"
        );
        statement(&ctx, "ROLLBACK").await.expect("rollback");
        let unknown = statement(&ctx, "CHECKPOINT nosuchtable").await;
        assert!(unknown.is_err(), "{what}: a checkpoint of no table");
        let done = statement(&ctx, "CHECKPOINT lineitem")
            .await
            .expect("checkpoint");
        assert_eq!(done.len(), 1, "{what}: {done:?}");
        assert_eq!(done[0][0], "lineitem");
        assert!(done[0][1].parse::<u64>().expect("changes") > 0, "{what}");
        assert_eq!(done[0][2], rows.to_string(), "{what}");
        assert_eq!(stable_rows(&table), rows as u64, "{what}: the new image");
        let log = table.dir().join(coopscan_exec::delta::LOG_FILE);
        assert!(!log.exists(), "{what}: the log went with the old image");
        if let Some(runtime) = &runtime {
            assert_eq!(runtime.tables().len(), 2, "the old version is held");
        }
        assert_eq!(answers(&ctx).await, want, "{what}: after the checkpoint");
        let old = canonical(&planned.collect().await.expect("the old plan"));
        assert_eq!(old, want[0], "{what}: planned before the checkpoint");
        if let Some(runtime) = &runtime {
            assert!(
                runtime.table_at(TableId(0)).is_none(),
                "the old version is freed"
            );
            assert_eq!(runtime.tables().len(), 1);
            runtime.check_invariants().expect("invariants");
        }
        // Nothing left to merge: nothing written, the provider kept.
        let again = statement(&ctx, "CHECKPOINT").await.expect("checkpoint");
        assert_eq!(
            again,
            vec![vec!["lineitem".to_string(), "0".into(), rows.to_string()]]
        );
        assert_eq!(
            answers(&ctx).await,
            want,
            "{what}: after a checkpoint of nothing"
        );
    }
}

/// A `query_session` over `provider` as `lineitem`: it has a transaction slot.
fn transactional(provider: CoopTable) -> SessionContext {
    let ctx = coopscan_exec::query_session(SessionConfig::new());
    ctx.register_table("lineitem", Arc::new(provider))
        .expect("register");
    ctx
}

const COUNT: &str = "SELECT count(*) FROM lineitem WHERE l_comment <> ''";

/// BEGIN … ROLLBACK | COMMIT (order keys 1024-1031 exist at SF 0.01): a session reads its
/// own uncommitted changes, another session does not; ROLLBACK drops them, COMMIT makes
/// them visible and durable; a transaction reads BEGIN's snapshot; of two changes of one
/// row the later committer is aborted, naming the row and the table; misuse is a clear
/// error.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn transactions_see_their_own_changes_and_commit_whole() {
    let (_dir, table) = private_table(Layout::Dsm);
    let provider = CoopTable::new(table.clone(), device(), ScanMode::Scan).expect("provider");
    let (a, b) = (transactional(provider.clone()), transactional(provider));
    let all = vec![vec![table.rows().to_string()]];
    statement(&a, "BEGIN").await.expect("begin");
    statement(&a, "DELETE FROM lineitem WHERE l_orderkey < 1000")
        .await
        .expect("delete");
    statement(
        &a,
        "UPDATE lineitem SET l_comment = 'tx' WHERE l_orderkey = 1024",
    )
    .await
    .expect("update");
    let inside = statement(&a, COUNT).await.expect("count");
    assert_ne!(inside, all, "a transaction reads its own changes");
    assert_eq!(
        statement(&b, COUNT).await.expect("count"),
        all,
        "another session does not"
    );
    statement(&a, "ROLLBACK").await.expect("rollback");
    assert_eq!(
        statement(&a, COUNT).await.expect("count"),
        all,
        "rolled back"
    );

    statement(&a, "BEGIN").await.expect("begin");
    statement(&a, "DELETE FROM lineitem WHERE l_orderkey < 1000")
        .await
        .expect("delete");
    statement(&a, "COMMIT").await.expect("commit");
    assert_eq!(
        statement(&b, COUNT).await.expect("count"),
        inside,
        "committed"
    );
    let reopened = CoopTable::new(
        Table::open(table.dir()).expect("open"),
        device(),
        ScanMode::Scan,
    )
    .expect("provider");
    assert_eq!(
        statement(&transactional(reopened), COUNT)
            .await
            .expect("count"),
        inside,
        "durable"
    );

    // A change committed by another session after BEGIN is not in the snapshot.
    let before_b = statement(&a, COUNT).await.expect("count");
    statement(&a, "BEGIN").await.expect("begin");
    statement(&b, "DELETE FROM lineitem WHERE l_orderkey = 1027")
        .await
        .expect("autocommit");
    assert_eq!(
        statement(&a, COUNT).await.expect("count"),
        before_b,
        "the snapshot is BEGIN's"
    );
    // A row the later committer changed was changed first by another: aborted, naming
    // the row by its `_rowid` in the snapshot.
    let rowids = statement(&a, "SELECT _rowid FROM lineitem WHERE l_orderkey = 1024")
        .await
        .expect("rowids");
    statement(
        &a,
        "UPDATE lineitem SET l_comment = 'a' WHERE l_orderkey = 1024",
    )
    .await
    .expect("update");
    statement(&b, "DELETE FROM lineitem WHERE l_orderkey = 1024")
        .await
        .expect("autocommit");
    let lost = statement(&a, "COMMIT")
        .await
        .expect_err("the later committer");
    let named = rowids
        .iter()
        .any(|r| lost.contains(&format!("_rowid {} ", r[0])));
    assert!(
        lost.contains("transaction aborted")
            && named
            && lost.contains(&table.dir().display().to_string()),
        "{lost}"
    );
    let after_b = statement(&b, COUNT).await.expect("count");
    assert_eq!(
        statement(&a, COUNT).await.expect("count"),
        after_b,
        "the aborted transaction left nothing"
    );

    for (sql, says) in [("COMMIT", "no transaction"), ("ROLLBACK", "no transaction")] {
        let err = statement(&a, sql).await.expect_err(sql);
        assert!(err.contains(says), "{sql}: {err}");
    }
    statement(&a, "BEGIN").await.expect("begin");
    assert!(statement(&a, "BEGIN")
        .await
        .expect_err("nested")
        .contains("already open"));
}

/// Two transactions changing different rows of one table, both open at once: the later
/// committer's changes are serialized past the first's and both commit. The result,
/// read whole in `_rowid` order (as a Scan and as CScans), is the reference's after the
/// first committer's statements and then the second's (each appends after the other's
/// rows it did not see), and it survives reopening.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_transactions_on_other_rows_both_commit() {
    let first = [
        "UPDATE lineitem SET l_returnflag = 'X', l_quantity = l_quantity + 1 WHERE l_suppkey < 20 AND l_orderkey % 7 = 1".to_string(),
        "DELETE FROM lineitem WHERE l_orderkey % 7 = 5 AND l_partkey % 3 = 0".into(),
        statements()[3].clone(),
    ];
    let second = [
        "DELETE FROM lineitem WHERE l_orderkey % 7 = 3".to_string(),
        format!(
            "INSERT INTO lineitem ({COLUMNS}) VALUES (900000009, 5, 6, 1, 3.00, 30.00, 0.01, 0.00, 'N', 'O', DATE '1997-07-07', DATE '1997-07-08', DATE '1997-07-09', 'NONE', 'RAIL', 'second session')"
        ),
        "UPDATE lineitem SET l_comment = 'second' WHERE l_orderkey % 7 = 2 AND l_suppkey < 40".into(),
    ];
    let reference = reference();
    for sql in first.iter().chain(&second) {
        run(&reference, sql).await;
    }
    let want_order = reference_in_order(&reference).await;
    let want = answers(&reference).await;

    let (_dir, table) = private_table(Layout::Dsm);
    let provider = CoopTable::new(table.clone(), device(), ScanMode::Scan).expect("provider");
    let (a, b) = (transactional(provider.clone()), transactional(provider));
    statement(&a, "BEGIN").await.expect("begin");
    statement(&b, "BEGIN").await.expect("begin");
    for sql in &second {
        statement(&a, sql).await.expect(sql);
    }
    for sql in &first {
        statement(&b, sql).await.expect(sql);
    }
    statement(&b, "COMMIT").await.expect("the first committer");
    statement(&a, "COMMIT")
        .await
        .expect("the second, serialized");

    let reopened = Table::open(table.dir()).expect("reopen");
    let scan = CoopTable::new(reopened.clone(), device(), ScanMode::Scan).expect("provider");
    for (what, ctx) in [
        ("the session", a),
        ("reopened, Scan", session(scan, 1)),
        ("reopened, CScan x2", relevance_session(reopened, 2)),
    ] {
        let (rows, ids) = in_rowid_order(&ctx).await;
        assert_eq!(ids, (0..ids.len() as i64).collect::<Vec<_>>(), "{what}");
        assert!(rows == want_order, "{what}: the rows in _rowid order");
        assert_eq!(answers(&ctx).await, want, "{what}: answers");
    }
}

/// A table whose every row was deleted and checkpointed has an empty stable image: rows
/// inserted after are the tree's alone (no chunk to merge them into), and scans still
/// return them, as a Scan and as CScans.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rows_inserted_into_an_empty_table_are_read() {
    use coopscan_exec::delta::checkpoint::checkpoint;
    let (_dir, table) = private_table(Layout::Dsm);
    let provider = CoopTable::new(table.clone(), device(), ScanMode::Scan).expect("provider");
    run(&session(provider, 1), "DELETE FROM lineitem").await;
    checkpoint(table.clone(), device())
        .await
        .expect("checkpoint");
    let empty = Table::open(table.dir()).expect("reopen");
    assert_eq!(empty.rows(), 0);
    let provider = CoopTable::new(empty.clone(), device(), ScanMode::Scan).expect("provider");
    let ctx = session(provider, 1);
    run(
        &ctx,
        &format!("INSERT INTO lineitem ({COLUMNS}) SELECT {COLUMNS} FROM lineitem"),
    )
    .await;
    let insert = statements()[3].clone();
    run(&ctx, &insert).await;
    // `SELECT *` yields `_rowid` after the stored columns; the INSERT ignores it.
    let copy = "INSERT INTO lineitem SELECT * FROM lineitem WHERE l_linenumber = 1";
    let copied = statement(&ctx, copy).await.expect("INSERT … SELECT *");
    let want = vec![vec!["1".to_string()]];
    assert_eq!(copied, want, "one row copied");
    let want = vec![vec!["4".to_string()]];
    assert_eq!(
        run(&ctx, "SELECT count(*) FROM lineitem WHERE l_comment <> ''").await,
        want
    );
    let cscan = relevance_session(empty, 2);
    assert_eq!(
        run(
            &cscan,
            "SELECT count(*) FROM lineitem WHERE l_comment <> ''"
        )
        .await,
        want
    );
}

/// What a pending scan of the random interleavings reads.
const SNAPSHOT_QUERIES: [&str; 2] = [
    "SELECT count(*), sum(l_quantity), sum(l_extendedprice), max(l_orderkey), min(l_comment) FROM lineitem WHERE l_shipdate > DATE '1995-06-01'",
    "SELECT l_orderkey, l_linenumber, l_quantity, l_comment FROM lineitem WHERE l_suppkey < 6",
];

/// One random change: copies of some rows under new order keys (appended: into the
/// tree, or as new pages in a session with `BulkInserts`), a delete or an update of a
/// random slice of the table, by its values, or a checkpoint.
fn random_change(rng: &mut rand_chacha::ChaCha8Rng, step: usize) -> String {
    use rand::RngExt;
    let (m, r) = (rng.random_range(5..40), rng.random_range(0..5));
    if rng.random_bool(0.25) {
        return CHECKPOINT.into();
    }
    match rng.random_range(0..3) {
        0 => {
            let values = COLUMNS.replacen("l_orderkey", &format!("l_orderkey + {}", 1_000_000 * (step + 1)), 1);
            format!("INSERT INTO lineitem ({COLUMNS}) SELECT {values} FROM lineitem WHERE l_partkey % {m} = {r} AND l_orderkey < 1000000")
        }
        1 => format!("DELETE FROM lineitem WHERE l_orderkey % {m} = {r} AND l_linenumber = {}", rng.random_range(1..8)),
        _ => format!("UPDATE lineitem SET l_quantity = l_quantity + 1, l_comment = 'step {step}' WHERE l_partkey % {m} = {r}"),
    }
}

const CHECKPOINT: &str = "CHECKPOINT lineitem";

/// Random interleavings of inserts, deletes, updates, bulk appends, checkpoints and
/// scans planned between them: every scan, run only after later changes were
/// committed, returns exactly the rows of the state it was planned in (DataFusion's
/// `MemTable` after the same statements up to then), as a Scan and as CScans of 1-3
/// workers under every policy; at the end the whole table is the reference's,
/// numbered 0… by `_rowid`, and the shared buffer serves only the newest image.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scans_planned_between_random_changes_read_their_snapshots() {
    use coopscan_exec::delta::BulkInserts;
    use rand::{RngExt, SeedableRng};
    // (policy, workers, INSERT … SELECT as bulk appends)
    let configs: [(Option<PolicyKind>, usize, bool); 12] = [
        (None, 1, false),
        (None, 1, true),
        (Some(PolicyKind::Relevance), 2, false),
        (Some(PolicyKind::Relevance), 2, true),
        (Some(PolicyKind::Pbm), 3, true),
        (Some(PolicyKind::Normal), 1, false),
        (Some(PolicyKind::Attach), 2, true),
        (Some(PolicyKind::Elevator), 3, false),
        (Some(PolicyKind::PbmLru), 1, true),
        (Some(PolicyKind::Mixed), 2, true),
        (Some(PolicyKind::PbmThrottle), 2, false),
        (Some(PolicyKind::PbmOpportunistic), 3, true),
    ];
    // Every policy of the shared buffer is among them.
    for kind in PolicyKind::ALL {
        assert!(configs.iter().any(|(p, _, _)| *p == Some(kind)), "{kind:?}");
    }
    // Scans whose state changed between their planning and their run: the test's point.
    let (mut stale, mut checkpoints, mut appends) = (0, 0, 0);
    for (seed, (policy, workers, bulk)) in configs.into_iter().enumerate() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(0x5a9 + seed as u64);
        let (_dir, table) = private_table(Layout::Dsm);
        let runtime = policy.map(|policy| {
            let config = RuntimeConfig::new(FRAMES, policy);
            Arc::new(Runtime::new(table.clone(), device(), config).expect("runtime"))
        });
        let provider = match &runtime {
            Some(runtime) => CoopTable::cooperative(Arc::clone(runtime)),
            None => CoopTable::new(table.clone(), device(), ScanMode::Scan).expect("provider"),
        };
        let mut config = SessionConfig::new().with_extension(Arc::new(ScanWorkers(workers)));
        if bulk {
            config = config.with_extension(Arc::new(BulkInserts));
        }
        let ctx = SessionContext::new_with_config(config);
        ctx.register_table("lineitem", Arc::new(provider))
            .expect("register");
        let reference = reference();
        let mut pending = Vec::new();
        for step in 0..10 {
            if rng.random_bool(0.6) {
                let sql = SNAPSHOT_QUERIES[rng.random_range(0..SNAPSHOT_QUERIES.len())];
                let plan = ctx
                    .sql(sql)
                    .await
                    .expect("plan")
                    .create_physical_plan()
                    .await;
                let want = run(&reference, sql).await;
                pending.push((step, sql, plan.expect("physical plan"), want));
            }
            let change = random_change(&mut rng, step);
            let stable = stable_rows(&table);
            let got = statement(&ctx, &change).await.expect("a change");
            if change == CHECKPOINT {
                checkpoints += 1;
            } else {
                assert_eq!(got, run(&reference, &change).await, "{change}");
            }
            appends += usize::from(change.starts_with("INSERT") && stable_rows(&table) > stable);
            // Some pending scans run now, after later changes, the rest at the end.
            while !pending.is_empty() && rng.random_bool(0.3) {
                let (at, sql, plan, want) = pending.remove(rng.random_range(0..pending.len()));
                stale += usize::from(run(&reference, sql).await != want);
                let got = canonical(&collect(plan, ctx.task_ctx()).await.expect("run"));
                assert!(
                    got == want,
                    "{policy:?} x{workers}: {sql} planned at step {at}"
                );
            }
        }
        for (at, sql, plan, want) in pending {
            stale += usize::from(run(&reference, sql).await != want);
            let got = canonical(&collect(plan, ctx.task_ctx()).await.expect("run"));
            assert!(
                got == want,
                "{policy:?} x{workers}: {sql} planned at step {at}"
            );
        }
        // An INSERT … SELECT over several partitions appends in no defined order, so
        // the whole table is compared as a set of rows; `_rowid` is still the position.
        let (_, ids) = in_rowid_order(&ctx).await;
        assert_eq!(ids, (0..ids.len() as i64).collect::<Vec<_>>(), "{policy:?}");
        let all = format!("SELECT {COLUMNS} FROM lineitem");
        assert!(
            run(&ctx, &all).await == run(&reference, &all).await,
            "{policy:?} x{workers}: the whole table"
        );
        if let Some(runtime) = &runtime {
            // Every older image's plans are gone: only the newest is served.
            assert_eq!(runtime.tables().len(), 1, "{policy:?} x{workers}");
            runtime.check_invariants().expect("invariants");
        }
    }
    assert!(
        stale >= 4,
        "only {stale} scans ran on a state other than their own"
    );
    assert!(
        checkpoints >= 6 && appends >= 3,
        "{checkpoints} checkpoints, {appends} appends"
    );
}

/// A bulk append to a table never changed (no delta log yet) makes its log, carried
/// to the new image: the appended rows are read after it, under a Scan and CScans, and
/// a later change commits to that log and outlives its session.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bulk_append_to_an_unchanged_table_reads_back_and_takes_changes() {
    use coopscan_exec::delta::append::bulk_append;
    let (_dir, table) = private_table(Layout::Pax);
    let before = table.rows();
    let copied = "SELECT * FROM lineitem WHERE l_orderkey < 50";
    let source = session(
        CoopTable::new(table.clone(), device(), ScanMode::Scan).expect("provider"),
        1,
    );
    let n = run(&source, &copied.replace('*', "count(*)")).await[0][0]
        .parse::<u64>()
        .expect("count");
    assert!(n > 0);
    let rows = source
        .sql(copied)
        .await
        .expect("plan")
        .execute_stream()
        .await
        .expect("stream");
    let done = bulk_append(table.clone(), device(), rows)
        .await
        .expect("append");
    assert_eq!((done.rows_before, done.rows_after), (before, before + n));
    let log = table.dir().join(coopscan_exec::delta::LOG_FILE);
    assert!(
        log.exists(),
        "the log that locked out other writers stays, carried"
    );
    let reopened = Table::open(table.dir()).expect("reopen");
    let count = "SELECT count(*), sum(CASE WHEN l_orderkey < 50 THEN 1 ELSE 0 END) FROM lineitem";
    let want = vec![vec![(before + n).to_string(), (2 * n).to_string()]];
    let scan = CoopTable::new(reopened.clone(), device(), ScanMode::Scan).expect("provider");
    assert_eq!(run(&session(scan, 1), count).await, want, "Scan");
    assert_eq!(
        run(&relevance_session(reopened.clone(), 2), count).await,
        want,
        "CScans"
    );
    let scan = CoopTable::new(reopened.clone(), device(), ScanMode::Scan).expect("provider");
    run(
        &session(scan, 1),
        "DELETE FROM lineitem WHERE l_orderkey < 50",
    )
    .await;
    let scan = CoopTable::new(reopened, device(), ScanMode::Scan).expect("provider");
    let after = run(&session(scan, 1), count).await;
    assert_eq!(after, vec![vec![(before - n).to_string(), "0".to_string()]]);
}

/// `lineitem`'s stable tuples as its files hold them now (what a bulk append grows and a
/// change to the tree leaves alone).
fn stable_rows(table: &Table) -> u64 {
    Table::open(table.dir()).expect("reopen").rows()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_insert_select_in_a_bulk_session_appends_pages_and_reads_them_at_once() {
    use coopscan_exec::delta::BulkInserts;
    use coopscan_exec::{query_session, query_session_config};
    let copy = "INSERT INTO lineitem SELECT * FROM lineitem WHERE l_orderkey < 50";
    let count = "SELECT count(*), sum(CASE WHEN l_orderkey < 50 THEN 1 ELSE 0 END) FROM lineitem";
    for cooperative in [false, true] {
        let (_dir, table) = private_table(Layout::Dsm);
        let before = table.rows();
        let provider = match cooperative {
            false => CoopTable::new(table.clone(), device(), ScanMode::Scan).expect("provider"),
            true => {
                let config = RuntimeConfig::new(FRAMES, PolicyKind::Relevance);
                let runtime = Runtime::new(table.clone(), device(), config).expect("runtime");
                CoopTable::cooperative(Arc::new(runtime))
            }
        };
        let ctx = query_session(query_session_config(2).with_extension(Arc::new(BulkInserts)));
        ctx.register_table("lineitem", Arc::new(provider))
            .expect("register");
        let what = if cooperative { "CScans" } else { "Scan" };
        // A change committed first keeps the table's log open in this session: the
        // append takes it over (and carries the change to the new version).
        statement(
            &ctx,
            "DELETE FROM lineitem WHERE l_orderkey BETWEEN 300 AND 400",
        )
        .await
        .expect("delete");
        let counted = statement(&ctx, count).await.expect("count");
        let total: u64 = counted[0][0].parse().expect("total");
        let n: u64 = counted[0][1].parse().expect("n");
        assert!(n > 0 && total < before, "{what}: {counted:?}");
        assert_eq!(
            statement(&ctx, copy).await.expect("insert"),
            vec![vec![n.to_string()]],
            "{what}: the count of rows appended"
        );
        assert_eq!(stable_rows(&table), before + n, "{what}: appended as pages");
        let want = vec![vec![(total + n).to_string(), (2 * n).to_string()]];
        assert_eq!(statement(&ctx, count).await.expect("count"), want, "{what}");
        // The table's changes still work on the new version, and are seen.
        statement(&ctx, "DELETE FROM lineitem WHERE l_orderkey < 50")
            .await
            .expect("delete");
        let want = vec![vec![(total - n).to_string(), "0".to_string()]];
        assert_eq!(statement(&ctx, count).await.expect("count"), want, "{what}");
        // Inside a transaction an INSERT … SELECT goes to the tree.
        let copy =
            "INSERT INTO lineitem SELECT * FROM lineitem WHERE l_orderkey BETWEEN 100 AND 199";
        let count = "SELECT count(*) FROM lineitem WHERE l_orderkey BETWEEN 100 AND 199";
        let m: u64 = statement(&ctx, count).await.expect("count")[0][0]
            .parse()
            .expect("m");
        assert!(m > 0);
        for sql in ["BEGIN", copy, "COMMIT"] {
            statement(&ctx, sql).await.expect(sql);
        }
        assert_eq!(
            stable_rows(&table),
            before + n,
            "{what}: no pages in a transaction"
        );
        let want = vec![vec![(2 * m).to_string()]];
        assert_eq!(statement(&ctx, count).await.expect("count"), want, "{what}");
        // So does one in a session without `BulkInserts` (this one, which holds the
        // table's log, closed first).
        drop(ctx);
        let plain = Table::open(table.dir()).expect("open");
        let plain = CoopTable::new(plain, device(), ScanMode::Scan).expect("provider");
        let plain_ctx = query_session(query_session_config(2));
        plain_ctx
            .register_table("lineitem", Arc::new(plain))
            .expect("register");
        statement(&plain_ctx, copy).await.expect("insert");
        assert_eq!(
            stable_rows(&table),
            before + n,
            "{what}: no pages unless asked"
        );
        let want = vec![vec![(4 * m).to_string()]];
        assert_eq!(
            statement(&plain_ctx, count).await.expect("count"),
            want,
            "{what}"
        );
    }
}
