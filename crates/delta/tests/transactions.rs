//! Transactions over several tables: one part record in each table's log, then one
//! decision in the database's decision log. Replay applies a transaction's parts in
//! every table or in none; a crash at any point of a commit (seeded kills: 100 by
//! default, `COOPSCAN_CRASH_KILLS` for more) leaves every acknowledged transaction whole
//! in all its tables and no other one in part.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use coopscan_delta::log::{
    commit_parts, decided, decisions_path, replay, CrashStage, DecisionLog, DeltaLog, LogError,
    Part, DECISIONS_FILE,
};
use coopscan_delta::Pdt;
use coopscan_testkit::{acknowledged, run_child};
use logged::{rows, stage_named, statement, U32Codec, COLUMNS, IDENTITY};
use logged::{STABLE_ROWS, STAGES};
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

mod logged;

/// Tables of the test's database.
const TABLES: usize = 3;
/// Transactions a child commits before it stops on its own.
const TRANSACTIONS: u64 = 16;
const CHILD_ENV: &str = "COOPSCAN_TXN_CRASH_CHILD";

/// Table `t`'s log in the database at `db`.
fn log_path(db: &Path, t: usize) -> PathBuf {
    db.join(format!("t{t}")).join("delta.log")
}

/// One transaction: the tables it changes (ascending, at least one) and each one's
/// changes, valid in `states`, which it applies.
fn transaction(rng: &mut ChaCha8Rng, states: &mut [Pdt<u32>]) -> Vec<(usize, Vec<Op32>)> {
    let mask = rng.random_range(1..(1u32 << TABLES));
    let mut changes = Vec::new();
    for (t, state) in states.iter_mut().enumerate() {
        if mask & (1 << t) != 0 {
            let ops = statement(rng, state);
            ops.iter().for_each(|op| op.apply(state).expect("apply"));
            changes.push((t, ops));
        }
    }
    changes
}

type Op32 = coopscan_delta::log::Op<u32>;

fn fresh_states() -> Vec<Pdt<u32>> {
    (0..TABLES)
        .map(|_| Pdt::new(STABLE_ROWS, COLUMNS))
        .collect()
}

/// Every table after the first `n` transactions of `seed`.
fn model(seed: u64, n: u64) -> Vec<Vec<Vec<u32>>> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut states = fresh_states();
    for _ in 0..n {
        transaction(&mut rng, &mut states);
    }
    states.iter().map(rows).collect()
}

/// Where a child dies: in transaction `at`, while writing its `part`-th part (or its
/// decision: `None`), at `stage`.
#[derive(Clone, Copy, Debug)]
struct Crash {
    at: u64,
    part: Option<usize>,
    stage: CrashStage,
}

/// Commits transaction after transaction of `seed` to the database at `db`, printing
/// "acked i" once each returned.
fn commit_all(db: &Path, seed: u64, crash: Option<Crash>) {
    let mut logs: Vec<DeltaLog> = (0..TABLES)
        .map(|t| {
            std::fs::create_dir_all(db.join(format!("t{t}"))).expect("table dir");
            DeltaLog::open(&log_path(db, t), IDENTITY, 0).expect("open")
        })
        .collect();
    let mut decisions = DecisionLog::open(&db.join(DECISIONS_FILE)).expect("decisions");
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut states = fresh_states();
    for i in 0..TRANSACTIONS {
        let changes = transaction(&mut rng, &mut states);
        if let Some(c) = crash.filter(|c| c.at == i) {
            // One table changed: no decision, the crash is in its plain record.
            match c.part.or((changes.len() == 1).then_some(0)) {
                Some(p) => {
                    let log = &mut logs[changes[p % changes.len()].0];
                    let next = log.records();
                    log.crash_at(next, c.stage);
                }
                None => decisions.crash_at(c.stage),
            }
        }
        commit(&mut logs, &mut decisions, &changes);
        let mut out = std::io::stdout().lock();
        writeln!(out, "acked {i}").expect("stdout");
        out.flush().expect("flush");
    }
}

