//! relevance's ranking for keepRelevance eviction: what the greedy replacer and the
//! knapsack (`replacer/keep_relevance.rs`, `replacer/keep_knapsack.rs`) may not read
//! from the state themselves — the equivalence classes of chunks (`index.rs`) as the
//! groups they walk, Figure 3's and Figure 11's keepRelevance, and which chunks the
//! load must not take from a scan that needs them now.
//!
//! Protected scans: the scan the load is for and every starved scan. An in-order scan
//! can only use its next chunks, so it holds its window (the chunks its starvation
//! counts): not every chunk it still needs, or chunks it reaches much later would fill
//! the buffer while the one it needs now could not be loaded (found by the randomized
//! ABM test: a deadlock with an in-order scan over chunks of unequal size). An
//! any-order scan guards the chunks it can use now: available or arriving for it, all
//! of its columns resident or loading.
//!
//! Lazy: built per load in O(protected in-order scans' windows); every answer is a
//! lookup or a walk over one class, asked only for what the replacer visits.

use super::keep_relevance;
use crate::config::MAX_SCANS;
use crate::replacer::{EvictionRequest, KeepRanking};
use crate::state::bits;
use crate::{AbmState, ChunkClass, ChunkId, PieceId, ScanSet};
use std::cmp::Ordering;

/// Weight of an almost-starved scan in the knapsack (Figure 3's Qmax); other
/// interested scans weigh 1.
const ALMOST_STARVED_WEIGHT: u64 = MAX_SCANS as u64;

/// keepRelevance over an [`AbmState`] for one [`EvictionRequest`] (see the module docs).
#[derive(Debug)]
pub struct RelevanceRanking<'a> {
    state: &'a AbmState,
    /// Next chunks of protected in-order scans: held.
    window: Vec<ChunkId>,
    /// Protected any-order scans.
    protected: ScanSet,
}

/// A group: an equivalence class, compared by its scan set (one class per set).
#[derive(Clone, Copy, Debug)]
pub struct ClassGroup<'a>(&'a ChunkClass);

impl PartialEq for ClassGroup<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.0.mask() == other.0.mask()
    }
}

impl Eq for ClassGroup<'_> {}

impl PartialOrd for ClassGroup<'_> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for ClassGroup<'_> {
    fn cmp(&self, other: &Self) -> Ordering {
        self.0.mask().cmp(&other.0.mask())
    }
}

impl<'a> RelevanceRanking<'a> {
    pub fn new(state: &'a AbmState, request: &EvictionRequest) -> Self {
        let mut protected = state.starved_mask();
        if let Some(q) = request.for_scan {
            protected = protected | ScanSet::single(q);
        }
        let in_order = protected & state.in_order_mask();
        let window: Vec<ChunkId> = in_order
            .iter()
            .flat_map(|s| state.active_scan(s).in_order_window())
            .collect();
        RelevanceRanking {
            state,
            window,
            protected: protected - in_order,
        }
    }

    /// Can a protected scan of `mask` (a chunk's interest set) use `chunk` now?
    fn guarded(&self, mask: ScanSet, chunk: ChunkId) -> bool {
        let state = self.state;
        (mask & self.protected).iter().any(|s| {
            let cols = state.active_scan(s).cols;
            state.missing_cols(chunk, cols) == 0
        })
    }
}

impl<'a> KeepRanking for RelevanceRanking<'a> {
    type Group = ClassGroup<'a>;

    fn held(&self, chunk: ChunkId) -> bool {
        self.window.contains(&chunk)
    }

    fn pieces(&self, chunk: ChunkId) -> impl Iterator<Item = PieceId> + '_ {
        let state = self.state;
        bits(state.resident_cols(chunk)).map(move |col| state.piece_of(chunk, col))
    }

    fn groups(&self) -> impl Iterator<Item = ClassGroup<'a>> + '_ {
        self.state.classes().map(ClassGroup)
    }

    fn chunks(&self, group: ClassGroup<'a>) -> impl Iterator<Item = ChunkId> + '_ {
        let class = group.0;
        let mask = class.mask();
        class
            .resident()
            .iter()
            .copied()
            .chain(class.partial())
            .filter(move |ch| !self.guarded(mask, *ch))
    }

    fn span(&self, group: ClassGroup<'a>) -> usize {
        group.0.resident().len() + group.0.partial_len()
    }

    fn member(&self, chunk: ChunkId) -> Option<ClassGroup<'a>> {
        let class = self.state.class_of(chunk);
        (!self.guarded(class.mask(), chunk)).then_some(ClassGroup(class))
    }

    /// Paper: keepRelevance(c) = E / Pe.
    fn keep(&self, group: ClassGroup<'a>, chunk: ChunkId) -> f64 {
        let state = self.state;
        let almost = group.0.mask() & state.almost_starved_mask();
        let cols = almost
            .iter()
            .map(|s| state.active_scan(s).cols)
            .fold(0, |a, b| a | b);
        let cached = state.bytes_of(chunk, cols & state.resident_cols(chunk));
        if almost.is_empty() || cached == 0 {
            return 0.0;
        }
        f64::from(almost.len()) / cached as f64
    }

    fn interested(&self, group: ClassGroup<'a>) -> u32 {
        group.0.mask().len()
    }

    fn keep_whole(&self, group: ClassGroup<'a>) -> u32 {
        keep_relevance(group.0.mask(), self.state.almost_starved_mask())
    }

    fn unneeded(&self, group: ClassGroup<'a>) -> bool {
        group.0.mask().is_empty()
    }

    fn scans(&self, group: ClassGroup<'a>) -> Vec<(u64, u64)> {
        let (state, almost) = (self.state, self.state.almost_starved_mask());
        let mut sets: Vec<(u64, u64)> = Vec::new();
        for s in group.0.mask().iter() {
            let cols = state.active_scan(s).cols;
            let weight = if almost.contains(s) {
                ALMOST_STARVED_WEIGHT
            } else {
                1
            };
            match sets.iter_mut().find(|(c, _)| *c == cols) {
                Some((_, w)) => *w = w.saturating_add(weight),
                None => sets.push((cols, weight)),
            }
        }
        sets
    }

    fn column(&self, piece: PieceId) -> u32 {
        self.state.col_bit(piece).trailing_zeros()
    }

    fn favours_shared(&self) -> bool {
        self.state.sharing_differs()
    }

    fn local(&self, chunk: ChunkId) -> bool {
        self.state.is_local(chunk)
    }
}
