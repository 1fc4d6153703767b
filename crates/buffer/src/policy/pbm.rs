//! pbm: Predictive Buffer Management (2012 paper §3). Scans stay in order and read
//! their own next chunks, exactly as under `normal`; only eviction changes: every piece
//! in the pool is filed by its predicted time of next consumption, and the victim is the
//! piece needed furthest in the future (an online approximation of Belady's OPT).
//! `pbm-throttle` and `pbm-opportunistic` (§5) wrap this policy and steer its orders.
//!
//! Prediction (paper: PageNextConsumption). For each active scan that still needs the
//! piece's chunk and column: `due = last delivery + pace × chunks ahead`, where the pace
//! is the scan's observed time per chunk since it registered (paper: 1 / scan.speed) and
//! "chunks ahead" is the distance from the scan's position to the chunk in its order
//! (ascending here; rotated or re-planned under the §5 variants; paper: tuples_behind −
//! tuples_consumed, counted in chunks because a chunk is our unit of delivery). The piece's time is the earliest `due`; no such scan means
//! "not requested". The paper's RegisterScan / ReportScanPosition / UnregisterScan are
//! the ABM's admit, delivery and retire events here.
//!
//! Pieces sit in a [`BucketTimeline`]; a piece is re-filed when it is chosen for a load,
//! when a scan consumes its chunk, when its bucket falls off the timeline, and (all of
//! them) when a scan arrives or leaves. The paper evicts "in groups of at least 16 pages"
//! to amortize the cost; a piece here is a whole chunk (or one column of it), already a
//! group of pages, so victims are taken one piece at a time until the load fits.

use super::pbm_lru::PbmTimeline;
use super::sequential::{ChunkOrder, Sequential};
use super::{choice_with, LoadChoice, Policy, PolicyKind};
use crate::config::MAX_SCANS;
use crate::next_consumption;
use crate::{
    AbmConfig, AbmState, ChunkId, EvictionRequest, LruReplacer, Nanos, OrderReplacer, PieceId,
    Pool, Replacer, ScanSlot, TableGeometry,
};

#[derive(Clone, Debug)]
pub struct PbmPolicy {
    seq: Sequential,
    /// Plain PBM's timeline, or PBM/LRU's counter-rotating one (`pbm_lru.rs`).
    timeline: PbmTimeline,
    /// Observed time per chunk of each admitted scan, once it has had a delivery.
    pace: Vec<Option<Nanos>>,
    /// The latest time any event has shown (events may arrive slightly out of order
    /// from a threaded driver; time never goes back here).
    now: Nanos,
    /// A scan arrived or left: every filed piece's prediction may have changed.
    stale: bool,
}

impl PbmPolicy {
    pub fn new(_geometry: &TableGeometry, _config: &AbmConfig) -> Self {
        Self::with_timeline(PbmTimeline::plain())
    }

    /// PBM/LRU (`pbm-lru`): unrequested pieces on counter-rotating LRU buckets.
    pub fn with_lru(_geometry: &TableGeometry, _config: &AbmConfig) -> Self {
        Self::with_timeline(PbmTimeline::counter_rotating())
    }

    fn with_timeline(timeline: PbmTimeline) -> Self {
        PbmPolicy {
            seq: Sequential::default(),
            timeline,
            pace: vec![None; MAX_SCANS],
            now: Nanos::ZERO,
            stale: false,
        }
    }

    /// Paper: PageNextConsumption — time from now until the earliest active scan other
    /// than `skip` will consume `piece`, or `None` when none will.
    pub fn next_consumption(
        &self,
        state: &AbmState,
        piece: PieceId,
        skip: Option<ScanSlot>,
    ) -> Option<Nanos> {
        let bit = state.col_bit(piece);
        state
            .interest(piece.chunk)
            .iter()
            .filter(|&slot| Some(slot) != skip)
            .filter_map(|slot| {
                let scan = state.active_scan(slot);
                if scan.cols & bit == 0 {
                    return None;
                }
                let ahead = self.seq.ahead(state, slot, piece.chunk)?;
                let pace = self.pace[slot.index()].unwrap_or_else(|| self.mean_pace());
                let due = next_consumption::due(scan.last_served, pace, ahead);
                Some(due.saturating_sub(self.now))
            })
            .min()
    }

    fn mean_pace(&self) -> Nanos {
        next_consumption::mean_pace(&self.pace)
    }

    /// The scan's observed time per chunk, once it has had a delivery.
    pub(super) fn pace_of(&self, slot: ScanSlot) -> Option<Nanos> {
        self.pace[slot.index()]
    }

    /// The scan's chunk order and cursor (the §5 variants steer it).
    pub(super) fn seq(&self) -> &Sequential {
        &self.seq
    }

    /// Gives the scan a new order of the chunks it still needs (`pbm-opportunistic`
    /// moving to another region); every prediction may have changed.
    pub(super) fn reorder(&mut self, slot: ScanSlot, order: ChunkOrder) {
        self.seq.admit(slot, order);
        self.stale = true;
    }

    /// The latest time any event has shown.
    pub(super) fn observe(&mut self, now: Nanos) -> Nanos {
        self.now = self.now.max(now);
        self.now
    }

    /// Admits the scan with `order` instead of its ascending one (attach).
    pub(super) fn admit_in(&mut self, slot: ScanSlot, order: ChunkOrder) {
        self.seq.admit(slot, order);
        self.pace[slot.index()] = None;
        self.stale = true;
    }

