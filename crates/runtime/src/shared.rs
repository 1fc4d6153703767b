//! State shared by the loader thread(s) and every scan thread.
//!
//! One mutex protects the ABM, the resident bytes and the scans' mailboxes together,
//! because every ABM event changes all three at once (a load completion makes a chunk
//! resident *and* hands deliveries to blocked scans). No I/O and no decoding happen
//! under it: the loader reads with the lock released, scans decode from an `Arc` of the
//! chunk's bytes after dropping it.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, PoisonError, RwLock};
use std::time::Instant;

use coopscan_buffer::{
    Answer, AnyPolicy, ChunkId, ColumnMask, Driver, HolderId, Mail, Nanos, PieceId, ScanId, TableId,
};
use coopscan_storage::device::Device;
use coopscan_storage::{ChunkBytes, Table, TableFiles};

use crate::error::RuntimeError;
use crate::load_log::LoadLog;
use crate::parking::{Handed, Parking, Woken};
use crate::stats::{Counters, Scheduling};
use crate::sync::{Condvar, Mutex};

/// Everything behind the lock.
pub(crate) struct Inner {
    /// The ABMs of every table, under one byte budget, and the driver contract around
    /// them (which worker an answer is for, what a failed read does), the simulator's
    /// too.
    pub(crate) driver: Driver<AnyPolicy, RuntimeError>,
    /// The bytes of every piece the ABM's pool holds as resident (none while loading):
    /// a whole chunk for NSM/PAX, one column of a chunk for DSM. Bytes are shared with
    /// the scans processing them through the `Arc`, so evicting a piece never frees
    /// memory a scan still reads.
    pub(crate) resident: HashMap<PieceId, Arc<ChunkBytes>>,
    /// Set once by `Runtime::drop` or when the runtime stops on an error: loaders exit,
    /// parked scans return `stopped` (or `ShutDown` if it is `None`).
    pub(crate) shutdown: bool,
    /// Why the runtime stopped, if not because it was dropped: what later calls get.
    pub(crate) stopped: Option<RuntimeError>,
    /// Caller-chosen tags of registered scans (e.g. a benchmark's query number).
    pub(crate) tags: HashMap<ScanId, u64>,
    /// Every tag given while a trace is recorded, kept after its scan unregisters, so
    /// the trace's scans can be named afterwards; `None` when no trace is recorded.
    pub(crate) traced_tags: Option<HashMap<ScanId, u64>>,
    /// When each scan registered while a trace is recorded (the trace's clock): a
    /// trace itself has only consumptions; `None` when no trace is recorded.
    pub(crate) traced_registrations: Option<HashMap<ScanId, Nanos>>,
    pub(crate) load_log: LoadLog,
    /// Time spent in ABM calls ([`Inner::decide`]).
    pub(crate) scheduling: Scheduling,
    /// The loader has reported a stall (`loader::report_stall`): once per runtime.
    pub(crate) stall_reported: bool,
    /// Holds on table versions (`VersionHold`), by table.
    pub(crate) holds: HashMap<TableId, usize>,
    /// Versions a checkpoint replaced that are retired when their last hold goes.
    pub(crate) superseded: BTreeSet<TableId>,
    /// Each parked scan worker's own slot, while it waits for its answer: an event
    /// hands the workers it answered their answers there (`Shared::wake_answered`).
    /// One wakeup for all woke every parked worker (64 with 16 queries of 4 workers)
    /// for each answer, to take the lock and park again.
    pub(crate) parked: HashMap<HolderId, Arc<Parking>>,
}

impl Inner {
    /// Runs one ABM call, adding its duration to the scheduling time. Every call the
    /// runtime makes on the ABM goes through here.
    pub(crate) fn decide<T>(
        &mut self,
        call: impl FnOnce(&mut Driver<AnyPolicy, RuntimeError>) -> T,
    ) -> T {
        let started = Instant::now();
        let out = call(&mut self.driver);
        self.scheduling.add(started.elapsed());
        out
    }

