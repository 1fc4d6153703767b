//! elevator (2007 paper §3, 2004 report §3.1): one global cursor sweeps the table in
//! chunk order and loads the next chunk any active scan still needs; scans consume
//! whatever the sweep has brought in, oldest first.
//!
//! The buffered chunks form a sliding window in load order. As in the 2004 report, the
//! next chunk may be read "only if the last chunk in this window does not have any
//! queries currently processing it": the oldest chunk is evicted even when a slow scan
//! has not reached it yet (that scan gets it on the next sweep), and while it is being
//! processed the whole system waits. Fast scans thus wait for slow ones and short scans
//! wait for the cursor to come round: good reuse, poor latency.
//!
//! ```text
//!   load order:  [oldest] c7 c8 c9 c10 c11 [newest]   cursor → c12
//!   load c12 ⇒ evict c7 if no scan processes it, else wait
//! ```

use super::{cyclic_distance, next_cyclic, LoadChoice, Policy, PolicyKind};
use crate::{AbmState, ChunkId, FrameId, Nanos, Residency, ScanSlot};
use std::collections::VecDeque;

#[derive(Clone, Debug, Default)]
pub struct ElevatorPolicy {
    /// Where the sweep continues: one past the chunk loaded last.
    cursor: u32,
    /// The window: chunks in load order with the load's sequence number.
    window: VecDeque<(ChunkId, u64)>,
    /// Sequence number of each chunk's latest load; older window entries are stale.
    load_seq: Vec<u64>,
    seq: u64,
}

impl ElevatorPolicy {
    fn cursor(&self, state: &AbmState) -> ChunkId {
        ChunkId(self.cursor % state.chunk_count())
    }

    /// Drops window entries for chunks no longer in the buffer (failed loads) or since
    /// reloaded, then returns the oldest live one.
    fn oldest(&mut self, state: &AbmState) -> Option<ChunkId> {
        while let Some(&(chunk, seq)) = self.window.front() {
            if self.load_seq[chunk.0 as usize] == seq && !state.is_absent(chunk) {
                return Some(chunk);
            }
            self.window.pop_front();
        }
        None
    }

    /// An empty frame, else the frame of the oldest chunk if it is resident and unpinned.
    fn frame_to_reuse(&mut self, state: &AbmState) -> Option<FrameId> {
        if let Some(f) = state.free_frame() {
            return Some(f);
        }
        let oldest = self.oldest(state)?;
        match state.residency(oldest) {
            Residency::Resident(f) if state.frame(f).pins == 0 => {
                self.window.pop_front();
                Some(f)
            }
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
        if self.load_seq.is_empty() {
            self.load_seq = vec![0; n as usize];
        }
        self.seq += 1;
        self.load_seq[chunk.0 as usize] = self.seq;
        self.window.push_back((chunk, self.seq));
        self.cursor = chunk.0 + 1;
        Some(LoadChoice {
            chunk,
            frame,
            on_behalf_of: None,
        })
    }
}
