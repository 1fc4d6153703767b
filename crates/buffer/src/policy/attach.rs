//! attach ("circular" or "shared" scans, 2007 paper §3): a new scan starts at the
//! position of the running scan with the largest remaining overlap, reads to the end of
//! its ranges and wraps around. Nothing keeps the two together afterwards: when one is
//! faster, the LRU buffer drops pages before the slower one reaches them and they
//! "detach" — that is the behaviour the paper describes, so it is not prevented here.

use super::sequential::{ChunkOrder, Sequential};
use super::{LoadChoice, Policy, PolicyKind};
use crate::{AbmConfig, AbmState, ChunkId, Nanos, ScanOrder, ScanSlot, TableGeometry};

#[derive(Clone, Debug, Default)]
pub struct AttachPolicy {
    seq: Sequential,
}

impl AttachPolicy {
    pub fn new(_geometry: &TableGeometry, _config: &AbmConfig) -> Self {
        Self::default()
    }
}

/// The running scan with the largest remaining overlap with `slot`: most columns in
/// common first (the 2007 paper's crude DSM measure; always 1 for NSM/PAX), then most
/// still-needed chunks in common.
fn best_partner(state: &AbmState, slot: ScanSlot) -> Option<(ScanSlot, (u32, u32))> {
    let scan = state.active_scan(slot);
    let mut best: Option<(ScanSlot, (u32, u32))> = None;
    for other in state.active_slots().filter(|s| *s != slot) {
        let columns = (scan.cols & state.active_scan(other).cols).count_ones();
        if columns == 0 {
            continue;
        }
        let chunks = scan
            .chunks
            .iter()
            .filter(|c| state.interest(*c).contains(other))
            .count() as u32;
        let overlap = (columns, chunks);
        if chunks > 0 && best.is_none_or(|(_, o)| overlap > o) {
            best = Some((other, overlap));
        }
    }
    best
}

/// The order a newly admitted scan attaches with: a scan that accepts any order starts
/// where its best partner is (`seq` knows the partner's position) and wraps around; a
/// scan that needs table order cannot start in the middle and goes ascending. Shared
/// with `pbm-throttle`, whose scans attach the same way.
pub(super) fn attached_order(state: &AbmState, seq: &Sequential, slot: ScanSlot) -> ChunkOrder {
    let scan = state.active_scan(slot);
    let start = (scan.order == ScanOrder::Any)
        .then(|| best_partner(state, slot))
        .flatten()
        .and_then(|(partner, _)| seq.position(state, partner));
    match start {
        Some(pos) => ChunkOrder::rotated(&scan.chunks, pos),
        None => ChunkOrder::ascending(&scan.chunks),
    }
}

impl Policy for AttachPolicy {
    fn kind(&self) -> PolicyKind {
        PolicyKind::Attach
    }

    fn on_admit(&mut self, state: &AbmState, slot: ScanSlot) {
        let order = attached_order(state, &self.seq, slot);
        debug_assert!(state.active_scan(slot).chunks.is_empty() || order.first().is_some());
        self.seq.admit(slot, order);
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
