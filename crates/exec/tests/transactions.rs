//! Transactions over several tables of one database (`BEGIN` … `COMMIT`): against the
//! same statements on DataFusion's `MemTable`s over tpchgen's batches, a committed
//! transaction is seen in every table it changed (by other sessions, and after
//! reopening), a rolled-back or aborted one in none, and one whose decision never
//! reached the disk is gone from all its tables after reopening.

mod common;

use std::path::Path;
use std::sync::Arc;

use coopscan_delta::log::{decided, DECISIONS_FILE};
use coopscan_exec::{CoopTable, ScanMode};
use coopscan_storage::{Layout, Table};
use datafusion::prelude::{SessionConfig, SessionContext};

use common::*;

const TABLES: [&str; 2] = ["a", "b"];
const COLUMNS: &str = LINEITEM_COLUMNS;

/// One transaction's statements: a delete in `a`, an update in `b`, and rows of `b` as
/// the transaction changed them inserted into `a`.
fn changes() -> Vec<String> {
    vec![
        "DELETE FROM a WHERE l_orderkey < 1000".into(),
        "UPDATE b SET l_comment = 'tx', l_quantity = l_quantity + 1 WHERE l_orderkey BETWEEN 1024 AND 1100".into(),
        format!("INSERT INTO a ({COLUMNS}) SELECT {COLUMNS} FROM b WHERE l_orderkey BETWEEN 1024 AND 1030"),
    ]
}

fn queries() -> Vec<String> {
    let mut out = Vec::new();
    for t in TABLES {
        out.push(format!(
            "SELECT count(*), sum(l_quantity), sum(l_extendedprice) FROM {t}"
        ));
        out.push(format!("SELECT l_orderkey, l_linenumber, l_quantity, l_comment FROM {t} WHERE l_orderkey BETWEEN 990 AND 1100"));
    }
    out
}

/// Tables `a` and `b`, each lineitem, as `MemTable`s: the reference.
fn reference() -> SessionContext {
    let ctx = SessionContext::new_with_config(SessionConfig::new().with_target_partitions(1));
    for t in TABLES {
        ctx.register_table(t, lineitem_memtable())
            .expect("register");
    }
    ctx
}

async fn answers(ctx: &SessionContext) -> Vec<Vec<Vec<String>>> {
    run_each(ctx, &queries()).await
}

/// A database directory holding two copies of the fixture's lineitem as `a` and `b`.
fn database() -> tempfile::TempDir {
    let shared = table(Layout::Dsm);
    let db = tempfile::tempdir().expect("tempdir");
    for t in TABLES {
        let dir = db.path().join(t);
        std::fs::create_dir(&dir).expect("table dir");
        for entry in std::fs::read_dir(shared.dir()).expect("read dir") {
            let entry = entry.expect("entry");
            std::fs::copy(entry.path(), dir.join(entry.file_name())).expect("copy");
        }
    }
    db
}

/// The tables of `db` opened afresh (their logs replayed), each read by Scans.
fn providers(db: &Path) -> Vec<CoopTable> {
    (TABLES.iter())
        .map(|t| {
            let table = Table::open(&db.join(t)).expect("open");
            CoopTable::new(table, device(), ScanMode::Scan).expect("provider")
        })
        .collect()
}

/// A session with a transaction slot over `providers` as `a` and `b`.
fn session(providers: &[CoopTable]) -> SessionContext {
    let ctx = coopscan_exec::query_session(SessionConfig::new());
    for (t, p) in TABLES.iter().zip(providers) {
        ctx.register_table(*t, Arc::new(p.clone()))
            .expect("register");
    }
    ctx
}

