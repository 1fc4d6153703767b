//! normal: each scan reads its chunks in order; LRU buffering (2007 paper §3).

use super::sequential::{ChunkOrder, Sequential};
use super::{LoadChoice, Policy, PolicyKind};
use crate::{AbmConfig, AbmState, ChunkId, Nanos, ScanSlot, TableGeometry};

#[derive(Clone, Debug, Default)]
pub struct NormalPolicy {
    seq: Sequential,
}

impl NormalPolicy {
    pub fn new(_geometry: &TableGeometry, _config: &AbmConfig) -> Self {
        Self::default()
    }
}

impl Policy for NormalPolicy {
    fn kind(&self) -> PolicyKind {
        PolicyKind::Normal
    }

    fn on_admit(&mut self, state: &AbmState, slot: ScanSlot) {
        self.seq
            .admit(slot, ChunkOrder::ascending(&state.active_scan(slot).chunks));
    }

    fn on_retire(&mut self, _state: &AbmState, slot: ScanSlot) {
        self.seq.retire(slot);
    }

    fn choose_available(&mut self, state: &AbmState, slot: ScanSlot) -> Option<ChunkId> {
        self.seq.choose_available(state, slot)
    }

    fn on_delivered(&mut self, _state: &AbmState, slot: ScanSlot, chunk: ChunkId) {
        self.seq.on_delivered(slot, chunk);
    }

    fn choose_load(&mut self, state: &AbmState, _now: Nanos) -> Option<LoadChoice> {
        self.seq.choose_load(state)
    }
}
