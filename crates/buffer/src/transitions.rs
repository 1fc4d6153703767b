//! Every mutation of [`AbmState`]. Each keeps the derived data in step: the pool and
//! each chunk's resident and loading columns, its place in the class sets, per-scan
//! `available`/`incoming` counters and the starvation sets. `invariants.rs` recomputes
//! all of it from scratch and compares.
//!
//! A chunk's *place* is derived from the columns the scans that need it read (the
//! class's columns) and its resident/loading columns; see [`crate::Residency`]. For
//! NSM/PAX every chunk is one piece with the single column bit `WHOLE_CHUNK`, so the
//! place is simply that piece's state.

use crate::config::{ADMISSION_CHUNKS_PER_SCAN, MAX_SCANS};
use crate::index::{ClassIndex, Place};
use crate::page_schema::PageSchemas;
use crate::pool::{PieceId, Pool};
use crate::scatter::page_runs;
use crate::state::WHOLE_CHUNK;
use crate::state::{bits, AbmState, ChunkEntry, PendingScan, ScanState};
use crate::straddle::ReadPlan;
use crate::{
    AbmConfig, BufferError, ChunkId, HolderId, Nanos, ScanOrder, ScanSet, ScanSlot, TableGeometry,
};
use std::collections::{BTreeMap, VecDeque};

/// How a chunk stands for one scan reading `cols`.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum ForScan {
    Available,
    Incoming,
    Missing,
}

pub(crate) fn for_scan(cols: u64, resident: u64, loading: u64) -> ForScan {
    if cols & !resident == 0 {
        ForScan::Available
    } else if cols & !(resident | loading) == 0 {
        ForScan::Incoming
    } else {
        ForScan::Missing
    }
}

/// The place of a chunk whose scans read `needed` columns (0: nobody needs it).
pub(crate) fn place_of(needed: u64, resident: u64, loading: u64) -> Place {
    if needed == 0 {
        return match (resident, loading) {
            (0, 0) => Place::Absent,
            (0, _) => Place::Loading,
            _ => Place::Resident,
        };
    }
    match for_scan(needed, resident, loading) {
        ForScan::Available => Place::Resident,
        ForScan::Incoming => Place::Loading,
        ForScan::Missing => Place::Absent,
    }
}

impl AbmState {
    pub(crate) fn new(geometry: &TableGeometry, config: AbmConfig) -> Result<Self, BufferError> {
        let capacity = config.capacity_bytes(geometry.max_chunk_bytes())?;
        let pool = Pool::new(capacity);
        let mut classes = ClassIndex::default();
        let chunks = (0..geometry.chunk_count())
            .map(|c| ChunkEntry {
                mask: ScanSet::EMPTY,
                class: classes.insert(ChunkId(c), ScanSet::EMPTY, || 0, Place::Absent),
                place: Place::Absent,
                resident_cols: 0,
                loading_cols: 0,
                snapshots: 0,
            })
            .collect();
        Ok(AbmState {
            config,
            table: Default::default(),
            version: Default::default(),
            chunks,
            base_chunks: geometry.chunk_count(),
            local_chunks: 0,
            shared_chunks: 0,
            geometry: geometry.clone(),
            classes,
            pool,
            admission_bytes: capacity,
            reserved_elsewhere: 0,
            scans: vec![None; MAX_SCANS],
            active: ScanSet::EMPTY,
            blocked: ScanSet::EMPTY,
            starved: ScanSet::EMPTY,
            almost_starved: ScanSet::EMPTY,
            in_order: ScanSet::EMPTY,
            spare: Default::default(),
            page_schemas: Default::default(),
            pending: VecDeque::new(),
            next_scan_id: 0,
            loads: Vec::new(),
            stats: Default::default(),
            last_loaded: None,
            scattered: BTreeMap::new(),
            scatter_evicted: Vec::new(),
        })
    }

