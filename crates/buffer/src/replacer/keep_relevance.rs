//! keepRelevance (2007 paper, Figure 3's findFreeSlot; its column form §6.2, Figure 11),
//! one form for every layout: evict the lowest keepRelevance piece that is not in use,
//! not of a chunk the scan the load is for or a starved scan can use now. Two steps:
//! first pieces of columns no scan needs for their chunk (for NSM/PAX, whose one piece
//! holds every column: chunks nobody needs), then pieces of the chunks ranked lowest by
//! `E / Pe` (almost-starved interested scans per cached byte of their columns), then
//! fewest interested scans; in both, ties go to the least recently used piece. With
//! one piece per chunk of equal size this is Figure 3's `starved × Qmax + interested`.
//!
//! keepRelevance depends on a chunk only through its interest set and its cached
//! bytes, so the walk is over the live equivalence classes, not the chunks.
//!
//! "Useful for a starved scan" means available or arriving for it: a chunk holding only
//! some of a starved scan's columns is not protected. An in-order scan can only use its
//! next chunks, so for it "useful" means its window (the chunks its starvation counts),
//! not every chunk it still needs: protecting all of those would let chunks it reaches
//! much later fill the buffer while the one it needs now cannot be loaded (found by the
//! randomized ABM test: a deadlock with an in-order scan over chunks of unequal size).
//!
//! The pool keeps the spare pieces (columns no scan needs for their chunk) in LRU order
//! of their own (`Pool::spare_lru`, marked by the state), so the first step is a walk
//! from that order's old end. Least recently used among another set of pieces
//! ([`Context::least_recent`], shared with the knapsack's candidates): by walking the
//! set when it spans at most [`WALK_CHUNKS_UP_TO`] chunks, else by walking the pool from
//! its least recently used end until a piece of the set comes up (the same pieces
//! either way). Walking the pool for the spare pieces instead cost up to 1.3 ms a
//! decision (100k chunks × 16 columns, 256 scans): they are mostly recently used.

use super::{EvictionRequest, Replacer};
use crate::state::bits;
use crate::{AbmState, ChunkClass, ChunkId, PieceId, ScanSet};
use std::cmp::Ordering;

