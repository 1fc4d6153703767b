//! The shared ABM state every policy reads: the pool (what is resident, pinned, how many
//! bytes), and above it the scan-scheduling layer: for each chunk the scans that still
//! need it, for each scan its needs and counters. Policies get `&AbmState` and return
//! choices; only [`crate::Abm`] mutates it (see `transitions.rs`), so a policy cannot
//! break it.

use crate::index::{ChunkClass, ClassId, ClassIndex, Place};
use crate::page_schema::PageSchemas;
use crate::pool::{PieceId, Pool, TableId, TableVersion};
use crate::ScanPages;
use crate::{
    AbmConfig, ChunkId, ChunkRanges, ColumnMask, Nanos, ScanId, ScanOrder, ScanSet, ScanSlot,
    Snapshot, TableGeometry,
};
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::sync::Arc;

/// Where a chunk's data is, for the scans that need it: `Resident` when every column
/// they read is resident, `Loading` when the rest is being loaded, else `Absent`. A
/// chunk nobody needs is `Resident` while any of it is. NSM/PAX chunks are one piece, so
/// this is simply the piece's state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Residency {
    Absent,
    Loading,
    Resident,
}

/// The column bit of an NSM/PAX chunk's single piece.
pub(crate) const WHOLE_CHUNK: u64 = 1;

#[derive(Clone, Debug)]
pub(crate) struct ChunkEntry {
    /// Scans that still need this chunk (paper: neededBy / chunkClass).
    pub(crate) mask: ScanSet,
    pub(crate) class: ClassId,
    pub(crate) place: Place,
    /// Columns whose pieces are resident / being loaded (NSM/PAX: [`WHOLE_CHUNK`]).
    pub(crate) resident_cols: u64,
    pub(crate) loading_cols: u64,
    /// Active scans whose snapshot holds the chunk (`sharing.rs`): 2 or more makes it
    /// *shared*, 1 *local*.
    pub(crate) snapshots: u32,
}

/// An admitted scan.
#[derive(Clone, Debug)]
pub struct ScanState {
    pub id: ScanId,
    pub columns: ColumnMask,
    /// The pieces it needs of each chunk, as column bits (NSM/PAX: [`WHOLE_CHUNK`]).
    pub cols: u64,
    pub order: ScanOrder,
    /// All chunks the scan's ranges touch.
    pub chunks: ChunkRanges,
    /// The table version it reads (`ScanSpec::snapshot`, resolved).
    pub snapshot: Snapshot,
    /// The budget it reserves (`AbmState::footprint` at its registration).
    pub footprint: u64,
    /// Workers that process its chunks at once (`ScanSpec::workers`).
    pub workers: u16,
    /// Chunks not yet released (paper: chunksNeeded), including those in process.
    pub needed: u32,
    /// Needed chunks that are resident, including those in process.
    pub available: u32,
    /// Needed chunks being loaded.
    pub incoming: u32,
    /// The chunk each busy worker processes, in the order they were delivered (paper:
    /// the chunk in process; one per worker of a parallel CScan).
    pub held: Vec<(u16, ChunkId)>,
    /// Workers waiting in `next_chunk` for a chunk, with since when, in the order they
    /// began waiting (oldest first: `serve_blocked` serves them so).
    pub waiting: Vec<(u16, Nanos)>,
    pub registered_at: Nanos,
    /// Last time a chunk was delivered (or registration time).
    pub last_served: Nanos,
    /// An index selection's pages (`ScanSpec::pages`; `scatter.rs`).
    pub pages: Option<Arc<ScanPages>>,
}

impl ScanState {
    /// Does one of its workers process `chunk`?
    pub fn holds(&self, chunk: ChunkId) -> bool {
        self.held.iter().any(|(_, c)| *c == chunk)
    }

    /// The chunk `worker` processes, if any.
    pub fn held_by(&self, worker: u16) -> Option<ChunkId> {
        self.held
            .iter()
            .find(|(w, _)| *w == worker)
            .map(|(_, c)| *c)
    }

    pub fn is_processing(&self) -> bool {
        !self.held.is_empty()
    }

    /// Chunks handed to its workers so far: those released and those held.
    pub fn delivered(&self) -> u32 {
        let released = self.chunks.len().saturating_sub(self.needed);
        released.saturating_add(self.held.len() as u32)
    }