    /// The budget a scan reading `cols` of `chunks` chunks reserves: room for 2 of its
    /// largest chunks, whatever its workers — what it needs to progress, one chunk in
    /// process and one ready — but never for more chunks than it reads, which are all
    /// it can ever hold. A parallel scan's further workers use what room there is.
    /// Reserving one more chunk per further worker let a long scan of four workers
    /// hold room for 5 chunks for its whole run, and short queries waited for
    /// admission behind such scans (docs/performance.md, "Admission: what a scan needs
    /// to progress").
    pub(crate) fn footprint(&self, cols: u64, chunks: u32) -> u64 {
        self.largest_load(cols)
            .saturating_mul(u64::from(ADMISSION_CHUNKS_PER_SCAN.min(chunks)))
    }

    /// The bytes of the largest chunk's pieces for `cols`: the most one load of a scan
    /// reading `cols` reserves.
    pub(crate) fn largest_load(&self, cols: u64) -> u64 {
        if self.columnar() {
            bits(cols).map(|c| self.geometry.max_column_bytes(c)).sum()
        } else {
            self.geometry.max_chunk_bytes()
        }
    }

    /// The most workers a scan reading `cols` may have: room in the budget alone for
    /// 2 chunks of its columns plus one per further worker (more could never all hold
    /// a chunk while one more is ready). At least 1 (a scan too large for even that is
    /// refused at registration).
    pub fn max_workers(&self, cols: u64) -> u16 {
        let fit = self.admission_bytes / self.largest_load(cols).max(1);
        let further = fit.saturating_sub(u64::from(ADMISSION_CHUNKS_PER_SCAN));
        let most = u64::from(crate::MAX_WORKERS);
        further.saturating_add(1).min(most) as u16
    }

    /// The most one load for the active scans that still lack a chunk may reserve, or
    /// `None` when no scan lacks one (a shared budget makes room for this much).
    pub fn wanted_load_bytes(&self) -> Option<u64> {
        self.active_slots()
            .map(|s| self.active_scan(s))
            .filter(|s| s.needed > s.available + s.incoming)
            .map(|s| self.largest_load(s.cols))
            .max()
    }

    /// The most one load may reserve when a policy loads the columns of several scans
    /// at once (elevator's class columns, relevance's overlapping starved scans): the
    /// largest chunk of every active scan's columns; `None` when no scan lacks a chunk.
    pub fn merged_load_bytes(&self) -> Option<u64> {
        self.wanted_load_bytes()?;
        let cols = self
            .active_slots()
            .map(|s| self.active_scan(s).cols)
            .fold(0, |a, b| a | b);
        Some(self.largest_load(cols))
    }

    /// When the longest-waiting active scan started waiting, if any scan waits.
    pub fn earliest_blocked(&self) -> Option<Nanos> {
        self.blocked_mask()
            .iter()
            .filter_map(|s| self.active_scan(s).blocked_since())
            .min()
    }

    /// Admission rule (docs/abm.md): the footprints of the active scans plus this one's
    /// fit in the budget (with a catalog: with every table's active scans), and at most
    /// [`MAX_SCANS`] scans are active.
    pub(crate) fn admission_open(&self, footprint: u64) -> bool {
        let reserved = self
            .reserved_bytes()
            .saturating_add(self.reserved_elsewhere)
            .saturating_add(footprint);
        (self.active_count() as usize) < MAX_SCANS && self.admission_bytes >= reserved
    }

    /// The footprints of this table's admitted scans (each as at its registration: a
    /// bulk append of larger chunks later is not in its snapshot).
    pub fn reserved_bytes(&self) -> u64 {
        self.active_slots()
            .map(|s| self.active_scan(s).footprint)
            .fold(0, u64::saturating_add)
    }

    /// The budget admission counts against (see [`AbmState::admission_bytes`]).
    pub fn admission_bytes(&self) -> u64 {
        self.admission_bytes
    }

