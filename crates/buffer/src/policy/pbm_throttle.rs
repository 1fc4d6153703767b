//! pbm-throttle: PBM Attach & Throttle (2012 paper §5, proposed there, built here).
//!
//! Attach. A scan that accepts any order (`ScanOrder::Any`) starts where the running
//! scan with the largest remaining overlap is and wraps around to cover the rest, as
//! the `attach` policy's circular scans do (`attach::attached_order`). A scan that needs
//! table order (`InOrder`) cannot start in the middle: it reads ascending, and is only
//! throttled.
//!
//! Throttle. PBM tracks `next_consumption_evict`: the predicted next consumption (time
//! from then) of the most recently evicted piece some scan still wanted. A piece whose
//! next consumption is at or beyond it is likely evicted before it is reused. When a
//! scan asks for its next chunk, the pieces of the chunk it just consumed get their next
//! consumption from the scans trailing it; if that is at or beyond
//! `next_consumption_evict` but would fall below it within an allowed hold, the scan is
//! held that long (`Policy::hold`; the driver asks again at the returned time) and
//! reads nothing ahead meanwhile, so the trailing scans catch up and reuse its pages.
//! A hold that could not bring them below is not started: those pages are lost anyway.
//!
//! The bound (no starvation). A hold lasts at most [`HOLD_MAX_PACES`] of the scan's own
//! time per chunk, a scan is never held twice without a delivery in between, and its
//! total hold never exceeds [`THROTTLE_MAX_SHARE`] of its life so far (hold included).
//! So at least 3/4 of every scan's time is unheld, during which it is served exactly as
//! under PBM, and every scan finishes.

use super::attach::attached_order;
use super::pbm::PbmPolicy;
use super::{LoadChoice, Policy, PolicyKind};
use crate::config::MAX_SCANS;
use crate::{AbmConfig, AbmState, ChunkId, Nanos, PieceId, ScanSlot, TableGeometry};

/// The most of its life (registration to now, holds included) a scan may spend held,
/// as (numerator, denominator): a quarter.
pub const THROTTLE_MAX_SHARE: (u64, u64) = (1, 4);

/// The longest single hold, in units of the held scan's own observed time per chunk.
pub const HOLD_MAX_PACES: u64 = 8;

/// A scan's throttling record.
#[derive(Clone, Copy, Debug, Default)]
struct Held {
    /// The end of its latest hold (in force while later than now).
    until: Option<Nanos>,
    /// Total time held so far.
    total: Nanos,
    /// Held since its last delivery: its next ask is served.
    owed: bool,
    /// The chunk it was given last (paper: "pages it recently consumed").
    last: Option<ChunkId>,
}

#[derive(Clone, Debug)]
pub struct PbmThrottlePolicy {
    pbm: PbmPolicy,
    held: Vec<Held>,
    /// The bound on holds: [`THROTTLE_MAX_SHARE`] unless built with another.
    max_share: (u64, u64),
    /// Paper: next_consumption_evict. `None`: the latest load evicted nothing any scan
    /// wanted (or nothing was evicted yet), so no consumed page is at risk.
    next_consumption_evict: Option<Nanos>,
}

impl PbmThrottlePolicy {
    pub fn new(geometry: &TableGeometry, config: &AbmConfig) -> Self {
        Self::with_max_share(geometry, config, THROTTLE_MAX_SHARE)
    }

    /// With another bound than [`THROTTLE_MAX_SHARE`] (experiments: `(0, 1)` never
    /// holds, leaving PBM with attach alone). A share of 1 or more is capped below 1.
    pub fn with_max_share(
        geometry: &TableGeometry,
        config: &AbmConfig,
        (num, den): (u64, u64),
    ) -> Self {
        let den = den.max(1);
        PbmThrottlePolicy {
            pbm: PbmPolicy::new(geometry, config),
            held: vec![Held::default(); MAX_SCANS],
            max_share: (num.min(den - 1), den),
            next_consumption_evict: None,
        }
    }

    /// Paper: next_consumption_evict, as last recorded.
    pub fn next_consumption_evict(&self) -> Option<Nanos> {
        self.next_consumption_evict
    }

