//! Bulk appends (2012 paper §2.1): rows appended to a table in every layout read back
//! after its rows, exactly as written; a table opened before the commit keeps reading
//! its snapshot; of two appends to one snapshot only the first to commit does; an
//! append dropped uncommitted leaves nothing; and a process killed at any stage of a
//! commit leaves the old table or the new one, never a mix (seeded kills of a child
//! process, `COOPSCAN_CRASH_KILLS` for more).

mod common;

use std::io::Write as _;
use std::path::Path;

use arrow_array::{Array, ArrayRef, RecordBatch};
use coopscan_storage::{AppendCrash, Layout, StorageError, Table, TableAppender};
use coopscan_testkit::{acknowledged, has_prlimit, run_child, run_child_with_file_limit};
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

use common::{read_all, sample_batch, sample_schema, write_table};

const PAGE_BYTES: u32 = 4096;
const CHUNK_PAGES: u64 = 4;
const CHILD_ENV: &str = "COOPSCAN_APPEND_CRASH_CHILD";
/// Appends a crash child commits before it stops on its own.
const APPENDS: u64 = 6;

/// `rows` rows from key `start` in batches of at most 97.
fn batches(start: i64, rows: usize) -> Vec<RecordBatch> {
    (0..rows)
        .step_by(97)
        .map(|at| sample_batch(start + at as i64, 97.min(rows - at)))
        .collect()
}

/// The rows of `batches` as one array per column (the expectation, built from the
/// input alone).
fn concat(batches: &[RecordBatch]) -> Vec<ArrayRef> {
    (0..sample_schema().len())
        .map(|c| {
            let cols: Vec<&dyn Array> = batches.iter().map(|b| b.column(c).as_ref()).collect();
            arrow_select::concat::concat(&cols).expect("concat")
        })
        .collect()
}

fn all_rows(table: &Table) -> Vec<ArrayRef> {
    let all: Vec<usize> = (0..table.schema().len()).collect();
    read_all(table, &all)
}

fn append(dir: &Path, batches: &[RecordBatch]) -> Result<coopscan_storage::Manifest, StorageError> {
    let mut appender = TableAppender::begin(dir)?;
    for b in batches {
        appender.write_batch(b)?;
    }
    appender.commit()
}

/// A table of `rows` rows in `layout` at `dir`, and the batches it was written from.
fn base_table(dir: &Path, layout: Layout, rows: usize) -> (Table, Vec<RecordBatch>) {
    let written = batches(0, rows);
    let schema = sample_schema();
    let table = write_table(dir, &schema, layout, PAGE_BYTES, CHUNK_PAGES, &written);
    (table, written)
}

/// Nothing beside the table but the table: no staging directory, no lock file.
fn only_the_table(parent: &Path) {
    let names: Vec<String> = std::fs::read_dir(parent)
        .expect("read dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, vec!["t".to_string()], "left beside the table");
}

#[test]
fn appended_rows_follow_the_tables_in_every_layout() {
    for layout in Layout::ALL {
        let tmp = tempfile::tempdir().expect("tempdir");
        let dir = tmp.path().join("t");
        let (before, first) = base_table(&dir, layout, 1000);
        let (old_chunks, old_pages) = (before.chunk_count(), before.manifest().files[0].pages);
        let second = batches(1000, 700);
        let manifest = append(&dir, &second).expect("append");
        let third = batches(1700, 5);
        append(&dir, &third).expect("a second append");
        let after = Table::open(&dir).expect("open");
        let written: Vec<RecordBatch> =
            first.iter().chain(&second).chain(&third).cloned().collect();
        assert_eq!(all_rows(&after), concat(&written), "{layout}");
        assert_eq!(after.rows(), 1705);
        // The old chunks are as they were; the new ones start on new pages.
        assert_eq!(
            &after.manifest().chunks[..old_chunks],
            &before.manifest().chunks[..]
        );
        assert!(manifest.chunks.len() > old_chunks);
        assert!(manifest.files[0].pages > old_pages);
        // The table as opened before keeps reading its rows.
        assert_eq!(
            all_rows(&before),
            concat(&first),
            "{layout}: the old snapshot"
        );
        only_the_table(tmp.path());
    }
}

#[test]
fn of_two_appends_to_one_snapshot_only_the_first_commits() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("t");
    let (_, first) = base_table(&dir, Layout::Dsm, 300);
    let mut a = TableAppender::begin(&dir).expect("begin a");
    let mut b = TableAppender::begin(&dir).expect("begin b");
    a.write_batch(&sample_batch(300, 50)).expect("write a");
    b.write_batch(&sample_batch(900, 80)).expect("write b");
    b.commit().expect("b commits first");
    let refused = a.commit();
    assert!(
        matches!(refused, Err(StorageError::AppendConflict { .. })),
        "{refused:?}"
    );
    let table = Table::open(&dir).expect("open");
    let mut written = first.clone();
    written.push(sample_batch(900, 80));
    assert_eq!(all_rows(&table), concat(&written));
    only_the_table(tmp.path());
}