/// One transaction's commit: a plain record when it changes one table (the decision,
/// and a crash planned there, are then not reached).
fn commit(logs: &mut [DeltaLog], decisions: &mut DecisionLog, changes: &[(usize, Vec<Op32>)]) {
    if let [(t, ops)] = changes {
        logs[*t].append(ops, &U32Codec).expect("append");
        return;
    }
    let mut parts: Vec<Part<'_, u32>> = Vec::new();
    for (t, log) in logs.iter_mut().enumerate() {
        if let Some((_, ops)) = changes.iter().find(|(c, _)| *c == t) {
            parts.push(Part {
                log,
                ops,
                codec: &U32Codec,
            });
        }
    }
    commit_parts(decisions, &mut parts).expect("commit");
}

/// The same `ops` as a part for each of `logs`.
fn parts_of<'a>(logs: &'a mut [DeltaLog], ops: &'a [Op32]) -> Vec<Part<'a, u32>> {
    (logs.iter_mut())
        .map(|log| Part {
            log,
            ops,
            codec: &U32Codec,
        })
        .collect()
}

/// Every table's rows as replay finds them.
fn replayed(db: &Path) -> Vec<Vec<Vec<u32>>> {
    (0..TABLES)
        .map(|t| {
            let replayed = replay(&log_path(db, t), IDENTITY, &U32Codec).expect("replay");
            rows(&replayed.pdt)
        })
        .collect()
}

#[test]
fn a_transaction_counts_in_all_its_tables_once_decided() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path();
    commit_all(db, 11, None);
    assert_eq!(replayed(db), model(11, TRANSACTIONS));
    let ids = decided(&db.join(DECISIONS_FILE)).expect("decisions");
    assert!(!ids.is_empty(), "some transaction changed several tables");
    // Without the decisions, every part is skipped: the tables differ from the model.
    std::fs::remove_file(db.join(DECISIONS_FILE)).expect("remove");
    assert_ne!(replayed(db), model(11, TRANSACTIONS));
}

#[test]
fn undecided_parts_are_skipped_and_later_records_apply() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path();
    commit_all(db, 5, None);
    let mut logs: Vec<DeltaLog> = (0..TABLES)
        .map(|t| {
            let records = replay(&log_path(db, t), IDENTITY, &U32Codec)
                .expect("replay")
                .records;
            DeltaLog::open(&log_path(db, t), IDENTITY, records).expect("open")
        })
        .collect();
    let before = replayed(db);
    // A part written, its transaction never decided (the committer died).
    let insert = vec![Op32::Insert {
        rid: coopscan_delta::Rid(0),
        row: vec![7, 7],
    }];
    let id = coopscan_delta::log::TransactionId::fresh();
    logs[0].append_part(id, &insert, &U32Codec).expect("part");
    assert_eq!(replayed(db), before, "an undecided part counts for nothing");
    // A plain commit after it applies.
    logs[0].append(&insert, &U32Codec).expect("append");
    let after = replayed(db);
    assert_eq!(after[0].len(), before[0].len() + 1);
    assert_eq!(after[0][0], vec![7, 7]);
    assert_eq!(after[1..], before[1..]);
}

#[test]
fn tables_of_two_databases_are_refused_before_anything_is_written() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (one, two) = (dir.path().join("one"), dir.path().join("two"));
    let mut logs = Vec::new();
    for db in [&one, &two] {
        std::fs::create_dir_all(db.join("t0")).expect("dir");
        logs.push(DeltaLog::open(&log_path(db, 0), IDENTITY, 0).expect("open"));
    }
    assert_eq!(
        decisions_path(&log_path(&one, 0)),
        Some(one.join(DECISIONS_FILE))
    );
    let mut decisions = DecisionLog::open(&one.join(DECISIONS_FILE)).expect("decisions");
    let ops = vec![Op32::Delete {
        rid: coopscan_delta::Rid(1),
    }];
    let mut parts = parts_of(&mut logs, &ops);
    let refused = commit_parts(&mut decisions, &mut parts).expect_err("two databases");
    assert!(
        matches!(refused, LogError::NotOneDatabase { .. }),
        "{refused}"
    );
    drop(parts);
    assert!(logs.iter().all(|log| log.records() == 0));
}

#[test]
fn a_torn_decision_is_no_decision() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path();
    commit_all(db, 3, None);
    let path = db.join(DECISIONS_FILE);
    let whole = std::fs::read(&path).expect("read");
    let all = decided(&path).expect("decided").len();
    std::fs::write(&path, &whole[..whole.len() - 3]).expect("cut");
    assert_eq!(decided(&path).expect("decided").len(), all - 1);
    let mut damaged = whole.clone();
    damaged[0] ^= 0xff;
    std::fs::write(&path, damaged).expect("write");
    assert!(matches!(decided(&path), Err(LogError::Mismatch { .. })));
}

