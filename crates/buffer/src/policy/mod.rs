//! Scheduling policies. Each is a pure state machine over `&AbmState`: it chooses, the
//! ABM applies. No policy reads a clock, takes a lock or does I/O.
//!
//! | policy    | chunk order per scan          | what gets loaded                          | eviction |
//! |-----------|-------------------------------|-------------------------------------------|----------|
//! | normal    | its own ranges in order       | next chunks of the longest-waiting scan   | LRU      |
//! | attach    | rotated to join a running scan| same as normal                            | LRU      |
//! | elevator  | whatever the cursor brought   | next chunk anyone needs after the cursor  | FIFO window |
//! | relevance | useRelevance                  | queryRelevance → loadRelevance            | keepRelevance |
//! | pbm       | its own ranges in order       | same as normal                            | furthest predicted next use (2012 paper) |
//! | mixed     | in-order scans ascending, CScans by useRelevance | as relevance                  | furthest predicted next consumption, by any Scan or CScan (one temperature) |
//! | pbm-lru   | its own ranges in order       | same as normal                            | as pbm; unrequested pieces by their own reuse history, aging (PBM/LRU) |
//! | pbm-throttle | as attach; held back (bounded) while a trailing scan catches up | same as normal, not for a held scan | as pbm |
//! | pbm-opportunistic | CScans: the region of its remaining range with the most cached chunks, in order within it | same as normal (in-order within the region) | as pbm |
//!
//! Eviction is delegated to a [`crate::Replacer`] (`replacer/`), which sees the pool
//! and a ranking, never the state: a policy says which replacer, for whom, and ranks
//! the pieces from its state (LRU: nothing; elevator: which chunks are still arriving;
//! relevance: [`RelevanceRanking`], keepRelevance; mixed: [`NextUseOrder`], predicted
//! next use; the pbm family: its bucket timeline). A scan registered `InOrder` gets its chunks ascending under
//! every policy: the ABM, not the policy, enforces it in delivery.

mod attach;
mod elevator;
mod keep_ranking;
mod mixed;
pub mod next_use;
mod normal;
mod pbm;
mod pbm_lru;
mod pbm_opportunistic;
mod pbm_throttle;
mod relevance;
mod sequential;

pub use attach::AttachPolicy;
pub use elevator::ElevatorPolicy;
pub use keep_ranking::{ClassGroup, RelevanceRanking};
pub use mixed::MixedPolicy;
pub use next_use::NextUseOrder;
pub use normal::NormalPolicy;
pub use pbm::PbmPolicy;
pub use pbm_opportunistic::{PbmOpportunisticPolicy, REGION_CHUNKS};
pub use pbm_throttle::{PbmThrottlePolicy, HOLD_MAX_PACES, THROTTLE_MAX_SHARE};
pub use relevance::RelevancePolicy;
pub use relevance::{keep_relevance, query_relevance, use_relevance};

use crate::{
    AbmConfig, AbmState, ChunkId, EvictionRequest, Nanos, PieceId, ScanSlot, TableGeometry,
};
use std::fmt;
use std::str::FromStr;

/// A load the policy wants: `chunk`, after evicting `victims` (chosen by its replacer
/// with [`crate::plan_eviction`] over the policy's ranking, so that the load's bytes
/// fit).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoadChoice {
    pub chunk: ChunkId,
    /// Column bits to load (absent ones only; NSM/PAX: the whole chunk).
    pub cols: u64,
    pub victims: Vec<PieceId>,
    /// The scan whose need triggered this load (for per-query I/O accounting).
    pub on_behalf_of: Option<ScanSlot>,
}

/// A scheduling policy.
///
/// The ABM guarantees: every call sees a consistent state; `choose_available` is only
/// called for an active scan with a worker that holds no chunk and a chunk not yet
/// handed out; `on_admit` runs after the scan's interest is in the state, `on_retire`
/// before it is removed.
///
/// The policy MUST: return from `choose_available` only a resident chunk the scan needs
/// and none of its workers holds;
/// return from `choose_load` only an absent chunk and victims that are resident,
/// unpinned and free enough bytes for it. The ABM asserts both.
pub trait Policy {
    fn kind(&self) -> PolicyKind;

    fn on_admit(&mut self, _state: &AbmState, _slot: ScanSlot) {}

    fn on_retire(&mut self, _state: &AbmState, _slot: ScanSlot) {}

    /// Paper: chooseAvailableChunk. Which resident chunk the scan should process next.
    fn choose_available(&mut self, state: &AbmState, slot: ScanSlot) -> Option<ChunkId>;

    fn on_delivered(&mut self, _state: &AbmState, _slot: ScanSlot, _chunk: ChunkId) {}

