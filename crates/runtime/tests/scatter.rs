//! Index selections through the threaded runtime (2004 report §4.2): a chunk only
//! selections need is read as the union of their pages, and each selection's worker
//! decodes the parts it was handed — its `rows()` are the scan's tuples on those pages,
//! their values the table's. A full scan that needs the chunk while a selection holds
//! the scattered piece waits for the release and then gets the whole chunk, woken by it.
#![allow(clippy::single_range_in_vec_init)] // one-range scans are the point here

mod common;

use std::sync::mpsc;

use coopscan_buffer::{ChunkId, RowRanges, ScanPages, TableId};
use coopscan_runtime::{PolicyKind, Runtime};
use coopscan_storage::{Layout, Table, TableWriter, WriteOptions};

use common::*;

/// 16 pages a chunk, so a selection's pages are a small part of it.
const PAGES_PER_CHUNK: u64 = 16;
const ROWS: i64 = 20_000;

fn table(dir: &std::path::Path, layout: Layout) -> Table {
    let mut opts = WriteOptions::new(layout);
    opts.page_bytes = PAGE_BYTES;
    opts.chunk_bytes = u64::from(PAGE_BYTES) * PAGES_PER_CHUNK;
    let mut w = TableWriter::create(dir, "t", schema(), opts).expect("create");
    w.write_batch(&rows_batch(0..ROWS, value_of))
        .expect("write");
    w.finish().expect("finish");
    Table::open(dir).expect("open")
}

/// The first row of every page of chunk 0 and the row after its last.
fn page_starts(table: &Table) -> Vec<u64> {
    let device = device();
    let files = table.open_files(&device).expect("files");
    let pages = table
        .page_rows(&device, &files, 0, &[K])
        .expect("page rows");
    let mut starts: Vec<u64> = pages[0].iter().map(|p| p.rows.start).collect();
    starts.push(table.chunk(0).rows().end);
    starts
}

#[test]
fn a_scattered_chunk_serves_its_selection_and_a_full_scan_waits_for_it() {
    for layout in [Layout::Nsm, Layout::Pax] {
        let tmp = tempfile::tempdir().expect("tempdir");
        let table = table(tmp.path(), layout);
        let values = sequential_values(&table);
        for policy in [PolicyKind::Relevance, PolicyKind::Normal, PolicyKind::Pbm] {
            let runtime = Runtime::new(table.clone(), device(), config(8, policy)).expect("rt");
            let starts = page_starts(&table);
            assert!(starts.len() > 8, "{layout:?}: {} pages", starts.len() - 1);
            // Pages 2, 3 and 9 of chunk 0; the selection's range is the whole chunk.
            let pages = ScanPages::new([(ChunkId(0), vec![2, 3, 9])]);
            let chunk0 = table.chunk(0).rows();
            let before = runtime.abm_stats();
            let mut selection = runtime
                .register_selection(
                    TableId(0),
                    RowRanges::new(vec![chunk0.clone()]),
                    vec![K, V],
                    1,
                    (None, pages),
                )
                .expect("register")
                .pop()
                .expect("a worker");
            let guard = selection.next_chunk().expect("next").expect("chunk 0");
            let want: Vec<std::ops::Range<u64>> = vec![starts[2]..starts[4], starts[9]..starts[10]];
            assert_eq!(guard.rows(), want, "{layout:?} {policy}");
            let batch = guard.batch().expect("batch");
            let keys = int64(&batch, 0).values().to_vec();
            let got_values = int64(&batch, 1).values().to_vec();
            let rows: Vec<u64> = want.iter().flat_map(|r| r.clone()).collect();
            assert_eq!(keys, rows.iter().map(|&r| r as i64).collect::<Vec<_>>());
            assert_eq!(
                got_values,
                rows.iter().map(|&r| values[r as usize]).collect::<Vec<_>>()
            );
            let stats = runtime.abm_stats();
            assert_eq!(stats.scatter_loads - before.scatter_loads, 1, "{stats:?}");
            assert_eq!(
                stats.bytes_loaded - before.bytes_loaded,
                3 * u64::from(PAGE_BYTES)
            );

            // A full scan of chunk 0 waits while the scattered piece is held.
            let (tx, rx) = mpsc::channel();
            let mut full = runtime
                .register(vec![chunk0.clone()], vec![K, V])
                .expect("full");
            let waiter = std::thread::spawn(move || {
                let totals = consume(&mut full, None);
                tx.send(totals).expect("send");
            });
            assert!(
                rx.recv_timeout(std::time::Duration::from_millis(300))
                    .is_err(),
                "served beside a scattered piece"
            );
            drop(guard);
            let totals = rx
                .recv_timeout(DEADLINE)
                .expect("woken by the release")
                .expect("full scan");
            waiter.join().expect("join");
            assert_eq!(
                totals.rows,
                chunk0.end - chunk0.start,
                "{layout:?} {policy}"
            );
            assert_eq!(
                totals.sum_v,
                values[chunk0.start as usize..chunk0.end as usize]
                    .iter()
                    .sum::<i64>()
            );
            assert!(selection.next_chunk().expect("next").is_none());
        }
    }
}
