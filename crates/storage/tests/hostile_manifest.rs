//! A manifest is input like any other file. Each test here is a hostile or damaged
//! manifest from issue 9 that used to panic, escape the table directory or give wrong
//! answers with exit 0; each must now be refused on load with an error that says what
//! is wrong.

mod common;

use std::path::Path;

use arrow_array::RecordBatch;
use coopscan_storage::{Layout, StorageError, Table};
use serde_json::{json, Value};

use common::{edit_manifest, sample_batch, sample_schema, write_table};

const PAGE_BYTES: u32 = 4096;
/// The trim.
const TRIM_ROWS: u64 = 81;

fn table(dir: &Path, layout: Layout) {
    let batches: Vec<_> = (0..3).map(|i| sample_batch(i * 400, 400)).collect();
    write_table(dir, &sample_schema(), layout, PAGE_BYTES, 2, &batches);
}

/// Opens the table after `edit` (resealed) and returns the error message.
fn refused(layout: Layout, edit: impl FnOnce(&mut Value)) -> String {
    let tmp = tempfile::tempdir().expect("tempdir");
    table(tmp.path(), layout);
    edit_manifest(tmp.path(), true, edit);
    match Table::open(tmp.path()) {
        Ok(_) => panic!("a hostile manifest was accepted"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn any_unsealed_edit_is_a_checksum_error() {
    // The silent wrong answer: a zonemap narrowed so that a chunk is pruned.
    let tmp = tempfile::tempdir().expect("tempdir");
    table(tmp.path(), Layout::Pax);
    edit_manifest(tmp.path(), false, |m| {
        m["chunks"][0]["columns"][2]["zonemap"] = json!({"min": 0, "max": 1});
    });
    let err = Table::open(tmp.path()).expect_err("must refuse");
    assert!(
        matches!(err, StorageError::ManifestChecksum { .. }),
        "{err:?}"
    );
    assert!(err.to_string().contains("checksum mismatch"), "{err}");
}

#[test]
fn schema_checks_run_on_load() {
    let msg = refused(Layout::Pax, |m| m["schema"]["columns"] = json!([]));
    assert!(msg.contains("1..=4096 columns"), "{msg}");
    let msg = refused(Layout::Pax, |m| {
        m["schema"]["columns"][3]["type"] = json!({"kind": "char", "len": 0});
    });
    assert!(msg.contains("CHAR(0)") && msg.contains("flag"), "{msg}");
    let msg = refused(Layout::Pax, |m| {
        m["schema"]["columns"][1]["type"] =
            json!({"kind": "decimal", "precision": 15, "scale": 64});
    });
    assert!(msg.contains("scale outside 0..=15"), "{msg}");
    let msg = refused(Layout::Dsm, |m| {
        m["schema"]["columns"][1]["name"] = json!("k");
    });
    assert!(msg.contains("duplicate column name"), "{msg}");
}

#[test]
fn a_zonemap_of_the_wrong_kind_or_range_is_refused() {
    let msg = refused(Layout::Pax, |m| {
        m["chunks"][0]["columns"][0]["zonemap"] = json!({"min": "a", "max": "b"});
    });
    assert!(msg.contains("does not fit a int64 column"), "{msg}");
    let msg = refused(Layout::Pax, |m| {
        m["chunks"][0]["columns"][0]["zonemap"] = json!({"min": 9, "max": 1});
    });
    assert!(msg.contains("zonemap"), "{msg}");
}

#[test]
fn file_names_cannot_leave_the_table_directory() {
    for name in [
        "../../../../etc/services",
        "/etc/passwd",
        "a/b",
        "..",
        "",
        "manifest.json",
    ] {
        let msg = refused(Layout::Pax, |m| m["files"][0]["name"] = json!(name));
        assert!(msg.contains("not a plain file name"), "{name:?}: {msg}");
        assert!(!msg.contains("magic"), "{name:?} was opened: {msg}");
    }
    let msg = refused(Layout::Dsm, |m| {
        let first = m["files"][0]["name"].clone();
        m["files"][1]["name"] = first;
    });
    assert!(msg.contains("listed twice"), "{msg}");
}

#[test]
fn numbers_near_the_integer_limits_are_refused_without_wrapping() {
    let near = u64::MAX - 4095;
    let msg = refused(Layout::Pax, |m| {
        m["chunks"][0]["columns"][0]["extent"]["offset"] = json!(near);
    });
    assert!(msg.contains(&near.to_string()), "{msg}");
    let msg = refused(Layout::Dsm, |m| m["files"][0]["pages"] = json!(u64::MAX));
    assert!(msg.contains("overflow"), "{msg}");
    let msg = refused(Layout::Nsm, |m| {
        let last = m["chunks"].as_array().expect("chunks").len() - 1;
        m["chunks"][last]["row_count"] = json!(u64::MAX);
    });
    assert!(msg.contains(&u64::MAX.to_string()), "{msg}");
}

#[test]
fn trimming_rows_and_the_last_chunk_is_refused() {
    // The case: `rows` and the last chunk shortened by 81 (resealed) — the
    // pages still hold the rows, so the manifest no longer matches its data.
    for layout in Layout::ALL {
        let tmp = tempfile::tempdir().expect("tempdir");
        table(tmp.path(), layout);
        edit_manifest(tmp.path(), true, |m| {
            let chunks = m["chunks"].as_array_mut().expect("chunks");
            let last = chunks.last_mut().expect("a chunk");
            let count = last["row_count"].as_u64().expect("count");
            let trim = TRIM_ROWS.min(count - 1);
            last["row_count"] = json!(count - trim);
            let rows = m["rows"].as_u64().expect("rows");
            m["rows"] = json!(rows - trim);
        });
        let err = match Table::open(tmp.path()) {
            Err(e) => e,
            Ok(t) => common::try_read_all(&t).expect_err("trimmed table must not read"),
        };
        assert!(!err.to_string().is_empty(), "{layout}");
    }
}

#[test]
fn versions_are_reported_as_written() {
    let tmp = tempfile::tempdir().expect("tempdir");
    table(tmp.path(), Layout::Pax);
    let big = 1u64 << 40;
    edit_manifest(tmp.path(), false, |m| m["version"] = json!(big));
    let msg = Table::open(tmp.path()).expect_err("refuse").to_string();
    assert!(msg.contains(&big.to_string()), "{msg}");
    edit_manifest(tmp.path(), false, |m| m["version"] = json!("two"));
    let msg = Table::open(tmp.path()).expect_err("refuse").to_string();
    assert!(
        msg.contains("\"two\"") && !msg.contains("version 0"),
        "{msg}"
    );
    edit_manifest(tmp.path(), false, |m| m["version"] = json!(1));
    let err = Table::open(tmp.path()).expect_err("refuse");
    assert!(
        matches!(err, StorageError::Version { found: 1, .. }),
        "{err:?}"
    );
}

#[test]
fn an_oversized_manifest_is_refused_before_it_is_parsed() {
    let tmp = tempfile::tempdir().expect("tempdir");
    table(tmp.path(), Layout::Pax);
    let path = tmp.path().join("manifest.json");
    let file = std::fs::OpenOptions::new()
        .write(true)
        .open(&path)
        .expect("open");
    // Sparse: no disk space used.
    file.set_len(coopscan_storage::manifest::MAX_MANIFEST_BYTES + 1)
        .expect("grow");
    let msg = Table::open(tmp.path()).expect_err("refuse").to_string();
    assert!(msg.contains("limit"), "{msg}");
}

#[test]
fn verify_recomputes_zonemaps_from_the_data() {
    // The case: a chunk's `day` zonemap set to {0, 1}, checksum recomputed.
    // Loading accepts it (a well-formed zonemap); reading the data refutes it.
    for layout in Layout::ALL {
        let tmp = tempfile::tempdir().expect("tempdir");
        table(tmp.path(), layout);
        let t = Table::open(tmp.path()).expect("open");
        let device = coopscan_storage::device::Device::new(Default::default());
        let files = t.open_files(&device).expect("files");
        let all: Vec<usize> = (0..t.schema().len()).collect();
        for k in 0..t.chunk_count() {
            let batch = t
                .read_chunk_batch(&device, &files, k, &all, None)
                .expect("read");
            t.check_chunk_contents(k, &batch)
                .expect("a fresh table matches its zonemaps");
        }
        edit_manifest(tmp.path(), true, |m| {
            m["chunks"][1]["columns"][2]["zonemap"] = json!({"min": 0, "max": 1});
        });
        let t = Table::open(tmp.path()).expect("well-formed");
        let batch = t
            .read_chunk_batch(&device, &files, 1, &all, None)
            .expect("read");
        let msg = t
            .check_chunk_contents(1, &batch)
            .expect_err("refuted")
            .to_string();
        assert!(
            msg.contains("chunk 1") && msg.contains("\"day\"") && msg.contains("zonemap"),
            "{layout}: {msg}"
        );
    }
}

#[test]
fn a_fifo_in_place_of_a_file_is_refused_without_blocking() {
    // Opening a FIFO for reading blocks until a writer appears: the checks must look
    // before they open.
    for victim in ["manifest.json", "data.pax"] {
        let tmp = tempfile::tempdir().expect("tempdir");
        table(tmp.path(), Layout::Pax);
        let path = tmp.path().join(victim);
        std::fs::remove_file(&path).expect("remove");
        let made = std::process::Command::new("mkfifo")
            .arg(&path)
            .status()
            .expect("mkfifo");
        assert!(made.success());
        let msg = Table::open(tmp.path()).expect_err("refuse").to_string();
        assert!(msg.contains("not a regular file"), "{victim}: {msg}");
    }
}

/// The manifest loader's bounded read, as other readers of user-named files use it
/// (`coopscan bench --calibration`): a device, a FIFO or a directory is refused before
/// it is opened, and a file over the limit before it is read.
#[test]
fn read_regular_file_refuses_devices_fifos_and_files_over_its_limit() {
    use coopscan_storage::read_regular_file;
    let tmp = tempfile::tempdir().expect("tempdir");
    let fifo = tmp.path().join("fifo");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .expect("mkfifo");
    assert!(made.success());
    for path in [Path::new("/dev/zero"), fifo.as_path(), tmp.path()] {
        let msg = read_regular_file(path, 1 << 20)
            .expect_err("refuse")
            .to_string();
        assert!(
            msg.contains("not a regular file"),
            "{}: {msg}",
            path.display()
        );
    }
    let file = tmp.path().join("f");
    std::fs::write(&file, b"12345").expect("write");
    assert_eq!(read_regular_file(&file, 5).expect("at the limit"), b"12345");
    let err = read_regular_file(&file, 4).expect_err("over the limit");
    assert!(
        matches!(err, StorageError::TooLarge { limit: 4, .. }),
        "{err:?}"
    );
    assert!(
        err.to_string().contains("larger than the 4-byte limit"),
        "{err}"
    );
}

#[test]
fn chunk_bytes_outside_the_writers_range_is_refused() {
    let msg = refused(Layout::Pax, |m| m["chunk_bytes"] = json!(u64::MAX));
    assert!(
        msg.contains("chunk_bytes") && msg.contains(&u64::MAX.to_string()),
        "{msg}"
    );
}

/// A DSM table whose `price` column (1) spans several pages: prices scattered, so
/// they do not compress into one.
fn paged(dir: &Path) -> Table {
    let batches: Vec<_> = (0..3)
        .map(|i| {
            let batch = sample_batch(i * 4000, 4000);
            let prices: Vec<i64> = (0..4000).map(|j| (j * 2_654_435_761) % 100_000).collect();
            let price = common::array_for(sample_schema().columns[1].ty, &prices, &[]);
            let mut columns = batch.columns().to_vec();
            columns[1] = price;
            RecordBatch::try_new(batch.schema(), columns).expect("batch")
        })
        .collect();
    write_table(dir, &sample_schema(), Layout::Dsm, PAGE_BYTES, 2, &batches)
}

#[test]
fn page_bounds_of_the_wrong_count_column_or_range_are_refused() {
    let refused_dsm = |edit: &dyn Fn(&mut Value)| {
        let tmp = tempfile::tempdir().expect("tempdir");
        let t = paged(tmp.path());
        assert!(t.manifest().files[1].pages >= 2, "price spans pages");
        edit_manifest(tmp.path(), true, edit);
        Table::open(tmp.path())
            .expect_err("must refuse")
            .to_string()
    };
    let msg = refused_dsm(&|m| {
        m["files"][1]["page_bounds"]
            .as_array_mut()
            .expect("kept")
            .pop();
    });
    assert!(
        msg.contains("page bounds for") && msg.contains("pages"),
        "{msg}"
    );
    let msg = refused_dsm(&|m| m["files"][1]["page_bounds"][1] = json!([9, 1]));
    assert!(msg.contains("page 1's bounds"), "{msg}");
    // `day` is a date: 32-bit days.
    let msg = refused_dsm(&|m| m["files"][2]["page_bounds"][0] = json!([0, 1_i64 << 40]));
    assert!(msg.contains("page 0's bounds"), "{msg}");
    // Strings keep none; NSM/PAX/CSM files none either.
    let msg = refused_dsm(&|m| {
        let pages = m["files"][4]["pages"].as_u64().expect("pages");
        m["files"][4]["page_bounds"] = json!(vec![[0, 1]; pages as usize]);
    });
    assert!(msg.contains("no DSM integer column"), "{msg}");
    let msg = refused(Layout::Pax, |m| {
        let pages = m["files"][0]["pages"].as_u64().expect("pages");
        m["files"][0]["page_bounds"] = json!(vec![[0, 1]; pages as usize]);
    });
    assert!(msg.contains("no DSM integer column"), "{msg}");
}

#[test]
fn verify_checks_page_bounds_against_the_data() {
    // A page's bounds narrowed (checksum recomputed) would drop its tuples from a
    // filtered scan's answer; loading cannot tell, reading the data does.
    let tmp = tempfile::tempdir().expect("tempdir");
    let fresh = paged(tmp.path());
    let bounds = fresh.manifest().files[1].page_bounds.clone();
    assert_eq!(bounds.len() as u64, fresh.manifest().files[1].pages);
    let [lo, hi] = bounds[1];
    assert!(lo < hi, "page 1 holds several values");
    edit_manifest(tmp.path(), true, |m| {
        m["files"][1]["page_bounds"][1] = json!([lo, lo]);
    });
    let t = Table::open(tmp.path()).expect("well-formed");
    let device = coopscan_storage::device::Device::new(Default::default());
    let files = t.open_files(&device).expect("files");
    let all: Vec<usize> = (0..t.schema().len()).collect();
    let refuted = (0..t.chunk_count()).find_map(|k| {
        let batch = t
            .read_chunk_batch(&device, &files, k, &all, None)
            .expect("read");
        t.check_chunk_contents(k, &batch).err()
    });
    let msg = refuted.expect("refuted").to_string();
    assert!(
        msg.contains("\"price\"") && msg.contains("page 1 "),
        "{msg}"
    );
}
