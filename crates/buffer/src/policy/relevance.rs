//! relevance (2007 paper §4, Figure 3; its column form §6.2, Figure 11), in one form for
//! every layout: a chunk's pieces are sets of columns of different sizes, and scans read
//! different column subsets. NSM/PAX is the case of one piece per chunk holding every
//! column, where the functions below reduce to Figure 3's.
//!
//! ```text
//! queryRelevance(q)   = -inf if q is not starved, else -chunksNeeded(q) + waitingTime(q)/runningQueries()
//! useRelevance(c, q)  = Pu / U   U  = interested scans sharing a column with q
//!                                Pu = cached bytes of c in q's columns
//! loadRelevance(c, q) = L / Pl   L  = starved scans interested in c sharing a column with q
//!                                Pl = bytes to load of c for the columns of those scans
//! keepRelevance(c)    = E / Pe   E  = almost-starved scans interested in c
//!                                Pe = cached bytes of c in their columns   (keep_ranking.rs)
//! queryStarved(q)     = numberOfAvailableChunks(q) < 2 (+1 per further worker of q)
//! ```
//!
//! Use promotes big chunks few others want (they free the most room soonest); load
//! promotes chunks that serve many starved scans for little I/O, then (Figure 3's second
//! term) chunks many scans want; keep protects small chunks many are about to need. With
//! one piece per chunk of equal size these order chunks exactly as Figure 3's integer
//! scores (`Qmax - interested`, `starved × Qmax + interested`); with chunks of unequal
//! size (real NSM/PAX files) bytes weigh in, as they always did for DSM.
//!
//! All depend on a chunk only through its interest mask and its bytes, so each decision
//! walks the live equivalence classes (`index.rs`), never the chunks, plus a walk over
//! each class's scans for the column overlap. Ties go to the chunk the disk head reaches
//! first moving forward, which keeps loads sequential when nothing else matters.

use super::keep_ranking::RelevanceRanking;
use super::{
    available_in, choice_planned, cyclic_distance, next_cyclic_where, LoadChoice, Policy,
    PolicyKind, Widen,
};
use crate::config::MAX_SCANS;
use crate::{
    plan_eviction, plan_knapsack, AbmConfig, AbmState, ChunkId, EvictionStrategy,
    KeepRelevanceReplacer, Nanos, ScanSet, ScanSlot, TableGeometry,
};

/// Paper: Qmax, the weight that makes starved scans dominate plain interest counts.
const QMAX: u32 = MAX_SCANS as u32;

#[derive(Clone, Debug, Default)]
pub struct RelevancePolicy {
    /// Scratch list of starved scans by priority, reused to avoid allocating per decision.
    queue: Vec<(f64, ScanSlot)>,
    replacer: KeepRelevanceReplacer,
    /// Greedy (the paper) or knapsack (its footnote), from `AbmConfig::eviction`.
    eviction: EvictionStrategy,
}

/// Paper: queryRelevance, for a starved scan. Shorter scans first, aged by waiting time
/// (`ScanState::waiting_since`: a parallel scan's since its last delivery).
pub fn query_relevance(state: &AbmState, slot: ScanSlot, now: Nanos) -> f64 {
    let scan = state.active_scan(slot);
    let waiting = scan
        .waiting_since()
        .map_or(Nanos::ZERO, |t| now.saturating_sub(t));
    let waiting_units = waiting.0 as f64 / state.config().aging_unit.0 as f64;
    let running = f64::from(state.active_count().max(1));
    -f64::from(scan.needed) + waiting_units / running
}

/// Paper: useRelevance of a whole chunk of equal-sized chunks (Figure 3's integer
/// form): prefer chunks few other scans want, they can be evicted soonest. The mixed
/// pool ranks classes by it.
pub fn use_relevance(mask: ScanSet) -> u32 {
    QMAX - mask.len()
}

/// Paper: keepRelevance of a whole chunk of equal-sized chunks (Figure 3's integer
/// form; almost-starved scans count as starved): the order the knapsack visits
/// classes in.
pub fn keep_relevance(mask: ScanSet, almost_starved: ScanSet) -> u32 {
    mask.intersection_len(&almost_starved) * QMAX + mask.len()
}

impl RelevancePolicy {
    pub fn new(_geometry: &TableGeometry, config: &AbmConfig) -> Self {
        RelevancePolicy {
            eviction: config.eviction,
            ..Self::default()
        }
    }

    pub fn eviction(&self) -> EvictionStrategy {
        self.eviction
    }