    /// [`Policy::choose_load`] for the read-ahead of the scans `eligible` accepts.
    pub(super) fn choose_load_of(
        &mut self,
        state: &AbmState,
        now: Nanos,
        eligible: impl Fn(ScanSlot) -> bool,
    ) -> Option<LoadChoice> {
        self.catch_up(state, now);
        let (chunk, cols, slot) = self.seq.next_target_of(state, eligible)?;
        let choice = choice_with(
            state,
            &mut Furthest,
            &self.timeline,
            chunk,
            cols,
            Some(slot),
        )?;
        for victim in &choice.victims {
            self.timeline.remove(*victim);
        }
        for piece in state.pieces_of(chunk, cols) {
            let after = self.next_consumption(state, piece, None);
            self.timeline.file(piece, after, self.now);
        }
        Some(choice)
    }

    /// Paper: PagePush. Pieces no longer loading or resident are dropped instead.
    fn refile(&mut self, state: &AbmState, piece: PieceId, skip: Option<ScanSlot>) {
        if state.pool().state(piece).is_none() {
            self.timeline.remove(piece);
            return;
        }
        let after = self.next_consumption(state, piece, skip);
        self.timeline.file(piece, after, self.now);
    }

    /// Brings the timeline to `now`: expired buckets re-filed, and every piece when a
    /// scan arrived or left since the last decision.
    fn catch_up(&mut self, state: &AbmState, now: Nanos) {
        self.now = self.now.max(now);
        let expired = self.timeline.advance(self.now);
        let all: Vec<PieceId> = if std::mem::take(&mut self.stale) {
            let mut all: Vec<PieceId> = state.pool().load_order().collect();
            if matches!(self.timeline, PbmTimeline::CounterRotating(..)) {
                // Re-filed least recently used first, so the unrequested pieces with
                // no estimate stay in LRU order in the last bucket (plain PBM keeps
                // load order here, as it always has).
                all.sort_by_key(|p| state.pool().last_use(*p));
            }
            all
        } else {
            expired
        };
        for piece in all {
            self.refile(state, piece, None);
        }
    }
}

/// PBM's victim: the first evictable piece in timeline order (not requested, then the
/// latest predicted consumption; PBM/LRU: both sets from the far end), the timeline
/// being the ranking the policy keeps.
struct Furthest;

impl Replacer<PbmTimeline> for Furthest {
    fn victim(
        &mut self,
        pool: &Pool,
        timeline: &PbmTimeline,
        request: &EvictionRequest,
        chosen: &[PieceId],
    ) -> Option<PieceId> {
        let found = OrderReplacer.victim(pool, timeline, request, chosen);
        // Every resident piece was filed when its load was chosen; if one was missed,
        // evict by LRU rather than stall the loader (and fail loudly in tests).
        found.or_else(|| {
            let lru = LruReplacer.victim(pool, &(), request, chosen);
            debug_assert!(
                lru.is_none(),
                "pbm: {lru:?} resident but not on the timeline"
            );
            lru
        })
    }
}

impl Policy for PbmPolicy {
    /// Timeline order (furthest predicted consumption first), as for its own loads.
    fn victims(
        &mut self,
        state: &AbmState,
        request: &crate::EvictionRequest,
        now: Nanos,
    ) -> Vec<PieceId> {
        self.catch_up(state, now);
        let victims = super::free_some(&mut Furthest, state.pool(), &self.timeline, request);
        for victim in &victims {
            self.timeline.remove(*victim);
        }
        victims
    }

    fn kind(&self) -> PolicyKind {
        match self.timeline {
            PbmTimeline::Plain(_) => PolicyKind::Pbm,
            PbmTimeline::CounterRotating(..) => PolicyKind::PbmLru,
        }
    }

    fn on_admit(&mut self, state: &AbmState, slot: ScanSlot) {
        self.admit_in(slot, ChunkOrder::ascending(&state.active_scan(slot).chunks));
    }

    fn on_retire(&mut self, _state: &AbmState, slot: ScanSlot) {
        self.seq.retire(slot);
        self.pace[slot.index()] = None;
        self.stale = true;
    }

    fn choose_available(&mut self, state: &AbmState, slot: ScanSlot) -> Option<ChunkId> {
        self.seq.choose_available(state, slot)
    }

    /// Paper: ReportScanPosition. The scan's pace is updated and the chunk, which it
    /// now consumes, is re-filed for whoever needs it next.
    fn on_delivered(&mut self, state: &AbmState, slot: ScanSlot, chunk: ChunkId) {
        self.seq.on_delivered(slot, chunk);
        let scan = state.active_scan(slot);
        let pace =
            next_consumption::observed_pace(scan.registered_at, scan.last_served, scan.delivered());
        self.pace[slot.index()] = Some(pace);
        self.now = self.now.max(scan.last_served);
        for piece in state.pieces_of(chunk, state.resident_cols(chunk) & scan.cols) {
            self.timeline.record_use(piece, scan.last_served);
        }
        for piece in state.pieces_of(chunk, state.resident_cols(chunk)) {
            self.refile(state, piece, Some(slot));
        }
    }

    fn choose_load(&mut self, state: &AbmState, now: Nanos) -> Option<LoadChoice> {
        self.choose_load_of(state, now, |_| true)
    }
}