/// The child's role: commits under a planned crash (or until it is killed). A no-op
/// unless the parent test set `CHILD_ENV`.
#[test]
fn crash_child() {
    let Ok(spec) = std::env::var(CHILD_ENV) else {
        return;
    };
    let fields: Vec<&str> = spec.split('|').collect();
    let db = Path::new(fields[0]);
    let seed: u64 = fields[1].parse().expect("seed");
    let crash = (fields[2] != "none").then(|| Crash {
        at: fields[3].parse().expect("transaction"),
        part: fields[4].parse().ok(),
        stage: stage_named(fields[2]),
    });
    commit_all(db, seed, crash);
    std::thread::sleep(Duration::from_secs(30));
}

/// Transactions a planned crash lets commit: those before it, and the one it hit if
/// the process died after that transaction's last record was written whole.
fn committed_after(crash: Crash, parts: usize) -> u64 {
    let written = matches!(crash.stage, CrashStage::BeforeSync | CrashStage::AfterSync);
    let last_record = parts == 1 || crash.part.is_none();
    crash.at + u64::from(written && last_record)
}

/// Kills a committing process at a seeded point (a stage of one part or of the
/// decision, or a random instant) and checks every table after: the same prefix of the
/// transactions in all of them, at least every acknowledged one; then commits again.
#[test]
fn transactions_survive_kills_at_every_point() {
    let kills = coopscan_testkit::kills(200) / 2;
    for k in 0..kills {
        let mut rng = ChaCha8Rng::seed_from_u64(k);
        let dir = tempfile::tempdir().expect("tempdir");
        let db = dir.path();
        let planned = rng.random_bool(0.75).then(|| Crash {
            at: rng.random_range(0..TRANSACTIONS),
            part: rng.random_bool(0.6).then(|| rng.random_range(0..TABLES)),
            stage: STAGES[rng.random_range(0..STAGES.len())],
        });
        let spec = match planned {
            Some(c) => format!(
                "{}|{k}|{:?}|{}|{}",
                db.display(),
                c.stage,
                c.at,
                c.part.map_or("decision".into(), |p| p.to_string())
            ),
            None => format!("{}|{k}|none|0|0", db.display()),
        };
        let kill_after =
            (planned.is_none()).then(|| Duration::from_micros(rng.random_range(0..8_000)));
        let out = run_child("crash_child", CHILD_ENV, &spec, kill_after);
        let acked = acknowledged(&out.stdout);
        let found = replayed(db);
        let candidates: Vec<u64> = match planned {
            Some(c) => {
                let parts = {
                    let mut rng = ChaCha8Rng::seed_from_u64(k);
                    let mut states = fresh_states();
                    (0..=c.at)
                        .map(|_| transaction(&mut rng, &mut states).len())
                        .last()
                        .unwrap_or(1)
                };
                vec![committed_after(c, parts)]
            }
            None => vec![acked, acked + 1],
        };
        let n = candidates
            .iter()
            .copied()
            .find(|&n| found == model(k, n))
            .unwrap_or_else(|| {
                panic!(
                    "kill {k} ({spec}): no prefix of {candidates:?} in every table, {acked} acked"
                )
            });
        assert!(n >= acked, "kill {k}: an acknowledged transaction was lost");
        // The logs take a transaction over all tables after the kill.
        let mut logs: Vec<DeltaLog> = (0..TABLES)
            .map(|t| {
                std::fs::create_dir_all(db.join(format!("t{t}"))).expect("table dir");
                let records = replay(&log_path(db, t), IDENTITY, &U32Codec)
                    .expect("replay")
                    .records;
                DeltaLog::open(&log_path(db, t), IDENTITY, records).expect("reopen")
            })
            .collect();
        let mut decisions = DecisionLog::open(&db.join(DECISIONS_FILE)).expect("decisions");
        let ops = vec![Op32::Modify {
            rid: coopscan_delta::Rid(0),
            values: vec![(0, 4242)],
        }];
        let mut parts = parts_of(&mut logs, &ops);
        commit_parts(&mut decisions, &mut parts).expect("commit after the kill");
        drop(parts);
        let after = replayed(db);
        assert!(
            after.iter().all(|rows| rows[0][0] == 4242),
            "kill {k}: the commit after the kill counts in every table"
        );
    }
}
