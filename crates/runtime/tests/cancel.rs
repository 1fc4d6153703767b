//! A scan that stops early — dropped mid-way or unwinding from a panic while holding a
//! chunk — leaves the runtime consistent, and the other scans finish correctly.
// A scan takes a list of ranges; one-range lists are the point here.
#![allow(clippy::single_range_in_vec_init)]

mod common;

use std::sync::{mpsc, Arc};

use coopscan_runtime::{PolicyKind, Runtime};
use coopscan_storage::Layout;

use common::*;

const ROWS: i64 = 8_000;
const FRAMES: u32 = 4;
const CHUNKS_BEFORE_CANCEL: u64 = 3;

#[test]
fn dropped_and_panicking_scans_leave_others_correct() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let table = write_table(tmp.path(), Layout::Pax, ROWS);
    let values = sequential_values(&table);
    let full = vec![0..ROWS as u64];
    for policy in PolicyKind::ALL {
        let runtime = Arc::new(
            Runtime::new(table.clone(), device(), config(FRAMES, policy)).expect("runtime"),
        );
        let (tx, rx) = mpsc::channel();
        for i in 0..4 {
            let (tx, runtime, full) = (tx.clone(), Arc::clone(&runtime), full.clone());
            std::thread::spawn(move || {
                let mut scan = runtime.register(full, vec![K, V]).expect("register");
                let result = match i {
                    // Cancelled: stops after a few chunks and drops the scan.
                    0 => consume(&mut scan, Some(CHUNKS_BEFORE_CANCEL)).map(|_| None),
                    // Panics while holding a chunk; the guard and scan drop on unwind.
                    1 => std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                        let _chunk = scan.next_chunk().expect("first chunk");
                        panic!("scan thread fails while processing");
                    }))
                    .map_or(Ok(None), |()| Ok(None)),
                    _ => consume(&mut scan, None).map(Some),
                };
                drop(scan);
                let _ = tx.send((i, result));
            });
        }
        drop(tx);
        let results = collect(rx, 4);
        for r in &results[2..] {
            let got = r.as_ref().expect("no error").clone().expect("totals");
            assert_eq!(got, expected(&values, &table, &full), "{policy}");
        }
        runtime.check_invariants().expect("invariants after cancel");
        // Everything is unregistered: a new scan is admitted and finishes.
        let mut after = runtime
            .register(full.clone(), vec![K, V])
            .expect("register");
        let got = consume(&mut after, None).expect("scan after cancel");
        assert_eq!(got, expected(&values, &table, &full), "{policy}");
    }
}

#[test]
fn dropping_the_runtime_stops_parked_scans() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let table = write_table(tmp.path(), Layout::Nsm, 2_000);
    let runtime = Runtime::new(table, device(), config(2, PolicyKind::Attach)).expect("rt");
    let mut scan = runtime.register(vec![0..2_000], vec![K]).expect("register");
    drop(runtime);
    // Either the scan got its chunks before the loader stopped, or it is told why not.
    loop {
        match scan.next_chunk() {
            Ok(Some(_)) => continue,
            Ok(None) => break,
            Err(e) => {
                assert!(e.to_string().contains("shut down"), "{e}");
                break;
            }
        }
    }
}

/// Regression (issue "Reliability", item 10): dropping the runtime joined its loaders,
/// so it waited for a read-ahead nobody needed any more (a `LIMIT 1` query on a slow
/// device exited a whole device latency late). Now the loader finishes that read on its
/// own and the drop returns at once.
#[test]
fn dropping_the_runtime_does_not_wait_for_a_read_in_flight() {
    const LATENCY: std::time::Duration = std::time::Duration::from_secs(2);
    let tmp = tempfile::tempdir().expect("tempdir");
    let table = write_table(tmp.path(), Layout::Pax, ROWS);
    let config_device = coopscan_storage::device::DeviceConfig {
        latency_per_request: LATENCY,
        ..Default::default()
    };
    let device = Arc::new(coopscan_storage::device::Device::new(config_device));
    let runtime = Runtime::new(table, device, config(FRAMES, PolicyKind::Normal)).expect("runtime");
    let mut scan = runtime
        .register(vec![0..ROWS as u64], vec![K])
        .expect("scan");
    // Taking and releasing the first chunk makes normal read ahead the next one.
    drop(scan.next_chunk().expect("first chunk").expect("a chunk"));
    std::thread::sleep(std::time::Duration::from_millis(100));
    let started = std::time::Instant::now();
    drop(runtime);
    let took = started.elapsed();
    assert!(
        took < LATENCY / 2,
        "drop waited {took:?} for a useless read"
    );
    assert!(matches!(
        scan.next_chunk(),
        Err(coopscan_runtime::RuntimeError::ShutDown)
    ));
}
