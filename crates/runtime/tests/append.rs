//! Bulk appends through the running runtime (2012 paper §2.1): a scan registered before
//! an append keeps its snapshot and gets exactly the old rows, one registered after
//! gets every row, and the chunks both snapshots have are read once for both.
#![allow(clippy::single_range_in_vec_init)]

mod common;

use std::ops::Range;
use std::path::Path;
use std::sync::{mpsc, Arc};

use coopscan_buffer::TableId;
use coopscan_runtime::{PolicyKind, Runtime, RuntimeConfig};
use coopscan_storage::{Layout, Table, TableAppender};

use common::*;

const ROWS: i64 = 3000;
const APPENDED: i64 = 1500;

/// Appends rows `from..from + rows` (the table's `k`, `v` columns) and opens the new
/// version.
fn append_rows(dir: &Path, from: i64, rows: i64) -> Table {
    let batch = rows_batch(from..from + rows, value_of);
    let mut appender = TableAppender::begin(dir).expect("begin");
    appender.write_batch(&batch).expect("write");
    appender.commit().expect("commit");
    Table::open(dir).expect("open")
}

/// Bytes of every piece of columns `k`, `v` of every chunk, each once.
fn all_piece_bytes(table: &Table) -> u64 {
    let pieces: Vec<Vec<usize>> = match table.layout().columnar() {
        true => vec![vec![K], vec![V]],
        false => vec![vec![K, V]],
    };
    (0..table.chunk_count())
        .flat_map(|k| pieces.iter().map(move |p| (k, p)))
        .map(|(k, p)| table.chunk_extents(k, p).iter().map(|e| e.len).sum::<u64>())
        .sum()
}

#[test]
fn a_scan_keeps_its_snapshot_across_an_append_and_shares_its_chunks() {
    for layout in Layout::ALL {
        let tmp = tempfile::tempdir().expect("tempdir");
        let dir = tmp.path().join("t");
        let table = write_table(&dir, layout, ROWS);
        let old_values = sequential_values(&table);
        let config = RuntimeConfig::new(64, PolicyKind::Relevance);
        let runtime = Arc::new(Runtime::new(table.clone(), device(), config).expect("runtime"));
        let mut before = runtime
            .register(vec![0..ROWS as u64], vec![K, V])
            .expect("before");
        let first = consume(&mut before, Some(1)).expect("a first chunk");
        let appended = append_rows(&dir, ROWS, APPENDED);
        let added = runtime
            .append(TableId(0), appended.clone())
            .expect("append");
        assert_eq!(added.end.0 as usize, appended.chunk_count(), "{layout}");
        assert_eq!(added.start.0 as usize, table.chunk_count(), "{layout}");
        assert_eq!(runtime.table().rows(), (ROWS + APPENDED) as u64);
        let all = 0..(ROWS + APPENDED) as u64;
        let after = runtime
            .register(vec![all.clone()], vec![K, V])
            .expect("after");
        let (tx, rx) = mpsc::channel();
        for (i, mut scan) in [before, after].into_iter().enumerate() {
            let tx = tx.clone();
            std::thread::spawn(move || {
                let _ = tx.send((i, consume(&mut scan, None)));
            });
        }
        let done = collect(rx, 2);
        let rest = done[0].as_ref().expect("the old snapshot's scan");
        let old: Range<u64> = 0..ROWS as u64;
        let want_old = expected(&old_values, &table, &[old]);
        assert_eq!(first.rows + rest.rows, want_old.rows, "{layout}");
        assert_eq!(first.sum_k + rest.sum_k, want_old.sum_k, "{layout}");
        assert_eq!(first.sum_v + rest.sum_v, want_old.sum_v, "{layout}");
        let want_all = expected(&sequential_values(&appended), &appended, &[all]);
        assert_eq!(
            done[1].as_ref().expect("the new snapshot's scan"),
            &want_all,
            "{layout}"
        );
        // The buffer holds the table: every piece was loaded exactly once, the old
        // chunks for both scans.
        let abm = runtime.abm_stats();
        assert_eq!(abm.bytes_loaded, all_piece_bytes(&appended), "{layout}");
    }
}

#[test]
fn only_an_append_to_the_served_table_is_taken() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let table = write_table(&tmp.path().join("t"), Layout::Pax, ROWS);
    let other = write_table(&tmp.path().join("u"), Layout::Pax, ROWS + 10);
    let runtime =
        Runtime::new(table, device(), RuntimeConfig::new(16, PolicyKind::Normal)).expect("runtime");
    assert!(runtime.append(TableId(0), other).is_err());
    assert!(runtime
        .append(TableId(3), runtime.table().as_ref().clone())
        .is_err());
    // The same version again adds nothing.
    let same = runtime.append(TableId(0), runtime.table().as_ref().clone());
    assert!(same.expect("no new chunks").is_empty());
}

/// A runtime started over an empty columnar table keeps its chunks whole (there were
/// no columns' pieces to size): an append is sized the same way and read back.
#[test]
fn an_append_to_an_empty_columnar_table_is_read() {
    for layout in [Layout::Dsm, Layout::Csm] {
        let tmp = tempfile::tempdir().expect("tempdir");
        let dir = tmp.path().join("t");
        let table = write_table(&dir, layout, 0);
        // A budget in chunks of an empty table would count chunks of 1 byte.
        let mut config = RuntimeConfig::new(64, PolicyKind::Relevance);
        config.abm.budget = coopscan_buffer::BufferBudget::Bytes(4 << 20);
        let runtime = Runtime::new(table, device(), config).expect("runtime");
        let appended = append_rows(&dir, 0, APPENDED);
        runtime
            .append(TableId(0), appended.clone())
            .expect("append");
        let all = 0..APPENDED as u64;
        let mut scan = runtime
            .register(vec![all.clone()], vec![K, V])
            .expect("scan");
        let got = consume(&mut scan, None).expect("rows");
        let want = expected(&sequential_values(&appended), &appended, &[all]);
        assert_eq!(got, want, "{layout}");
    }
}