    /// The error for a scan or registration after shutdown.
    pub(crate) fn stop_error(&self) -> RuntimeError {
        self.stopped.clone().unwrap_or(RuntimeError::ShutDown)
    }

    /// Drops the bytes of pieces the ABM evicted.
    pub(crate) fn drop_evicted(&mut self, evicted: &[PieceId]) {
        for piece in evicted {
            self.resident.remove(piece);
        }
    }

    /// What `answer` ends a worker's wait with, the worker reading `columns`; `None` if
    /// it waits on.
    pub(crate) fn woken(&self, answer: Answer<RuntimeError>, columns: ColumnMask) -> Option<Woken> {
        match answer {
            Answer::Mail(Mail::Chunk(d)) => Some(self.chunk_of(d.table, d.chunk, columns)),
            Answer::Mail(Mail::Finished) => Some(Woken::Finished),
            Answer::Mail(Mail::Failed(e)) => Some(Woken::Failed(e)),
            // Not asked paced: the driver never holds a runtime worker.
            Answer::Wait | Answer::Hold { .. } => None,
        }
    }

    /// The resident pieces of a delivered chunk a worker reading `columns` needs.
    fn chunk_of(&self, table: TableId, chunk: ChunkId, columns: ColumnMask) -> Woken {
        match self.pieces_for(table, chunk, columns) {
            Some(bytes) => Woken::Chunk(chunk, bytes),
            None => Woken::Failed(RuntimeError::Buffer(
                coopscan_buffer::BufferError::Invariant(format!(
                    "{chunk} delivered but no bytes are resident for it"
                )),
            )),
        }
    }

    /// The resident pieces of `chunk` a scan reading `columns` needs, or `None` if
    /// one is missing (a driver bug: the ABM delivers only available chunks).
    pub(crate) fn pieces_for(
        &self,
        table: TableId,
        chunk: ChunkId,
        columns: ColumnMask,
    ) -> Option<Vec<Arc<ChunkBytes>>> {
        let state = self.driver.catalog().table(table).ok()?.state();
        let cols = state.scan_cols(columns);
        state
            .pieces_of(chunk, cols)
            .iter()
            .map(|p| self.resident.get(p).cloned())
            .collect()
    }
}

pub(crate) struct Shared {
    pub(crate) inner: Mutex<Inner>,
    /// Loaders park here when `next_load` has nothing; every event that can create
    /// work (register, a scan starting to wait, release, unregister) notifies it.
    pub(crate) loader_wakeup: Condvar,
    /// The tables, indexed by `TableId`.
    pub(crate) tables: ServedTables,
    pub(crate) device: Arc<Device>,
    /// Origin of the runtime's clock; the ABM only ever sees `Nanos` since then.
    pub(crate) started: Instant,
    pub(crate) counters: Counters,
}

/// One table of the runtime: its files, open on the device.
pub(crate) struct Served {
    pub(crate) table: Arc<Table>,
    pub(crate) files: TableFiles,
    /// Projection the loader reads: every column, so one resident chunk serves every
    /// scan's projection (NSM/PAX read the same pages whatever the projection).
    pub(crate) load_projection: Vec<usize>,
}

/// The tables of the catalog, indexed by `TableId`: in each slot its table's newest
/// version. A bulk append replaces it (`Runtime::append`): versions only grow (the new
/// chunks come after the old ones, which stay as they were), so whichever version a
/// reader holds reads every chunk it knows of the same. A checkpoint's image, which
/// shares no page with the old one, takes a slot of its own (`Runtime::checkpointed`);
/// the old version's slot is emptied when the catalog frees it, and may be taken by a
/// later version.
pub(crate) struct ServedTables(RwLock<Vec<Option<Arc<Served>>>>);

impl ServedTables {
    pub(crate) fn new(tables: Vec<Served>) -> ServedTables {
        let slots = tables.into_iter().map(|t| Some(Arc::new(t))).collect();
        ServedTables(RwLock::new(slots))
    }

