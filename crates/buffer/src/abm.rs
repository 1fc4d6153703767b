//! The Active Buffer Manager: the event API a driver (threaded runtime or simulator)
//! calls. Each event updates the shared [`AbmState`] and asks the policy for decisions.

use crate::policy::LoadChoice;
use crate::state::PendingScan;
use std::ops::Range;

use crate::{
    AbmConfig, AbmState, AnyPolicy, AppendedChunk, BufferError, ChunkId, EvictionRequest, HolderId,
    Nanos, PieceId, Policy, PolicyKind, ReadPlan, ScanId, ScanSet, ScanSlot, ScanSpec,
    TableGeometry, TableId,
};

/// A chunk handed to one worker of a scan (pinned for it). The worker must call
/// [`Abm::release_chunk`] when done.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Delivery {
    pub table: TableId,
    pub scan: ScanId,
    /// Which of the scan's workers gets it (0 for a one-worker scan).
    pub worker: u16,
    pub chunk: ChunkId,
}

impl Delivery {
    pub fn holder(&self) -> HolderId {
        HolderId::new(self.scan, self.worker)
    }
}

/// Answer to [`Abm::next_chunk`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NextChunk {
    /// Process this chunk now (it is pinned for the scan).
    Deliver(Delivery),
    /// Nothing available: the chunk will come in a later event's [`Delivery`] list —
    /// or, for a scan with several workers, another worker takes the last one and this
    /// worker is named by [`Abm::take_finished_waiters`] instead.
    Wait,
    /// Every chunk of the scan's ranges has been handed out: this worker is done. Once
    /// all its workers have released their chunks, unregister the scan.
    Finished,
}

/// Answer to [`Abm::next_chunk_paced`]: [`NextChunk`], or a hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Paced {
    Go(NextChunk),
    /// The policy throttles the scan (2012 paper §5): nothing is delivered to it before
    /// `until`, when the driver calls [`Abm::next_chunk_paced`] again. The scan holds no
    /// chunk and is not waiting, so no event's `Delivery` list will name it meanwhile.
    Hold {
        until: Nanos,
    },
}

/// Answer to [`Abm::next_load`]: read `pieces` of `chunk` (one for NSM/PAX, some
/// columns for DSM; in `AbmConfig::column_order`, smallest first by default), `bytes` in all, which the pool has reserved; the
/// pieces in `evicted` were dropped to make room. Report each piece with
/// [`Abm::load_completed`] or [`Abm::load_failed`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoadDecision {
    pub table: TableId,
    pub chunk: ChunkId,
    pub pieces: Vec<PieceId>,
    /// Per piece, in the order of `pieces`: the bytes to read and the resident
    /// neighbours to copy its shared boundary pages from (DSM; docs/abm.md, "Pages
    /// straddling two chunks"). A plan reads the whole piece when nothing is shared.
    pub reads: Vec<ReadPlan>,
    pub bytes: u64,
    /// Pieces evicted to make room, of any table under a shared budget (`catalog.rs`).
    pub evicted: Vec<PieceId>,
    pub on_behalf_of: Option<ScanId>,
}

/// Answer to [`Abm::register_scan`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Registration {
    pub scan: ScanId,
    /// False when the scan waits for admission (see docs/abm.md, "Admission").
    pub admitted: bool,
}

/// The ABM: shared state plus one policy. Generic so the hot path has no dynamic
/// dispatch; use `Abm<AnyPolicy>` to choose the policy at run time.
#[derive(Clone, Debug)]
pub struct Abm<P: Policy = AnyPolicy> {
    geometry: TableGeometry,
    state: AbmState,
    policy: P,
    /// Piece references, when recording (see [`Abm::record_trace`]).
    trace: Option<Vec<crate::Reference>>,
    /// Workers that waited when another worker of their scan took its last chunk
    /// (see [`Abm::take_finished_waiters`]).
    finished_waiters: Vec<HolderId>,
}

impl Abm<AnyPolicy> {
    /// An ABM with a policy chosen by kind.
    pub fn with_kind(
        geometry: TableGeometry,
        config: AbmConfig,
        kind: PolicyKind,
    ) -> Result<Self, BufferError> {
        let policy = AnyPolicy::new(kind, &geometry, &config);
        Abm::new(geometry, config, policy)
    }
}

