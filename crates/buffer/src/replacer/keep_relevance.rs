//! keepRelevance (2007 paper, Figure 3's findFreeSlot): evict the lowest
//! keepRelevance chunk that is not in use, not wanted by the scan the load is for and not
//! useful for any starved scan; ties, within an equivalence class too, go to the least
//! recently used.
//!
//! keepRelevance depends on a chunk only through its interest set, so the walk is over
//! the live equivalence classes, not the chunks; chunks nobody needs (empty set) score
//! 0 and go first.
//!
//! An in-order scan can only use its next chunks, so for it "useful" means its window
//! (the chunks its starvation counts), not every chunk it still needs: protecting all
//! of those would let chunks it reaches much later fill the buffer while the one it
//! needs now cannot be loaded (found by the randomized ABM test: a deadlock with an
//! in-order scan over chunks of unequal size).
//!
//! Column storage (§6.2, Figure 11) evicts in two steps: first pieces of columns no
//! scan needs for their chunk, then whole chunks by `E / Pe` (almost-starved interested
//! scans per cached byte of their columns), piece by piece. There "useful for a starved
//! scan" means available or arriving for it: a chunk holding only some of a starved
//! scan's columns is not protected, for the same reason as the in-order window.

use super::{EvictionRequest, Replacer};
use crate::policy::keep_relevance;
use crate::state::bits;
use crate::{AbmState, ChunkClass, ChunkId, PieceId, ScanSet};

/// Up to this many resident chunks in the lowest-scoring classes, the victim is found
/// by walking them; above it, by walking the pool from its least recently used end
/// (both find the same piece; each is the cheaper one on its side, decisions.rs bench).
const WALK_CLASSES_UP_TO: usize = 256;

#[derive(Clone, Copy, Debug, Default)]
pub struct KeepRelevanceReplacer;

impl Replacer for KeepRelevanceReplacer {
    fn victim(
        &mut self,
        state: &AbmState,
        request: &EvictionRequest,
        chosen: &[PieceId],
    ) -> Option<PieceId> {
        let ctx = Context::new(state, request, chosen);
        if state.columnar() {
            ctx.unneeded_piece().or_else(|| ctx.dsm_victim())
        } else {
            ctx.nsm_victim()
        }
    }
}

/// What one eviction decision protects (shared with the knapsack, `keep_knapsack.rs`).
pub(super) struct Context<'a> {
    pub(super) state: &'a AbmState,
    request: &'a EvictionRequest,
    chosen: &'a [PieceId],
    /// Next chunks of protected in-order scans.
    window: Vec<ChunkId>,
    /// Protected any-order scans.
    protected: ScanSet,
}

impl<'a> Context<'a> {
    pub(super) fn new(
        state: &'a AbmState,
        request: &'a EvictionRequest,
        chosen: &'a [PieceId],
    ) -> Self {
        let mut protected = state.starved_mask();
        if let Some(q) = request.for_scan {
            protected = protected | ScanSet::single(q);
        }
        let in_order = protected & state.in_order_mask();
        let window: Vec<ChunkId> = in_order
            .iter()
            .flat_map(|s| state.active_scan(s).in_order_window())
            .collect();
        Context {
            state,
            request,
            chosen,
            window,
            protected: protected - in_order,
        }
    }

    pub(super) fn evictable(&self, piece: PieceId) -> bool {
        self.state.pool().is_evictable(piece)
            && self.request.may_choose(&piece, self.chosen)
            && !self.window.contains(&piece.chunk)
    }