    /// Columns bits a scan of `columns` needs: all of them for NSM/PAX; for DSM its
    /// columns, or the first one when it reads none (e.g. `count(*)` needs row counts).
    pub fn scan_cols(&self, columns: crate::ColumnMask) -> u64 {
        if !self.columnar() {
            return crate::state::WHOLE_CHUNK;
        }
        match columns.0 & self.all_cols() {
            0 => 1,
            cols => cols,
        }
    }

    pub(crate) fn admit(&mut self, pending: PendingScan) -> ScanSlot {
        let Some(slot) = self.active.first_free() else {
            panic!("admit called with all slots taken");
        };
        let blocked = !pending.waiting.is_empty();
        self.scans[slot.index()] = Some(ScanState {
            id: pending.id,
            columns: pending.columns,
            cols: pending.cols,
            order: pending.order,
            needed: pending.chunks.len(),
            chunks: pending.chunks,
            snapshot: pending.snapshot,
            footprint: pending.footprint,
            workers: pending.workers,
            available: 0,
            incoming: 0,
            held: Vec::new(),
            waiting: pending.waiting,
            registered_at: pending.registered_at,
            last_served: pending.registered_at,
            pages: pending.pages,
        });
        self.active.insert(slot);
        self.blocked.set(slot, blocked);
        self.in_order.set(slot, pending.order == ScanOrder::InOrder);
        let chunks = self.active_scan(slot).chunks.clone();
        for c in chunks.iter() {
            let mut mask = self.interest(c);
            mask.insert(slot);
            self.set_mask(c, mask);
        }
        self.join_scatter(slot);
        self.refresh_starvation(ScanSet::single(slot));
        if self.geometry.tiled() {
            self.page_schemas.admit(self.active_scan(slot).cols);
        }
        self.refresh_sharing();
        slot
    }

    /// Drops the scan: its pins, its interest in every chunk, its slot.
    pub(crate) fn retire(&mut self, slot: ScanSlot) -> ScanState {
        for (worker, chunk) in self.active_scan(slot).held.clone() {
            self.unpin(chunk, slot, worker);
        }
        let chunks = self.active_scan(slot).chunks.clone();
        for c in chunks.iter() {
            let mut mask = self.interest(c);
            if mask.contains(slot) {
                mask.remove(slot);
                self.set_mask(c, mask);
            }
        }
        for set in [
            &mut self.active,
            &mut self.blocked,
            &mut self.starved,
            &mut self.almost_starved,
            &mut self.in_order,
        ] {
            set.remove(slot);
        }
        self.forget_scatter_slot(slot);
        let retired = match self.scans[slot.index()].take() {
            Some(state) => state,
            None => panic!("retire of an empty slot"),
        };
        if self.geometry.tiled() {
            self.rebuild_page_schemas();
        }
        self.refresh_sharing();
        retired
    }

    /// Clotho §4.2: when a query ends, the page schemas are those of the queries still
    /// running, admitted in the order they registered.
    fn rebuild_page_schemas(&mut self) {
        let mut running: Vec<(Nanos, ScanSlot, u64)> = self
            .active_slots()
            .map(|s| {
                let scan = self.active_scan(s);
                (scan.registered_at, s, scan.cols)
            })
            .collect();
        running.sort_unstable();
        self.page_schemas = PageSchemas::rebuild(running.into_iter().map(|(_, _, cols)| cols));
    }

