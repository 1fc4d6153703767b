//! The runtime times every ABM call (Figure 8's scheduling cost on the real engine).

mod common;

use coopscan_runtime::{PolicyKind, Runtime};
use coopscan_storage::Layout;

use common::{config, consume, device, write_table, K, V};

#[test]
fn every_abm_call_of_a_scan_is_counted_and_timed() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let table = write_table(tmp.path(), Layout::Pax, 20_000);
    let rows = table.rows();
    let chunks = table.chunks_for_rows(0..rows).len() as u64;
    assert!(chunks > 4, "the table needs several chunks");
    for policy in PolicyKind::ALL {
        let runtime = Runtime::new(table.clone(), device(), config(4, policy)).expect("runtime");
        // The idle loaders may already have asked for a load (a race with this thread).
        let before = runtime.scheduling().calls;
        assert!(before <= 1, "{policy:?}: {before} calls before any scan");
        let mut scan = runtime
            .register(std::iter::once(0..rows).collect(), vec![K, V])
            .expect("register");
        consume(&mut scan, None).expect("scan");
        drop(scan);
        let loads = runtime.stats().chunk_loads;
        let s = runtime.scheduling();
        // At least: register + unregister, a request and a release per chunk, a load
        // choice and a completion per load.
        let at_least = 2 + 2 * chunks + 2 * loads;
        assert!(
            s.calls >= at_least,
            "{policy:?}: {} < {at_least} calls",
            s.calls
        );
        assert!(!s.time.is_zero(), "{policy:?}");
        assert!(s.time <= runtime.elapsed(), "{policy:?}: more than the run");
        assert!(s.per_call() <= s.time);
    }
}

/// The loaders' time is counted: some for every load, never more than the runtime has
/// run per loader, and the lock waits are a part of it.
#[test]
fn the_loaders_time_and_their_lock_waits_are_counted() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let table = write_table(tmp.path(), Layout::Pax, 20_000);
    let rows = table.rows();
    let runtime = Runtime::new(table, device(), config(4, PolicyKind::Relevance)).expect("runtime");
    let idle = runtime.stats();
    assert!(idle.loader_busy.is_zero(), "{idle:?}: busy before any load");
    let mut scan = runtime
        .register(std::iter::once(0..rows).collect(), vec![K, V])
        .expect("register");
    consume(&mut scan, None).expect("scan");
    drop(scan);
    let s = runtime.stats();
    assert!(s.chunk_loads > 0, "{s:?}");
    assert!(!s.loader_busy.is_zero(), "{s:?}: loads took no time");
    assert!(s.loader_lock_wait <= s.loader_busy, "{s:?}");
    assert!(
        s.loader_busy <= runtime.elapsed(),
        "{s:?}: one loader, more than the run"
    );
}
