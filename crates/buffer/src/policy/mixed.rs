//! mixed: Scans and CScans in one pool with one temperature (2012 paper §2.3 and §5:
//! "a common page eviction policy ... estimate the time of next consumption of a page or
//! chunk"; never built there). Scheduling is relevance's, which already serves both
//! kinds of scan (the ABM hands an in-order scan its chunks ascending; relevance loads an
//! in-order scan's next absent chunk and a CScan's by loadRelevance). Eviction is one
//! ranking of every piece by its predicted next consumption, whoever consumes it
//! ([`NextUseOrder`], walked by the [`OrderReplacer`]): PBM's distance ÷ pace for a
//! Scan, the useRelevance order ÷ pace for a CScan.

use super::next_use::NextUseOrder;
use super::relevance::RelevancePolicy;
use super::{choice_with, LoadChoice, Policy, PolicyKind};
use crate::config::MAX_SCANS;
use crate::next_consumption::{self, Paces};
use crate::{AbmConfig, AbmState, ChunkId, Nanos, OrderReplacer, ScanSlot, TableGeometry};

#[derive(Clone, Debug)]
pub struct MixedPolicy {
    relevance: RelevancePolicy,
    /// Observed time per chunk of each admitted scan, once it has had a delivery.
    pace: Vec<Option<Nanos>>,
    /// Scratch: starved scans by queryRelevance.
    queue: Vec<(f64, ScanSlot)>,
}

impl MixedPolicy {
    pub fn new(geometry: &TableGeometry, config: &AbmConfig) -> Self {
        MixedPolicy {
            relevance: RelevancePolicy::new(geometry, config),
            pace: vec![None; MAX_SCANS],
            queue: Vec::new(),
        }
    }
}

impl Policy for MixedPolicy {
    /// Furthest predicted next consumption first (one temperature).
    fn victims(
        &mut self,
        state: &AbmState,
        request: &crate::EvictionRequest,
        now: Nanos,
    ) -> Vec<crate::PieceId> {
        let order = NextUseOrder::new(state, Paces::new(&self.pace), now);
        super::free_some(&mut OrderReplacer, state.pool(), &order, request)
    }

    fn kind(&self) -> PolicyKind {
        PolicyKind::Mixed
    }

    fn on_admit(&mut self, _state: &AbmState, slot: ScanSlot) {
        self.pace[slot.index()] = None;
    }

    fn on_retire(&mut self, _state: &AbmState, slot: ScanSlot) {
        self.pace[slot.index()] = None;
    }

    /// useRelevance for a CScan (the ABM serves a Scan its next chunk itself).
    fn choose_available(&mut self, state: &AbmState, slot: ScanSlot) -> Option<ChunkId> {
        self.relevance.choose_available(state, slot)
    }

    /// PBM's ReportScanPosition: the scan's observed pace.
    fn on_delivered(&mut self, state: &AbmState, slot: ScanSlot, _chunk: ChunkId) {
        let scan = state.active_scan(slot);
        let pace =
            next_consumption::observed_pace(scan.registered_at, scan.last_served, scan.delivered());
        self.pace[slot.index()] = Some(pace);
    }

    /// Relevance's main loop body (starved scans by queryRelevance, each one's chunk by
    /// loadRelevance or its order), with the one-temperature replacer.
    fn choose_load(&mut self, state: &AbmState, now: Nanos) -> Option<LoadChoice> {
        super::relevance::starved_by_relevance(state, now, &mut self.queue);
        // One ranking for every load tried: they all see the same state.
        let order = NextUseOrder::new(state, Paces::new(&self.pace), now);
        for &(_, q) in &self.queue {
            let Some((chunk, cols)) = RelevancePolicy::choose_chunk_to_load(state, q) else {
                continue;
            };
            if let Some(choice) =
                choice_with(state, &mut OrderReplacer, &order, chunk, cols, Some(q))
            {
                return Some(choice);
            }
        }
        None
    }
}
