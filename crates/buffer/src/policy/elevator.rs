//! elevator (2007 paper §3, 2004 report §3.1): one global cursor sweeps the table in
//! chunk order and loads the next chunk any active scan still needs; scans consume
//! whatever the sweep has brought in, oldest first. A chunk is evicted only once nobody
//! needs it, so fast scans wait for slow ones ("the sliding window advances only when
//! its last chunk is no longer in use"): maximal reuse, poor latency for short scans.

use super::{cyclic_distance, next_cyclic, LoadChoice, Policy, PolicyKind};
use crate::{AbmState, ChunkId, FrameId, Nanos, Residency, ScanSlot};

#[derive(Clone, Debug, Default)]
pub struct ElevatorPolicy {
    /// Where the sweep continues: one past the chunk loaded last.
    cursor: u32,
}

impl ElevatorPolicy {
    fn cursor(&self, state: &AbmState) -> ChunkId {
        ChunkId(self.cursor % state.chunk_count())
    }

    /// A frame to reuse: empty, else one holding a chunk nobody needs (oldest in sweep
    /// order). Chunks nobody needs are never pinned: a pinning scan still needs its chunk.
    fn frame_to_reuse(&self, state: &AbmState) -> Option<FrameId> {
        if let Some(f) = state.free_frame() {
            return Some(f);
        }
        let unneeded = state.unneeded_class()?;
        let chunk = next_cyclic(unneeded.resident(), self.cursor(state))?;
        debug_assert!(!state.is_pinned(chunk));
        match state.residency(chunk) {
            Residency::Resident(f) => Some(f),
            _ => None,
        }
    }
}

impl Policy for ElevatorPolicy {
    fn kind(&self) -> PolicyKind {
        PolicyKind::Elevator
    }

    fn choose_available(&mut self, state: &AbmState, slot: ScanSlot) -> Option<ChunkId> {
        let (cursor, n) = (self.cursor(state), state.chunk_count());
        state
            .classes()
            .filter(|c| c.mask() & slot.bit() != 0)
            .filter_map(|c| next_cyclic(c.resident(), cursor))
            .min_by_key(|c| cyclic_distance(cursor, *c, n))
    }

    fn choose_load(&mut self, state: &AbmState, _now: Nanos) -> Option<LoadChoice> {
        let (cursor, n) = (self.cursor(state), state.chunk_count());
        let chunk = state
            .classes()
            .filter(|c| c.mask() != 0)
            .filter_map(|c| next_cyclic(c.absent(), cursor))
            .min_by_key(|c| cyclic_distance(cursor, *c, n))?;
        let frame = self.frame_to_reuse(state)?;
        self.cursor = chunk.0 + 1;
        Some(LoadChoice {
            chunk,
            frame,
            on_behalf_of: None,
        })
    }
}
