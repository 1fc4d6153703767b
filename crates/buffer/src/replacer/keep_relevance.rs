//! keepRelevance (2007 paper, Figure 3's findFreeSlot): evict the lowest
//! keepRelevance chunk that is not in use, not wanted by the scan the load is for and not
//! useful for any starved scan; ties go to the least recently used.
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

use super::{EvictionRequest, Replacer};
use crate::policy::keep_relevance;
use crate::{AbmState, ChunkId, PieceId, ScanSet, STARVED_BELOW};

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
        let in_order = protected & state.in_order_mask();
        let window: Vec<ChunkId> = in_order
            .iter()
            .flat_map(|s| {
                let scan = state.active_scan(s);
                (0..STARVED_BELOW).filter_map(|k| scan.in_order_ahead(k))
            })
            .collect();
        let protected = protected - in_order;
        let almost = state.almost_starved_mask();
        let pool = state.pool();
        state
            .classes()
            .filter(|c| !c.mask().intersects(&protected))
            .filter_map(|c| {
                // Pinned chunks are at most one per scan, so this skips few.
                let piece = c.resident().iter().map(|ch| state.piece(*ch)).find(|p| {
                    pool.is_evictable(*p) && !chosen.contains(p) && !window.contains(&p.chunk)
                })?;
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