    /// Throttling (2012 paper §5, "PBM Attach & Throttle"): asked by
    /// [`crate::Abm::next_chunk_paced`] before it delivers to a scan that holds no chunk
    /// and still needs one. `Some(until)` with `until > now` withholds every delivery
    /// to the scan until `until` (the driver asks again then); the policy must bound
    /// how long and how often it does so, so that no scan starves.
    fn hold(&mut self, _state: &AbmState, _slot: ScanSlot, _now: Nanos) -> Option<Nanos> {
        None
    }

    /// Paper: the ABM main loop body. What to load next and where, or nothing now.
    fn choose_load(&mut self, state: &AbmState, now: Nanos) -> Option<LoadChoice>;

    /// Asked only when [`Policy::choose_load`] wants nothing and no load runs (in any
    /// table of a catalog): a load for a scan that is not starved yet, evicting nothing
    /// an active scan needs, so that an idle disk works ahead. `None` (the default) keeps
    /// the disk idle until a scan starves.
    fn choose_prefetch(&mut self, _state: &AbmState, _now: Nanos) -> Option<LoadChoice> {
        None
    }

    /// Room for another table's load under a budget several tables share
    /// (`catalog.rs`): pieces of this table, in the order this policy evicts its own,
    /// until they free `request.bytes` or nothing more may go now (possibly none). The
    /// policy forgets what it returns: the ABM evicts every one. LRU unless the policy
    /// ranks its pieces otherwise.
    fn victims(
        &mut self,
        state: &AbmState,
        request: &EvictionRequest,
        _now: Nanos,
    ) -> Vec<PieceId> {
        free_some(&mut crate::LruReplacer, state.pool(), &(), request)
    }
}

/// Victims from `replacer` over `ranking` until they free `request.bytes` (whatever is
/// free already), or the replacer has none left: [`Policy::victims`] for a replacer.
pub(crate) fn free_some<R: ?Sized, P: crate::Replacer<R> + ?Sized>(
    replacer: &mut P,
    pool: &crate::Pool,
    ranking: &R,
    request: &EvictionRequest,
) -> Vec<PieceId> {
    let mut chosen = Vec::new();
    let mut freed = 0u64;
    while freed < request.bytes {
        let Some(victim) = replacer.victim(pool, ranking, request, &chosen) else {
            break;
        };
        debug_assert!(pool.is_evictable(victim) && !chosen.contains(&victim));
        freed = freed.saturating_add(pool.bytes(victim).unwrap_or(0));
        chosen.push(victim);
    }
    chosen
}

/// Policy names as used on the command line and in reports.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum PolicyKind {
    Normal,
    Attach,
    Elevator,
    Relevance,
    /// Predictive Buffer Management (2012 paper): in-order scans, evict by predicted
    /// next consumption.
    Pbm,
    /// PBM/LRU (2012 paper §3): PBM, with pieces no active scan wants on
    /// counter-rotating LRU buckets instead of one "not requested" bucket.
    #[serde(rename = "pbm-lru")]
    PbmLru,
    /// Scans and CScans in one pool with one temperature (2012 paper §2.3): relevance's
    /// scheduling, eviction by predicted next consumption whoever consumes a piece.
    Mixed,
    /// PBM Attach & Throttle (2012 paper §5): PBM; a scan that accepts any order
    /// attaches to a running one, and a scan is held back (bounded) while pages it just
    /// consumed would otherwise be evicted before a trailing scan reaches them.
    #[serde(rename = "pbm-throttle")]
    PbmThrottle,
    /// Opportunistic CScans (2012 paper §5): PBM's eviction; a scan that accepts any
    /// order moves by itself to the region of its remaining range with the most cached
    /// chunks, reading each region in order.
    #[serde(rename = "pbm-opportunistic")]
    PbmOpportunistic,
}

impl PolicyKind {
    pub const ALL: [PolicyKind; 9] = [
        PolicyKind::Normal,
        PolicyKind::Attach,
        PolicyKind::Elevator,
        PolicyKind::Relevance,
        PolicyKind::Pbm,
        PolicyKind::PbmLru,
        PolicyKind::Mixed,
        PolicyKind::PbmThrottle,
        PolicyKind::PbmOpportunistic,
    ];

    /// The 2007 paper's four policies (its tables and figures compare these).
    pub const PAPER_2007: [PolicyKind; 4] = [
        PolicyKind::Normal,
        PolicyKind::Attach,
        PolicyKind::Elevator,
        PolicyKind::Relevance,
    ];

    pub fn name(self) -> &'static str {
        match self {
            PolicyKind::Normal => "normal",
            PolicyKind::Attach => "attach",
            PolicyKind::Elevator => "elevator",
            PolicyKind::Relevance => "relevance",
            PolicyKind::Pbm => "pbm",
            PolicyKind::PbmLru => "pbm-lru",
            PolicyKind::Mixed => "mixed",
            PolicyKind::PbmThrottle => "pbm-throttle",
            PolicyKind::PbmOpportunistic => "pbm-opportunistic",
        }
    }
}

