//! Replacing a table is atomic and exclusive (issue 9, item 4): until the new table is
//! finished the directory holds the old one, a writer that stops half-way leaves the
//! old one intact, and a second concurrent writer is refused.

mod common;

use std::path::Path;

use coopscan_storage::write::WriteOptions;
use coopscan_storage::{Layout, StorageError, Table, TableWriter};

use common::{sample_batch, sample_schema, try_read_all, write_table};

const PAGE_BYTES: u32 = 4096;

fn overwrite_opts() -> WriteOptions {
    let mut opts = WriteOptions::new(Layout::Pax);
    opts.page_bytes = PAGE_BYTES;
    opts.chunk_bytes = u64::from(PAGE_BYTES) * 2;
    opts.overwrite = true;
    opts
}

fn rows_of(dir: &Path) -> u64 {
    let t = Table::open(dir).expect("a complete table");
    try_read_all(&t).expect("readable");
    t.rows()
}

/// Entries of `dir`'s parent other than `dir`: what a writer left beside the table.
fn leftovers(dir: &Path) -> Vec<String> {
    let parent = dir.parent().expect("parent");
    std::fs::read_dir(parent)
        .expect("read_dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .filter(|n| *n != dir.file_name().expect("name").to_string_lossy())
        .collect()
}

#[test]
fn the_old_table_stays_until_the_new_one_is_finished() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("t");
    write_table(
        &dir,
        &sample_schema(),
        Layout::Pax,
        PAGE_BYTES,
        2,
        &[sample_batch(0, 700)],
    );
    let mut w = TableWriter::create(&dir, "t", sample_schema(), overwrite_opts()).expect("create");
    w.write_batch(&sample_batch(0, 2000)).expect("write");
    assert_eq!(rows_of(&dir), 700, "old table while the new one is written");
    drop(w); // a writer that never finishes (an error, a panic)
    assert_eq!(rows_of(&dir), 700, "old table after an abandoned rewrite");
    assert!(leftovers(&dir).is_empty(), "{:?}", leftovers(&dir));
    let mut w = TableWriter::create(&dir, "t", sample_schema(), overwrite_opts()).expect("create");
    w.write_batch(&sample_batch(0, 2000)).expect("write");
    w.finish().expect("finish");
    assert_eq!(rows_of(&dir), 2000, "new table after finish");
    assert!(leftovers(&dir).is_empty(), "{:?}", leftovers(&dir));
}

#[test]
fn a_second_concurrent_writer_is_refused() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("t");
    let first = TableWriter::create(&dir, "t", sample_schema(), overwrite_opts()).expect("first");
    let err = match TableWriter::create(&dir, "t", sample_schema(), overwrite_opts()) {
        Err(e) => e,
        Ok(_) => panic!("two writers of one table"),
    };
    assert!(matches!(err, StorageError::Locked { .. }), "{err:?}");
    assert!(err.to_string().contains("another writer"), "{err}");
    first.finish().expect("the first writer is unaffected");
    // Released: the next writer may go.
    TableWriter::create(&dir, "t", sample_schema(), overwrite_opts()).expect("after release");
}

#[test]
fn without_overwrite_an_existing_table_is_kept() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("t");
    write_table(
        &dir,
        &sample_schema(),
        Layout::Pax,
        PAGE_BYTES,
        2,
        &[sample_batch(0, 700)],
    );
    let mut opts = overwrite_opts();
    opts.overwrite = false;
    let err = TableWriter::create(&dir, "t", sample_schema(), opts)
        .err()
        .expect("refused");
    assert!(err.to_string().contains("already holds a table"), "{err}");
    assert_eq!(rows_of(&dir), 700);
}

#[test]
fn a_directory_that_is_not_a_table_is_never_replaced() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("t");
    std::fs::create_dir(&dir).expect("mkdir");
    std::fs::write(dir.join("notes.txt"), "mine").expect("write");
    let err = TableWriter::create(&dir, "t", sample_schema(), overwrite_opts())
        .err()
        .expect("refused");
    assert!(err.to_string().contains("not a coopscan table"), "{err}");
    assert_eq!(
        std::fs::read_to_string(dir.join("notes.txt")).expect("kept"),
        "mine"
    );
}

#[test]
fn a_work_directory_left_by_a_killed_writer_is_cleaned_up() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("t");
    let stale = tmp.path().join(".t.tmp");
    std::fs::create_dir(&stale).expect("mkdir");
    std::fs::write(stale.join("data.pax"), "half a table").expect("write");
    write_table(
        &dir,
        &sample_schema(),
        Layout::Pax,
        PAGE_BYTES,
        2,
        &[sample_batch(0, 700)],
    );
    assert_eq!(rows_of(&dir), 700);
    assert!(leftovers(&dir).is_empty(), "{:?}", leftovers(&dir));
}
