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

use super::{EvictionRequest, Replacer};
use crate::{AbmState, PieceId};

#[derive(Clone, Copy, Debug, Default)]
pub struct FifoReplacer;

impl Replacer for FifoReplacer {
    fn victim(
        &mut self,
        state: &AbmState,
        request: &EvictionRequest,
        chosen: &[PieceId],
    ) -> Option<PieceId> {
        let pool = state.pool();
        let oldest = pool.load_order().find(|p| request.may_choose(p, chosen))?;
        let arrived = state.loading_cols(oldest.chunk) == 0;
        (arrived && pool.is_evictable(oldest)).then_some(oldest)
    }
}