    /// Paper: chooseChunkToLoad. Highest loadRelevance among chunks `q` needs that are
    /// neither resident nor loading, shared chunks before local ones when the active
    /// scans read different snapshots (2012 §2.1, `sharing.rs`); for an in-order scan,
    /// its next absent chunk.
    /// Returns the chunk and the columns to load: those of the starved scans it serves.
    pub(crate) fn choose_chunk_to_load(state: &AbmState, q: ScanSlot) -> Option<(ChunkId, u64)> {
        let q_cols = state.active_scan(q).cols;
        if state.in_order_mask().contains(q) {
            return state
                .active_scan(q)
                .in_order_window()
                .find_map(|c| Some((c, nonzero(state.missing_cols(c, q_cols))?)));
        }
        let (head, n) = (disk_head(state), state.chunk_count());
        let starved = state.starved_mask();
        let favour_shared = state.sharing_differs();
        state
            .classes()
            .filter(|c| c.mask().contains(q))
            .filter_map(|c| {
                let needs_q = |ch: ChunkId| state.missing_cols(ch, q_cols) != 0;
                let shared_for_q = |ch: ChunkId| needs_q(ch) && state.is_shared(ch);
                let chunk = favour_shared
                    .then(|| next_cyclic_where(c.absent(), head, shared_for_q))
                    .flatten()
                    .or_else(|| next_cyclic_where(c.absent(), head, needs_q))?;
                let shared = favour_shared && state.is_shared(chunk);
                let served: Vec<ScanSlot> =
                    overlapping(state, c.mask() & starved, q_cols).collect();
                let cols = served
                    .iter()
                    .map(|s| state.active_scan(*s).cols)
                    .fold(q_cols, |a, b| a | b);
                let missing = nonzero(state.missing_cols(chunk, cols))?;
                let l = served.len().max(1) as f64;
                let pl = state.bytes_of(chunk, missing).max(1) as f64;
                Some(((shared, l / pl, c.mask().len()), chunk, missing))
            })
            .max_by(|a, b| {
                let near = |c: ChunkId| std::cmp::Reverse(cyclic_distance(head, c, n));
                let ((sa, la, ia), (sb, lb, ib)) = (a.0, b.0);
                sa.cmp(&sb)
                    .then(la.total_cmp(&lb))
                    .then(ia.cmp(&ib))
                    .then(near(a.1).cmp(&near(b.1)))
            })
            .map(|(_, chunk, cols)| (chunk, cols))
    }
}

/// The scans of `mask` reading any of `cols`.
fn overlapping(state: &AbmState, mask: ScanSet, cols: u64) -> impl Iterator<Item = ScanSlot> + '_ {
    mask.iter()
        .filter(move |s| state.active_scan(*s).cols & cols != 0)
}

/// `Some(x)` unless `x` is 0.
pub(crate) fn nonzero(x: u64) -> Option<u64> {
    (x != 0).then_some(x)
}

/// The disk head: one past the chunk loaded last (locality tie-break).
pub(crate) fn disk_head(state: &AbmState) -> ChunkId {
    state
        .last_loaded()
        .map_or(ChunkId(0), |c| ChunkId((c.0 + 1) % state.chunk_count()))
}

impl Policy for RelevancePolicy {
    /// Lowest keepRelevance first, never what a starved scan needs (greedy whatever
    /// `EvictionStrategy` says: the knapsack plans room for one of its own loads).
    fn victims(
        &mut self,
        state: &AbmState,
        request: &crate::EvictionRequest,
        _now: Nanos,
    ) -> Vec<crate::PieceId> {
        let ranking = RelevanceRanking::new(state, request);
        super::free_some(&mut self.replacer, state.pool(), &ranking, request)
    }

    fn kind(&self) -> PolicyKind {
        PolicyKind::Relevance
    }

    /// Paper: chooseAvailableChunk, the highest useRelevance (ties: lowest chunk).
    fn choose_available(&mut self, state: &AbmState, slot: ScanSlot) -> Option<ChunkId> {
        let scan = state.active_scan(slot);
        let cols = scan.cols;
        state
            .classes()
            .filter(|c| c.mask().contains(slot))
            .filter_map(|c| {
                let chunk = available_in(state, c, scan)?;
                let u = overlapping(state, c.mask(), cols).count().max(1);
                let pu = state.bytes_of(chunk, cols) as f64;
                Some((pu / u as f64, chunk))
            })
            .max_by(|a, b| a.0.total_cmp(&b.0).then(b.1.cmp(&a.1)))
            .map(|(_, chunk)| chunk)
    }