    /// Every chunk of its ranges has been handed out: none is left for a worker that
    /// holds nothing.
    pub fn all_delivered(&self) -> bool {
        self.delivered() >= self.chunks.len()
    }

    /// While a worker waits for a chunk: since when the longest waiting one does
    /// (paper: blockedSince).
    pub fn blocked_since(&self) -> Option<Nanos> {
        self.waiting.iter().map(|(_, t)| *t).min()
    }

    /// Since when the scan, as one query, has waited for service (paper: the start of
    /// waitingTime): since its longest-waiting worker began to wait, or since its last
    /// delivery if that is later. The two agree for a scan of one worker, which waits
    /// only after its last delivery; a parallel scan whose other workers are busy or
    /// are being served would otherwise age for as long as one worker idles — a whole
    /// scan long when it is I/O bound — and outrank shorter queries (the 2012 paper's
    /// imbalance problem: a parallel query counts as one query).
    pub fn waiting_since(&self) -> Option<Nanos> {
        self.blocked_since().map(|t| t.max(self.last_served))
    }

    /// Its starvation threshold before capping at `needed` (Figure 3's 2, plus one per
    /// further worker).
    pub fn starved_below(&self) -> u32 {
        crate::STARVED_BELOW + u32::from(self.workers.max(1)) - 1
    }

    /// For an in-order scan, the `k`-th chunk it will get from now (`k = 0`: the next).
    /// `None` for `ScanOrder::Any` or past the end: an in-order scan is handed its
    /// chunks ascending, so its position is a count.
    pub fn in_order_next(&self, k: u32) -> Option<ChunkId> {
        if self.order != ScanOrder::InOrder {
            return None;
        }
        self.chunks.nth(self.delivered().checked_add(k)?)
    }

    /// For an in-order scan, the chunks it processes (ascending: they were delivered
    /// so) and then those it will get, in order. Empty for `ScanOrder::Any`.
    pub fn in_order_ahead(&self) -> impl Iterator<Item = ChunkId> + '_ {
        let in_order = self.order == ScanOrder::InOrder;
        let held = self.held.iter().filter(move |_| in_order).map(|(_, c)| *c);
        held.chain((0..).map_while(|k| self.in_order_next(k)))
    }

    /// For an in-order scan, the chunks it can use soon: the first
    /// [`ScanState::starved_below`] of [`ScanState::in_order_ahead`] (the window
    /// relevance loads for and protects, and the elevator sweeps for).
    pub fn in_order_window(&self) -> impl Iterator<Item = ChunkId> + '_ {
        self.in_order_ahead().take(self.starved_below() as usize)
    }

    /// Records that `worker` waits (kept from its first wait).
    pub(crate) fn wait(&mut self, worker: u16, now: Nanos) {
        if !self.waiting.iter().any(|(w, _)| *w == worker) {
            self.waiting.push((worker, now));
        }
    }

    /// `worker` no longer waits.
    pub(crate) fn stop_waiting(&mut self, worker: u16) {
        self.waiting.retain(|(w, _)| *w != worker);
    }
}

/// A scattered piece (`scatter.rs`): the pages it holds and the scans it serves.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Scatter {
    pub(crate) scans: ScanSet,
    pub(crate) pages: Vec<u32>,
}

/// A scan waiting for admission.
#[derive(Clone, Debug)]
pub(crate) struct PendingScan {
    pub(crate) id: ScanId,
    pub(crate) columns: ColumnMask,
    pub(crate) cols: u64,
    pub(crate) order: ScanOrder,
    pub(crate) chunks: ChunkRanges,
    pub(crate) snapshot: Snapshot,
    pub(crate) footprint: u64,
    pub(crate) workers: u16,
    pub(crate) registered_at: Nanos,
    /// Its workers that already asked for a chunk, with since when.
    pub(crate) waiting: Vec<(u16, Nanos)>,
    pub(crate) pages: Option<Arc<ScanPages>>,
    /// Scans queued after it that were admitted before it (at most
    /// [`crate::ADMISSION_MAX_OVERTAKES`]).
    pub(crate) overtaken: u32,
}

