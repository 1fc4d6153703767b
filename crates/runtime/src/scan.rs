//! The CScan handle: a scan that takes its chunks in whatever order the ABM chooses.
//!
//! Access rules (checked by the borrow checker where possible):
//! 1. A scan processes one chunk at a time: [`ChunkGuard`] borrows the [`CScan`]
//!    mutably, so `next_chunk` cannot be called while a chunk is held.
//! 2. Dropping the guard releases the chunk (`release_chunk`): its piece is unpinned.
//! 3. Dropping the scan — finished, cancelled, failed or unwinding — unregisters it,
//!    dropping every pin and all interest, and may admit queued scans.
//!
//! A parallel CScan ([`crate::Runtime::register_parallel`], 2012 paper §2.2) is one
//! registration with several handles, one per worker: each processes its own chunk,
//! and the scan gets each chunk of its ranges once among all of them. The registration
//! is shared: it is unregistered when the last worker's handle is done with it.

use std::ops::Range;
use std::sync::Arc;
use std::time::Instant;

use coopscan_buffer::{ColumnMask, HolderId, RowRanges, ScanId};
use coopscan_storage::Table;

use crate::error::{Result, RuntimeError};
use crate::guard::{ChunkGuard, GuardedScan};
use crate::parking::{Handed, Parking, Woken};
use crate::shared::{Served, Shared};
use crate::stats::ScanStats;

/// A scan's registration with the driver, shared by its workers' handles: the last
/// one to let go unregisters it (dropping every pin and all interest; queued scans may
/// be admitted).
pub(crate) struct Registration {
    shared: Arc<Shared>,
    id: ScanId,
}

impl Registration {
    pub(crate) fn new(shared: Arc<Shared>, id: ScanId) -> Arc<Registration> {
        Arc::new(Registration { shared, id })
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        let mut inner = self.shared.inner.lock();
        inner.tags.remove(&self.id);
        // A scan a failed read ended is already out of the ABM; the driver knows.
        let now = self.shared.now();
        let _ = inner.decide(|driver| driver.unregister(self.id, now));
        // The last scan of a checkpoint's old version frees it.
        self.shared.forget_freed(&mut inner);
        // Unregistering may admit queued scans and answer their waiting workers, or
        // tell this scan's other workers they are finished.
        self.shared.wake_answered(&mut inner);
        drop(inner);
        self.shared.wake_loaders();
    }
}

/// Where a worker's handle is in its life.
enum Phase {
    /// Registered with the ABM; this handle is worker `.1` of the scan.
    Active(Arc<Registration>, u16),
    /// Unregistered after `Finished`; `next_chunk` keeps returning `None`.
    Finished,
    /// Failed (load error, shutdown); `next_chunk` keeps returning the error.
    Failed(RuntimeError),
}

/// A registered cooperative scan. See the module doc for its rules.
pub struct CScan {
    shared: Arc<Shared>,
    /// The table it scans, as it was when the scan registered: its snapshot's chunks.
    served: Arc<Served>,
    phase: Phase,
    /// The scan's tuple ranges.
    ranges: RowRanges,
    projection: Vec<usize>,
    stats: ScanStats,
    /// This worker's slot while it is parked (`Inner::parked`).
    parking: Arc<Parking>,
}

impl CScan {
    pub(crate) fn new(
        shared: Arc<Shared>,
        served: Arc<Served>,
        worker: Option<(Arc<Registration>, u16)>,
        ranges: RowRanges,
        projection: Vec<usize>,
    ) -> CScan {
        let phase = worker.map_or(Phase::Finished, |(r, w)| Phase::Active(r, w));
        let parking = Arc::new(Parking::new(ColumnMask::of(&projection)));
        CScan {
            shared,
            served,
            phase,
            ranges,
            projection,
            stats: ScanStats::default(),
            parking,
        }
    }

    /// The ABM's id for this scan, while it is registered.
    pub fn id(&self) -> Option<ScanId> {
        match &self.phase {
            Phase::Active(registration, _) => Some(registration.id),
            _ => None,
        }
    }