    /// Paper: the ABM main loop body: chooseQueryToProcess, chooseChunkToLoad,
    /// findFreeSlot (here: keepRelevance victims until the chunk fits, or the knapsack's
    /// set). When the most
    /// relevant query has nothing loadable or no room can be freed for it, the next one
    /// is tried rather than blocking the loader.
    fn choose_load(&mut self, state: &AbmState, now: Nanos) -> Option<LoadChoice> {
        starved_by_relevance(state, now, &mut self.queue);
        for &(_, q) in &self.queue {
            let Some((chunk, cols)) = Self::choose_chunk_to_load(state, q) else {
                continue;
            };
            let (replacer, eviction) = (&mut self.replacer, self.eviction);
            // Clotho's C-pages: keepRelevance keeps what other scans of the chunk need.
            let widen = Widen::PageSchema;
            let choice = choice_planned(state, chunk, cols, Some(q), widen, |request| {
                let ranking = RelevanceRanking::new(state, request);
                match eviction {
                    EvictionStrategy::Greedy => {
                        plan_eviction(replacer, state.pool(), &ranking, request)
                    }
                    EvictionStrategy::Knapsack => plan_knapsack(state.pool(), &ranking, request),
                }
            });
            if let Some(choice) = choice {
                return Some(choice);
            }
        }
        None
    }

    /// Not in Figure 3, which loads only for starved scans: the 2004 report's fetch
    /// "when no I/O is in process" (§3.2), for parallel scans only. With the disk idle,
    /// a chunk for the most relevant scan of several workers that is short of a second
    /// window of chunks ([`wants_ahead`]), into room that evicts nothing an active scan
    /// needs ([`spare_room`]). A parallel scan's threshold (one chunk per worker plus
    /// one) keeps its workers one chunk ahead in all, not one each: without working
    /// ahead, a 2-worker scan that starts with many resident chunks leaves the disk idle
    /// until its workers have eaten them down to the threshold, and then waits for each
    /// load (the 2012 paper's example, `coopscan_sim::split_example`).
    fn choose_prefetch(&mut self, state: &AbmState, now: Nanos) -> Option<LoadChoice> {
        self.queue.clear();
        for slot in state.active_mask().iter() {
            if wants_ahead(state, slot) {
                self.queue.push((query_relevance(state, slot, now), slot));
            }
        }
        self.queue
            .sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        self.queue.iter().find_map(|&(_, q)| {
            let (chunk, cols) = Self::choose_chunk_to_load(state, q)?;
            choice_planned(state, chunk, cols, Some(q), Widen::PageSchema, |request| {
                spare_room(state, request)
            })
        })
    }
}

/// Room for a load that takes nothing any active scan still needs: the free bytes,
/// then spare pieces (no scan that needs their chunk reads their column), least
/// recently used first; `None` if they are not enough.
fn spare_room(state: &AbmState, request: &crate::EvictionRequest) -> Option<Vec<crate::PieceId>> {
    let pool = state.pool();
    let mut room = pool.free_bytes();
    let mut victims = Vec::new();
    let mut spare = pool.spare_lru().filter(|p| Some(p.chunk) != request.chunk);
    while room < request.bytes {
        let piece = spare.next()?;
        room = room.saturating_add(pool.bytes(piece)?);
        victims.push(piece);
    }
    Some(victims)
}

/// Whether working ahead may load for `slot`: a scan of several workers with fewer
/// chunks available or coming than twice its starvation threshold (one window it
/// processes, one ready behind it), so an idle disk never fills the pool for a scan
/// that is far ahead. Scans of one worker keep Figure 3's rule: on Table 2 working
/// ahead for them read 1.18 × the chunks (prefetched chunks evicted unused) for no
/// shorter streams (docs/performance.md, "The split again").
fn wants_ahead(state: &AbmState, slot: ScanSlot) -> bool {
    let scan = state.active_scan(slot);
    let have = scan.available.saturating_add(scan.incoming);
    scan.workers > 1 && have < scan.needed && have < scan.starved_below().saturating_mul(2)
}

/// chooseQueryToProcess: the starved scans into `queue`, most relevant first (ties by
/// slot, so the order is deterministic). Relevance and the mixed pool both serve this.
pub(super) fn starved_by_relevance(state: &AbmState, now: Nanos, queue: &mut Vec<(f64, ScanSlot)>) {
    queue.clear();
    for slot in state.starved_mask().iter() {
        queue.push((query_relevance(state, slot, now), slot));
    }
    queue.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
}
