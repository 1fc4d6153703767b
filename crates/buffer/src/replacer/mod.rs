//! Replacers: the pool's eviction choice, and nothing else.
//!
//! A replacer answers one question — "which resident, unpinned piece should go so that
//! this load fits?" — one piece at a time. It never loads, never pins and never mutates
//! anything: [`plan_eviction`] asks it repeatedly until the freed bytes cover the load
//! (pieces differ in size, so one victim may not be enough: the 2007 paper's iterative
//! "finding space"), and the ABM applies the plan.
//!
//! A replacer sees two things: the [`Pool`] (residency, pins, bytes, recency and load
//! order, spare marks) and a *ranking* its policy computes from the scheduler's state
//! for this decision — what the pool cannot know: who needs a piece, how soon, what must
//! stay. It never sees the scheduler's state itself, as foyer's eviction trait sees its
//! entries and their hints but never the cache that owns them. Each replacer names the
//! ranking it reads (the trait's type parameter); a ranking is lazy where ranking every
//! piece up front would cost more than the walk the replacer makes.
//!
//! | replacer         | victim                                              | ranking (supplied by)       | used by        |
//! |------------------|-----------------------------------------------------|-----------------------------|----------------|
//! | [`LruReplacer`]  | least recently used                                 | any (ignored; `()`)         | normal, attach |
//! | [`FifoReplacer`] | oldest load, or none while that one is busy (a sliding window) | [`Arrivals`]: chunks still arriving (elevator) | elevator |
//! | [`KeepRelevanceReplacer`] | lowest keepRelevance, never a piece of a held chunk, nor by rank one a protected scan can use now | [`KeepRanking`]: groups of chunks, their keep scores, what is held or guarded (relevance) | relevance |
//! | [`plan_knapsack`] | the *set* losing the least keepRelevance-weighted value (a knapsack, not one at a time) | [`KeepRanking`] (relevance) | relevance with `EvictionStrategy::Knapsack` |
//! | [`OrderReplacer`] | the first evictable piece of an order the policy ranks | [`EvictionOrder`]: predicted next use (mixed), PBM's bucket timeline (pbm, pbm-lru, via `policy/pbm.rs`'s `Furthest`) | mixed, pbm family |
//!
//! Contract. The caller guarantees: `pool` and `ranking` describe the same moment (the
//! policy built the ranking from the state that owns `pool`, and nothing changed since);
//! `chosen` holds the victims already picked for this load. The replacer MUST return a
//! piece that is resident, unpinned and not in `chosen`, nor of `request.chunk`, or
//! `None` when nothing may be evicted now (the load then waits for the next event).

mod fifo;
mod keep_knapsack;
mod keep_relevance;
pub mod knapsack;
mod lru;
mod order;
pub mod timeline;

#[cfg(test)]
mod tests;

pub use fifo::{Arrivals, FifoReplacer};
pub use keep_knapsack::plan_knapsack;
pub use keep_relevance::{KeepRanking, KeepRelevanceReplacer};
pub use lru::LruReplacer;
pub use order::{EvictionOrder, OrderReplacer};

use crate::{PieceId, Pool, ScanSlot};

/// What a load needs room for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EvictionRequest {
    /// Bytes the load reserves.
    pub bytes: u64,
    /// The chunk being loaded (its own resident pieces are never victims of its load);
    /// `None` when the room is for another table's load (a shared budget, `catalog.rs`).
    pub chunk: Option<crate::ChunkId>,
    /// The scan the load is for, if any (relevance's ranking protects what it needs).
    pub for_scan: Option<ScanSlot>,
}

impl EvictionRequest {
    /// Whether `piece` may still be chosen for this load: not a piece of the chunk
    /// being loaded, not chosen already. (Pins are the pool's to check.)
    pub fn may_choose(&self, piece: &PieceId, chosen: &[PieceId]) -> bool {
        Some(piece.chunk) != self.chunk && !chosen.contains(piece)
    }
}

/// A replacer reading rankings of type `R` (see the module docs).
pub trait Replacer<R: ?Sized = ()> {
    /// One more victim for `request`, or `None`; see the module contract.
    fn victim(
        &mut self,
        pool: &Pool,
        ranking: &R,
        request: &EvictionRequest,
        chosen: &[PieceId],
    ) -> Option<PieceId>;
}

/// The victims that make `request` fit (empty when it fits already), or `None` when the
/// replacer cannot free enough now.
pub fn plan_eviction<R: ?Sized, P: Replacer<R> + ?Sized>(
    replacer: &mut P,
    pool: &Pool,
    ranking: &R,
    request: &EvictionRequest,
) -> Option<Vec<PieceId>> {
    let mut free = pool.free_bytes();
    let mut chosen = Vec::new();
    while free < request.bytes {
        let victim = replacer.victim(pool, ranking, request, &chosen)?;
        debug_assert!(
            pool.is_evictable(victim) && request.may_choose(&victim, &chosen),
            "replacer broke its contract with {victim}"
        );
        free += pool.bytes(victim)?;
        chosen.push(victim);
    }
    Some(chosen)
}
