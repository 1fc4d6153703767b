//! The delta log: commits replay into the same tree, a torn tail is ignored and cut off,
//! a log for another table or changed by another process is refused, and committed
//! changes survive the process being killed at any point of a commit (seeded kills: 200
//! by default, `COOPSCAN_CRASH_KILLS` for more).

use std::io::Write;
use std::path::Path;
use std::time::Duration;

use coopscan_delta::log::{
    replay, settle, successor_path, write_successor, CrashStage, DeltaLog, LogError, LogIdentity,
    Op,
};
use coopscan_delta::{Pdt, Rid};
use coopscan_testkit::{acknowledged, has_prlimit, run_child, run_child_with_file_limit};
use logged::{rows, stage_named, statement, U32Codec, COLUMNS, IDENTITY, STABLE_ROWS, STAGES};
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

mod logged;

/// Commits a child makes before it stops on its own.
const COMMITS: u64 = 24;
const CHILD_ENV: &str = "COOPSCAN_DELTA_CRASH_CHILD";

/// The tree after the first `commits` statements of `seed`.
fn model(seed: u64, commits: u64) -> Pdt<u32> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut pdt = Pdt::new(STABLE_ROWS, COLUMNS);
    for _ in 0..commits {
        for op in statement(&mut rng, &pdt) {
            op.apply(&mut pdt).expect("apply");
        }
    }
    pdt
}

/// Commits `commits` statements of `seed` through a log at `path`, printing "acked i"
/// after each append returns.
fn commit_all(path: &Path, seed: u64, commits: u64, crash: Option<(u64, CrashStage)>) {
    let mut log = DeltaLog::open(path, IDENTITY, 0).expect("open");
    if let Some((append, stage)) = crash {
        log.crash_at(append, stage);
    }
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut pdt = Pdt::new(STABLE_ROWS, COLUMNS);
    let stdout = std::io::stdout();
    for i in 0..commits {
        let ops = statement(&mut rng, &pdt);
        log.append(&ops, &U32Codec).expect("append");
        for op in &ops {
            op.apply(&mut pdt).expect("apply");
        }
        let mut out = stdout.lock();
        writeln!(out, "acked {i}").expect("stdout");
        out.flush().expect("flush");
    }
}

#[test]
fn commits_replay_into_the_same_tree() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("delta.log");
    commit_all(&path, 7, COMMITS, None);
    let replayed = replay(&path, IDENTITY, &U32Codec).expect("replay");
    assert_eq!(replayed.records, COMMITS);
    assert_eq!(rows(&replayed.pdt), rows(&model(7, COMMITS)));
    assert!(
        rows(&replayed.pdt) != rows(&model(7, COMMITS - 1)),
        "the last commit changed something"
    );
}

#[test]
fn a_torn_tail_is_ignored_then_cut_off() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("delta.log");
    commit_all(&path, 3, 5, None);
    let whole = std::fs::read(&path).expect("read");
    for cut in [1usize, 5, 9, 17] {
        std::fs::write(&path, &whole[..whole.len() - cut]).expect("write");
        let replayed = replay(&path, IDENTITY, &U32Codec).expect("replay");
        assert_eq!(replayed.records, 4, "cut {cut}");
        assert_eq!(rows(&replayed.pdt), rows(&model(3, 4)));
    }
    let mut log = DeltaLog::open(&path, IDENTITY, 4).expect("reopen");
    log.append(&[Op::Delete { rid: Rid(0) }], &U32Codec)
        .expect("append after a torn tail");
    drop(log);
    assert_eq!(
        replay(&path, IDENTITY, &U32Codec).expect("replay").records,
        5
    );
}

#[test]
fn a_log_of_another_table_or_writer_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("delta.log");
    commit_all(&path, 5, 3, None);
    let other = LogIdentity {
        stable_rows: STABLE_ROWS + 1,
        ..IDENTITY
    };
    assert!(matches!(
        replay(&path, other, &U32Codec),
        Err(LogError::Mismatch { .. })
    ));
    assert!(matches!(
        DeltaLog::open(&path, IDENTITY, 1),
        Err(LogError::Stale { .. })
    ));
    let held = DeltaLog::open(&path, IDENTITY, 3).expect("open");
    assert!(matches!(
        DeltaLog::open(&path, IDENTITY, 3),
        Err(LogError::Locked { .. })
    ));
    drop(held);
    let mut damaged = std::fs::read(&path).expect("read");
    damaged[3] ^= 0xff;
    std::fs::write(&path, damaged).expect("write");
    assert!(matches!(
        replay(&path, IDENTITY, &U32Codec),
        Err(LogError::Mismatch { .. })
    ));
}

