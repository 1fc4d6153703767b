//! Regression (issue "Reliability", item 11): a panic in a loader thread left every
//! parked scan waiting forever. Now it stops the runtime and every scan, parked, queued
//! or registering later, gets an error that says the loader panicked.
// A scan takes a list of ranges; one-range lists are the point here.
#![allow(clippy::single_range_in_vec_init)]

mod common;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc};

use coopscan_runtime::{PolicyKind, Runtime, RuntimeError};
use coopscan_storage::device::{Device, DeviceConfig, Fault, FaultInjector, ReadRequest};
use coopscan_storage::Layout;

use common::*;

const ROWS: i64 = 8_000;
const SCANS: usize = 6;
const MESSAGE: &str = "injected panic in a device read";

/// Lets `healthy` reads through, then panics in every read.
#[derive(Debug)]
struct PanicAfter {
    healthy: u64,
    reads: AtomicU64,
}

impl FaultInjector for PanicAfter {
    fn inject(&self, _: &ReadRequest<'_>) -> Option<Fault> {
        if self.reads.fetch_add(1, Ordering::Relaxed) >= self.healthy {
            panic!("{MESSAGE}");
        }
        None
    }
}

fn panicking_device(healthy: u64) -> Arc<Device> {
    let faults = Arc::new(PanicAfter {
        healthy,
        reads: AtomicU64::new(0),
    });
    Arc::new(Device::with_faults(DeviceConfig::default(), faults))
}

fn assert_loader_panicked(result: &Result<Totals, RuntimeError>, what: &str) {
    match result {
        Err(e @ RuntimeError::LoaderPanicked(_)) => {
            let msg = e.to_string();
            assert!(msg.contains("loader thread panicked"), "{what}: {msg}");
            assert!(msg.contains(MESSAGE), "{what}: {msg}");
        }
        other => panic!("{what}: expected LoaderPanicked, got {other:?}"),
    }
}

#[test]
fn a_loader_panic_fails_every_scan_instead_of_hanging() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let table = write_table(tmp.path(), Layout::Pax, ROWS);
    assert!(
        table.chunk_count() > 8,
        "the scans must outlast the healthy reads"
    );
    for policy in PolicyKind::ALL {
        for loaders in [1, 2] {
            let what = format!("{policy}, {loaders} loader(s)");
            let mut config = config(3, policy);
            config.abm.max_inflight = loaders;
            // Three chunks load fine, then the device panics under the loader. Three
            // frames admit fewer scans than SCANS, so some are queued when it happens.
            let runtime =
                Arc::new(Runtime::new(table.clone(), panicking_device(3), config).expect("rt"));
            let results = run_scans(&runtime, vec![vec![0..ROWS as u64]; SCANS]);
            for r in &results {
                assert_loader_panicked(r, &what);
            }
            let late = runtime
                .register(vec![0..ROWS as u64], vec![K, V])
                .and_then(|mut scan| consume(&mut scan, None));
            assert_loader_panicked(&late, &format!("{what}, registered afterwards"));
        }
    }
}

/// A scan already holding a chunk when the loader dies keeps its tuples (they are
/// resident and verified) and gets the error on its next call.
#[test]
fn a_scan_holding_a_chunk_gets_the_error_on_its_next_call() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let table = write_table(tmp.path(), Layout::Nsm, ROWS);
    // The reference is the generator's formula, not a read through storage.
    let values: Vec<i64> = (0..ROWS).map(value_of).collect();
    let runtime = Runtime::new(
        table.clone(),
        panicking_device(1),
        config(4, PolicyKind::Normal),
    )
    .expect("runtime");
    let mut scan = runtime
        .register(vec![0..ROWS as u64], vec![K, V])
        .expect("register");
    let (tx, rx) = mpsc::channel();
    // A thread of its own, so a hang fails the deadline below instead of blocking.
    std::thread::spawn(move || {
        let chunk = scan.next_chunk().expect("the first read is healthy");
        let chunk = chunk.expect("a chunk");
        let rows = chunk.chunk_rows();
        let batch = chunk.batch().expect("decode");
        drop(chunk);
        let _ = tx.send((0, (rows, batch, consume(&mut scan, None))));
    });
    let (rows, batch, rest) = collect(rx, 1).remove(0);
    let want = expected(&values, &table, &[rows]);
    assert_eq!(batch.num_rows() as u64, want.rows);
    assert_eq!(int64(&batch, 1).values().iter().sum::<i64>(), want.sum_v);
    assert_loader_panicked(&rest, "holding scan");
}