    /// The earliest next consumption (by a scan trailing this one) of the resident
    /// pieces of `chunk` the scan reads; `None` when no active scan will read them.
    fn reuse_after(&self, state: &AbmState, slot: ScanSlot, chunk: ChunkId) -> Option<Nanos> {
        let cols = state.resident_cols(chunk) & state.active_scan(slot).cols;
        let pieces = state.pieces_of(chunk, cols);
        let after = pieces
            .iter()
            .filter_map(|p| self.pbm.next_consumption(state, *p, None));
        after.min()
    }

    /// The longest hold the bound allows now: `held + h ≤ share × (life + h)`, i.e.
    /// `h ≤ (num × life − den × held) / (den − num)`, and at most [`HOLD_MAX_PACES`]
    /// paces.
    fn allowed(&self, held: &Held, life: Nanos, pace: Nanos) -> Option<Nanos> {
        let (num, den) = self.max_share;
        let budget = num
            .checked_mul(life.0)?
            .checked_sub(den.checked_mul(held.total.0)?)?
            .checked_div(den.checked_sub(num)?)?;
        let single = pace.0.checked_mul(HOLD_MAX_PACES)?;
        Some(Nanos(budget.min(single)))
    }

    /// Records `next_consumption_evict` from the victims of the load just chosen (the
    /// state still has them: the ABM evicts after this returns).
    fn note_evictions(&mut self, state: &AbmState, victims: &[PieceId]) {
        if victims.is_empty() {
            return;
        }
        let wanted = victims
            .iter()
            .filter_map(|v| self.pbm.next_consumption(state, *v, None));
        self.next_consumption_evict = wanted.min();
    }
}

impl Policy for PbmThrottlePolicy {
    /// PBM's eviction; pieces given to another table count for the throttle as the
    /// victims of this table's own loads do.
    fn victims(
        &mut self,
        state: &AbmState,
        request: &crate::EvictionRequest,
        now: Nanos,
    ) -> Vec<crate::PieceId> {
        let victims = self.pbm.victims(state, request, now);
        self.note_evictions(state, &victims);
        victims
    }

    fn kind(&self) -> PolicyKind {
        PolicyKind::PbmThrottle
    }

    fn on_admit(&mut self, state: &AbmState, slot: ScanSlot) {
        self.held[slot.index()] = Held::default();
        let order = attached_order(state, self.pbm.seq(), slot);
        self.pbm.admit_in(slot, order);
    }

    fn on_retire(&mut self, state: &AbmState, slot: ScanSlot) {
        self.held[slot.index()] = Held::default();
        self.pbm.on_retire(state, slot);
    }

    fn choose_available(&mut self, state: &AbmState, slot: ScanSlot) -> Option<ChunkId> {
        self.pbm.choose_available(state, slot)
    }

    fn on_delivered(&mut self, state: &AbmState, slot: ScanSlot, chunk: ChunkId) {
        let held = &mut self.held[slot.index()];
        held.last = Some(chunk);
        held.owed = false;
        self.pbm.on_delivered(state, slot, chunk);
    }

    fn hold(&mut self, state: &AbmState, slot: ScanSlot, now: Nanos) -> Option<Nanos> {
        let now = self.pbm.observe(now);
        if std::mem::take(&mut self.held[slot.index()].owed) {
            return None;
        }
        let evict = self.next_consumption_evict?;
        let pace = self.pbm.pace_of(slot)?;
        let reuse = self.reuse_after(state, slot, self.held[slot.index()].last?)?;
        // Already below: the pages will be reused without help.
        let need = reuse.0.checked_sub(evict.0)?.checked_add(1)?;
        let life = now.saturating_sub(state.active_scan(slot).registered_at);
        if need > self.allowed(&self.held[slot.index()], life, pace)?.0 {
            return None;
        }
        let held = &mut self.held[slot.index()];
        held.total = held.total + Nanos(need);
        held.owed = true;
        let until = now + Nanos(need);
        held.until = Some(until);
        Some(until)
    }

    fn choose_load(&mut self, state: &AbmState, now: Nanos) -> Option<LoadChoice> {
        let now = self.pbm.observe(now);
        let held = &self.held;
        let free = |s: ScanSlot| held[s.index()].until.is_none_or(|u| u <= now);
        let choice = self.pbm.choose_load_of(state, now, free)?;
        self.note_evictions(state, &choice.victims);
        Some(choice)
    }
}
