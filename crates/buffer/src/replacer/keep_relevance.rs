//! keepRelevance (2007 paper, Figure 3's findFreeSlot): evict the lowest
//! keepRelevance chunk that is not in use, not wanted by the scan the load is for and not
//! useful for any starved scan; ties go to the least recently used.
//!
//! keepRelevance depends on a chunk only through its interest set, so the walk is over
//! the live equivalence classes, not the chunks; chunks nobody needs (empty set) score
//! 0 and go first.

use super::{EvictionRequest, Replacer};
use crate::policy::keep_relevance;
use crate::{AbmState, PieceId, ScanSet};

#[derive(Clone, Copy, Debug, Default)]
pub struct KeepRelevanceReplacer;

impl Replacer for KeepRelevanceReplacer {
    fn victim(
        &mut self,
        state: &AbmState,
        request: &EvictionRequest,
        chosen: &[PieceId],
    ) -> Option<PieceId> {
        let mut protected = state.starved_mask();
        if let Some(q) = request.for_scan {
            protected = protected | ScanSet::single(q);
        }
        let almost = state.almost_starved_mask();
        let pool = state.pool();
        state
            .classes()
            .filter(|c| !c.mask().intersects(&protected))
            .filter_map(|c| {
                // Pinned chunks are at most one per scan, so this skips few.
                let piece = c
                    .resident()
                    .iter()
                    .map(|ch| state.piece(*ch))
                    .find(|p| pool.is_evictable(*p) && !chosen.contains(p))?;
                Some((
                    keep_relevance(c.mask(), almost),
                    pool.last_use(piece)?,
                    piece,
                ))
            })
            .min()
            .map(|(_, _, piece)| piece)
    }
}