impl fmt::Display for PolicyKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
#[error("unknown policy {0:?}; expected one of normal, attach, elevator, relevance, pbm, pbm-lru, mixed, pbm-throttle, pbm-opportunistic")]
pub struct UnknownPolicy(pub String);

impl FromStr for PolicyKind {
    type Err = UnknownPolicy;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        PolicyKind::ALL
            .into_iter()
            .find(|k| k.name().eq_ignore_ascii_case(s.trim()))
            .ok_or_else(|| UnknownPolicy(s.to_string()))
    }
}

/// Any policy, chosen at run time (CLI, simulator, benchmarks). Dispatch is one `match`
/// per decision; code that fixes the policy at compile time uses `Abm<RelevancePolicy>`.
#[derive(Clone, Debug)]
pub enum AnyPolicy {
    Normal(NormalPolicy),
    Attach(AttachPolicy),
    Elevator(ElevatorPolicy),
    Relevance(RelevancePolicy),
    /// Boxed: the timeline makes it much larger than the others. Also PBM/LRU (its
    /// `kind()` tells them apart).
    Pbm(Box<PbmPolicy>),
    Mixed(MixedPolicy),
    PbmThrottle(Box<PbmThrottlePolicy>),
    PbmOpportunistic(Box<PbmOpportunisticPolicy>),
}

impl AnyPolicy {
    /// The policy of `kind`, built for a table of `geometry` and a buffer of `config`
    /// (so a policy may size its state or carry knowledge of the table).
    pub fn new(kind: PolicyKind, geometry: &TableGeometry, config: &AbmConfig) -> Self {
        match kind {
            PolicyKind::Normal => AnyPolicy::Normal(NormalPolicy::new(geometry, config)),
            PolicyKind::Attach => AnyPolicy::Attach(AttachPolicy::new(geometry, config)),
            PolicyKind::Elevator => AnyPolicy::Elevator(ElevatorPolicy::new(geometry, config)),
            PolicyKind::Relevance => AnyPolicy::Relevance(RelevancePolicy::new(geometry, config)),
            PolicyKind::Pbm => AnyPolicy::Pbm(Box::new(PbmPolicy::new(geometry, config))),
            PolicyKind::PbmLru => AnyPolicy::Pbm(Box::new(PbmPolicy::with_lru(geometry, config))),
            PolicyKind::Mixed => AnyPolicy::Mixed(MixedPolicy::new(geometry, config)),
            PolicyKind::PbmThrottle => {
                AnyPolicy::PbmThrottle(Box::new(PbmThrottlePolicy::new(geometry, config)))
            }
            PolicyKind::PbmOpportunistic => {
                AnyPolicy::PbmOpportunistic(Box::new(PbmOpportunisticPolicy::new(geometry, config)))
            }
        }
    }
}

impl fmt::Display for AnyPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.kind().fmt(f)
    }
}

macro_rules! dispatch {
    ($self:ident, $p:ident => $e:expr) => {
        match $self {
            AnyPolicy::Normal($p) => $e,
            AnyPolicy::Attach($p) => $e,
            AnyPolicy::Elevator($p) => $e,
            AnyPolicy::Relevance($p) => $e,
            AnyPolicy::Pbm($p) => $e,
            AnyPolicy::Mixed($p) => $e,
            AnyPolicy::PbmThrottle($p) => $e,
            AnyPolicy::PbmOpportunistic($p) => $e,
        }
    };
}

impl Policy for AnyPolicy {
    fn kind(&self) -> PolicyKind {
        dispatch!(self, p => p.kind())
    }
    fn on_admit(&mut self, state: &AbmState, slot: ScanSlot) {
        dispatch!(self, p => p.on_admit(state, slot))
    }
    fn on_retire(&mut self, state: &AbmState, slot: ScanSlot) {
        dispatch!(self, p => p.on_retire(state, slot))
    }
    fn choose_available(&mut self, state: &AbmState, slot: ScanSlot) -> Option<ChunkId> {
        dispatch!(self, p => p.choose_available(state, slot))
    }
    fn on_delivered(&mut self, state: &AbmState, slot: ScanSlot, chunk: ChunkId) {
        dispatch!(self, p => p.on_delivered(state, slot, chunk))
    }
    fn hold(&mut self, state: &AbmState, slot: ScanSlot, now: Nanos) -> Option<Nanos> {
        dispatch!(self, p => p.hold(state, slot, now))
    }
    fn choose_load(&mut self, state: &AbmState, now: Nanos) -> Option<LoadChoice> {
        dispatch!(self, p => p.choose_load(state, now))
    }
    fn choose_prefetch(&mut self, state: &AbmState, now: Nanos) -> Option<LoadChoice> {
        dispatch!(self, p => p.choose_prefetch(state, now))
    }
    fn victims(&mut self, state: &AbmState, request: &EvictionRequest, now: Nanos) -> Vec<PieceId> {
        dispatch!(self, p => p.victims(state, request, now))
    }
}