impl<P: Policy> Abm<P> {
    pub fn new(geometry: TableGeometry, config: AbmConfig, policy: P) -> Result<Self, BufferError> {
        config.validate()?;
        let state = AbmState::new(&geometry, config)?;
        Ok(Abm {
            geometry,
            state,
            policy,
            trace: None,
            finished_waiters: Vec::new(),
        })
    }

    pub fn state(&self) -> &AbmState {
        &self.state
    }

    pub fn policy(&self) -> &P {
        &self.policy
    }

    pub fn geometry(&self) -> &TableGeometry {
        &self.geometry
    }

    /// A CScan registers its ranges. It is admitted now, or queued (FIFO) until enough
    /// room per scan is in the budget; either way it may call [`Abm::next_chunk`] at once.
    pub fn register_scan(
        &mut self,
        spec: &ScanSpec,
        now: Nanos,
    ) -> Result<Registration, BufferError> {
        if spec.table != self.state.table() {
            return Err(BufferError::WrongTable {
                asked: spec.table.0,
                served: self.state.table().0,
            });
        }
        if !(1..=crate::MAX_WORKERS).contains(&spec.workers) {
            return Err(BufferError::Workers {
                asked: spec.workers,
                max: crate::MAX_WORKERS,
            });
        }
        let snapshot = match &spec.snapshot {
            Some(snapshot) => snapshot.clone(),
            None => self.state.base_snapshot(),
        };
        let chunks = self.geometry.snapshot_chunks(&snapshot, &spec.ranges)?;
        if let Some(pages) = &spec.pages {
            self.state.check_pages(pages)?;
        }
        let cols = self.state.scan_cols(spec.columns);
        let needed = self.state.footprint(cols, chunks.len());
        let capacity = self.state.admission_bytes;
        if needed > capacity {
            return Err(BufferError::ScanTooLarge { needed, capacity });
        }
        let id = ScanId(self.state.next_scan_id);
        self.state.next_scan_id += 1;
        let pending = PendingScan {
            id,
            columns: spec.columns,
            cols,
            order: spec.order,
            chunks,
            snapshot,
            footprint: needed,
            workers: spec.workers,
            registered_at: now,
            waiting: Vec::new(),
            pages: spec.pages.clone().map(std::sync::Arc::new),
            overtaken: 0,
        };
        // Queued first, so one check (`fits`) serves registration and `admit_queued`.
        self.state.pending.push_back(pending);
        let at = self.state.pending.len().saturating_sub(1);
        let admitted = self.may_pass(at) && self.fits(at);
        if admitted {
            self.note_passed(at);
            if let Some(pending) = self.state.pending.remove(at) {
                self.admit(pending);
            }
        }
        Ok(Registration { scan: id, admitted })
    }

    /// A bulk append (2012 §2.1): `chunks` are new chunks after every chunk there is;
    /// returns their ids, for the snapshot of the transaction that appended them
    /// ([`crate::Snapshot::appended`]). Scans that do not name that snapshot never see
    /// them.
    pub fn append_chunks(
        &mut self,
        chunks: &[AppendedChunk],
    ) -> Result<Range<ChunkId>, BufferError> {
        let mut geometry = self.geometry.clone();
        let added = geometry.append(chunks)?;
        self.state.append_chunks(&geometry)?;
        self.geometry = geometry;
        Ok(ChunkId(added.start)..ChunkId(added.end))
    }

    /// Whether the queued scan at `at` may be admitted now: room in the budget (checked
    /// first: cheap, and most queued scans fail it), and none of its chunks with a
    /// scattered piece left (`scatter.rs`: those evicted now if they can be).
    fn fits(&mut self, at: usize) -> bool {
        let Some(p) = self.state.pending.get(at) else {
            return false;
        };
        if !self.state.admission_open(p.footprint) {
            return false;
        }
        if self.state.scattered.is_empty() {
            return true;
        }
        let (chunks, pages) = (p.chunks.clone(), p.pages.clone());
        self.state.clear_scatter_for(&chunks, pages.as_deref())
    }

