//! Counters a provider keeps over all of its scans (for tests, the CLI and benchmarks).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Chunks and tuples delivered by a provider's scans since it was created.
#[derive(Debug, Default)]
pub struct ScanCounters {
    chunks: AtomicU64,
    rows: AtomicU64,
    scans: AtomicU64,
    running: AtomicU64,
}

/// A snapshot of [`ScanCounters`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ScanCountersSnapshot {
    /// Chunks delivered to scans (a chunk read by two scans counts twice).
    pub chunks: u64,
    /// Tuples delivered.
    pub rows: u64,
    /// Scans started.
    pub scans: u64,
    /// Scans whose feeder thread is still running. A cancelled CScan has left the ABM
    /// once this drops back.
    pub running: u64,
}

/// Marks one scan as running until dropped (after the scan itself was dropped).
pub(crate) struct Running(Arc<ScanCounters>);

impl Drop for Running {
    fn drop(&mut self) {
        self.0.running.fetch_sub(1, Ordering::Relaxed);
    }
}

impl ScanCounters {
    pub(crate) fn scan_started(self: &Arc<Self>) -> Running {
        self.scans.fetch_add(1, Ordering::Relaxed);
        self.running.fetch_add(1, Ordering::Relaxed);
        Running(Arc::clone(self))
    }

    pub(crate) fn chunk_delivered(&self, rows: usize) {
        self.chunks.fetch_add(1, Ordering::Relaxed);
        self.rows.fetch_add(rows as u64, Ordering::Relaxed);
    }

    pub fn snapshot(&self) -> ScanCountersSnapshot {
        ScanCountersSnapshot {
            chunks: self.chunks.load(Ordering::Relaxed),
            rows: self.rows.load(Ordering::Relaxed),
            scans: self.scans.load(Ordering::Relaxed),
            running: self.running.load(Ordering::Relaxed),
        }
    }
}