/// Counters for reports.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AbmStats {
    pub loads: u64,
    pub evictions: u64,
    /// Evicted pieces of columns no scan needed for their chunk (DSM's free first step;
    /// NSM/PAX: chunks nobody needed).
    pub spare_evictions: u64,
    pub deliveries: u64,
    pub load_failures: u64,
    /// Bytes reserved by loads (what the pieces occupy in memory).
    pub bytes_loaded: u64,
    /// What the loads read from the device: less than `bytes_loaded` by the DSM pages
    /// on a chunk boundary copied from a resident neighbouring piece (`straddle.rs`),
    /// more by the pages a scattered load reads through and drops (`scatter.rs`).
    /// Equal to `bytes_loaded` for whole NSM/PAX chunks and for a geometry without
    /// shared pages.
    pub bytes_read: u64,
    /// Loads that read only the pages index selections need (`scatter.rs`).
    pub scatter_loads: u64,
}

#[derive(Clone, Debug)]
pub struct AbmState {
    pub(crate) config: AbmConfig,
    pub(crate) table: TableId,
    /// The version its pieces are of: a catalog slot's versions count up (`catalog.rs`).
    pub(crate) version: TableVersion,
    pub(crate) chunks: Vec<ChunkEntry>,
    /// The chunks the table was opened with: a scan's snapshot unless it names one.
    pub(crate) base_chunks: u32,
    /// Chunks in the snapshots of exactly one / at least two active scans.
    pub(crate) local_chunks: u32,
    pub(crate) shared_chunks: u32,
    /// Sizes of chunks and pieces.
    pub(crate) geometry: TableGeometry,
    pub(crate) classes: ClassIndex,
    pub(crate) pool: Pool,
    /// The whole budget admission counts against: the pool's capacity for a table of
    /// its own, the shared budget for a table of a catalog (whose pool is lent only
    /// part of it at a time).
    pub(crate) admission_bytes: u64,
    /// Footprints of the scans other tables of a catalog have admitted (0 alone).
    pub(crate) reserved_elsewhere: u64,
    pub(crate) scans: Vec<Option<ScanState>>,
    pub(crate) active: ScanSet,
    pub(crate) blocked: ScanSet,
    pub(crate) starved: ScanSet,
    pub(crate) almost_starved: ScanSet,
    pub(crate) in_order: ScanSet,
    /// DSM: chunks holding resident columns that none of their scans reads (the first
    /// eviction candidates), kept so finding one never walks the pool.
    pub(crate) spare: BTreeSet<ChunkId>,
    /// Tiled tables: Clotho's page schemas of the active scans' columns.
    pub(crate) page_schemas: PageSchemas,
    pub(crate) pending: VecDeque<PendingScan>,
    pub(crate) next_scan_id: u64,
    /// Loads in flight: the chunk and the columns still being read.
    pub(crate) loads: Vec<(ChunkId, u64)>,
    pub(crate) last_loaded: Option<ChunkId>,
    pub(crate) stats: AbmStats,
    /// Chunks whose piece is loaded or resident with only some pages (`scatter.rs`).
    pub(crate) scattered: BTreeMap<ChunkId, Scatter>,
    /// Scattered pieces evicted to admit a scan, not yet reported.
    pub(crate) scatter_evicted: Vec<PieceId>,
}

impl AbmState {
    pub fn config(&self) -> &AbmConfig {
        &self.config
    }

    pub fn table(&self) -> TableId {
        self.table
    }

    pub fn chunk_count(&self) -> u32 {
        self.chunks.len() as u32
    }

    /// The pool below the scheduler: bytes, pins, LRU and load order.
    pub fn pool(&self) -> &Pool {
        &self.pool
    }

    /// Is the table columnar (DSM: one piece per chunk and column)?
    pub fn columnar(&self) -> bool {
        self.geometry.columns() > 0
    }

    /// Every column bit of the table (NSM/PAX: [`WHOLE_CHUNK`]).
    pub fn all_cols(&self) -> u64 {
        match self.geometry.columns() {
            0 => WHOLE_CHUNK,
            64 => u64::MAX,
            n => (1u64 << n) - 1,
        }
    }

    /// The piece of `chunk` holding column bit `col` (NSM/PAX: the one piece, of all
    /// columns).
    pub fn piece_of(&self, chunk: ChunkId, col: u32) -> PieceId {
        let columns = match self.columnar() {
            true => ColumnMask::column(col as u16),
            false => ColumnMask::ALL,
        };
        PieceId {
            table: self.table,
            version: self.version,
            chunk,
            columns,
        }
    }