    /// Hands `chunk` to `worker` of the scan in `slot` and pins its pieces for it
    /// (paper: processCnt++).
    pub(crate) fn deliver(&mut self, slot: ScanSlot, worker: u16, chunk: ChunkId, now: Nanos) {
        let cols = self.active_scan(slot).cols;
        assert!(
            self.available_for(chunk, cols),
            "delivering {chunk} whose columns are not resident"
        );
        assert!(
            self.interest(chunk).contains(slot),
            "delivering {chunk} to a scan that does not need it"
        );
        let scan = self.scans[slot.index()]
            .as_mut()
            .expect("deliver to an empty slot");
        assert!(
            scan.held_by(worker).is_none() && !scan.holds(chunk) && !scan.all_delivered(),
            "a worker processes one chunk at a time, and a scan each chunk once"
        );
        scan.held.push((worker, chunk));
        scan.stop_waiting(worker);
        scan.last_served = now;
        let holder = HolderId::new(scan.id, worker);
        let blocked = !scan.waiting.is_empty();
        self.blocked.set(slot, blocked);
        for c in bits(cols) {
            let pinned = self.pool.pin(self.piece_of(chunk, c), holder);
            assert!(pinned.is_ok(), "pinning resident {chunk}: {pinned:?}");
        }
        self.stats.deliveries += 1;
    }

    /// `worker` is done with its chunk: it is consumed (interest bit cleared) and
    /// unpinned.
    pub(crate) fn release(&mut self, slot: ScanSlot, worker: u16) -> Option<ChunkId> {
        let scan = self.scans[slot.index()].as_mut()?;
        let chunk = scan.held_by(worker)?;
        scan.held.retain(|(w, _)| *w != worker);
        scan.needed -= 1;
        self.unpin(chunk, slot, worker);
        let mut mask = self.interest(chunk);
        mask.remove(slot);
        self.set_mask(chunk, mask);
        self.refresh_starvation(ScanSet::single(slot));
        Some(chunk)
    }

    /// `worker` of the scan waits for a chunk.
    pub(crate) fn block(&mut self, slot: ScanSlot, worker: u16, now: Nanos) {
        let scan = self.scans[slot.index()]
            .as_mut()
            .expect("block on an empty slot");
        scan.wait(worker, now);
        self.blocked.insert(slot);
    }

    /// `worker` stops waiting (told that nothing is left for it).
    pub(crate) fn unblock(&mut self, slot: ScanSlot, worker: u16) {
        let scan = self.scans[slot.index()]
            .as_mut()
            .expect("unblock on an empty slot");
        scan.stop_waiting(worker);
        let blocked = !scan.waiting.is_empty();
        self.blocked.set(slot, blocked);
    }

    fn unpin(&mut self, chunk: ChunkId, slot: ScanSlot, worker: u16) {
        let scan = self.active_scan(slot);
        let (holder, cols) = (HolderId::new(scan.id, worker), scan.cols);
        for c in bits(cols) {
            let unpinned = self.pool.unpin(self.piece_of(chunk, c), holder);
            assert!(unpinned.is_ok(), "unpinning {chunk}: {unpinned:?}");
        }
    }

    /// Evicts `victims` (each resident and unpinned) and starts loading the pieces of
    /// `chunk` for `cols` (none of them resident or loading), each with its plan: a
    /// shared boundary page whose neighbouring piece is still resident after the
    /// evictions is copied, not read (`straddle.rs`).
    pub(crate) fn start_load(
        &mut self,
        chunk: ChunkId,
        cols: u64,
        victims: &[PieceId],
    ) -> Result<Vec<ReadPlan>, BufferError> {
        let e = &self.chunks[chunk.0 as usize];
        if cols == 0 || cols & (e.resident_cols | e.loading_cols) != 0 {
            return Err(BufferError::PieceState(
                self.piece(chunk),
                "resident or loading: never load it twice",
            ));
        }
        self.evict(victims)?;
        let pieces = self.load_order(chunk, cols);
        let mut plans = Vec::with_capacity(pieces.len());
        // NSM/PAX: a chunk only index selections need is read as their pages alone.
        let scatter = (cols == WHOLE_CHUNK && !self.columnar())
            .then(|| self.scatter_pages(chunk))
            .flatten();
        for piece in pieces {
            let (bytes, plan) = match &scatter {
                Some(pages) => {
                    let bytes = self.geometry.bytes_of_pages(chunk, pages);
                    let runs = page_runs(pages);
                    let read = self.geometry.span_of_runs(chunk, &runs);
                    (bytes, ReadPlan::scattered(piece, read, runs))
                }
                None => (self.piece_bytes(piece), self.plan_read(piece)),
            };
            self.pool.reserve(piece, bytes)?;
            self.stats.bytes_loaded += bytes;
            self.stats.bytes_read += plan.read_bytes();
            plans.push(plan);
        }
        let e = &self.chunks[chunk.0 as usize];
        let (res, ld) = (e.resident_cols, e.loading_cols | cols);
        self.set_columns(chunk, res, ld);
        if let Some(pages) = scatter {
            self.start_scatter(chunk, pages);
        }
        self.loads.push((chunk, cols));
        self.last_loaded = Some(chunk);
        self.stats.loads += 1;
        Ok(plans)
    }