async fn all(ctx: &SessionContext, sqls: &[String]) {
    for sql in sqls {
        statement(ctx, sql).await.expect(sql);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_transaction_over_two_tables_commits_in_both_or_neither() {
    let db = database();
    let reference = reference();
    let original = answers(&reference).await;
    let shared = providers(db.path());
    let (one, other) = (session(&shared), session(&shared));

    // Rolled back: in neither table.
    statement(&one, "BEGIN").await.expect("begin");
    all(&one, &changes()).await;
    let inside = answers(&one).await;
    assert_ne!(inside, original, "the transaction reads its own changes");
    assert_eq!(answers(&other).await, original, "another session does not");
    statement(&one, "ROLLBACK").await.expect("rollback");
    assert_eq!(answers(&one).await, original, "rolled back");

    // Committed: in both, for every session, and after reopening.
    statement(&one, "BEGIN").await.expect("begin");
    all(&one, &changes()).await;
    statement(&one, "COMMIT").await.expect("commit");
    run_each(&reference, &changes()).await;
    let committed = answers(&reference).await;
    assert_eq!(inside, committed, "inside, as the reference");
    assert_eq!(answers(&other).await, committed, "committed in both tables");
    assert!(
        db.path().join(DECISIONS_FILE).exists(),
        "a decision written"
    );
    assert_eq!(answers(&session(&providers(db.path()))).await, committed);

    // Aborted by a conflict in `b`: nothing of it in `a` either.
    statement(&one, "BEGIN").await.expect("begin");
    statement(&one, "DELETE FROM a WHERE l_orderkey = 1031")
        .await
        .expect("delete");
    statement(
        &one,
        "UPDATE b SET l_comment = 'lost' WHERE l_orderkey = 1056",
    )
    .await
    .expect("update");
    let first = "DELETE FROM b WHERE l_orderkey = 1056";
    statement(&other, first).await.expect("autocommit");
    run(&reference, first).await;
    let lost = statement(&one, "COMMIT").await.expect_err("conflict");
    assert!(lost.contains("transaction aborted"), "{lost}");
    let after_conflict = answers(&reference).await;
    assert_ne!(after_conflict, committed);
    assert_eq!(
        answers(&one).await,
        after_conflict,
        "nothing of it anywhere"
    );
    assert_eq!(
        answers(&session(&providers(db.path()))).await,
        after_conflict
    );
}

/// A transaction whose parts reached both logs but whose decision did not (the process
/// died first, as the last decision cut off the file shows) is in neither table after
/// reopening; the tables take commits after it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn parts_without_their_decision_are_in_no_table() {
    let db = database();
    let reference = reference();
    let ctx = session(&providers(db.path()));
    let first = changes();
    statement(&ctx, "BEGIN").await.expect("begin");
    all(&ctx, &first).await;
    statement(&ctx, "COMMIT").await.expect("commit");
    run_each(&reference, &first).await;
    let undecided = [
        "DELETE FROM a WHERE l_orderkey = 1057".to_string(),
        "DELETE FROM b WHERE l_orderkey = 1058".into(),
    ];
    statement(&ctx, "BEGIN").await.expect("begin");
    all(&ctx, &undecided).await;
    statement(&ctx, "COMMIT").await.expect("commit");
    drop(ctx);
    let decisions = db.path().join(DECISIONS_FILE);
    let bytes = std::fs::read(&decisions).expect("decisions");
    assert_eq!(decided(&decisions).expect("decided").len(), 2);
    std::fs::write(&decisions, &bytes[..bytes.len() - 20]).expect("cut the last decision");

    let reopened = session(&providers(db.path()));
    assert_eq!(answers(&reopened).await, answers(&reference).await);
    let later = [
        "DELETE FROM a WHERE l_orderkey = 1059".to_string(),
        "DELETE FROM b WHERE l_orderkey = 1060".into(),
    ];
    statement(&reopened, "BEGIN").await.expect("begin");
    all(&reopened, &later).await;
    statement(&reopened, "COMMIT")
        .await
        .expect("a commit after them");
    run_each(&reference, &later).await;
    drop(reopened);
    assert_eq!(
        answers(&session(&providers(db.path()))).await,
        answers(&reference).await
    );
}
