//! Parallel CScans (2012 paper §2.2): one scan, several worker threads, each with its
//! own handle processing its own chunk. Under every policy and layout the workers
//! together get every tuple of the scan's ranges exactly once (their totals add up to
//! a plain sequential read's), the registration outlives any one worker, and nothing
//! stays pinned or registered afterwards.
#![allow(clippy::single_range_in_vec_init)] // one-range scans are the point here

mod common;

use std::sync::Arc;

use coopscan_buffer::{RowRanges, TableId};
use coopscan_runtime::{PolicyKind, Runtime};
use coopscan_storage::Layout;

use common::*;

const ROWS: i64 = 12_000;
const WORKERS: u16 = 3;

/// Each worker's totals, added up.
fn sum(parts: &[Totals]) -> Totals {
    parts.iter().fold(Totals::default(), |a, t| Totals {
        rows: a.rows + t.rows,
        sum_v: a.sum_v + t.sum_v,
        sum_k: a.sum_k + t.sum_k,
        chunks: a.chunks + t.chunks,
    })
}

#[test]
fn workers_of_one_scan_get_every_tuple_once_under_every_policy_and_layout() {
    for layout in [Layout::Pax, Layout::Dsm] {
        let tmp = tempfile::tempdir().expect("tempdir");
        let table = write_table(tmp.path(), layout, ROWS);
        let values = sequential_values(&table);
        let ranges = vec![100..7_000, 9_000..ROWS as u64];
        let want = expected(&values, &table, &ranges);
        for policy in PolicyKind::ALL {
            // Room for the scan's 2 chunks plus one per further worker, and a second scan.
            let runtime = Runtime::new(table.clone(), device(), config(8, policy)).expect("rt");
            let runtime = Arc::new(runtime);
            let handles = runtime
                .register_parallel(
                    TableId(0),
                    RowRanges::new(ranges.clone()),
                    vec![K, V],
                    WORKERS,
                    None,
                )
                .expect("register");
            assert_eq!(handles.len(), usize::from(WORKERS));
            // A plain CScan beside it shares the buffer.
            let other = runtime
                .register(vec![0..ROWS as u64], vec![K, V])
                .expect("other");
            let threads: Vec<_> = handles
                .into_iter()
                .chain(std::iter::once(other))
                .map(|mut scan| std::thread::spawn(move || consume(&mut scan, None)))
                .collect();
            let mut parts: Vec<Totals> = threads
                .into_iter()
                .map(|t| t.join().expect("thread").expect("scan"))
                .collect();
            let whole = parts.pop().expect("the plain scan");
            let what = format!("{layout}/{policy}");
            assert_eq!(sum(&parts), want, "{what}: the workers together");
            assert_eq!(
                whole,
                expected(&values, &table, &[0..ROWS as u64]),
                "{what}"
            );
            runtime.check_invariants().expect("invariants");
            let holdings = runtime.holdings();
            assert_eq!(
                holdings.active_scans + holdings.pinned_chunks,
                0,
                "{what}: {holdings:?}"
            );
            assert_eq!(
                runtime.stats().scans,
                2,
                "{what}: one registration per scan"
            );
        }
    }
}

/// The scan stays registered while any worker's handle does: two workers dropped
/// before they start, the third still gets every tuple; a scan of 0 or too many
/// workers is refused.
#[test]
fn the_last_worker_standing_finishes_the_scan() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let table = write_table(tmp.path(), Layout::Pax, ROWS);
    let values = sequential_values(&table);
    let runtime =
        Runtime::new(table.clone(), device(), config(6, PolicyKind::Relevance)).expect("runtime");
    let all = vec![0..ROWS as u64];
    let mut handles = runtime
        .register_parallel(TableId(0), RowRanges::new(all.clone()), vec![K, V], 3, None)
        .expect("register");
    let mut last = handles.pop().expect("three handles");
    drop(handles);
    assert_eq!(runtime.holdings().active_scans, 1, "still registered");
    let got = consume(&mut last, None).expect("scan");
    assert_eq!(got, expected(&values, &table, &all));
    assert_eq!(runtime.holdings().active_scans, 0);
    for workers in [0, coopscan_buffer::MAX_WORKERS + 1] {
        let refused = runtime.register_parallel(
            TableId(0),
            RowRanges::new(all.clone()),
            vec![K],
            workers,
            None,
        );
        assert!(refused.is_err(), "{workers} workers accepted");
    }
}