    /// Drops `victims` (each resident and unpinned) from the pool.
    pub(crate) fn evict(&mut self, victims: &[PieceId]) -> Result<(), BufferError> {
        for victim in victims {
            let bit = self.col_bit(*victim);
            if self.needed_cols(victim.chunk) & bit == 0 {
                self.stats.spare_evictions += 1;
            }
            self.pool.evict(*victim)?;
            self.end_scatter(victim.chunk);
            let e = &self.chunks[victim.chunk.0 as usize];
            let (res, ld) = (e.resident_cols & !bit, e.loading_cols);
            self.set_columns(victim.chunk, res, ld);
            self.stats.evictions += 1;
        }
        Ok(())
    }

    /// One piece of a load arrived; the load ends with its last piece.
    pub(crate) fn finish_piece(&mut self, piece: PieceId) -> Result<(), BufferError> {
        let bit = self.end_piece(piece)?;
        self.pool.complete(piece)?;
        let e = &self.chunks[piece.chunk.0 as usize];
        let (res, ld) = (e.resident_cols | bit, e.loading_cols & !bit);
        self.set_columns(piece.chunk, res, ld);
        Ok(())
    }

    /// A failed piece is absent again (it may be loaded again) and frees its bytes.
    pub(crate) fn fail_piece(&mut self, piece: PieceId) -> Result<ScanSet, BufferError> {
        let bit = self.end_piece(piece)?;
        self.pool.abort(piece)?;
        self.end_scatter(piece.chunk);
        let e = &self.chunks[piece.chunk.0 as usize];
        let (res, ld) = (e.resident_cols, e.loading_cols & !bit);
        self.set_columns(piece.chunk, res, ld);
        self.stats.load_failures += 1;
        // Only the scans that read the failed column lose their chunk.
        let mask = self.interest(piece.chunk);
        Ok(mask
            .iter()
            .filter(|s| self.active_scan(*s).cols & bit != 0)
            .collect())
    }

    /// Takes `piece` off its load in flight; returns its column bit.
    fn end_piece(&mut self, piece: PieceId) -> Result<u64, BufferError> {
        let bit = self.col_bit(piece);
        let chunk = piece.chunk;
        let at = self
            .loads
            .iter()
            .position(|(c, cols)| *c == chunk && cols & bit != 0);
        let Some(at) = at else {
            return Err(BufferError::NotLoading(chunk));
        };
        self.loads[at].1 &= !bit;
        if self.loads[at].1 == 0 {
            self.loads.swap_remove(at);
        }
        Ok(bit)
    }

    /// Moves a chunk to another class, keeping the scans' counters in step.
    fn set_mask(&mut self, chunk: ChunkId, mask: ScanSet) {
        let e = &self.chunks[chunk.0 as usize];
        let (old, res, ld) = (e.mask, e.resident_cols, e.loading_cols);
        self.count(old - mask, res, ld, -1);
        self.count(mask - old, res, ld, 1);
        self.reclass(chunk, mask, res, ld);
        self.refresh_starvation(old ^ mask);
    }

