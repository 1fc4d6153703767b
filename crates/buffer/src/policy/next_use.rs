//! One temperature for Scans and CScans (2012 paper §2.3, proposed there, never built):
//! evict the piece whose predicted next consumption is furthest, whoever consumes it.
//!
//! ```text
//! next use(piece) = min over active scans s that need the piece's chunk and column of
//!     last delivery(s) + pace(s) × ahead(s, chunk) − now
//! ahead, in-order scan (Scan):  chunk's position in s's ascending order − s's position
//!                               (PBM's distance)
//! ahead, any-order scan (CScan): the chunk's rank among the resident chunks s needs, in
//!                               the order useRelevance hands them out (fewest
//!                               interested scans first, then lowest chunk): "sorting
//!                               chunks by the score allows to determine expected order
//!                               of consumption" (§2.3); chunks it needs that are not
//!                               resident come after all of those
//! pace(s) = time since registration ÷ chunks delivered (PBM's observed speed)
//! ```
//!
//! (The prediction itself is `next_consumption.rs`, shared with PBM and the replay.)
//!
//! Pieces no active scan needs go first, least recently used first. This is mixed's
//! ranking, not a replacer: [`NextUseOrder`] hands it to the `OrderReplacer`
//! (`replacer/order.rs`), which walks it to the first piece that may go. It is computed
//! once per decision, on the first victim asked for (so a load that fits costs
//! nothing): O(pieces × scans) plus a sort per CScan of its resident chunks — fine for
//! the simulator and for pools of hundreds of chunks, not yet the O(1) bucket timeline
//! PBM uses.

use super::use_relevance;
use crate::next_consumption::{self, Paces};
use crate::replacer::EvictionOrder;
use crate::{AbmState, ChunkId, Nanos, PieceId, ScanOrder, ScanSlot};
use std::cell::OnceCell;
use std::collections::HashMap;

/// Pieces by predicted next consumption, for one decision (see the module docs).
#[derive(Debug)]
pub struct NextUseOrder<'a> {
    state: &'a AbmState,
    paces: Paces<'a>,
    now: Nanos,
    /// [`ranking`], computed when first walked.
    order: OnceCell<Vec<PieceId>>,
}

impl<'a> NextUseOrder<'a> {
    pub fn new(state: &'a AbmState, paces: Paces<'a>, now: Nanos) -> Self {
        NextUseOrder {
            state,
            paces,
            now,
            order: OnceCell::new(),
        }
    }
}

impl EvictionOrder for NextUseOrder<'_> {
    fn eviction_order(&self) -> impl Iterator<Item = PieceId> + '_ {
        self.order
            .get_or_init(|| ranking(self.state, self.paces, self.now))
            .iter()
            .copied()
    }
}

/// Evictable pieces in eviction order: no next use first (least recently used first),
/// then the latest next use first.
pub fn ranking(state: &AbmState, paces: Paces<'_>, now: Nanos) -> Vec<PieceId> {
    let ranks = cscan_ranks(state);
    let mut keyed: Vec<(Option<Nanos>, usize, PieceId)> = state
        .pool()
        .lru()
        .enumerate()
        .map(|(recency, p)| (next_use(state, &ranks, paces, now, p), recency, p))
        .collect();
    // None (never) sorts before every time; among times, the latest first; ties: LRU.
    keyed.sort_by_key(|&(due, recency, _)| match due {
        None => (0, 0, recency),
        Some(t) => (1, u64::MAX - t.0, recency),
    });
    keyed.into_iter().map(|(_, _, p)| p).collect()
}

/// For every active any-order scan: the rank of each resident chunk it needs in the
/// order it will be handed them (useRelevance), and how many there are.
type Ranks = HashMap<ScanSlot, (HashMap<ChunkId, u32>, u32)>;

fn cscan_ranks(state: &AbmState) -> Ranks {
    let mut ranks = Ranks::new();
    for slot in state.active_slots() {
        if state.active_scan(slot).order == ScanOrder::InOrder {
            continue;
        }
        let mut chunks: Vec<(std::cmp::Reverse<u32>, ChunkId)> = state
            .classes()
            .filter(|c| c.mask().contains(slot))
            .flat_map(|c| {
                let score = std::cmp::Reverse(use_relevance(c.mask()));
                c.resident().iter().map(move |&chunk| (score, chunk))
            })
            .collect();
        chunks.sort_unstable();
        let count = chunks.len() as u32;
        let rank = chunks
            .into_iter()
            .enumerate()
            .map(|(i, (_, c))| (c, i as u32))
            .collect();
        ranks.insert(slot, (rank, count));
    }
    ranks
}

/// Time from `now` until the earliest active scan consumes `piece`, or `None`.
fn next_use(
    state: &AbmState,
    ranks: &Ranks,
    paces: Paces<'_>,
    now: Nanos,
    piece: PieceId,
) -> Option<Nanos> {
    let bit = state.col_bit(piece);
    state
        .interest(piece.chunk)
        .iter()
        .filter_map(|slot| {
            let scan = state.active_scan(slot);
            if scan.cols & bit == 0 {
                return None;
            }
            let ahead = match scan.order {
                ScanOrder::InOrder => {
                    let at = scan.chunks.len() - scan.needed;
                    scan.chunks.position(piece.chunk)?.checked_sub(at)?
                }
                ScanOrder::Any => {
                    let (rank, count) = ranks.get(&slot)?;
                    rank.get(&piece.chunk).copied().unwrap_or(*count)
                }
            };
            let due = next_consumption::due(scan.last_served, paces.of(slot), ahead);
            Some(due.saturating_sub(now))
        })
        .min()
}