    /// Whether a scan may be admitted before the first `ahead` queued scans: none of
    /// them has been passed [`crate::ADMISSION_MAX_OVERTAKES`] times.
    fn may_pass(&self, ahead: usize) -> bool {
        let limit = crate::ADMISSION_MAX_OVERTAKES;
        self.state
            .pending
            .iter()
            .take(ahead)
            .all(|p| p.overtaken < limit)
    }

    /// Counts a pass of the first `ahead` queued scans.
    fn note_passed(&mut self, ahead: usize) {
        for p in self.state.pending.iter_mut().take(ahead) {
            p.overtaken = p.overtaken.saturating_add(1);
        }
    }

    fn admit(&mut self, pending: PendingScan) -> ScanSlot {
        let slot = self.state.admit(pending);
        self.policy.on_admit(&self.state, slot);
        slot
    }

    fn slot(&self, scan: ScanId) -> Result<ScanSlot, BufferError> {
        self.state
            .slot_of(scan)
            .ok_or(BufferError::UnknownScan(scan))
    }

    /// Paper: selectChunk. Deliver an available chunk to the worker, or tell it to
    /// wait. `holder` may be a [`ScanId`]: the scan's first (or only) worker.
    pub fn next_chunk(
        &mut self,
        holder: impl Into<HolderId>,
        now: Nanos,
    ) -> Result<NextChunk, BufferError> {
        let holder = holder.into();
        let Ok(slot) = self.slot(holder.scan) else {
            return self.next_chunk_pending(holder, now);
        };
        let s = self.state.active_scan(slot);
        if holder.worker >= s.workers {
            return Err(BufferError::UnknownHolder(holder));
        }
        if s.held_by(holder.worker).is_some() {
            return Err(BufferError::AlreadyProcessing(holder));
        }
        if s.all_delivered() {
            self.state.unblock(slot, holder.worker);
            return Ok(NextChunk::Finished);
        }
        match self.try_deliver(slot, holder.worker, now) {
            Some(d) => Ok(NextChunk::Deliver(d)),
            None => {
                self.state.block(slot, holder.worker, now);
                Ok(NextChunk::Wait)
            }
        }
    }

    /// [`Abm::next_chunk`] for a worker of a scan queued for admission.
    fn next_chunk_pending(
        &mut self,
        holder: HolderId,
        now: Nanos,
    ) -> Result<NextChunk, BufferError> {
        let pending = self.state.pending.iter_mut().find(|p| p.id == holder.scan);
        let pending = pending.ok_or(BufferError::UnknownScan(holder.scan))?;
        if holder.worker >= pending.workers {
            return Err(BufferError::UnknownHolder(holder));
        }
        // A scan that needs nothing is done even while queued: `Wait` would
        // promise a delivery that admission can never produce.
        if pending.chunks.is_empty() {
            return Ok(NextChunk::Finished);
        }
        if !pending.waiting.iter().any(|(w, _)| *w == holder.worker) {
            pending.waiting.push((holder.worker, now));
        }
        Ok(NextChunk::Wait)
    }

    /// [`Abm::next_chunk`] for a driver that honours holds: the policy may first
    /// throttle the scan ([`Paced::Hold`]; only `pbm-throttle` does). A driver that
    /// cannot wait on time calls [`Abm::next_chunk`], which never holds. A scan of
    /// several workers is never held: a hold withholds every delivery to its scan,
    /// and the policies' hold bookkeeping (one owed delivery) is per scan, not per
    /// worker.
    pub fn next_chunk_paced(
        &mut self,
        holder: impl Into<HolderId>,
        now: Nanos,
    ) -> Result<Paced, BufferError> {
        let holder = holder.into();
        if let Ok(slot) = self.slot(holder.scan) {
            let s = self.state.active_scan(slot);
            // Only a scan about to ask for its next chunk: one whose workers wait for
            // a load already have their delivery promised by a later event.
            let idle = s.held_by(holder.worker).is_none() && s.blocked_since().is_none();
            if idle && s.workers == 1 && holder.worker < s.workers && !s.all_delivered() {
                let until = self.policy.hold(&self.state, slot, now);
                if let Some(until) = until.filter(|u| *u > now) {
                    return Ok(Paced::Hold { until });
                }
            }
        }
        self.next_chunk(holder, now).map(Paced::Go)
    }