    /// Changes what of a chunk is resident or loading, keeping counters in step.
    fn set_columns(&mut self, chunk: ChunkId, res: u64, ld: u64) {
        let e = &self.chunks[chunk.0 as usize];
        let (mask, old_res, old_ld) = (e.mask, e.resident_cols, e.loading_cols);
        self.count(mask, old_res, old_ld, -1);
        self.count(mask, res, ld, 1);
        self.reclass(chunk, mask, res, ld);
        self.refresh_starvation(mask);
    }

    /// Re-files the chunk under `mask` with columns `res`/`ld` in the class index.
    fn reclass(&mut self, chunk: ChunkId, mask: ScanSet, res: u64, ld: u64) {
        let e = &self.chunks[chunk.0 as usize];
        let old_spare = e.resident_cols & !self.classes.class(e.class).columns();
        self.classes.remove(chunk, e.class, e.place);
        let needed = match self.classes.columns_of(mask) {
            Some(cols) => cols,
            None => self.columns_of_scans(mask),
        };
        let place = place_of(needed, res, ld);
        let class = self.classes.insert(chunk, mask, || needed, place);
        let partial = !mask.is_empty() && place != Place::Resident && res != 0;
        self.classes
            .set_partial(chunk, class, partial.then_some(res));
        let e = &mut self.chunks[chunk.0 as usize];
        (e.mask, e.class, e.place) = (mask, class, place);
        (e.resident_cols, e.loading_cols) = (res, ld);
        let spare = res & !needed;
        if spare != 0 {
            self.spare.insert(chunk);
        } else {
            self.spare.remove(&chunk);
        }
        // The pool keeps the spare pieces in LRU order (keepRelevance's first step).
        for c in bits(old_spare | spare) {
            let piece = self.piece_of(chunk, c);
            self.pool.set_spare(piece, spare >> c & 1 == 1);
        }
    }

    /// Union of the columns of the scans in `mask`.
    pub(crate) fn columns_of_scans(&self, mask: ScanSet) -> u64 {
        mask.iter()
            .map(|s| self.active_scan(s).cols)
            .fold(0, |a, b| a | b)
    }

    fn count(&mut self, mask: ScanSet, res: u64, ld: u64, delta: i32) {
        for slot in mask.iter() {
            let scan = self.scans[slot.index()]
                .as_mut()
                .expect("interest of an empty slot");
            match for_scan(scan.cols, res, ld) {
                ForScan::Missing => {}
                ForScan::Incoming => scan.incoming = scan.incoming.wrapping_add_signed(delta),
                ForScan::Available => scan.available = scan.available.wrapping_add_signed(delta),
            }
        }
    }

    pub(crate) fn refresh_starvation(&mut self, mask: ScanSet) {
        for slot in (mask & self.active).iter() {
            let (starved, almost) = self.starvation(self.active_scan(slot));
            self.starved.set(slot, starved);
            self.almost_starved.set(slot, almost);
        }
    }

    /// (starved, almost starved) for a scan. A scan whose every remaining chunk is
    /// already available is not starved: no load can help it (the threshold is
    /// `min(2, needed)`, plus one per further worker). An in-order scan can only use
    /// its next chunks, so only those count: the next `threshold` for starved, one more
    /// for almost starved.
    pub(crate) fn starvation(&self, scan: &ScanState) -> (bool, bool) {
        if scan.needed == 0 {
            return (false, false);
        }
        let threshold = scan.starved_below().min(scan.needed);
        if scan.order == ScanOrder::InOrder {
            let here = |c: ChunkId| self.missing_cols(c, scan.cols) == 0;
            let mut ahead = scan.in_order_ahead();
            let near = ahead.by_ref().take(threshold as usize).filter(|c| here(*c));
            let near = near.count() as u32;
            let window = near + u32::from(ahead.next().is_some_and(here));
            return (near < threshold, window <= threshold);
        }
        let have = scan.available + scan.incoming;
        (have < threshold, have <= threshold)
    }
}