#[test]
fn an_append_not_committed_leaves_nothing() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("t");
    let (_, first) = base_table(&dir, Layout::Pax, 300);
    let manifest = std::fs::read(dir.join("manifest.json")).expect("manifest");
    let mut a = TableAppender::begin(&dir).expect("begin");
    a.write_batch(&sample_batch(300, 500)).expect("write");
    drop(a);
    assert_eq!(
        std::fs::read(dir.join("manifest.json")).expect("manifest"),
        manifest
    );
    assert_eq!(all_rows(&Table::open(&dir).expect("open")), concat(&first));
    only_the_table(tmp.path());
    // A batch of the wrong shape is refused and the append stays usable.
    let mut a = TableAppender::begin(&dir).expect("begin");
    let wrong = RecordBatch::try_new(
        std::sync::Arc::new(arrow_schema::Schema::new(vec![arrow_schema::Field::new(
            "k",
            arrow_schema::DataType::Int64,
            false,
        )])),
        vec![std::sync::Arc::new(arrow_array::Int64Array::from(vec![
            1i64,
        ]))],
    )
    .expect("batch");
    assert!(a.write_batch(&wrong).is_err());
    a.write_batch(&sample_batch(300, 3)).expect("write");
    a.commit().expect("commit");
    assert_eq!(Table::open(&dir).expect("open").rows(), 303);
}

/// What must appear with the new image is prepared in `commit_with`'s hook, which sees
/// the new manifest; its error aborts the commit and leaves the table as it was.
#[test]
fn a_commit_runs_its_hook_before_publishing_and_stops_on_its_error() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("t");
    let (_, first) = base_table(&dir, Layout::Csm, 300);
    let mut a = TableAppender::begin(&dir).expect("begin");
    a.write_batch(&sample_batch(300, 40)).expect("write");
    let refused = a.commit_with(|m| {
        assert_eq!(m.rows, 340);
        Err(StorageError::Invalid("the log could not be carried".into()))
    });
    assert!(
        matches!(refused, Err(StorageError::Invalid(_))),
        "{refused:?}"
    );
    assert_eq!(all_rows(&Table::open(&dir).expect("open")), concat(&first));
    only_the_table(tmp.path());
    let mut a = TableAppender::begin(&dir).expect("begin");
    a.write_batch(&sample_batch(300, 40)).expect("write");
    let mut seen = None;
    let manifest = a
        .commit_with(|m| {
            // The old manifest is still the table's while the hook runs.
            seen = Some((m.rows, Table::open(&dir).expect("open").rows()));
            Ok(())
        })
        .expect("commit");
    assert_eq!(seen, Some((340, 300)));
    assert_eq!(manifest.rows, 340);
}

/// The crash child: appends [`APPENDS`] times to the table named in `CHILD_ENV`
/// (`DIR|SEED|STAGE|APPEND`: die at STAGE of append number APPEND; `none`: run until
/// killed or done), printing "acked i" after each commit returns.
#[test]
fn crash_child() {
    let Ok(spec) = std::env::var(CHILD_ENV) else {
        return;
    };
    let parts: Vec<&str> = spec.split('|').collect();
    let (dir, seed, stage, at) = (Path::new(parts[0]), parts[1], parts[2], parts[3]);
    let seed: u64 = seed.parse().expect("seed");
    let at: u64 = at.parse().expect("append");
    let stdout = std::io::stdout();
    for i in 0..APPENDS {
        let mut appender = TableAppender::begin(dir).expect("begin");
        for b in appended(seed, i) {
            appender.write_batch(&b).expect("write");
        }
        if i == at {
            if let Some(stage) = STAGES.iter().find(|s| format!("{s:?}") == stage) {
                appender.crash_at(*stage);
            }
        }
        appender.commit().expect("commit");
        let mut out = stdout.lock();
        writeln!(out, "acked {i}").expect("stdout");
        out.flush().expect("flush");
    }
}

const STAGES: [AppendCrash; 4] = [
    AppendCrash::Staged,
    AppendCrash::MidCopy,
    AppendCrash::BeforeManifest,
    AppendCrash::AfterManifest,
];
/// Rows of the table before any append.
const BASE_ROWS: usize = 200;

/// The batches of append `i` of seed `seed`: 1 to 300 rows, keys after every earlier
/// append's.
fn appended(seed: u64, i: u64) -> Vec<RecordBatch> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed * 1000 + i);
    let rows = rng.random_range(1..300);
    batches(BASE_ROWS as i64 + 1000 * i as i64, rows)
}

/// The table's rows after the first `commits` appends of `seed`.
fn expected(seed: u64, commits: u64) -> Vec<ArrayRef> {
    let mut all = batches(0, BASE_ROWS);
    for i in 0..commits {
        all.extend(appended(seed, i));
    }
    concat(&all)
}

