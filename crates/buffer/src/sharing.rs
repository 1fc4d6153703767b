//! Shared and local chunks (2012 paper §2.1, "Bulk Appends"). A bulk append writes its
//! tuples into new chunks and adds them to a copy of the snapshot it appends to, so the
//! snapshots scans read are chunk sets with a common prefix:
//!
//! ```text
//!   master        0 1 2 3              T1 appends 4 5, T2 appends 6 7 and commits,
//!   T1's          0 1 2 3 4 5          T3 then appends 8 9 to the new master:
//!   master (T2)   0 1 2 3 6 7          T1 + T3 share {0 1 2 3}, T2 + T3 share
//!   T3's          0 1 2 3 6 7 8 9      {0 1 2 3 6 7}
//! ```
//!
//! Chunks are named by what they hold, not by their place in a snapshot, so a chunk two
//! snapshots share is one chunk here: one interest set, one set of pieces, loaded once
//! for the scans of both. A chunk in the snapshots of at least two active scans is
//! *shared*, one in exactly one scan's snapshot *local* (the paper: "Even after
//! appending a single value to a table, its last chunk becomes local"; here an append
//! starts new chunks, so the old last chunk stays shared). The marks are recomputed
//! when a scan enters or leaves, as the paper's ABM does. Relevance favours shared
//! chunks: a starved scan loads its shared chunks before its local ones, which no
//! other scan can use (the paper: local chunks are "loaded and used only once,
//! typically in the final phase of a CScan"), and among pieces no scan needs, those of
//! local chunks go first, as nobody but their one scan's snapshot holds them.

use crate::index::Place;
use crate::state::{AbmState, ChunkEntry};
use crate::{BufferError, ChunkId, ScanSet, Snapshot, TableGeometry};
use std::ops::Range;

impl AbmState {
    /// The snapshot of a scan that names none: the chunks the table was opened with.
    pub fn base_snapshot(&self) -> Snapshot {
        Snapshot::first(self.base_chunks)
    }

    /// Whether `chunk` is in the snapshots of at least two active scans.
    pub fn is_shared(&self, chunk: ChunkId) -> bool {
        self.chunks[chunk.0 as usize].snapshots >= 2
    }

    /// Whether `chunk` is in the snapshot of exactly one active scan.
    pub fn is_local(&self, chunk: ChunkId) -> bool {
        self.chunks[chunk.0 as usize].snapshots == 1
    }

    /// Whether the active scans' snapshots differ, so that some chunks are shared and
    /// others local (only then do the marks change a decision).
    pub fn sharing_differs(&self) -> bool {
        self.local_chunks > 0 && self.shared_chunks > 0
    }

    /// Per chunk, how many active scans' snapshots hold it: one sweep over the
    /// snapshots' chunk ranges.
    pub(crate) fn snapshot_counts(&self) -> Vec<u32> {
        let n = self.chunks.len();
        let mut diff = vec![0i64; n + 1];
        for slot in self.active_slots() {
            for r in self.active_scan(slot).snapshot.chunks().ranges() {
                diff[(r.start as usize).min(n)] += 1;
                diff[(r.end as usize).min(n)] -= 1;
            }
        }
        let mut count = 0i64;
        diff[..n]
            .iter()
            .map(|d| {
                count += d;
                u32::try_from(count).unwrap_or(0)
            })
            .collect()
    }

    /// Recomputes the shared and local marks (a scan entered or left).
    pub(crate) fn refresh_sharing(&mut self) {
        let counts = self.snapshot_counts();
        let (mut local, mut shared) = (0, 0);
        for (entry, count) in self.chunks.iter_mut().zip(counts) {
            entry.snapshots = count;
            local += u32::from(count == 1);
            shared += u32::from(count >= 2);
        }
        self.local_chunks = local;
        self.shared_chunks = shared;
    }

    /// A bulk append added chunks to `geometry` (after every chunk the state knows):
    /// they join with nobody's interest and no piece, in no active scan's snapshot.
    pub(crate) fn append_chunks(
        &mut self,
        geometry: &TableGeometry,
    ) -> Result<Range<u32>, BufferError> {
        let first = self.chunk_count();
        let end = geometry.chunk_count();
        if end < first || geometry.columns() != self.geometry.columns() {
            return Err(BufferError::InvalidGeometry(
                "an append keeps the table's chunks and columns".into(),
            ));
        }
        for c in first..end {
            let class = self
                .classes
                .insert(ChunkId(c), ScanSet::EMPTY, || 0, Place::Absent);
            self.chunks.push(ChunkEntry {
                mask: ScanSet::EMPTY,
                class,
                place: Place::Absent,
                resident_cols: 0,
                loading_cols: 0,
                snapshots: 0,
            });
        }
        self.geometry = geometry.clone();
        Ok(first..end)
    }
}