/// The child's role: commits under a planned crash (or until it is killed). A no-op
/// unless the parent test set `CHILD_ENV`.
#[test]
fn crash_child() {
    let Ok(spec) = std::env::var(CHILD_ENV) else {
        return;
    };
    let parts: Vec<&str> = spec.split('|').collect();
    let path = Path::new(parts[0]);
    let seed: u64 = parts[1].parse().expect("seed");
    let crash = match parts[2] {
        "none" => None,
        stage => Some((parts[3].parse().expect("append"), stage_named(stage))),
    };
    commit_all(path, seed, COMMITS, crash);
    // Without a planned crash: wait to be killed.
    std::thread::sleep(Duration::from_secs(30));
}

/// Kills a committing process at a seeded point (a stage of a chosen append, or a
/// random instant) and checks the log after: exactly the commits that reached the disk,
/// each whole, none torn; the log takes further commits.
#[test]
fn commits_survive_kills_at_every_point() {
    let kills = coopscan_testkit::kills(200);
    let mut random_kills_mid_run = 0;
    for k in 0..kills {
        let mut rng = ChaCha8Rng::seed_from_u64(k);
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("delta.log");
        let planned = (rng.random_bool(0.75))
            .then(|| (rng.random_range(0..COMMITS), STAGES[rng.random_range(0..4)]));
        let spec = match planned {
            Some((append, stage)) => format!("{}|{k}|{stage:?}|{append}", path.display()),
            None => format!("{}|{k}|none|0", path.display()),
        };
        let kill_after =
            (planned.is_none()).then(|| Duration::from_micros(rng.random_range(0..8_000)));
        let out = run_child("crash_child", CHILD_ENV, &spec, kill_after);
        assert!(
            !out.status.success() || planned.is_none(),
            "kill {k}: the child was meant to die"
        );
        let acked = acknowledged(&out.stdout);
        let replayed =
            replay(&path, IDENTITY, &U32Codec).unwrap_or_else(|e| panic!("kill {k} ({spec}): {e}"));
        let expected: Vec<u64> = match planned {
            Some((append, CrashStage::BeforeWrite | CrashStage::MidRecord)) => vec![append],
            // The record was written whole: a process's death keeps what it wrote.
            Some((append, CrashStage::BeforeSync | CrashStage::AfterSync)) => vec![append + 1],
            None => vec![acked, acked + 1],
        };
        assert!(
            expected.contains(&replayed.records),
            "kill {k} ({spec}): {} records, {acked} acked",
            replayed.records
        );
        assert!(
            replayed.records >= acked,
            "kill {k}: an acknowledged commit was lost"
        );
        if planned.is_none() && replayed.records < COMMITS {
            random_kills_mid_run += 1;
        }
        assert_eq!(
            rows(&replayed.pdt),
            rows(&model(k, replayed.records)),
            "kill {k} ({spec})"
        );
        let mut log =
            DeltaLog::open(&path, IDENTITY, replayed.records).expect("reopen after the kill");
        log.append(
            &[Op::Insert {
                rid: Rid(0),
                row: vec![1, 2],
            }],
            &U32Codec,
        )
        .expect("append after the kill");
    }
    eprintln!(
        "{random_kills_mid_run} of {kills} kills at a random instant stopped a child mid-run"
    );
    assert!(
        kills < 40 || random_kills_mid_run > 0,
        "no random kill landed while the child committed"
    );
}

const FULL_ENV: &str = "COOPSCAN_DELTA_FULL_CHILD";

/// The child's role under a file-size limit: commits until an append fails, prints the
/// error, and stops. A no-op unless the parent test set `FULL_ENV`.
#[test]
fn disk_full_child() {
    let Ok(spec) = std::env::var(FULL_ENV) else {
        return;
    };
    let (path, seed) = spec.split_once('|').expect("path|seed");
    let mut log = DeltaLog::open(Path::new(path), IDENTITY, 0).expect("open");
    let mut rng = ChaCha8Rng::seed_from_u64(seed.parse().expect("seed"));
    let mut pdt = Pdt::new(STABLE_ROWS, COLUMNS);
    for i in 0..COMMITS {
        let ops = statement(&mut rng, &pdt);
        if let Err(e) = log.append(&ops, &U32Codec) {
            println!("failed {i}: {e}");
            return;
        }
        for op in &ops {
            op.apply(&mut pdt).expect("apply");
        }
        println!("acked {i}");
    }
}

