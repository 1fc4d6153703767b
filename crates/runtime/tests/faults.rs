//! Fault injection as a standing test (issue "Reliability"): concurrent scans under
//! every policy and layout, on a device that injects read errors, short reads, flipped
//! bytes and latency spikes from a seed. Every scan returns exactly its tuples (checked
//! tuple by tuple against the generator's formula) or a load error naming a file of the
//! table; every damaging fault fails its load (corruption is caught by the page checks,
//! never returned); nothing stays pinned or registered; nothing hangs (watchdog).
//!
//! `COOPSCAN_FAULT_SEED=N` runs other seeds.

mod common;

use std::ops::Range;
use std::path::Path;
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use coopscan_runtime::{Holdings, PolicyKind, Runtime, RuntimeError};
use coopscan_storage::device::{Device, DeviceConfig, FaultCounts, FaultRates, SeededFaults};
use coopscan_storage::Layout;

use common::*;

const ROWS: i64 = 6_000;
const SCANS: usize = 10;
const FRAMES: u32 = 3;

fn rates() -> FaultRates {
    FaultRates {
        error: 0.02,
        short: 0.02,
        corrupt: 0.05,
        delay: 0.05,
        max_delay: Duration::from_millis(3),
    }
}

fn base_seed() -> u64 {
    std::env::var("COOPSCAN_FAULT_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x5EED)
}

/// What one (layout, policy) run saw.
#[derive(Default)]
struct Outcome {
    complete: usize,
    failed: usize,
    faults: FaultCounts,
}

/// A scan's error must be a load error whose message names a file of the table.
fn assert_clear(e: &RuntimeError, dir: &Path, what: &str) {
    let msg = e.to_string();
    assert!(matches!(e, RuntimeError::Load { .. }), "{what}: {msg}");
    let dir = dir.to_string_lossy();
    assert!(
        msg.contains(dir.as_ref()),
        "{what}: error names no table file: {msg}"
    );
}

/// Every damaging fault the device injected ends as a failed load. The last load may
/// still be on its way from the device to the runtime when the scans are done.
fn assert_every_damage_failed_a_load(runtime: &Runtime, faults: &SeededFaults, what: &str) {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let (damaging, failed) = (faults.counts().damaging(), runtime.stats().load_failures);
        if failed >= damaging {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{what}: {damaging} damaging faults but only {failed} failed loads"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn run_one(dir: &Path, layout: Layout, policy: PolicyKind, seed: u64) -> Outcome {
    let what = format!("{layout}/{policy}/seed {seed}");
    let table = coopscan_storage::Table::open(dir).expect("open");
    let faults = Arc::new(SeededFaults::new(seed, rates()));
    let device = Arc::new(Device::with_faults(DeviceConfig::default(), faults.clone()));
    let runtime = Arc::new(Runtime::new(table, device, config(FRAMES, policy)).expect("rt"));
    let mut rng = Rng(seed | 1);
    let specs: Vec<Vec<Range<u64>>> = (0..SCANS).map(|_| rng.ranges(ROWS as u64)).collect();
    let (tx, rx) = mpsc::channel();
    for (i, ranges) in specs.iter().cloned().enumerate() {
        let (tx, runtime) = (tx.clone(), Arc::clone(&runtime));
        std::thread::spawn(move || {
            let in_scan = selected(ROWS as u64, &ranges);
            let result = runtime
                .register(ranges, vec![K, V])
                .and_then(|mut scan| consume_checked(&mut scan, &in_scan, None));
            let _ = tx.send((i, result.map(|t| (t, expected_from_formula(&in_scan)))));
        });
    }
    let results = collect_by(rx, SCANS, Instant::now() + DEADLINE);
    let mut outcome = Outcome::default();
    for (i, result) in results.into_iter().enumerate() {
        match result {
            Ok((mut got, want)) => {
                got.chunks = 0;
                assert_eq!(got, want, "{what}: scan {i}");
                outcome.complete += 1;
            }
            Err(e) => {
                assert_clear(&e, dir, &what);
                outcome.failed += 1;
            }
        }
    }
    assert_every_damage_failed_a_load(&runtime, &faults, &what);
    runtime.check_invariants().expect("invariants");
    assert_eq!(runtime.holdings(), Holdings::default(), "{what}: leaked");
    outcome.faults = faults.counts();
    outcome
}

#[test]
fn concurrent_scans_under_injected_faults_are_right_or_fail_clearly() {
    let mut total = Outcome::default();
    for (l, layout) in Layout::ALL.into_iter().enumerate() {
        let tmp = tempfile::tempdir().expect("tempdir");
        write_table(tmp.path(), layout, ROWS);
        for (p, policy) in PolicyKind::ALL.into_iter().enumerate() {
            let seed = base_seed() ^ ((l as u64) << 8 | p as u64);
            let o = run_one(tmp.path(), layout, policy, seed);
            total.complete += o.complete;
            total.failed += o.failed;
            total.faults.requests += o.faults.requests;
            total.faults.corrupt += o.faults.corrupt;
            total.faults.errors += o.faults.errors;
            total.faults.short += o.faults.short;
            total.faults.delays += o.faults.delays;
        }
    }
    // The run means something only if faults hit and scans both failed and finished.
    let f = total.faults;
    eprintln!(
        "{} scans right, {} failed clearly; faults: {f:?}",
        total.complete, total.failed
    );
    assert!(
        f.corrupt > 0 && f.errors > 0 && f.short > 0 && f.delays > 0,
        "{f:?}"
    );
    assert!(
        total.complete > 0 && total.failed > 0,
        "{} ok, {} failed",
        total.complete,
        total.failed
    );
}
