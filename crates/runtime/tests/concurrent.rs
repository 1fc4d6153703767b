//! Many concurrent scans, every policy, small buffers: every scan gets exactly its
//! tuples, as a plain sequential read of the same ranges says.
// A scan takes a list of ranges; one-range lists are the point here.
#![allow(clippy::single_range_in_vec_init)]

mod common;

use std::sync::Arc;

use coopscan_runtime::{PolicyKind, Runtime};
use coopscan_storage::Layout;

use common::*;

const ROWS: i64 = 12_000;
const SCANS: usize = 10;
/// Down to the admission limit (2 frames per active scan): then scans queue.
const FRAME_COUNTS: [u32; 3] = [2, 5, 12];

#[test]
fn every_policy_gives_every_scan_exactly_its_tuples() {
    for layout in Layout::ALL {
        every_policy_on(layout);
    }
}

fn every_policy_on(layout: Layout) {
    let tmp = tempfile::tempdir().expect("tempdir");
    let table = write_table(tmp.path(), layout, ROWS);
    assert!(
        table.chunk_count() >= 10,
        "want many chunks, got {}",
        table.chunk_count()
    );
    let values = sequential_values(&table);
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    for policy in PolicyKind::ALL {
        for frames in FRAME_COUNTS {
            let mut specs: Vec<_> = (0..SCANS).map(|_| rng.ranges(ROWS as u64)).collect();
            specs[0] = vec![0..ROWS as u64]; // one full scan always
            let runtime = Arc::new(
                Runtime::new(table.clone(), device(), config(frames, policy)).expect("runtime"),
            );
            let results = run_scans(&runtime, specs.clone());
            for (ranges, result) in specs.iter().zip(results) {
                let got = result.unwrap_or_else(|e| panic!("{layout}/{policy}/{frames}: {e}"));
                assert_eq!(
                    got,
                    expected(&values, &table, ranges),
                    "{layout}/{policy}/{frames}: {ranges:?}"
                );
            }
            runtime.check_invariants().expect("invariants");
            let stats = runtime.stats();
            assert!(stats.chunk_loads > 0 && stats.bytes_read > 0, "{stats:?}");
            assert_eq!(stats.load_failures, 0);
            assert_eq!(stats.scans, SCANS as u64);
            assert!(stats.scan_wait > std::time::Duration::ZERO, "{stats:?}");
            assert_eq!(runtime.device_stats().bytes, stats.bytes_read);
        }
    }
}

#[test]
fn empty_and_out_of_table_ranges() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let table = write_table(tmp.path(), Layout::Nsm, 2_000);
    let runtime = Runtime::new(table, device(), config(4, PolicyKind::Relevance)).expect("rt");
    let mut empty = runtime.register(vec![5..5], vec![K]).expect("empty scan");
    assert!(empty.next_chunk().expect("no error").is_none());
    assert!(runtime.register(vec![0..2_001], vec![K]).is_err());
    assert!(runtime.register(vec![0..10], vec![7]).is_err());
}

/// Two loaders (`max_inflight = 2`) and scans that poll with `try_next_chunk`.
#[test]
fn two_loaders_and_polling_scans() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let table = write_table(tmp.path(), Layout::Pax, ROWS);
    let values = sequential_values(&table);
    let mut rng = Rng(0x51ed_2701_f00d_cafe);
    for policy in PolicyKind::ALL {
        let mut cfg = config(6, policy);
        cfg.abm = cfg.abm.with_max_inflight(2);
        let runtime = Arc::new(Runtime::new(table.clone(), device(), cfg).expect("runtime"));
        let specs: Vec<_> = (0..SCANS).map(|_| rng.ranges(ROWS as u64)).collect();
        let (tx, rx) = std::sync::mpsc::channel();
        for (i, ranges) in specs.iter().cloned().enumerate() {
            let (tx, runtime) = (tx.clone(), Arc::clone(&runtime));
            std::thread::spawn(move || {
                let mut scan = runtime.register(ranges, vec![K, V]).expect("register");
                let _ = tx.send((i, poll_all(&mut scan)));
            });
        }
        for (ranges, got) in specs.iter().zip(collect(rx, SCANS)) {
            let got = got.unwrap_or_else(|e| panic!("{policy}: {e}"));
            assert_eq!(
                got,
                expected(&values, &table, ranges),
                "{policy}: {ranges:?}"
            );
        }
        runtime.check_invariants().expect("invariants");
    }
}