    fn try_deliver(&mut self, slot: ScanSlot, worker: u16, now: Nanos) -> Option<Delivery> {
        let chunk = self.choose_available(slot)?;
        self.state.deliver(slot, worker, chunk, now);
        self.policy.on_delivered(&self.state, slot, chunk);
        let scan = self.state.active_scan(slot);
        if let Some(trace) = self.trace.as_mut() {
            for piece in self.state.pieces_of(chunk, scan.cols) {
                trace.push(crate::Reference {
                    at: now,
                    scan: scan.id,
                    piece,
                    bytes: self.state.piece_bytes(piece),
                });
            }
        }
        let delivery = Delivery {
            table: self.state.table(),
            scan: scan.id,
            worker,
            chunk,
        };
        if scan.all_delivered() {
            self.finish_waiters(slot);
        }
        Some(delivery)
    }

    /// The scan's last chunk is handed out: its other waiting workers will get none.
    fn finish_waiters(&mut self, slot: ScanSlot) {
        let scan = self.state.active_scan(slot);
        let (id, waiting) = (scan.id, scan.waiting.clone());
        for (worker, _) in waiting {
            self.state.unblock(slot, worker);
            self.finished_waiters.push(HolderId::new(id, worker));
        }
    }

    /// Workers that were waiting when another worker of their scan took its last
    /// chunk: for each, the answer to its wait is [`NextChunk::Finished`]. Always
    /// empty for scans with one worker. A driver of several workers per scan takes
    /// them after every event that may deliver.
    pub fn take_finished_waiters(&mut self) -> Vec<HolderId> {
        std::mem::take(&mut self.finished_waiters)
    }

    /// Starts recording every piece reference (each delivery references the pieces
    /// the scan reads of its chunk) for an offline replay under OPT; memory grows by
    /// 48 bytes per reference until [`Abm::take_trace`].
    pub fn record_trace(&mut self) {
        self.trace.get_or_insert_with(Vec::new);
    }

    /// The references recorded so far (recording continues).
    pub fn take_trace(&mut self) -> Vec<crate::Reference> {
        self.trace.as_mut().map(std::mem::take).unwrap_or_default()
    }

    /// Order belongs to the scan: an in-order scan gets its next chunk or nothing,
    /// whatever the policy would prefer; any other scan gets the policy's choice,
    /// which is never a chunk another of its workers holds.
    fn choose_available(&mut self, slot: ScanSlot) -> Option<ChunkId> {
        let scan = self.state.active_scan(slot);
        match scan.in_order_next(0) {
            Some(next) => self.state.available_for(next, scan.cols).then_some(next),
            None if scan.order == crate::ScanOrder::InOrder => None,
            None => self.policy.choose_available(&self.state, slot),
        }
    }

    /// Wakes the waiting workers of the scans in `candidates`, oldest wait first, while
    /// their scan has an available chunk.
    fn serve_blocked(&mut self, candidates: ScanSet, now: Nanos, out: &mut Vec<Delivery>) {
        for slot in (candidates & self.state.blocked_mask()).iter() {
            while let Some(&(worker, _)) = self.state.active_scan(slot).waiting.first() {
                let Some(delivery) = self.try_deliver(slot, worker, now) else {
                    break;
                };
                out.push(delivery);
            }
        }
    }

    /// The worker finished processing its chunk: the chunk counts as consumed.
    /// `holder` may be a [`ScanId`]: the scan's first (or only) worker.
    pub fn release_chunk(
        &mut self,
        holder: impl Into<HolderId>,
        _now: Nanos,
    ) -> Result<ChunkId, BufferError> {
        let holder = holder.into();
        let slot = self.slot(holder.scan)?;
        self.state
            .release(slot, holder.worker)
            .ok_or(BufferError::NotProcessing(holder))
    }

