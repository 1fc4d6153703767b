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
//! bytes, so the walk is over groups of chunks (the live equivalence classes), not the
//! chunks. The policy knows the interest, starvation and columns; it supplies them as a
//! [`KeepRanking`] for one decision (relevance: `policy/keep_ranking.rs`), answering
//! only what the walk asks. This file keeps what is the pool's: evictability, recency
//! and the walk.
//!
//! Which chunks a starved or loading scan protects ("useful" to it now: available or
//! arriving; for an in-order scan, its window) is the ranking's to say, and why is
//! explained there (`policy/keep_ranking.rs`).
//!
//! The pool keeps the spare pieces (columns no scan needs for their chunk) in LRU order
//! of their own (`Pool::spare_lru`, marked by the scheduler), so the first step is a walk
//! from that order's old end. Least recently used among another set of pieces
//! ([`Context::least_recent`], shared with the knapsack's candidates): by walking the
//! set when it spans at most [`WALK_CHUNKS_UP_TO`] chunks, else by walking the pool from
//! its least recently used end until a piece of the set comes up (the same pieces
//! either way). Walking the pool for the spare pieces instead cost up to 1.3 ms a
//! decision (100k chunks × 16 columns, 256 scans): they are mostly recently used.

use super::{EvictionRequest, Replacer};
use crate::{ChunkId, PieceId, Pool};
use std::cmp::Ordering;

/// Up to this many chunks in a set of candidates, its least recently used pieces are
/// found by walking it; above it, by walking the pool from its least recently used end
/// (both find the same pieces; each is the cheaper one on its side, decisions.rs bench).
pub(super) const WALK_CHUNKS_UP_TO: usize = 256;

/// keepRelevance's view of the pool's chunks for one load, from the policy's state.
/// Lazy: the replacer asks about the groups and chunks it walks, and nothing else.
///
/// A *group* is a set of chunks ranked alike but for their cached bytes (relevance:
/// the chunks the same scans still need). A chunk is *held* when no piece of it may go
/// for this load (relevance: the window of an in-order scan the load is for or that is
/// starved), and *guarded* when its spare pieces may go but by rank none of its pieces
/// (relevance: such an any-order scan can use it now).
pub trait KeepRanking {
    /// Ordered so that a set of groups can be searched (relevance: by scan set).
    type Group: Copy + Ord;

    /// Whether `chunk` is held (see the trait docs).
    fn held(&self, chunk: ChunkId) -> bool;

    /// The resident pieces of `chunk`, column by column.
    fn pieces(&self, chunk: ChunkId) -> impl Iterator<Item = PieceId> + '_;

    /// Every group (that has chunks), in a fixed order.
    fn groups(&self) -> impl Iterator<Item = Self::Group> + '_;

    /// The resident and partially resident chunks of `group` that are not guarded.
    fn chunks(&self, group: Self::Group) -> impl Iterator<Item = ChunkId> + '_;

    /// How many resident and partially resident chunks `group` has (at least the
    /// length of [`Self::chunks`]).
    fn span(&self, group: Self::Group) -> usize;

    /// The group whose [`Self::chunks`] include `chunk`, given it has a resident piece:
    /// `None` when `chunk` is guarded.
    fn member(&self, chunk: ChunkId) -> Option<Self::Group>;

    /// keepRelevance of `chunk` in `group` (paper: `E / Pe`); lowest goes first.
    fn keep(&self, group: Self::Group, chunk: ChunkId) -> f64;

    /// The scans that still need `group`'s chunks; fewest goes first among equal
    /// [`Self::keep`].
    fn interested(&self, group: Self::Group) -> u32;

    /// The knapsack's visiting order (`keep_knapsack.rs`): Figure 3's integer
    /// keepRelevance of a whole chunk of `group`, lowest first.
    fn keep_whole(&self, group: Self::Group) -> u32;

    /// Whether no scan needs `group`'s chunks (all their pieces are spare).
    fn unneeded(&self, group: Self::Group) -> bool;

    /// The scans that need `group`'s chunks, as (column bits read, weight), one entry
    /// per distinct column set (the knapsack's `Candidate::scans`).
    fn scans(&self, group: Self::Group) -> Vec<(u64, u64)>;

    /// The column bit number of `piece`, counted as [`Self::scans`] counts them.
    fn column(&self, piece: PieceId) -> u32;

