//! elevator (2007 paper §3, 2004 report §3.1): one global cursor sweeps the table in
//! chunk order and loads the next chunk any active scan still needs; scans consume
//! whatever the sweep has brought in, oldest first.
//!
//! The buffered chunks form a sliding window in load order ([`FifoReplacer`], told
//! which chunks are still arriving: their load's unit is the chunk, not the piece). As in
//! the 2004 report, the next chunk may be read "only if the last chunk in this window
//! does not have any queries currently processing it": the oldest chunk is evicted even
//! when a slow scan has not reached it yet (that scan gets it on the next sweep), and
//! while it is being processed the whole system waits. Fast scans thus wait for slow ones and short scans
//! wait for the cursor to come round: good reuse, poor latency.
//!
//! ```text
//!   load order:  [oldest] c7 c8 c9 c10 c11 [newest]   cursor → c12
//!   load c12 ⇒ evict c7 if no scan processes it, else wait
//! ```

use super::{
    choice_with, cyclic_distance, next_cyclic_free, next_cyclic_where, LoadChoice, Policy,
    PolicyKind,
};
use crate::{AbmConfig, AbmState, ChunkId, FifoReplacer, Nanos, ScanSet, ScanSlot, TableGeometry};

#[derive(Clone, Debug, Default)]
pub struct ElevatorPolicy {
    /// Where the sweep continues: one past the chunk loaded last.
    cursor: u32,
}

impl ElevatorPolicy {
    pub fn new(_geometry: &TableGeometry, _config: &AbmConfig) -> Self {
        Self::default()
    }

    fn cursor(&self, state: &AbmState) -> ChunkId {
        ChunkId(self.cursor % state.chunk_count())
    }
}

impl Policy for ElevatorPolicy {
    /// The window's oldest loads first, as for its own loads.
    fn victims(
        &mut self,
        state: &AbmState,
        request: &crate::EvictionRequest,
        _now: Nanos,
    ) -> Vec<crate::PieceId> {
        let arriving = |chunk: ChunkId| state.loading_cols(chunk) != 0;
        super::free_some(&mut FifoReplacer, state.pool(), &arriving, request)
    }

    fn kind(&self) -> PolicyKind {
        PolicyKind::Elevator
    }

    /// The available chunk the sweep reaches first from the cursor.
    fn choose_available(&mut self, state: &AbmState, slot: ScanSlot) -> Option<ChunkId> {
        let (cursor, n) = (self.cursor(state), state.chunk_count());
        let scan = state.active_scan(slot);
        let distance = |c: &ChunkId| cyclic_distance(cursor, *c, n);
        state
            .classes()
            .filter(|c| c.mask().contains(slot))
            .flat_map(|c| {
                let full = next_cyclic_free(c.resident(), cursor, scan);
                let part = c
                    .partial_with(scan.cols)
                    .filter_map(|set| next_cyclic_free(set, cursor, scan))
                    .min_by_key(distance);
                [full, part]
            })
            .flatten()
            .min_by_key(distance)
    }

    /// The next chunk anyone needs from the cursor on, with the union of the columns
    /// its scans need (DSM); the window (FIFO) makes room. An in-order scan needs only
    /// its next chunks: loading its later ones would let the window evict the chunk it
    /// waits for (a livelock the property test found on a 2-chunk DSM buffer).
    fn choose_load(&mut self, state: &AbmState, _now: Nanos) -> Option<LoadChoice> {
        let (cursor, n) = (self.cursor(state), state.chunk_count());
        let (chunk, needed) = state
            .classes()
            .filter(|c| !c.mask().is_empty())
            .filter_map(|c| {
                let wanted = |chunk: ChunkId| wanted_now(state, c.mask(), chunk);
                Some((next_cyclic_where(c.absent(), cursor, wanted)?, c.columns()))
            })
            .min_by_key(|(c, _)| cyclic_distance(cursor, *c, n))?;
        let cols = state.missing_cols(chunk, needed);
        let arriving = |chunk: ChunkId| state.loading_cols(chunk) != 0;
        let choice = choice_with(state, &mut FifoReplacer, &arriving, chunk, cols, None)?;
        self.cursor = chunk.0 + 1;
        Some(choice)
    }
}

/// Whether some scan of `mask` can use `chunk` soon: any scan that takes chunks in any
/// order, or an in-order scan for which it is in its window (`in_order_window`).
fn wanted_now(state: &AbmState, mask: ScanSet, chunk: ChunkId) -> bool {
    let in_order = mask & state.in_order_mask();
    if in_order.len() < mask.len() {
        return true;
    }
    in_order.iter().any(|slot| {
        state
            .active_scan(slot)
            .in_order_window()
            .any(|c| c == chunk)
    })
}