    /// The scan ends (finished, cancelled or failed): its pin and all its interest are
    /// dropped; queued scans may be admitted and served (appended to `out`).
    pub fn unregister_scan(
        &mut self,
        scan: ScanId,
        now: Nanos,
        out: &mut Vec<Delivery>,
    ) -> Result<(), BufferError> {
        if let Some(pos) = self.state.pending.iter().position(|p| p.id == scan) {
            self.state.pending.remove(pos);
            return Ok(());
        }
        let slot = self.slot(scan)?;
        self.policy.on_retire(&self.state, slot);
        self.state.retire(slot);
        self.finished_waiters.retain(|h| h.scan != scan);
        self.admit_queued(now, out);
        Ok(())
    }

    /// Admits queued scans while admission allows, each served at once if it can be
    /// (appended to `out`): of those that fit, the one reading the fewest chunks first
    /// (queryRelevance's "shorter scans first", applied to admission; the first queued
    /// among equals). A scan that does not fit yet is passed by later ones until it
    /// has been passed [`crate::ADMISSION_MAX_OVERTAKES`] times; from then on nothing
    /// behind it is admitted first, so it waits only for room that finishing scans
    /// free.
    pub(crate) fn admit_queued(&mut self, now: Nanos, out: &mut Vec<Delivery>) {
        while let Some(at) = self.next_admitted() {
            self.note_passed(at);
            let Some(pending) = self.state.pending.remove(at) else {
                break;
            };
            let slot = self.admit(pending);
            self.serve_blocked(ScanSet::single(slot), now, out);
        }
    }

    /// The queue position of the scan [`Abm::admit_queued`] admits next, if any fits.
    fn next_admitted(&mut self) -> Option<usize> {
        let mut best: Option<(u32, usize)> = None;
        let mut at = 0;
        while let Some(p) = self.state.pending.get(at) {
            let needed = p.chunks.len();
            let last = p.overtaken >= crate::ADMISSION_MAX_OVERTAKES;
            let shorter = best.is_none_or(|(fewest, _)| needed < fewest);
            if shorter && self.fits(at) {
                best = Some((needed, at));
            }
            if last {
                break;
            }
            at += 1;
        }
        best.map(|(_, at)| at)
    }

    /// Loader: what to read next, or `None` (nothing useful now, or `max_inflight` loads
    /// running). The pool has evicted what the policy's replacer chose and reserved the
    /// bytes; the chunk is "loading" until [`Abm::load_completed`] or
    /// [`Abm::load_failed`]. A load a starved scan needs comes first; with none and the
    /// disk idle, the policy may work ahead ([`Policy::choose_prefetch`]).
    pub fn next_load(&mut self, now: Nanos) -> Option<LoadDecision> {
        self.next_demand_load(now)
            .or_else(|| self.next_prefetch(now))
    }

    /// [`Abm::next_load`] without working ahead: only what the policy's main loop wants.
    pub(crate) fn next_demand_load(&mut self, now: Nanos) -> Option<LoadDecision> {
        // An empty table has nothing to load (and policies may assume chunks exist).
        let idle = self.state.chunk_count() == 0;
        if idle || self.state.inflight() >= self.state.config().max_inflight {
            return None;
        }
        let choice = self.policy.choose_load(&self.state, now)?;
        Some(self.start_load(choice))
    }

    /// A load while no load of this table runs, evicting nothing an active scan needs
    /// ([`Policy::choose_prefetch`]); a catalog asks only when no table loads.
    pub(crate) fn next_prefetch(&mut self, now: Nanos) -> Option<LoadDecision> {
        if self.state.chunk_count() == 0 || self.state.inflight() > 0 {
            return None;
        }
        let choice = self.policy.choose_prefetch(&self.state, now)?;
        Some(self.start_load(choice))
    }

    fn start_load(&mut self, choice: LoadChoice) -> LoadDecision {
        let on_behalf_of = choice
            .on_behalf_of
            .and_then(|s| self.state.scan(s))
            .map(|s| s.id);
        // A policy that breaks its contract (a pinned victim, a resident chunk, too few
        // bytes freed) is a bug in this crate, not a driver error.
        let reads = match self
            .state
            .start_load(choice.chunk, choice.cols, &choice.victims)
        {
            Ok(reads) => reads,
            Err(e) => panic!("{} chose an impossible load: {e}", self.policy.kind()),
        };
        LoadDecision {
            table: self.state.table(),
            chunk: choice.chunk,
            // What the pool reserved: less than the pieces' size for a scattered load.
            bytes: self.state.bytes_of(choice.chunk, choice.cols),
            pieces: reads.iter().map(|r| r.piece).collect(),
            reads,
            evicted: choice.victims,
            on_behalf_of,
        }
    }