    /// The pieces of `chunk` for the column bits `cols`, smallest first (the 2007
    /// paper's column loading order: subset scans can start early).
    pub fn pieces_of(&self, chunk: ChunkId, cols: u64) -> Vec<PieceId> {
        let mut pieces: Vec<PieceId> = bits(cols).map(|c| self.piece_of(chunk, c)).collect();
        pieces.sort_by_key(|p| (self.piece_bytes(*p), p.columns));
        pieces
    }

    /// The column bit of a piece (NSM/PAX: [`WHOLE_CHUNK`]).
    pub fn col_bit(&self, piece: PieceId) -> u64 {
        match self.columnar() {
            true => piece.columns.0 & self.all_cols(),
            false => WHOLE_CHUNK,
        }
    }

    /// Bytes `piece` holds in the pool, or a load of it would reserve if it is not
    /// there: its geometry's size, but for a scattered piece its pages' (`scatter.rs`).
    /// Policies ask this for every candidate victim, so the common case (nothing
    /// scattered) stays an array lookup.
    pub fn piece_bytes(&self, piece: PieceId) -> u64 {
        let scattered = (!self.scattered.is_empty())
            .then(|| self.scattered.get(&piece.chunk))
            .flatten()
            .filter(|_| !self.columnar());
        match scattered {
            Some(s) => self.geometry.bytes_of_pages(piece.chunk, &s.pages),
            None => self.geometry.piece_bytes(piece.chunk, piece.columns),
        }
    }

    /// Bytes of `chunk`'s pieces for `cols`.
    pub fn bytes_of(&self, chunk: ChunkId, cols: u64) -> u64 {
        bits(cols)
            .map(|c| self.piece_bytes(self.piece_of(chunk, c)))
            .sum()
    }

    /// Bytes a load of all of `chunk` reserves.
    pub fn chunk_bytes(&self, chunk: ChunkId) -> u64 {
        self.geometry.chunk_bytes()[chunk.0 as usize]
    }

    /// The whole-chunk piece of an NSM/PAX chunk.
    pub fn piece(&self, chunk: ChunkId) -> PieceId {
        self.piece_of(chunk, 0)
    }

    /// Column bits of `chunk` that are resident.
    pub fn resident_cols(&self, chunk: ChunkId) -> u64 {
        self.chunks[chunk.0 as usize].resident_cols
    }

    /// Column bits of `chunk` being loaded.
    pub fn loading_cols(&self, chunk: ChunkId) -> u64 {
        self.chunks[chunk.0 as usize].loading_cols
    }

    /// Of `cols`, the columns of `chunk` neither resident nor loading.
    pub fn missing_cols(&self, chunk: ChunkId, cols: u64) -> u64 {
        let e = &self.chunks[chunk.0 as usize];
        cols & !(e.resident_cols | e.loading_cols)
    }

    /// The columns a load of `cols` of `chunk` reads: on a tiled table (CSM) also those
    /// of the page schemas `cols` meet that a scan still needing the chunk reads, so one
    /// request brings a C-page every such scan can use (Clotho §4.2); `cols` elsewhere.
    /// Only columns neither resident nor loading.
    pub fn load_cols(&self, chunk: ChunkId, cols: u64) -> u64 {
        let wanted = match self.geometry.tiled() {
            true => cols | (self.page_schemas.closure(cols) & self.needed_cols(chunk)),
            false => cols,
        };
        self.missing_cols(chunk, wanted)
    }

    /// Tiled tables: the page schemas of the active scans (empty otherwise).
    pub fn page_schemas(&self) -> &PageSchemas {
        &self.page_schemas
    }

    /// Columns of `chunk` the scans that still need it read (0: nobody needs it).
    pub fn needed_cols(&self, chunk: ChunkId) -> u64 {
        self.classes
            .class(self.chunks[chunk.0 as usize].class)
            .columns()
    }

    /// Chunks with resident columns no scan that needs the chunk reads.
    pub fn chunks_with_spare_columns(&self) -> &BTreeSet<ChunkId> {
        &self.spare
    }

    /// Can a scan reading `cols` process `chunk` now?
    pub fn available_for(&self, chunk: ChunkId, cols: u64) -> bool {
        cols & !self.resident_cols(chunk) == 0
    }

    /// Scans that still need `chunk`.
    pub fn interest(&self, chunk: ChunkId) -> ScanSet {
        self.chunks[chunk.0 as usize].mask
    }