/// Victims that make room for the `cols` of `chunk` under `replacer` over `ranking`, as
/// a [`LoadChoice`].
pub(crate) fn choice_with<R: ?Sized, P: crate::Replacer<R>>(
    state: &AbmState,
    replacer: &mut P,
    ranking: &R,
    chunk: ChunkId,
    cols: u64,
    on_behalf_of: Option<ScanSlot>,
) -> Option<LoadChoice> {
    choice_planned(state, chunk, cols, on_behalf_of, Widen::Own, |request| {
        crate::plan_eviction(replacer, state.pool(), ranking, request)
    })
}

/// Which columns a load of a tiled (CSM) chunk takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Widen {
    /// The columns the policy chose.
    Own,
    /// Also those of their page schemas that scans still needing the chunk read
    /// ([`AbmState::load_cols`]). Only for a policy whose eviction keeps a chunk's
    /// pieces while scans still need them (relevance's keepRelevance), so the columns
    /// loaded for other scans are still there when those scans come: under normal's
    /// LRU they were evicted first (Table 4's overlapping families on CSM: 1.2-1.8 × the
    /// bytes and 1.1-1.8 × the stream time; docs/performance.md).
    PageSchema,
}

/// The load of `cols` of `chunk`, with the victims `plan` finds room with (given the
/// request, for rankings that depend on it, as keepRelevance's does). With
/// [`Widen::PageSchema`], on a tiled table (CSM) the load takes the columns of `cols`'
/// page schemas too ([`AbmState::load_cols`]) when there is room for them, `cols`
/// alone otherwise.
pub(crate) fn choice_planned(
    state: &AbmState,
    chunk: ChunkId,
    cols: u64,
    on_behalf_of: Option<ScanSlot>,
    widen: Widen,
    mut plan: impl FnMut(&crate::EvictionRequest) -> Option<Vec<crate::PieceId>>,
) -> Option<LoadChoice> {
    debug_assert!(cols != 0 && state.missing_cols(chunk, cols) == cols);
    let wider = match widen {
        Widen::PageSchema => state.load_cols(chunk, cols),
        Widen::Own => cols,
    };
    let mut tries = vec![wider];
    if wider != cols {
        tries.push(cols);
    }
    tries.into_iter().find_map(|cols| {
        let request = crate::EvictionRequest {
            bytes: state.bytes_of(chunk, cols),
            chunk: Some(chunk),
            for_scan: on_behalf_of,
        };
        let victims = plan(&request)?;
        Some(LoadChoice {
            chunk,
            cols,
            victims,
            on_behalf_of,
        })
    })
}

/// A chunk of `class` that a scan reading `cols` can process now: a fully resident one,
/// else (DSM) a partially resident one with all of `cols`.
pub(crate) fn available_in(
    state: &AbmState,
    class: &crate::ChunkClass,
    scan: &crate::ScanState,
) -> Option<ChunkId> {
    let (cols, free) = (scan.cols, |c: &&ChunkId| !scan.holds(**c));
    let available = class.resident().iter().find(free).copied().or_else(|| {
        class
            .partial_with(cols)
            .filter_map(|set| set.iter().find(free).copied())
            .min()
    });
    debug_assert!(available.is_none_or(|c| state.available_for(c, cols)));
    available
}

/// [`next_cyclic_where`] among the chunks no worker of `scan` processes: a scan gets each
/// chunk once, so one worker never takes what another holds.
pub(crate) fn next_cyclic_free(
    set: &std::collections::BTreeSet<ChunkId>,
    from: ChunkId,
    scan: &crate::ScanState,
) -> Option<ChunkId> {
    next_cyclic_where(set, from, |c| !scan.holds(c))
}

/// The first chunk of `set` at or after `from`, wrapping around, that satisfies `keep`:
/// the chunk the disk head reaches first when it moves forward (locality tie-break
/// shared by several policies).
pub(crate) fn next_cyclic_where(
    set: &std::collections::BTreeSet<ChunkId>,
    from: ChunkId,
    keep: impl Fn(ChunkId) -> bool,
) -> Option<ChunkId> {
    set.range(from..)
        .chain(set.range(..from))
        .copied()
        .find(|c| keep(*c))
}

/// Forward distance from `from` to `to` on a table of `n` chunks.
pub(crate) fn cyclic_distance(from: ChunkId, to: ChunkId, n: u32) -> u32 {
    if to.0 >= from.0 {
        to.0 - from.0
    } else {
        n - from.0 + to.0
    }
}
