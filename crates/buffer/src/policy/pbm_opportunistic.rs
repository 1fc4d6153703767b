//! pbm-opportunistic: Opportunistic CScans (2012 paper §5, proposed there, built here).
//!
//! No central planning: each scan that accepts any order (`ScanOrder::Any`) steers
//! itself by what the pool holds. The table is cut into aligned regions of
//! [`REGION_CHUNKS`] chunks. When the scan starts, finishes a region, or would have to
//! wait for a load in the middle of one, it counts per region the resident chunks it
//! still needs and moves to the region with the most (ties: the one its cursor reaches
//! first going forward), if that beats the region it is in. It enters that region at its
//! first resident chunk and reads on in ascending order from there, wrapping around,
//! until the next such moment. Loading is PBM's read-ahead along that order, so it stays
//! in order within the chosen region; eviction is PBM's, predicting each scan along its
//! current order. A scan that needs table order (`InOrder`) is never moved.
//!
//! Exactly once: a move re-plans only the chunks the scan's order has not passed yet
//! (`ChunkOrder::remaining`), so nothing delivered comes again and nothing is dropped.
//! A move lands on a resident chunk the scan needs, so it is delivered at once: a scan
//! never moves twice without progress.
//!
//! Cost: counting walks the pool's pieces, O(pieces), at those moments only; a move also
//! re-files every piece at the next load (PBM's response to a changed order).

use super::pbm::PbmPolicy;
use super::sequential::ChunkOrder;
use super::{cyclic_distance, LoadChoice, Policy, PolicyKind};
use crate::{AbmConfig, AbmState, ChunkId, Nanos, ScanOrder, ScanSlot, TableGeometry};
use std::collections::BTreeMap;

/// Chunks per region (aligned: region `r` is chunks `r × REGION_CHUNKS ..`). Small
/// against the pools of the presets (26-256 chunks), so a cached cluster fills one.
pub const REGION_CHUNKS: u32 = 8;

fn region(chunk: ChunkId) -> u32 {
    chunk.0 / REGION_CHUNKS
}

/// Per region: resident chunks the scan needs, and the first of them.
type Cached = BTreeMap<u32, (u32, ChunkId)>;

#[derive(Clone, Debug)]
pub struct PbmOpportunisticPolicy {
    pbm: PbmPolicy,
}

impl PbmOpportunisticPolicy {
    pub fn new(geometry: &TableGeometry, config: &AbmConfig) -> Self {
        PbmOpportunisticPolicy {
            pbm: PbmPolicy::new(geometry, config),
        }
    }

    /// The resident chunks the scan still needs and none of its workers holds,
    /// counted per region.
    fn cached(state: &AbmState, slot: ScanSlot) -> Cached {
        let scan = state.active_scan(slot);
        let cols = scan.cols;
        let mut chunks: Vec<ChunkId> = state.pool().load_order().map(|p| p.chunk).collect();
        chunks.sort_unstable();
        chunks.dedup();
        let mut cached = Cached::new();
        for c in chunks {
            let free = !scan.holds(c);
            if free && state.interest(c).contains(slot) && state.available_for(c, cols) {
                let entry = cached.entry(region(c)).or_insert((0, c));
                entry.0 += 1;
            }
        }
        cached
    }

    /// Moves the scan to the region with the most cached chunks when it is at a
    /// region's start, or would wait inside one, and another region beats its own.
    fn steer(&mut self, state: &AbmState, slot: ScanSlot) {
        let Some(order) = self.pbm.seq().order(slot) else {
            return;
        };
        let Some(next) = order.current() else {
            return;
        };
        let ready = state.available_for(next, state.active_scan(slot).cols);
        let entering = order.previous().is_none_or(|p| region(p) != region(next));
        if ready && !entering {
            return;
        }
        let cached = Self::cached(state, slot);
        let here = cached.get(&region(next)).map_or(0, |e| e.0);
        // The table's chunks now: a bulk append may have added some.
        let n = state.chunk_count();
        let best = cached.values().max_by_key(|(count, first)| {
            (*count, std::cmp::Reverse(cyclic_distance(next, *first, n)))
        });
        let Some(&(count, first)) = best else {
            return;
        };
        if count > here {
            let order = ChunkOrder::rotated(&order.remaining(), first);
            self.pbm.reorder(slot, order);
        }
    }
}

impl Policy for PbmOpportunisticPolicy {
    /// PBM's eviction.
    fn victims(
        &mut self,
        state: &AbmState,
        request: &crate::EvictionRequest,
        now: Nanos,
    ) -> Vec<crate::PieceId> {
        self.pbm.victims(state, request, now)
    }

    fn kind(&self) -> PolicyKind {
        PolicyKind::PbmOpportunistic
    }

    fn on_admit(&mut self, state: &AbmState, slot: ScanSlot) {
        self.pbm.on_admit(state, slot);
    }

    fn on_retire(&mut self, state: &AbmState, slot: ScanSlot) {
        self.pbm.on_retire(state, slot);
    }

    fn choose_available(&mut self, state: &AbmState, slot: ScanSlot) -> Option<ChunkId> {
        if state.active_scan(slot).order == ScanOrder::Any {
            self.steer(state, slot);
        }
        self.pbm.choose_available(state, slot)
    }

    fn on_delivered(&mut self, state: &AbmState, slot: ScanSlot, chunk: ChunkId) {
        self.pbm.on_delivered(state, slot, chunk);
    }

    fn choose_load(&mut self, state: &AbmState, now: Nanos) -> Option<LoadChoice> {
        self.pbm.choose_load(state, now)
    }
}
