//! FIFO as a sliding window (elevator, 2004 report §3.1): the next chunk may be read
//! "only if the last chunk in this window does not have any queries currently
//! processing it". The oldest load goes, even if a slow scan still wants it; while it is
//! loading or in use, nothing goes and the loader waits.
//!
//! ```text
//!   load order:  [oldest] c7 c8 c9 c10 c11 [newest]
//!   next load ⇒ evict c7 if unpinned and wholly arrived, else wait
//! ```
//!
//! DSM: a load is several pieces that arrive one by one, and the window's unit is the
//! load, not the piece. A piece whose chunk still has a piece in flight is part of a
//! load that has not arrived yet, so it counts as loading: evicting it would throw away
//! a chunk no scan could take yet. With two frames and three loads in flight that
//! happened to every load (sim seed 1567): each chunk lost its first column before its
//! second arrived, and the sweep went round for ever without a delivery.
//!
//! Whether a chunk still has a piece in flight is the scheduler's knowledge (the pool
//! sees pieces, not loads), so the policy supplies it as [`Arrivals`].

use super::{EvictionRequest, Replacer};
use crate::{ChunkId, PieceId, Pool};

/// Which chunks are still arriving: some piece of theirs is loading (elevator: a chunk
/// whose load is in flight).
pub trait Arrivals {
    fn arriving(&self, chunk: ChunkId) -> bool;
}

impl<F: Fn(ChunkId) -> bool> Arrivals for F {
    fn arriving(&self, chunk: ChunkId) -> bool {
        self(chunk)
    }
}

#[derive(Clone, Copy, Debug, Default)]
pub struct FifoReplacer;

impl<A: Arrivals + ?Sized> Replacer<A> for FifoReplacer {
    fn victim(
        &mut self,
        pool: &Pool,
        arrivals: &A,
        request: &EvictionRequest,
        chosen: &[PieceId],
    ) -> Option<PieceId> {
        let oldest = pool.load_order().find(|p| request.may_choose(p, chosen))?;
        let arrived = !arrivals.arriving(oldest.chunk);
        (arrived && pool.is_evictable(oldest)).then_some(oldest)
    }
}
