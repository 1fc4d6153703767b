//! Stress (issue "Reliability"): hundreds of concurrent scans on tiny buffers (2-4
//! chunks) under every policy and layout, with injected device faults, scans cancelled
//! mid-way and pairs of scans of the same rows at once (a self-join's two sides), under
//! a watchdog. Every tuple every scan receives is checked against the generator's
//! formula; a complete scan must have exactly its rows; an error must be a load error
//! naming a table file; afterwards nothing is registered or pinned.
//!
//! `COOPSCAN_STRESS_SCANS=N` sets the scans per round (default 200; every round runs
//! them all at once), `COOPSCAN_FAULT_SEED` the seed.

mod common;

use std::ops::Range;
use std::path::Path;
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use coopscan_runtime::{Holdings, PolicyKind, Runtime, RuntimeError};
use coopscan_storage::device::{Device, DeviceConfig, FaultRates, SeededFaults};
use coopscan_storage::Layout;

use common::*;

const ROWS: i64 = 4_000;
/// Per round; a stall of any scan past it fails the test.
const ROUND_DEADLINE: Duration = Duration::from_secs(120);

fn env_or(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

fn rates() -> FaultRates {
    FaultRates {
        error: 0.005,
        short: 0.005,
        corrupt: 0.01,
        delay: 0.02,
        max_delay: Duration::from_millis(2),
    }
}

/// What a scan thread does.
#[derive(Clone, Debug)]
enum Role {
    /// Reads all its chunks.
    Full,
    /// Stops after this many chunks and drops the scan (a cancelled query).
    Cancel(u64),
}

struct Spec {
    ranges: Vec<Range<u64>>,
    role: Role,
}

/// Scans of one round: random ranges, a quarter cancelled, every tenth spec doubled
/// into a pair over the same rows registered back to back (a self-join's two sides).
fn specs(rng: &mut Rng, scans: usize) -> Vec<Spec> {
    let mut out = Vec::with_capacity(scans);
    while out.len() < scans {
        let ranges = rng.ranges(ROWS as u64);
        let role = match rng.below(4) {
            0 => Role::Cancel(1 + rng.below(4)),
            _ => Role::Full,
        };
        if out.len() % 10 == 0 && out.len() + 1 < scans {
            out.push(Spec {
                ranges: ranges.clone(),
                role: Role::Full,
            });
        }
        out.push(Spec { ranges, role });
    }
    out
}

/// Runs one scan thread's work; `Ok(None)` for a cancelled scan (its tuples were
/// checked as they came).
fn run_scan(runtime: &Runtime, spec: &Spec) -> Result<Option<(Totals, Totals)>, RuntimeError> {
    let in_scan = selected(ROWS as u64, &spec.ranges);
    let mut scan = runtime.register(spec.ranges.clone(), vec![K, V])?;
    match spec.role {
        Role::Cancel(chunks) => {
            consume_checked(&mut scan, &in_scan, Some(chunks))?;
            drop(scan);
            Ok(None)
        }
        Role::Full => {
            let mut got = consume_checked(&mut scan, &in_scan, None)?;
            got.chunks = 0;
            Ok(Some((got, expected_from_formula(&in_scan))))
        }
    }
}

fn round(dir: &Path, layout: Layout, policy: PolicyKind, frames: u32, scans: usize, seed: u64) {
    let what = format!("{layout}/{policy}/{frames} frames/seed {seed}");
    let table = coopscan_storage::Table::open(dir).expect("open");
    let faults = Arc::new(SeededFaults::new(seed, rates()));
    let device = Arc::new(Device::with_faults(DeviceConfig::default(), faults.clone()));
    let runtime = Arc::new(Runtime::new(table, device, config(frames, policy)).expect("rt"));
    let specs = specs(&mut Rng(seed | 1), scans);
    let (tx, rx) = mpsc::channel();
    let n = specs.len();
    for (i, spec) in specs.into_iter().enumerate() {
        let (tx, runtime) = (tx.clone(), Arc::clone(&runtime));
        std::thread::spawn(move || {
            let _ = tx.send((i, run_scan(&runtime, &spec)));
        });
    }
    let results = collect_by(rx, n, Instant::now() + ROUND_DEADLINE);
    let dir_name = dir.to_string_lossy();
    for (i, result) in results.into_iter().enumerate() {
        match result {
            Ok(Some((got, want))) => assert_eq!(got, want, "{what}: scan {i}"),
            Ok(None) => {}
            Err(e @ RuntimeError::Load { .. }) => {
                let msg = e.to_string();
                assert!(msg.contains(dir_name.as_ref()), "{what}: scan {i}: {msg}");
            }
            Err(e) => panic!("{what}: scan {i}: unexpected error {e}"),
        }
    }
    runtime.check_invariants().expect("invariants");
    assert_eq!(runtime.holdings(), Holdings::default(), "{what}: leaked");
}

#[test]
fn hundreds_of_concurrent_scans_with_faults_and_cancellations() {
    let scans = env_or("COOPSCAN_STRESS_SCANS", 200) as usize;
    let seed = env_or("COOPSCAN_FAULT_SEED", 0x57E55);
    let started = Instant::now();
    for (l, layout) in Layout::ALL.into_iter().enumerate() {
        let tmp = tempfile::tempdir().expect("tempdir");
        write_table(tmp.path(), layout, ROWS);
        for (p, policy) in PolicyKind::ALL.into_iter().enumerate() {
            let frames = 2 + ((l + p) % 3) as u32;
            let seed = seed ^ ((l as u64) << 8 | p as u64);
            round(tmp.path(), layout, policy, frames, scans, seed);
        }
    }
    let rounds = Layout::ALL.len() * PolicyKind::ALL.len();
    eprintln!(
        "{scans} scans per round, {rounds} rounds: {:?}",
        started.elapsed()
    );
}