    /// A piece is in memory. Blocked scans that can now use its chunk are served
    /// (appended to `out`), as the paper's ABM signals waiting queries.
    pub fn load_completed(
        &mut self,
        piece: PieceId,
        now: Nanos,
        out: &mut Vec<Delivery>,
    ) -> Result<(), BufferError> {
        self.state.finish_piece(piece)?;
        self.serve_blocked(self.state.interest(piece.chunk), now, out);
        Ok(())
    }

    /// The read of a piece failed: it is absent again and its bytes are free. Returns
    /// the active scans that still need its chunk (blocked on it or busy with another
    /// chunk), so the driver can fail or retry exactly those. Their interest is kept: a
    /// later `next_load` will choose the chunk again, so a driver that does not retry
    /// must unregister those scans (the threaded runtime does), or it re-reads in a loop.
    pub fn load_failed(&mut self, piece: PieceId, _now: Nanos) -> Result<Vec<ScanId>, BufferError> {
        let mask = self.state.fail_piece(piece)?;
        Ok(mask.iter().map(|s| self.state.active_scan(s).id).collect())
    }

    /// This table's ABM as table `table` of a catalog (`catalog.rs`): its pieces and
    /// deliveries name the table, and its scan ids start at `table << SCAN_ID_TABLE_BITS`
    /// so that ids are unique across the catalog and name their table.
    pub(crate) fn in_catalog(&mut self, table: TableId, from: crate::catalog::Successor) {
        self.state.table = table;
        self.state.next_scan_id = from.next_scan_id;
        self.state.version = from.version;
    }

    /// Evicts every resident piece (a retired version nobody scans: nothing is pinned
    /// or loading). Returns them.
    pub(crate) fn evict_all(&mut self) -> Vec<PieceId> {
        let victims: Vec<PieceId> = self.state.pool().lru().collect();
        // `Catalog::free_if_idle` frees only a table without scans or loads.
        if let Err(e) = self.state.evict(&victims) {
            panic!("evicting an idle table's pieces: {e}");
        }
        victims
    }

    /// Lends the pool `capacity` bytes and tells admission how much the other tables
    /// of the catalog reserve (`catalog.rs`).
    pub(crate) fn share_budget(&mut self, capacity: u64, reserved_elsewhere: u64) {
        self.state.pool.set_capacity(capacity);
        self.state.reserved_elsewhere = reserved_elsewhere;
    }

    /// Evicts, in the policy's order, pieces of this table that free `bytes` or as many
    /// as may go now: room for another table's load. Returns the victims.
    pub(crate) fn evict_for_other(&mut self, bytes: u64, now: Nanos) -> Vec<PieceId> {
        let request = EvictionRequest {
            bytes,
            chunk: None,
            for_scan: None,
        };
        let victims = self.policy.victims(&self.state, &request, now);
        // As in `next_load`: a victim the pool refuses is a policy bug.
        if let Err(e) = self.state.evict(&victims) {
            panic!("{} chose an impossible victim: {e}", self.policy.kind());
        }
        victims
    }

    /// Scattered pieces evicted to admit a scan (`scatter.rs`), since the last call.
    pub(crate) fn take_scatter_evicted(&mut self) -> Vec<PieceId> {
        self.state.take_scatter_evicted()
    }

    /// Whether a queued scan may wait for a scattered piece to be released or read:
    /// then every release and completed load should try admission again.
    pub(crate) fn queued_behind_scatter(&self) -> bool {
        self.state.queued_behind_scatter()
    }

    /// Full consistency check, O(chunks + pieces); see `invariants.rs`.
    pub fn check_invariants(&self) -> Result<(), BufferError> {
        self.state.check_invariants()
    }
}