    /// Table `table`'s newest version, `None` if the runtime serves no such table.
    pub(crate) fn get(&self, table: TableId) -> Option<Arc<Served>> {
        let slots = self.0.read().unwrap_or_else(PoisonError::into_inner);
        slots.get(table.0 as usize)?.clone()
    }

    /// Every table's newest version, with its id.
    pub(crate) fn all(&self) -> Vec<(TableId, Arc<Served>)> {
        let slots = self.0.read().unwrap_or_else(PoisonError::into_inner);
        let live = slots.iter().enumerate();
        live.filter_map(|(t, s)| Some((TableId(t as u32), Arc::clone(s.as_ref()?))))
            .collect()
    }

    /// Serves `served` as table `table` (a new slot, or one replaced or reused).
    pub(crate) fn set(&self, table: TableId, served: Served) {
        let mut slots = self.0.write().unwrap_or_else(PoisonError::into_inner);
        let t = table.0 as usize;
        if slots.len() <= t {
            slots.resize_with(t + 1, || None);
        }
        slots[t] = Some(Arc::new(served));
    }

    /// Table `table` is freed: its files close once no scan holds them.
    pub(crate) fn clear(&self, table: TableId) {
        let mut slots = self.0.write().unwrap_or_else(PoisonError::into_inner);
        if let Some(slot) = slots.get_mut(table.0 as usize) {
            *slot = None;
        }
    }
}

impl Shared {
    /// Table `table`'s newest version, `None` if the runtime serves no such table (or
    /// no longer: a checkpoint's old version, freed).
    pub(crate) fn served(&self, table: TableId) -> Option<Arc<Served>> {
        self.tables.get(table)
    }

    /// Drops what the runtime kept for the versions the catalog freed (their pieces'
    /// bytes, their files): after an event that may end a retired version's last scan
    /// or load.
    pub(crate) fn forget_freed(&self, inner: &mut Inner) {
        let freed = inner.driver.take_freed();
        if freed.is_empty() {
            return;
        }
        let evicted = inner.driver.take_evicted();
        inner.drop_evicted(&evicted);
        for table in freed {
            self.tables.clear(table);
        }
    }

    /// The runtime clock: the policy never reads one, it is handed this value.
    pub(crate) fn now(&self) -> Nanos {
        Nanos(u64::try_from(self.started.elapsed().as_nanos()).unwrap_or(u64::MAX))
    }

    /// Something may have created loader work.
    pub(crate) fn wake_loaders(&self) {
        self.loader_wakeup.notify_all();
    }

    /// Hands the parked workers whose answer has been posted (`Driver::answered`) their
    /// answers (`parking.rs`). Called under the lock after every event that can post
    /// one; a worker is in `parked` only from the `ask` that told it to wait, so no
    /// answer slips between.
    pub(crate) fn wake_answered(&self, inner: &mut Inner) {
        let answered: Vec<HolderId> = (inner.driver.answered())
            .filter(|holder| inner.parked.contains_key(holder))
            .collect();
        if answered.is_empty() {
            // The common case after an ask or a release: no clock read, nothing to hand.
            return;
        }
        let now = self.now();
        for holder in answered {
            let Some(parking) = inner.parked.remove(&holder) else {
                continue;
            };
            // The worker's own `ask` would take its mail, a failure first: the same call.
            let handed = match inner.decide(|driver| driver.ask(holder, now, false)) {
                // Not waiting on (it had mail); were it, asking again is always safe.
                Ok(answer) => inner
                    .woken(answer, parking.columns)
                    .map_or(Handed::AskAgain, Handed::Answer),
                Err(e) => Handed::Answer(Woken::Failed(e.into())),
            };
            parking.hand(handed);
        }
    }

    /// Wakes every parked worker to ask again: after a failure, which posts no answer (a
    /// failed scan's workers learn of it when they ask), and at shutdown.
    pub(crate) fn wake_all_scans(&self, inner: &mut Inner) {
        for (_, parking) in inner.parked.drain() {
            parking.hand(Handed::AskAgain);
        }
    }
}