/// Up to this many chunks in a set of candidates, its least recently used pieces are
/// found by walking it; above it, by walking the pool from its least recently used end
/// (both find the same pieces; each is the cheaper one on its side, decisions.rs bench).
pub(super) const WALK_CHUNKS_UP_TO: usize = 256;

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
        ctx.unneeded_piece().or_else(|| ctx.ranked_victim())
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

    /// The evictable pieces of a set, least recently used first: at most `take`, and
    /// with `per_chunk` one per chunk (its least recently used). `walk` lists the set's
    /// pieces (they may include ones not evictable now), `size` bounds the chunks it
    /// spans, `lru` is a superset of its unpinned pieces in LRU order (the pool's, or
    /// its spare pieces'), and `in_set` tells a piece of the set from any other: up to
    /// [`WALK_CHUNKS_UP_TO`] chunks `walk` is walked, above it `lru` (the same pieces
    /// either way: recency stamps are unique).
    pub(super) fn least_recent(
        &self,
        size: usize,
        walk: impl Iterator<Item = PieceId>,
        lru: impl Iterator<Item = PieceId>,
        in_set: impl Fn(PieceId) -> bool,
        take: usize,
        per_chunk: bool,
    ) -> Vec<PieceId> {
        let pool = self.state.pool();
        if size <= WALK_CHUNKS_UP_TO {
            let found = walk
                .filter(|p| self.evictable(*p))
                .filter_map(|p| Some((pool.last_use(p)?, p)));
            if take == 1 {
                return found.min().map(|(_, p)| p).into_iter().collect();
            }
            let mut found: Vec<(u64, PieceId)> = found.collect();
            if per_chunk {
                found.sort_unstable_by_key(|(used, p)| (p.chunk, *used));
                found.dedup_by_key(|(_, p)| p.chunk);
            }
            found.sort_unstable();
            found.truncate(take);
            return found.into_iter().map(|(_, p)| p).collect();
        }
        let mut out: Vec<PieceId> = Vec::with_capacity(take);
        for p in lru.filter(|p| in_set(*p) && self.evictable(*p)) {
            if per_chunk && out.iter().any(|q| q.chunk == p.chunk) {
                continue;
            }
            out.push(p);
            if out.len() == take {
                break;
            }
        }
        out
    }

    /// The least recently used piece whose column no scan needs for its chunk (the pool
    /// keeps those pieces in LRU order). (The first version took the lowest chunk's:
    /// the chunks nobody needs any more, all spare, then left lowest first, not least
    /// recently used first, `tests/keep_relevance_ties.rs`.)
    pub(super) fn unneeded_piece(&self) -> Option<PieceId> {
        self.state.pool().spare_lru().find(|p| self.evictable(*p))
    }

    /// Lowest `E / Pe`, then fewest interested scans, then least recently used. A class
    /// is ranked by its first unguarded chunk with an evictable piece (its `E / Pe`
    /// depends on the chunk's cached bytes); among the classes ranked lowest, the
    /// victim is the least recently used evictable piece of their unguarded chunks with
    /// that same `E / Pe`. (The first version took the ranking chunk's lowest column, so
    /// ties within a class went to the lowest chunk id.)
    fn ranked_victim(&self) -> Option<PieceId> {
        let state = self.state;
        let mut lowest: Option<(f64, u32)> = None;
        let mut tied: Vec<&ChunkClass> = Vec::new();
        for c in state.classes() {
            let Some(chunk) = self.candidate(c) else {
                continue;
            };
            let key = (self.keep_score(c.mask(), chunk), c.mask().len());
            let order = lowest.map(|(s, n)| key.0.total_cmp(&s).then(key.1.cmp(&n)));
            match order {
                None | Some(Ordering::Less) => {
                    lowest = Some(key);
                    tied.clear();
                    tied.push(c);
                }
                Some(Ordering::Equal) => tied.push(c),
                Some(Ordering::Greater) => {}
            }
        }
        let (score, _) = lowest?;
        let ties = |mask: ScanSet, ch: ChunkId| {
            self.keep_score(mask, ch).total_cmp(&score) == Ordering::Equal
        };
        let size = tied
            .iter()
            .map(|c| c.resident().len() + c.partial_len())
            .sum();
        let mut masks: Vec<ScanSet> = tied.iter().map(|c| c.mask()).collect();
        masks.sort_unstable();
        let walk = tied.iter().flat_map(|c| {
            self.unguarded(c)
                .filter(move |ch| ties(c.mask(), *ch))
                .flat_map(|ch| {
                    bits(state.resident_cols(ch)).map(move |col| state.piece_of(ch, col))
                })
        });
        let in_set = |p: PieceId| {
            let mask = state.interest(p.chunk);
            masks.binary_search(&mask).is_ok()
                && !self.guarded(mask, p.chunk)
                && ties(mask, p.chunk)
        };
        self.least_recent(size, walk, state.pool().lru(), in_set, 1, false)
            .first()
            .copied()
    }

    /// The first chunk of the class no protected scan can use now with an evictable
    /// piece.
    fn candidate(&self, class: &ChunkClass) -> Option<ChunkId> {
        let state = self.state;
        self.unguarded(class).find(|ch| {
            bits(state.resident_cols(*ch))
                .map(|col| state.piece_of(*ch, col))
                .any(|p| self.evictable(p))
        })
    }

    /// Can a protected scan of `mask` (a chunk's interest set) use `chunk` now?
    pub(super) fn guarded(&self, mask: ScanSet, chunk: ChunkId) -> bool {
        let state = self.state;
        (mask & self.protected).iter().any(|s| {
            let cols = state.active_scan(s).cols;
            state.missing_cols(chunk, cols) == 0
        })
    }

    /// The resident and partial chunks of `class` no protected scan can use now.
    pub(super) fn unguarded<'c>(
        &'c self,
        class: &'c ChunkClass,
    ) -> impl Iterator<Item = ChunkId> + 'c {
        let mask = class.mask();
        class
            .resident()
            .iter()
            .copied()
            .chain(class.partial())
            .filter(move |ch| !self.guarded(mask, *ch))
    }

    /// Paper: keepRelevance(c) = E / Pe.
    fn keep_score(&self, mask: ScanSet, chunk: ChunkId) -> f64 {
        let state = self.state;
        let almost = mask & state.almost_starved_mask();
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