    /// Lowest keepRelevance among the unprotected classes with an evictable chunk; ties,
    /// within a class too, to the least recently used chunk. (The first version took
    /// each class's lowest evictable chunk, so ties within a class went to the lowest
    /// chunk id: the class of chunks nobody needs then kept high chunks for good and
    /// lost the ones a finished scan had just read; one stream of CScans read 1279
    /// chunks where PBM read 927, `tests/keep_relevance_ties.rs`.)
    fn nsm_victim(&self) -> Option<PieceId> {
        let (state, almost) = (self.state, self.state.almost_starved_mask());
        let pool = state.pool();
        let eligible = |mask: ScanSet| !mask.intersects(&self.protected);
        // The lowest score, and how many resident chunks its classes hold.
        let mut lowest: Option<(u32, usize)> = None;
        for c in state.classes().filter(|c| eligible(c.mask())) {
            let score = keep_relevance(c.mask(), almost);
            if lowest.is_some_and(|(l, _)| l < score) {
                continue;
            }
            // Pinned chunks are at most one per scan, so this skips few.
            if !c
                .resident()
                .iter()
                .any(|ch| self.evictable(state.piece(*ch)))
            {
                continue;
            }
            let n = c.resident().len();
            lowest = Some(match lowest {
                Some((l, m)) if l == score => (l, m + n),
                _ => (score, n),
            });
        }
        let (lowest, size) = lowest?;
        if size <= WALK_CLASSES_UP_TO {
            return state
                .classes()
                .filter(|c| eligible(c.mask()) && keep_relevance(c.mask(), almost) == lowest)
                .flat_map(|c| c.resident().iter())
                .map(|ch| state.piece(*ch))
                .filter(|p| self.evictable(*p))
                .filter_map(|p| Some((pool.last_use(p)?, p)))
                .min()
                .map(|(_, p)| p);
        }
        pool.lru().find(|p| {
            let mask = state.interest(p.chunk);
            eligible(mask) && keep_relevance(mask, almost) == lowest && self.evictable(*p)
        })
    }

    /// A piece whose column no scan needs for its chunk (lowest chunk first; the
    /// scheduler keeps these chunks in a set, so this never walks the pool).
    pub(super) fn unneeded_piece(&self) -> Option<PieceId> {
        let state = self.state;
        state.chunks_with_spare_columns().iter().find_map(|ch| {
            let spare = state.resident_cols(*ch) & !state.needed_cols(*ch);
            bits(spare)
                .map(|col| state.piece_of(*ch, col))
                .find(|p| self.evictable(*p))
        })
    }

    /// Lowest `E / Pe`, then fewest interested scans, then least recently used.
    fn dsm_victim(&self) -> Option<PieceId> {
        let state = self.state;
        let pool = state.pool();
        state
            .classes()
            .filter_map(|c| {
                let (chunk, piece) = self.candidate(c)?;
                let score = self.keep_score(c, chunk);
                Some((score, c.mask().len(), pool.last_use(piece)?, piece))
            })
            .min_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)).then(a.2.cmp(&b.2)))
            .map(|(_, _, _, piece)| piece)
    }

    /// A chunk of the class no protected scan can use now, and an evictable piece of it.
    fn candidate(&self, class: &ChunkClass) -> Option<(ChunkId, PieceId)> {
        let state = self.state;
        self.unguarded(class).find_map(|ch| {
            let piece = bits(state.resident_cols(ch))
                .map(|col| state.piece_of(ch, col))
                .find(|p| self.evictable(*p))?;
            Some((ch, piece))
        })
    }

    /// The resident and partial chunks of `class` no protected scan can use now.
    pub(super) fn unguarded<'c>(
        &'c self,
        class: &'c ChunkClass,
    ) -> impl Iterator<Item = ChunkId> + 'c {
        let state = self.state;
        let guarded = class.mask() & self.protected;
        let useful = move |ch: ChunkId| {
            guarded.iter().any(|s| {
                let cols = state.active_scan(s).cols;
                state.missing_cols(ch, cols) == 0
            })
        };
        class
            .resident()
            .iter()
            .copied()
            .chain(class.partial())
            .filter(move |ch| !useful(*ch))
    }

    /// Paper: keepRelevance(c) = E / Pe.
    fn keep_score(&self, class: &ChunkClass, chunk: ChunkId) -> f64 {
        let state = self.state;
        let almost = class.mask() & state.almost_starved_mask();
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
}
