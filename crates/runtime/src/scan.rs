//! The CScan handle: a scan that takes its chunks in whatever order the ABM chooses.
//!
//! Access rules (checked by the borrow checker where possible):
//! 1. A scan processes one chunk at a time: [`ChunkGuard`] borrows the [`CScan`]
//!    mutably, so `next_chunk` cannot be called while a chunk is held.
//! 2. Dropping the guard releases the chunk (`release_chunk`): its piece is unpinned.
//! 3. Dropping the scan — finished, cancelled, failed or unwinding — unregisters it,
//!    dropping every pin and all interest, and may admit queued scans.

use std::ops::Range;
use std::sync::Arc;
use std::time::Instant;

use coopscan_buffer::{Answer, ChunkId, ColumnMask, Mail, RowRanges, ScanId, TableId};
use coopscan_storage::{ChunkBytes, Table};

use crate::error::{Result, RuntimeError};
use crate::guard::ChunkGuard;
use crate::shared::{Inner, Shared};
use crate::stats::ScanStats;

/// Where a scan is in its life.
#[derive(Debug)]
enum Phase {
    /// Registered with the ABM under this id.
    Active(ScanId),
    /// Unregistered after `Finished`; `next_chunk` keeps returning `None`.
    Finished,
    /// Failed (load error, shutdown); `next_chunk` keeps returning the error.
    Failed(RuntimeError),
}

/// A registered cooperative scan. See the module doc for its rules.
pub struct CScan {
    shared: Arc<Shared>,
    /// The table it scans, of the runtime's tables.
    table_id: TableId,
    phase: Phase,
    /// The scan's tuple ranges.
    ranges: RowRanges,
    projection: Vec<usize>,
    stats: ScanStats,
}

/// What a wait in `next_chunk` ended with.
enum Woken {
    Chunk(ChunkId, Vec<Arc<ChunkBytes>>),
    Finished,
    Failed(RuntimeError),
}

impl CScan {
    pub(crate) fn new(
        shared: Arc<Shared>,
        table_id: TableId,
        id: Option<ScanId>,
        ranges: RowRanges,
        projection: Vec<usize>,
    ) -> CScan {
        let phase = id.map_or(Phase::Finished, Phase::Active);
        CScan {
            shared,
            table_id,
            phase,
            ranges,
            projection,
            stats: ScanStats::default(),
        }
    }

    /// The ABM's id for this scan, while it is registered.
    pub fn id(&self) -> Option<ScanId> {
        match self.phase {
            Phase::Active(id) => Some(id),
            _ => None,
        }
    }

    pub fn ranges(&self) -> &[Range<u64>] {
        self.ranges.ranges()
    }

    pub(crate) fn row_ranges(&self) -> &RowRanges {
        &self.ranges
    }

    pub fn projection(&self) -> &[usize] {
        &self.projection
    }

    /// The projection as the ABM sees it (which pieces of a DSM chunk it needs).
    fn columns(&self) -> ColumnMask {
        ColumnMask::of(&self.projection)
    }

    pub fn stats(&self) -> ScanStats {
        self.stats
    }

    pub(crate) fn table(&self) -> &Table {
        &self.shared.served(self.table_id).table
    }