fn poll_all(scan: &mut coopscan_runtime::CScan) -> Result<Totals, coopscan_runtime::RuntimeError> {
    let mut t = Totals::default();
    loop {
        let Some(chunk) = scan.try_next_chunk()? else {
            if scan.is_finished() {
                return Ok(t);
            }
            std::thread::yield_now();
            continue;
        };
        let batch = chunk.batch()?;
        t.rows += batch.num_rows() as u64;
        t.sum_k += int64(&batch, 0).values().iter().sum::<i64>();
        t.sum_v += int64(&batch, 1).values().iter().sum::<i64>();
        t.chunks += 1;
    }
}

/// Order belongs to the scan: an in-order Scan sharing the buffer with CScans gets its
/// chunks ascending, under every policy, and every scan still gets exactly its tuples.
#[test]
fn in_order_scans_share_the_buffer_with_cscans() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let table = write_table(tmp.path(), Layout::Pax, ROWS);
    let values = sequential_values(&table);
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    for policy in PolicyKind::ALL {
        let runtime =
            Arc::new(Runtime::new(table.clone(), device(), config(8, policy)).expect("runtime"));
        let cscans: Vec<_> = (0..3).map(|_| rng.ranges(ROWS as u64)).collect();
        let background = {
            let runtime = Arc::clone(&runtime);
            let cscans = cscans.clone();
            std::thread::spawn(move || run_scans(&runtime, cscans))
        };
        let ranges = vec![0..ROWS as u64 / 2, ROWS as u64 * 3 / 4..ROWS as u64];
        let mut scan = runtime
            .register_in_order(ranges.clone(), vec![K, V])
            .expect("in-order scan");
        let mut seen = Vec::new();
        let mut totals = Totals::default();
        while let Some(chunk) = scan.next_chunk().expect("chunk") {
            seen.push(chunk.chunk().0);
            let batch = chunk.batch().expect("batch");
            totals.rows += batch.num_rows() as u64;
            totals.sum_k += int64(&batch, 0).values().iter().sum::<i64>();
            totals.sum_v += int64(&batch, 1).values().iter().sum::<i64>();
            totals.chunks += 1;
        }
        assert!(seen.windows(2).all(|w| w[0] < w[1]), "{policy}: {seen:?}");
        assert_eq!(totals, expected(&values, &table, &ranges), "{policy}");
        let results = background.join().expect("cscans");
        for (ranges, result) in cscans.iter().zip(results) {
            let got = result.unwrap_or_else(|e| panic!("{policy}: {e}"));
            assert_eq!(got, expected(&values, &table, ranges), "{policy}");
        }
        runtime.check_invariants().expect("invariants");
    }
}

/// Regression (issue "Reliability", item 8): a table with no rows made `Runtime::new`
/// fail ("a table needs at least one chunk"), so CScans could not answer what a Scan
/// answered with 0 rows. Now every policy runs it and returns nothing.
#[test]
fn an_empty_table_answers_zero_rows() {
    for layout in Layout::ALL {
        let tmp = tempfile::tempdir().expect("tempdir");
        let table = write_table(tmp.path(), layout, 0);
        for policy in PolicyKind::ALL {
            let runtime = Runtime::new(table.clone(), device(), config(2, policy))
                .unwrap_or_else(|e| panic!("{layout}/{policy}: {e}"));
            let mut scan = runtime.register(vec![0..0], vec![K, V]).expect("scan");
            assert_eq!(
                consume(&mut scan, None).expect("consume"),
                Totals::default()
            );
        }
    }
}