    pub fn residency(&self, chunk: ChunkId) -> Residency {
        match self.chunks[chunk.0 as usize].place {
            Place::Absent => Residency::Absent,
            Place::Loading => Residency::Loading,
            Place::Resident => Residency::Resident,
        }
    }

    pub fn is_resident(&self, chunk: ChunkId) -> bool {
        self.residency(chunk) == Residency::Resident
    }

    pub fn is_absent(&self, chunk: ChunkId) -> bool {
        self.residency(chunk) == Residency::Absent
    }

    /// Pinned = some scan processes it right now (paper: currentlyUsed).
    pub fn is_pinned(&self, chunk: ChunkId) -> bool {
        bits(self.resident_cols(chunk)).any(|c| self.pool.is_pinned(self.piece_of(chunk, c)))
    }

    /// Chunks some scan processes right now.
    pub fn pinned_chunks(&self) -> usize {
        (0..self.chunk_count())
            .filter(|&k| self.is_pinned(ChunkId(k)))
            .count()
    }

    pub fn scan(&self, slot: ScanSlot) -> Option<&ScanState> {
        self.scans.get(slot.index()).and_then(Option::as_ref)
    }

    /// The state of an admitted scan; panics on an empty slot (a policy bug).
    pub fn active_scan(&self, slot: ScanSlot) -> &ScanState {
        match self.scan(slot) {
            Some(s) => s,
            None => panic!("slot {} is not active", slot.0),
        }
    }

    pub fn active_mask(&self) -> ScanSet {
        self.active
    }

    pub fn active_count(&self) -> u32 {
        self.active.len()
    }

    /// Scans waiting in `next_chunk` for a chunk.
    pub fn blocked_mask(&self) -> ScanSet {
        self.blocked
    }

    /// Paper: queryStarved. Fewer than `min(2, needed)` chunks available or arriving;
    /// for an in-order scan, counted over its next two chunks only.
    pub fn starved_mask(&self) -> ScanSet {
        self.starved
    }

    /// Starved or one eviction away from it (keepRelevance's "almost starved").
    pub fn almost_starved_mask(&self) -> ScanSet {
        self.almost_starved
    }

    /// Scans registered with `ScanOrder::InOrder`.
    pub fn in_order_mask(&self) -> ScanSet {
        self.in_order
    }

    /// The equivalence class `chunk` is in (see `index.rs`).
    pub fn class_of(&self, chunk: ChunkId) -> &ChunkClass {
        self.classes.class(self.chunks[chunk.0 as usize].class)
    }

    /// Live equivalence classes (see `index.rs`).
    pub fn classes(&self) -> impl Iterator<Item = &ChunkClass> + '_ {
        self.classes.live()
    }

    pub fn class_count(&self) -> usize {
        self.classes.live_count()
    }

    /// Class of chunks nobody needs any more, if such chunks exist.
    pub fn unneeded_class(&self) -> Option<&ChunkClass> {
        self.classes.class_of_mask(ScanSet::EMPTY)
    }

    /// Loads in flight.
    pub fn inflight(&self) -> u32 {
        self.loads.len() as u32
    }

    /// The chunk most recently chosen for loading: the disk head, for locality.
    pub fn last_loaded(&self) -> Option<ChunkId> {
        self.last_loaded
    }

    pub fn pending_count(&self) -> usize {
        self.pending.len()
    }

    /// Workers of the admitted and queued scans: a catalog's fair shares weigh tables
    /// by them (each worker holds a chunk).
    pub fn workers(&self) -> u64 {
        let active = self.active_slots().map(|s| self.active_scan(s).workers);
        let queued = self.pending.iter().map(|p| p.workers);
        active.chain(queued).map(u64::from).sum()
    }

    pub fn stats(&self) -> &AbmStats {
        &self.stats
    }

    /// Active slots, ascending.
    pub fn active_slots(&self) -> impl Iterator<Item = ScanSlot> + '_ {
        self.active.iter()
    }

    pub(crate) fn slot_of(&self, id: ScanId) -> Option<ScanSlot> {
        self.active_slots().find(|s| self.active_scan(*s).id == id)
    }
}

/// The set bits of `mask`, ascending, as bit numbers.
pub(crate) fn bits(mut mask: u64) -> impl Iterator<Item = u32> {
    std::iter::from_fn(move || {
        if mask == 0 {
            return None;
        }
        let bit = mask.trailing_zeros();
        mask &= mask - 1;
        Some(bit)
    })
}