/// A commit that cannot be written (the file-size limit of `prlimit`, as a full disk
/// would) fails with the system's error, and every commit before it stays readable and
/// appendable after.
#[test]
fn a_failed_append_keeps_the_commits_before_it() {
    if !has_prlimit() {
        eprintln!("skipped: no prlimit on this machine");
        return;
    }
    for (seed, limit) in [(1u64, 300u64), (2, 900), (3, 1800)] {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("delta.log");
        let spec = format!("{}|{seed}", path.display());
        let out = run_child_with_file_limit("disk_full_child", FULL_ENV, &spec, limit);
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            stdout.contains("failed "),
            "limit {limit}: no append failed: {stdout}"
        );
        assert!(stdout.contains("File too large"), "limit {limit}: {stdout}");
        let acked = acknowledged(&out.stdout);
        assert!(
            acked > 0 && acked < COMMITS,
            "limit {limit}: {acked} commits"
        );
        let replayed = replay(&path, IDENTITY, &U32Codec).expect("replay");
        assert_eq!(
            replayed.records, acked,
            "limit {limit}: the commits before the failure"
        );
        assert_eq!(rows(&replayed.pdt), rows(&model(seed, acked)));
        assert_eq!(
            replayed.valid_len,
            std::fs::metadata(&path).expect("len").len(),
            "cut back"
        );
        let mut log = DeltaLog::open(&path, IDENTITY, acked).expect("reopen");
        log.append(&[Op::Delete { rid: Rid(0) }], &U32Codec)
            .expect("append after the failure");
    }
}

/// A bulk append's image: 7 stable rows more at the end, another fingerprint.
const APPENDED: LogIdentity = LogIdentity {
    stable_rows: STABLE_ROWS + 7,
    columns: COLUMNS,
    fingerprint: 0x0bad_cafe,
};

/// A log carried to an appended image replays to the old rows followed by the appended
/// stable rows (rows inserted at the end before the append come before them), and
/// takes further commits; settled for the old image instead (the append did not
/// commit), the successor is dropped and the log is as before.
#[test]
fn a_successor_carries_the_commits_to_an_appended_image() {
    for seed in 0..8u64 {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("delta.log");
        commit_all(&path, seed, COMMITS, None);
        let old = replay(&path, IDENTITY, &U32Codec).expect("replay");
        let appended_rows = (STABLE_ROWS..APPENDED.stable_rows).map(|sid| {
            (0..COLUMNS)
                .map(|c| sid as u32 * 10 + c as u32)
                .collect::<Vec<_>>()
        });
        let mut want = rows(&old.pdt);
        want.extend(appended_rows);

        // The append did not commit: the table keeps its image and its log.
        write_successor(&path, IDENTITY, APPENDED).expect("successor");
        settle(&path, IDENTITY).expect("settle");
        assert!(!successor_path(&path).exists());
        let kept = replay(&path, IDENTITY, &U32Codec).expect("replay");
        assert_eq!(rows(&kept.pdt), rows(&old.pdt), "seed {seed}");

        // It did: the log moves to the new image.
        write_successor(&path, IDENTITY, APPENDED).expect("successor");
        settle(&path, APPENDED).expect("settle");
        assert!(
            replay(&path, IDENTITY, &U32Codec).is_err(),
            "the old image's no more"
        );
        let carried = replay(&path, APPENDED, &U32Codec).expect("replay");
        assert_eq!(carried.records, old.records);
        assert_eq!(rows(&carried.pdt), want, "seed {seed}");
        let mut grown = old.pdt.clone();
        grown.grow_stable(APPENDED.stable_rows).expect("grow");
        assert_eq!(rows(&grown), want, "seed {seed}: the tree grown in memory");
        let mut log = DeltaLog::open(&path, APPENDED, carried.records).expect("open");
        log.append(&[Op::Delete { rid: Rid(0) }], &U32Codec)
            .expect("a commit after");
    }
}

#[test]
fn a_successor_is_only_for_an_append() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("delta.log");
    assert!(write_successor(&path, IDENTITY, APPENDED)
        .expect("no log")
        .is_none());
    commit_all(&path, 1, 3, None);
    let shrunk = LogIdentity {
        stable_rows: STABLE_ROWS - 1,
        ..IDENTITY
    };
    let wider = LogIdentity {
        columns: COLUMNS + 1,
        ..APPENDED
    };
    for bad in [shrunk, wider] {
        assert!(matches!(
            write_successor(&path, IDENTITY, bad),
            Err(LogError::Mismatch { .. })
        ));
    }
    let mut pdt = Pdt::<u32>::new(STABLE_ROWS, COLUMNS);
    assert!(pdt.grow_stable(STABLE_ROWS - 1).is_err());
}
