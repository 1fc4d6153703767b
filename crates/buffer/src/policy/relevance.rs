//! relevance (2007 paper §4, Figure 3), on equivalence classes instead of chunks.
//!
//! ```text
//! queryRelevance(q) = -inf if q is not starved, else -chunksNeeded(q) + waitingTime(q)/runningQueries()
//! useRelevance(c)   = Qmax - numberInterestedQueries(c)
//! loadRelevance(c)  = numberInterestedStarvedQueries(c) * Qmax + numberInterestedQueries(c)
//! keepRelevance(c)  = numberInterestedAlmostStarvedQueries(c) * Qmax + numberInterestedQueries(c)
//! queryStarved(q)   = numberOfAvailableChunks(q) < 2
//! ```
//!
//! All four depend on a chunk only through its interest mask, so each decision walks the
//! live classes (`index.rs`), never the chunks. Ties go to the chunk the disk head
//! reaches first moving forward, which keeps loads sequential when nothing else matters.

use super::{
    choice_knapsack, choice_with, cyclic_distance, next_cyclic, LoadChoice, Policy, PolicyKind,
};
use crate::config::MAX_SCANS;
use crate::{
    AbmConfig, AbmState, ChunkId, EvictionStrategy, KeepRelevanceReplacer, Nanos, ScanSet,
    ScanSlot, TableGeometry,
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

/// Paper: queryRelevance, for a starved scan. Shorter scans first, aged by waiting time.
pub fn query_relevance(state: &AbmState, slot: ScanSlot, now: Nanos) -> f64 {
    let scan = state.active_scan(slot);
    let waiting = scan
        .blocked_since
        .map_or(Nanos::ZERO, |t| now.saturating_sub(t));
    let waiting_units = waiting.0 as f64 / state.config().aging_unit.0 as f64;
    let running = f64::from(state.active_count().max(1));
    -f64::from(scan.needed) + waiting_units / running
}

/// Paper: useRelevance. Prefer chunks few other scans want: they can be evicted soonest.
pub fn use_relevance(mask: ScanSet) -> u32 {
    QMAX - mask.len()
}

/// Paper: loadRelevance.
pub fn load_relevance(mask: ScanSet, starved: ScanSet) -> u32 {
    mask.intersection_len(&starved) * QMAX + mask.len()
}

/// Paper: keepRelevance; almost-starved scans count as starved.
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
    /// neither resident nor loading; for an in-order scan, its next absent chunk.
    /// Returns the chunk and the columns to load.
    pub(crate) fn choose_chunk_to_load(state: &AbmState, q: ScanSlot) -> Option<(ChunkId, u64)> {
        let cols = state.active_scan(q).cols;
        if state.in_order_mask().contains(q) {
            return state
                .active_scan(q)
                .in_order_window()
                .find_map(|c| Some((c, nonzero(state.missing_cols(c, cols))?)));
        }
        if state.columnar() {
            return super::relevance_dsm::choose_chunk_to_load(state, q);
        }
        let head = disk_head(state);
        let n = state.chunk_count();
        let starved = state.starved_mask();
        state
            .classes()
            .filter(|c| c.mask().contains(q))
            .filter_map(|c| {
                Some((
                    load_relevance(c.mask(), starved),
                    next_cyclic(c.absent(), head)?,
                ))
            })
            .max_by_key(|(score, chunk)| {
                (*score, std::cmp::Reverse(cyclic_distance(head, *chunk, n)))
            })
            .map(|(_, chunk)| (chunk, state.missing_cols(chunk, cols)))
    }
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
        super::free_some(&mut self.replacer, state, request)
    }

    fn kind(&self) -> PolicyKind {
        PolicyKind::Relevance
    }

    /// Paper: chooseAvailableChunk.
    fn choose_available(&mut self, state: &AbmState, slot: ScanSlot) -> Option<ChunkId> {
        if state.columnar() {
            return super::relevance_dsm::choose_available(state, slot);
        }
        let scan = state.active_scan(slot);
        let free = |c: &&ChunkId| !scan.holds(**c);
        state
            .classes()
            .filter(|c| c.mask().contains(slot))
            .filter_map(|c| Some((use_relevance(c.mask()), *c.resident().iter().find(free)?)))
            .max_by_key(|(score, chunk)| (*score, std::cmp::Reverse(*chunk)))
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
            let choice = match self.eviction {
                EvictionStrategy::Greedy => {
                    choice_with(state, &mut self.replacer, chunk, cols, Some(q))
                }
                EvictionStrategy::Knapsack => choice_knapsack(state, chunk, cols, Some(q)),
            };
            if let Some(choice) = choice {
                return Some(choice);
            }
        }
        None
    }
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