    /// The next chunk of the scan's ranges, blocking until one is resident; `None` when
    /// every chunk was delivered. After an error the scan is over (it has been
    /// unregistered) and every later call returns the same error.
    pub fn next_chunk(&mut self) -> Result<Option<ChunkGuard<'_>>> {
        self.next(true)
    }

    /// Like [`CScan::next_chunk`] but never blocks: `Ok(None)` also means "nothing
    /// yet" — check [`CScan::is_finished`] to tell the two apart. Polling keeps the
    /// scan registered as waiting, so the loader works on its behalf meanwhile.
    pub fn try_next_chunk(&mut self) -> Result<Option<ChunkGuard<'_>>> {
        self.next(false)
    }

    pub fn is_finished(&self) -> bool {
        matches!(self.phase, Phase::Finished)
    }

    fn next(&mut self, block: bool) -> Result<Option<ChunkGuard<'_>>> {
        let id = match &self.phase {
            Phase::Active(id) => *id,
            Phase::Finished => return Ok(None),
            Phase::Failed(e) => return Err(e.clone()),
        };
        let started = Instant::now();
        let woken = self.wait_for_chunk(id, block);
        let waited = started.elapsed();
        match woken {
            Ok(Some(Woken::Chunk(chunk, bytes))) => {
                self.stats.wait += waited;
                self.stats.chunks += 1;
                Ok(Some(ChunkGuard::new(self, id, chunk, bytes)))
            }
            Ok(Some(Woken::Finished)) => {
                self.stats.wait += waited;
                self.unregister();
                self.phase = Phase::Finished;
                Ok(None)
            }
            Ok(Some(Woken::Failed(e))) | Err(e) => {
                self.stats.wait += waited;
                self.unregister();
                self.phase = Phase::Failed(e.clone());
                Err(e)
            }
            Ok(None) => Ok(None),
        }
    }

    /// Asks the driver for a chunk; if told to wait, parks until an event posts the
    /// answer. `Ok(None)`: nothing yet and `block` is false. (The driver remembers that
    /// the scan waits: asking again only checks for its answer, and keeps the waiting
    /// time the policy ages it by.)
    fn wait_for_chunk(&mut self, id: ScanId, block: bool) -> Result<Option<Woken>> {
        let shared = Arc::clone(&self.shared);
        let mut inner = shared.inner.lock();
        let mut woke_loaders = false;
        loop {
            let now = shared.now();
            match inner.decide(|driver| driver.ask(id.into(), now, false))? {
                Answer::Mail(Mail::Chunk(d)) => {
                    return Ok(Some(chunk_of(&inner, d.table, d.chunk, self.columns())));
                }
                Answer::Mail(Mail::Finished) => return Ok(Some(Woken::Finished)),
                Answer::Mail(Mail::Failed(e)) => return Ok(Some(Woken::Failed(e))),
                // Not asked paced: the driver never holds this scan.
                Answer::Wait | Answer::Hold { .. } => {}
            }
            if !woke_loaders {
                // The scan may be the reason to load something now.
                shared.wake_loaders();
                woke_loaders = true;
            }
            if inner.shutdown {
                return Err(inner.stop_error());
            }
            if !block {
                return Ok(None);
            }
            #[cfg(feature = "shuttle")]
            if crate::sync::inject::lost_wakeup_on() {
                crate::sync::MutexGuard::unlocked(&mut inner, || ());
            }
            // Parks with the lock held until the wait releases it: an answer posted
            // after the `ask` above comes with a notification this wait receives.
            shared.scan_wakeup.wait(&mut inner);
        }
    }

    /// Unregisters from the ABM (idempotent; a scan the loader failed is already out).
    fn unregister(&mut self) {
        let Phase::Active(id) = self.phase else {
            return;
        };
        self.phase = Phase::Finished;
        let mut inner = self.shared.inner.lock();
        inner.tags.remove(&id);
        // A scan a failed read ended is already out of the ABM; the driver knows.
        let now = self.shared.now();
        let _ = inner.decide(|driver| driver.unregister(id, now));
        drop(inner);
        self.shared.counters.scan_done(self.stats.wait);
        self.shared.wake_loaders();
        self.shared.scan_wakeup.notify_all();
    }
}

impl Drop for CScan {
    fn drop(&mut self) {
        self.unregister();
    }
}

fn chunk_of(inner: &Inner, table: TableId, chunk: ChunkId, columns: ColumnMask) -> Woken {
    match inner.pieces_for(table, chunk, columns) {
        Some(bytes) => Woken::Chunk(chunk, bytes),
        None => Woken::Failed(RuntimeError::Buffer(
            coopscan_buffer::BufferError::Invariant(format!(
                "{chunk} delivered but no bytes are resident for it"
            )),
        )),
    }
}

impl CScan {
    /// The guard's release: the chunk counts as consumed and its piece is unpinned.
    pub(crate) fn release(&mut self, id: ScanId) {
        let mut inner = self.shared.inner.lock();
        // A scan a failed read ended has no pin left to release (`None`).
        let now = self.shared.now();
        let released = inner.decide(|driver| driver.release(id.into(), now));
        debug_assert!(
            released.is_ok(),
            "releasing a delivered chunk: {released:?}"
        );
        drop(inner);
        // An unpinned piece may be the victim the loader was waiting for.
        self.shared.wake_loaders();
    }
}
