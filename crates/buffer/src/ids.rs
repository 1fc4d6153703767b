//! Newtype identifiers and virtual time.
//!
//! Ids are plain integers underneath; the newtypes exist so that a chunk number can
//! never be passed where a scan number is expected.

use serde::{Deserialize, Serialize};
use std::fmt;

/// A chunk: the unit of I/O and scheduling (paper: "chunk"), numbered `0..chunk_count`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct ChunkId(pub u32);

/// A scan registered with the ABM (paper: an active CScan). Never reused within one ABM.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct ScanId(pub u64);

/// One worker of a scan: who holds the chunk it processes and its pins (2012 paper
/// §2.2: a parallel CScan is one scan, one interest and one exactly-once ledger, with
/// several workers each processing a chunk). A scan registered with one worker has
/// the single holder `HolderId::from(scan)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct HolderId {
    pub scan: ScanId,
    /// `0..workers` of its scan (`ScanSpec::workers`).
    pub worker: u16,
}

impl HolderId {
    pub fn new(scan: ScanId, worker: u16) -> HolderId {
        HolderId { scan, worker }
    }
}

impl From<ScanId> for HolderId {
    /// The first (for a one-worker scan, the only) worker of `scan`.
    fn from(scan: ScanId) -> HolderId {
        HolderId { scan, worker: 0 }
    }
}

/// Dense index `0..MAX_SCANS` of an *admitted* scan: its bit in every interest set.
///
/// Policies see slots rather than [`ScanId`]s so that per-scan state is a plain array
/// lookup on the hot path.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ScanSlot(pub u16);

impl ScanSlot {
    pub(crate) fn index(self) -> usize {
        usize::from(self.0)
    }
}

/// A point in time, in nanoseconds since an arbitrary origin chosen by the driver.
///
/// Policies never read a clock: the driver passes `now` into every event, which lets the
/// simulator run the same code on virtual time.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
pub struct Nanos(pub u64);

impl Nanos {
    pub const ZERO: Nanos = Nanos(0);
    const PER_SECOND: f64 = 1e9;

    pub fn from_secs_f64(secs: f64) -> Nanos {
        Nanos((secs.max(0.0) * Self::PER_SECOND).round() as u64)
    }

    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 / Self::PER_SECOND
    }

    /// `self - earlier`, or zero when `earlier` is later.
    pub fn saturating_sub(self, earlier: Nanos) -> Nanos {
        Nanos(self.0.saturating_sub(earlier.0))
    }
}

impl std::ops::Add for Nanos {
    type Output = Nanos;
    /// Saturating: a time far in the future stays far in the future.
    fn add(self, rhs: Nanos) -> Nanos {
        Nanos(self.0.saturating_add(rhs.0))
    }
}

impl fmt::Display for ChunkId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "chunk {}", self.0)
    }
}

impl fmt::Display for ScanId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "scan {}", self.0)
    }
}

impl fmt::Display for HolderId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "scan {} worker {}", self.scan.0, self.worker)
    }
}

impl fmt::Display for Nanos {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:.6}s", self.as_secs_f64())
    }
}
