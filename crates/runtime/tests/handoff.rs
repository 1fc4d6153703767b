//! The scan/loader handoff under shuttle's scheduler (`--features shuttle`): the real
//! runtime — its lock, condition variables, loader threads, the driver — runs with
//! every thread switch chosen by shuttle, over many schedules (random and PCT, seeded,
//! so a failure replays). Every scan must get exactly its tuples and nothing may hang
//! (shuttle reports a state where every thread waits as a deadlock). The same check
//! with a lost wakeup injected into the scans' wait (`inject::lost_wakeup`) must fail:
//! the test would catch that bug.
//!
//! ```text
//! cargo test -p coopscan-runtime --features shuttle --test handoff
//! ```
#![allow(clippy::single_range_in_vec_init)] // one-range scans are the point here

mod common;

use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use coopscan_buffer::{RowRanges, TableId};
use coopscan_runtime::{inject, PolicyKind, Runtime};
use coopscan_storage::{Layout, Table};
use shuttle::scheduler::{PctScheduler, RandomScheduler};

use common::*;

/// A table of a few chunks: enough for loads and waits to interleave, small enough for
/// hundreds of schedules.
const ROWS: i64 = 2_000;
const SCHEDULES: usize = 150;
/// Shuttle's default task stack (60 KiB) is too small for decoding a chunk.
const STACK_BYTES: usize = 4 << 20;

/// Schedules that ran to the end.
static COMPLETED: AtomicUsize = AtomicUsize::new(0);

fn shuttle_config() -> shuttle::Config {
    let mut config = shuttle::Config::new();
    config.stack_size = STACK_BYTES;
    config
}

/// One schedule: two loaders, three scans and a scan of two workers on their own
/// threads, a buffer of four frames (so scans queue for admission and chunks are
/// evicted and read again).
fn one_run(table: &Table, values: &[i64]) {
    let mut config = config(4, PolicyKind::Relevance);
    config.abm = config.abm.with_max_inflight(2);
    let runtime = Arc::new(Runtime::new(table.clone(), device(), config).expect("runtime"));
    let rows = ROWS as u64;
    let specs = [vec![0..rows], vec![rows / 2..rows], vec![0..rows / 3]];
    let threads: Vec<_> = specs
        .iter()
        .cloned()
        .map(|ranges| {
            let runtime = Arc::clone(&runtime);
            shuttle::thread::spawn(move || {
                let mut scan = runtime.register(ranges, vec![K, V]).expect("register");
                consume(&mut scan, None).expect("scan")
            })
        })
        .collect();
    // And one scan of two workers: together they get each of its tuples once.
    let halves = runtime
        .register_parallel(
            TableId(0),
            RowRanges::new(vec![0..rows]),
            vec![K, V],
            2,
            None,
        )
        .expect("register workers");
    let workers: Vec<_> = halves
        .into_iter()
        .map(|mut scan| shuttle::thread::spawn(move || consume(&mut scan, None).expect("worker")))
        .collect();
    for (ranges, thread) in specs.iter().zip(threads) {
        let got = thread.join().expect("scan thread");
        assert_eq!(got, expected(values, table, ranges), "{ranges:?}");
    }
    let parts: Vec<Totals> = workers
        .into_iter()
        .map(|w| w.join().expect("worker"))
        .collect();
    let rows_seen: u64 = parts.iter().map(|t| t.rows).sum();
    let sum_v: i64 = parts.iter().map(|t| t.sum_v).sum();
    let whole = expected(values, table, &[0..rows]);
    assert_eq!((rows_seen, sum_v), (whole.rows, whole.sum_v), "two workers");
    runtime.check_invariants().expect("invariants");
    let holdings = runtime.holdings();
    assert_eq!(
        holdings.pinned_chunks + holdings.active_scans,
        0,
        "{holdings:?}"
    );
    COMPLETED.fetch_add(1, Ordering::SeqCst);
}

/// Runs `one_run` under a random and a PCT scheduler, seeded.
fn explore(table: &Table, values: &Arc<Vec<i64>>) {
    let run = |table: Table, values: Arc<Vec<i64>>| move || one_run(&table, &values);
    let random = RandomScheduler::new_from_seed(0x5eed, SCHEDULES);
    shuttle::Runner::new(random, shuttle_config()).run(run(table.clone(), Arc::clone(values)));
    let pct = PctScheduler::new_from_seed(0x5eed, 3, SCHEDULES);
    shuttle::Runner::new(pct, shuttle_config()).run(run(table.clone(), Arc::clone(values)));
}

#[test]
fn every_schedule_hands_every_scan_its_chunks() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let table = write_table(tmp.path(), Layout::Pax, ROWS);
    assert!(table.chunk_count() >= 4, "{} chunks", table.chunk_count());
    let values = Arc::new(sequential_values(&table));
    explore(&table, &values);
    assert_eq!(COMPLETED.load(Ordering::SeqCst), 2 * SCHEDULES);

    // The same exploration with a lost wakeup injected must fail.
    inject::lost_wakeup(true);
    let caught = panic::catch_unwind(AssertUnwindSafe(|| explore(&table, &values)));
    inject::lost_wakeup(false);
    let message = match caught {
        Ok(()) => panic!("the injected lost wakeup went unnoticed"),
        Err(payload) => payload
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_default(),
    };
    assert!(
        message.contains("deadlock"),
        "caught, but not as a hang: {message}"
    );
}