/// Kills an appending process at a seeded point (a stage of a chosen commit, or a
/// random instant) and checks the table after: it opens, holds exactly the appends
/// that committed, every acknowledged one, and takes a further append.
#[test]
fn appends_survive_kills_at_every_stage() {
    let kills = coopscan_testkit::kills(100);
    let mut random_kills_mid_run = 0;
    for k in 0..kills {
        let mut rng = ChaCha8Rng::seed_from_u64(k);
        let tmp = tempfile::tempdir().expect("tempdir");
        let dir = tmp.path().join("t");
        let layout = Layout::ALL[rng.random_range(0..Layout::ALL.len())];
        base_table(&dir, layout, BASE_ROWS);
        let planned = rng
            .random_bool(0.75)
            .then(|| (rng.random_range(0..APPENDS), STAGES[rng.random_range(0..4)]));
        let spec = match planned {
            Some((at, stage)) => format!("{}|{k}|{stage:?}|{at}", dir.display()),
            None => format!("{}|{k}|none|0", dir.display()),
        };
        let kill_after = (planned.is_none())
            .then(|| std::time::Duration::from_micros(rng.random_range(0..20_000)));
        let out = run_child("crash_child", CHILD_ENV, &spec, kill_after);
        let acked = acknowledged(&out.stdout);
        let table = Table::open(&dir).unwrap_or_else(|e| panic!("kill {k} ({spec}): {e}"));
        let rows = all_rows(&table);
        let committed = (acked..=acked + 1)
            .find(|&n| rows == expected(k, n))
            .unwrap_or_else(|| {
                let says = String::from_utf8_lossy(&out.stderr);
                panic!(
                    "kill {k} ({spec}): {} rows, {acked} acked; the child: {says}",
                    table.rows()
                )
            });
        match planned {
            Some((at, stage)) => {
                let want = match stage {
                    AppendCrash::AfterManifest => at + 1,
                    _ => at,
                };
                assert_eq!(committed, want, "kill {k} ({spec})");
            }
            None if committed < APPENDS => random_kills_mid_run += 1,
            None => {}
        }
        // The next append cuts any torn tail and commits.
        append(&dir, &appended(k, committed)).unwrap_or_else(|e| panic!("kill {k}: {e}"));
        let table = Table::open(&dir).expect("open");
        assert_eq!(
            all_rows(&table),
            expected(k, committed + 1),
            "kill {k} ({spec})"
        );
        only_the_table(tmp.path());
    }
    assert!(
        kills < 20 || random_kills_mid_run > 0,
        "no random kill hit a run in progress"
    );
}

const FULL_ENV: &str = "COOPSCAN_APPEND_FULL_CHILD";

/// The disk-full child: appends to the table named in `FULL_ENV` (`DIR|SEED`) until a
/// commit fails, printing "acked i" after each commit and "failed i: ERROR" then.
#[test]
fn disk_full_child() {
    let Ok(spec) = std::env::var(FULL_ENV) else {
        return;
    };
    let (dir, seed) = spec.split_once('|').expect("spec");
    let seed: u64 = seed.parse().expect("seed");
    for i in 0..4 * APPENDS {
        match append(Path::new(dir), &appended(seed, i)) {
            Ok(_) => println!("acked {i}"),
            Err(e) => {
                println!("failed {i}: {e}");
                return;
            }
        }
    }
}

/// An append that cannot be written (the file-size limit of `prlimit`, as a full disk
/// would) fails with the system's error, and the table keeps every append before it
/// and takes the next one.
#[test]
fn a_failed_append_keeps_the_appends_before_it() {
    if !has_prlimit() {
        eprintln!("skipped: no prlimit on this machine");
        return;
    }
    for (seed, layout) in [(1u64, Layout::Pax), (2, Layout::Dsm), (3, Layout::Csm)] {
        let tmp = tempfile::tempdir().expect("tempdir");
        let dir = tmp.path().join("t");
        let (table, _) = base_table(&dir, layout, BASE_ROWS);
        // Room for a few appends' pages after the largest file's: a staged append
        // fits, and the table's file outgrows the limit after some commits.
        let pages = table.manifest().files.iter().map(|f| f.pages).max();
        let limit = (pages.unwrap_or(0) + 12) * u64::from(PAGE_BYTES);
        let spec = format!("{}|{seed}", dir.display());
        let out = run_child_with_file_limit("disk_full_child", FULL_ENV, &spec, limit);
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(stdout.contains("File too large"), "{layout}: {stdout}");
        let acked = acknowledged(&out.stdout);
        assert!(acked > 0, "{layout}: no append fitted: {stdout}");
        // The commit failed writing the table's own file, not the staged pages.
        let in_table = format!("{}/", dir.display());
        assert!(stdout.contains(&in_table), "{layout}: {stdout}");
        let table = Table::open(&dir).expect("open");
        assert_eq!(all_rows(&table), expected(seed, acked), "{layout}");
        append(&dir, &appended(seed, acked)).expect("an append after the failure");
        let table = Table::open(&dir).expect("open");
        assert_eq!(all_rows(&table), expected(seed, acked + 1), "{layout}");
        only_the_table(tmp.path());
    }
}
