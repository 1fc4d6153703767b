//! Replacers: the pool's eviction choice, and nothing else.
//!
//! A replacer answers one question — "which resident, unpinned piece should go so that
//! this load fits?" — one piece at a time. It never loads, never pins and never mutates
//! the state: [`plan_eviction`] asks it repeatedly until the freed bytes cover the load
//! (pieces differ in size, so one victim may not be enough: the 2007 paper's iterative
//! "finding space"), and the ABM applies the plan.
//!
//! | replacer         | victim                                                       | used by        |
//! |------------------|--------------------------------------------------------------|----------------|
//! | [`LruReplacer`]  | least recently used                                          | normal, attach |
//! | [`FifoReplacer`] | oldest load, or none while that one is busy (a sliding window)| elevator       |
//! | [`KeepRelevanceReplacer`] | lowest keepRelevance, never a piece the loading scan or a starved scan needs | relevance |
//! | [`plan_knapsack`] | the *set* losing the least keepRelevance-weighted value (a knapsack, not one at a time) | relevance with `EvictionStrategy::Knapsack` |
//! | [`next_use::NextUseReplacer`] | furthest predicted next consumption by any Scan or CScan | mixed |
//!
//! Contract. The caller guarantees: `state` is consistent; `chosen` holds the victims
//! already picked for this load. The replacer MUST return a piece that is resident,
//! unpinned and not in `chosen`, or `None` when nothing may be evicted now (the load
//! then waits for the next event).

mod fifo;
mod keep_knapsack;
mod keep_relevance;
pub mod knapsack;
mod lru;
pub mod next_use;
pub mod timeline;

pub use fifo::FifoReplacer;
pub use keep_knapsack::plan_knapsack;
pub use keep_relevance::KeepRelevanceReplacer;
pub use lru::LruReplacer;

use crate::{AbmState, PieceId, ScanSlot};

/// What a load needs room for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EvictionRequest {
    /// Bytes the load reserves.
    pub bytes: u64,
    /// The chunk being loaded (its own resident pieces are never victims of its load);
    /// `None` when the room is for another table's load (a shared budget, `catalog.rs`).
    pub chunk: Option<crate::ChunkId>,
    /// The scan the load is for, if any (relevance protects what it needs).
    pub for_scan: Option<ScanSlot>,
}

impl EvictionRequest {
    /// Whether `piece` may still be chosen for this load: not a piece of the chunk
    /// being loaded, not chosen already. (Pins are the pool's to check.)
    pub fn may_choose(&self, piece: &PieceId, chosen: &[PieceId]) -> bool {
        Some(piece.chunk) != self.chunk && !chosen.contains(piece)
    }
}

pub trait Replacer {
    /// One more victim for `request`, or `None`; see the module contract.
    fn victim(
        &mut self,
        state: &AbmState,
        request: &EvictionRequest,
        chosen: &[PieceId],
    ) -> Option<PieceId>;
}

/// The victims that make `request` fit (empty when it fits already), or `None` when the
/// replacer cannot free enough now.
pub fn plan_eviction<R: Replacer + ?Sized>(
    replacer: &mut R,
    state: &AbmState,
    request: &EvictionRequest,
) -> Option<Vec<PieceId>> {
    let pool = state.pool();
    let mut free = pool.free_bytes();
    let mut chosen = Vec::new();
    while free < request.bytes {
        let victim = replacer.victim(state, request, &chosen)?;
        debug_assert!(
            pool.is_evictable(victim) && !chosen.contains(&victim),
            "replacer broke its contract with {victim}"
        );
        free += pool.bytes(victim)?;
        chosen.push(victim);
    }
    Some(chosen)
}
