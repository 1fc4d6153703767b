//! Runtime counters: relaxed atomics, bumped outside the ABM lock where possible.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// A snapshot of the runtime's counters since it started.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RuntimeStats {
    /// Loads completed: some columns of one chunk (NSM/PAX: the whole chunk) read and
    /// verified.
    pub chunk_loads: u64,
    /// Pieces read: one device request each (NSM/PAX: = `chunk_loads`; DSM: a column
    /// of a chunk).
    pub piece_loads: u64,
    /// Loads that failed (I/O or verification).
    pub load_failures: u64,
    /// Bytes read from the device by the loader(s).
    pub bytes_read: u64,
    /// Bytes of DSM pages on chunk boundaries copied from a resident neighbouring piece
    /// instead of read (docs/abm.md, "Pages straddling two chunks").
    pub bytes_copied: u64,
    /// Scans registered.
    pub scans: u64,
    /// Sum over finished (dropped) scans of the time spent blocked in `next_chunk`.
    pub scan_wait: Duration,
    /// Time the loaders spent on loads, from issuing a load's reads to its last piece
    /// made resident, summed over loaders. Near the run's wall time per loader, the
    /// loader is the bottleneck.
    pub loader_busy: Duration,
    /// Of `loader_busy`, the time the loaders waited to take the ABM's lock again after
    /// reading a piece: 1-19 % of it on Table 2 with two workers per query, 20-49 %
    /// before parked workers were handed their answers (docs/performance.md, "Handing
    /// answers over").
    pub loader_lock_wait: Duration,
}

/// Time the ABM spent deciding (the 2007 paper's "scheduling cost", Figure 8): every
/// ABM event and query the runtime makes, timed with the host's clock around the call.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Scheduling {
    /// Sum of the calls' durations.
    pub time: Duration,
    /// ABM calls made (registrations, chunk requests and releases, load choices and
    /// completions, unregistrations).
    pub calls: u64,
}

impl Scheduling {
    /// Adds one call that took `elapsed`.
    pub(crate) fn add(&mut self, elapsed: Duration) {
        self.time = self.time.saturating_add(elapsed);
        self.calls = self.calls.saturating_add(1);
    }

    /// Mean time per call; zero when there was none.
    pub fn per_call(&self) -> Duration {
        u32::try_from(self.calls)
            .ok()
            .filter(|&n| n > 0)
            .map_or(Duration::ZERO, |n| self.time / n)
    }
}

/// Per-scan counters, kept by the [`crate::CScan`] itself (no sharing).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ScanStats {
    /// Chunks delivered to the scan.
    pub chunks: u64,
    /// Time spent blocked in `next_chunk` waiting for a chunk.
    pub wait: Duration,
}

#[derive(Debug, Default)]
pub(crate) struct Counters {
    chunk_loads: AtomicU64,
    piece_loads: AtomicU64,
    load_failures: AtomicU64,
    bytes_read: AtomicU64,
    bytes_copied: AtomicU64,
    scans: AtomicU64,
    scan_wait_ns: AtomicU64,
    loader_busy_ns: AtomicU64,
    loader_lock_wait_ns: AtomicU64,
}

impl Counters {
    /// One piece read (`read` bytes, `copied` more from its neighbours) and verified.
    pub(crate) fn loaded(&self, read: u64, copied: u64) {
        self.piece_loads.fetch_add(1, Ordering::Relaxed);
        self.bytes_read.fetch_add(read, Ordering::Relaxed);
        self.bytes_copied.fetch_add(copied, Ordering::Relaxed);
    }

    /// Every piece of one load read and verified.
    pub(crate) fn chunk_loaded(&self) {
        self.chunk_loads.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn load_failed(&self) {
        self.load_failures.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn registered(&self) {
        self.scans.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn scan_done(&self, wait: Duration) {
        add_duration(&self.scan_wait_ns, wait);
    }

    /// A loader spent `busy` on one load, `lock_wait` of it waiting for the ABM's lock.
    pub(crate) fn load_timed(&self, busy: Duration, lock_wait: Duration) {
        add_duration(&self.loader_busy_ns, busy);
        add_duration(&self.loader_lock_wait_ns, lock_wait);
    }

    pub(crate) fn snapshot(&self) -> RuntimeStats {
        RuntimeStats {
            chunk_loads: self.chunk_loads.load(Ordering::Relaxed),
            piece_loads: self.piece_loads.load(Ordering::Relaxed),
            load_failures: self.load_failures.load(Ordering::Relaxed),
            bytes_read: self.bytes_read.load(Ordering::Relaxed),
            bytes_copied: self.bytes_copied.load(Ordering::Relaxed),
            scans: self.scans.load(Ordering::Relaxed),
            scan_wait: Duration::from_nanos(self.scan_wait_ns.load(Ordering::Relaxed)),
            loader_busy: Duration::from_nanos(self.loader_busy_ns.load(Ordering::Relaxed)),
            loader_lock_wait: Duration::from_nanos(
                self.loader_lock_wait_ns.load(Ordering::Relaxed),
            ),
        }
    }
}

/// Adds `d` in nanoseconds, saturating (585 years of waiting would overflow).
fn add_duration(counter: &AtomicU64, d: Duration) {
    let ns = u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
    let _ = counter.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |v| {
        Some(v.saturating_add(ns))
    });
}