    /// Whether pieces no scan needs go local chunks' first (relevance: while the
    /// active scans read different snapshots, `sharing.rs`).
    fn favours_shared(&self) -> bool {
        false
    }

    /// Whether `chunk` is local: in only one active scan's snapshot.
    fn local(&self, _chunk: ChunkId) -> bool {
        false
    }
}

#[derive(Clone, Copy, Debug, Default)]
pub struct KeepRelevanceReplacer;

impl<K: KeepRanking> Replacer<K> for KeepRelevanceReplacer {
    fn victim(
        &mut self,
        pool: &Pool,
        ranking: &K,
        request: &EvictionRequest,
        chosen: &[PieceId],
    ) -> Option<PieceId> {
        let ctx = Context {
            pool,
            ranking,
            request,
            chosen,
        };
        ctx.unneeded_piece().or_else(|| ctx.ranked_victim())
    }
}

/// One eviction decision (shared with the knapsack, `keep_knapsack.rs`).
pub(super) struct Context<'a, K> {
    pub(super) pool: &'a Pool,
    pub(super) ranking: &'a K,
    pub(super) request: &'a EvictionRequest,
    pub(super) chosen: &'a [PieceId],
}

impl<K: KeepRanking> Context<'_, K> {
    pub(super) fn evictable(&self, piece: PieceId) -> bool {
        self.pool.is_evictable(piece)
            && self.request.may_choose(&piece, self.chosen)
            && !self.ranking.held(piece.chunk)
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
        let pool = self.pool;
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
    ///
    /// When the ranking favours shared chunks, a local chunk's piece goes first: no
    /// scan of another snapshot can want it again. That walks every spare piece when
    /// none is local's, so only while snapshots differ.
    pub(super) fn unneeded_piece(&self) -> Option<PieceId> {
        let mut spare = self.pool.spare_lru().filter(|p| self.evictable(*p));
        if !self.ranking.favours_shared() {
            return spare.next();
        }
        let first = spare.next()?;
        if self.ranking.local(first.chunk) {
            return Some(first);
        }
        Some(spare.find(|p| self.ranking.local(p.chunk)).unwrap_or(first))
    }

    /// Lowest `E / Pe`, then fewest interested scans, then least recently used. A group
    /// is ranked by its first unguarded chunk with an evictable piece (its `E / Pe`
    /// depends on the chunk's cached bytes); among the groups ranked lowest, the
    /// victim is the least recently used evictable piece of their unguarded chunks with
    /// that same `E / Pe`. (The first version took the ranking chunk's lowest column, so
    /// ties within a group went to the lowest chunk id.)
    fn ranked_victim(&self) -> Option<PieceId> {
        let ranking = self.ranking;
        let mut lowest: Option<(f64, u32)> = None;
        let mut tied: Vec<K::Group> = Vec::new();
        for g in ranking.groups() {
            let Some(chunk) = self.candidate(g) else {
                continue;
            };
            let key = (ranking.keep(g, chunk), ranking.interested(g));
            let order = lowest.map(|(s, n)| key.0.total_cmp(&s).then(key.1.cmp(&n)));
            match order {
                None | Some(Ordering::Less) => {
                    lowest = Some(key);
                    tied.clear();
                    tied.push(g);
                }
                Some(Ordering::Equal) => tied.push(g),
                Some(Ordering::Greater) => {}
            }
        }
        let (score, _) = lowest?;
        let ties =
            |g: K::Group, ch: ChunkId| ranking.keep(g, ch).total_cmp(&score) == Ordering::Equal;
        let size = tied.iter().map(|g| ranking.span(*g)).sum();
        let mut sorted = tied.clone();
        sorted.sort_unstable();
        let walk = tied.iter().flat_map(|&g| {
            ranking
                .chunks(g)
                .filter(move |ch| ties(g, *ch))
                .flat_map(|ch| ranking.pieces(ch))
        });
        let in_set = |p: PieceId| {
            ranking
                .member(p.chunk)
                .is_some_and(|g| sorted.binary_search(&g).is_ok() && ties(g, p.chunk))
        };
        self.least_recent(size, walk, self.pool.lru(), in_set, 1, false)
            .first()
            .copied()
    }

    /// The first unguarded chunk of the group with an evictable piece.
    fn candidate(&self, group: K::Group) -> Option<ChunkId> {
        let ranking = self.ranking;
        ranking
            .chunks(group)
            .find(|ch| ranking.pieces(*ch).any(|p| self.evictable(p)))
    }
}