    /// Which of its scan's workers this handle is (0 for a scan of one worker).
    pub fn worker(&self) -> Option<u16> {
        match &self.phase {
            Phase::Active(_, worker) => Some(*worker),
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
        &self.served.table
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
        let holder = match &self.phase {
            Phase::Active(registration, worker) => HolderId::new(registration.id, *worker),
            Phase::Finished => return Ok(None),
            Phase::Failed(e) => return Err(e.clone()),
        };
        let started = Instant::now();
        let woken = self.wait_for_chunk(holder, block);
        let waited = started.elapsed();
        match woken {
            Ok(Some(Woken::Chunk(chunk, bytes))) => {
                self.stats.wait += waited;
                self.stats.chunks += 1;
                ChunkGuard::new(self, holder, chunk, bytes).map(Some)
            }
            Ok(Some(Woken::Finished)) => {
                self.stats.wait += waited;
                self.leave(Phase::Finished);
                Ok(None)
            }
            Ok(Some(Woken::Failed(e))) | Err(e) => {
                self.stats.wait += waited;
                self.leave(Phase::Failed(e.clone()));
                Err(e)
            }
            Ok(None) => Ok(None),
        }
    }

    /// Asks the driver for a chunk; if told to wait, parks until an event hands it the
    /// answer (`parking.rs`). `Ok(None)`: nothing yet and `block` is false. (The driver
    /// remembers that the scan waits: asking again only checks for its answer, and
    /// keeps the waiting time the policy ages it by.)
    fn wait_for_chunk(&mut self, holder: HolderId, block: bool) -> Result<Option<Woken>> {
        let shared = Arc::clone(&self.shared);
        let mut woke_loaders = false;
        loop {
            let mut inner = shared.inner.lock();
            let now = shared.now();
            let answer = inner.decide(|driver| driver.ask(holder, now, false))?;
            // The ask may have told a sibling worker of this scan it is finished.
            shared.wake_answered(&mut inner);
            if let Some(woken) = inner.woken(answer, self.columns()) {
                return Ok(Some(woken));
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
            // Parked from the `ask` above, under the lock: an answer posted after it is
            // handed to the slot, which the wait looks at before it sleeps.
            inner.parked.insert(holder, Arc::clone(&self.parking));
            drop(inner);
            match self.parking.wait() {
                Handed::Answer(woken) => return Ok(Some(woken)),
                Handed::AskAgain => {}
            }
        }
    }

    /// This worker is done (idempotent): it lets go of the registration, which the
    /// last worker's handle to go unregisters, and its waiting time is counted.
    fn leave(&mut self, then: Phase) {
        let was = std::mem::replace(&mut self.phase, then);
        if let Phase::Active(registration, _) = was {
            drop(registration);
            self.shared.counters.scan_done(self.stats.wait);
        }
    }
}

impl Drop for CScan {
    fn drop(&mut self) {
        self.leave(Phase::Finished);
    }
}

impl CScan {
    /// The guard's release: the chunk counts as consumed and its piece is unpinned.
    pub(crate) fn release(&mut self, holder: HolderId) {
        let mut inner = self.shared.inner.lock();
        // A scan a failed read ended has no pin left to release (`None`).
        let now = self.shared.now();
        let released = inner.decide(|driver| driver.release(holder, now));
        debug_assert!(
            released.is_ok(),
            "releasing a delivered chunk: {released:?}"
        );
        // A release may admit a scan queued behind a scattered piece and serve it.
        self.shared.wake_answered(&mut inner);
        drop(inner);
        // An unpinned piece may be the victim the loader was waiting for.
        self.shared.wake_loaders();
    }
}

impl GuardedScan for CScan {
    fn table(&self) -> &Table {
        CScan::table(self)
    }

    fn row_ranges(&self) -> &RowRanges {
        CScan::row_ranges(self)
    }

    fn projection(&self) -> &[usize] {
        CScan::projection(self)
    }

    fn release(&mut self, holder: HolderId) {
        CScan::release(self, holder)
    }
}
