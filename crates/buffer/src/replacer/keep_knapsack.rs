//! Knapsack eviction on the ABM state (relevance with `EvictionStrategy::Knapsack`):
//! the 2007 paper's footnote built. Same protection as the greedy keepRelevance
//! replacer (never a piece in use, of the loading chunk, of a protected in-order
//! window, or of a chunk a starved scan or the loading scan can use now), and the same
//! first step (pieces of columns no scan needs for their chunk cost nothing). Then,
//! instead of one lowest-`E/Pe` piece at a time, the set of pieces that loses the least
//! keepRelevance-weighted value: a scan's weight is `Qmax` when it is almost starved,
//! else 1 (Figure 3's keepRelevance), and it is lost when any column it reads goes
//! (`knapsack.rs`).
//!
//! Candidates are bounded so a decision stays cheap: per equivalence class its first
//! [`PER_CLASS`] unguarded chunks with an evictable piece (chunks of a class differ only
//! in their resident columns), then the [`MAX_GROUPS`] whose cheapest option loses
//! least (least recently used first on ties). If those cannot free enough, the greedy
//! plan is used, so the knapsack never blocks a load the greedy loop would make.

use super::keep_relevance::Context;
use super::knapsack::{self, Candidate};
use super::{plan_eviction, EvictionRequest, KeepRelevanceReplacer};
use crate::config::MAX_SCANS;
use crate::state::bits;
use crate::{AbmState, ChunkId, PieceId};

/// Chunks per equivalence class offered to the knapsack.
pub const PER_CLASS: usize = 4;
/// Chunks offered to the knapsack in all.
pub const MAX_GROUPS: usize = 32;
/// Weight of an almost-starved scan (Figure 3's Qmax); other interested scans weigh 1.
const ALMOST_STARVED_WEIGHT: u64 = MAX_SCANS as u64;

/// The victims that make `request` fit, chosen as a set; `None` when nothing can.
pub fn plan_knapsack(state: &AbmState, request: &EvictionRequest) -> Option<Vec<PieceId>> {
    let pool = state.pool();
    let mut free = pool.free_bytes();
    let mut chosen = Vec::new();
    while free < request.bytes && state.columnar() {
        let Some(spare) = Context::new(state, request, &chosen).unneeded_piece() else {
            break;
        };
        free = free.saturating_add(pool.bytes(spare)?);
        chosen.push(spare);
    }
    if free >= request.bytes {
        return Some(chosen);
    }
    let need = request.bytes - free;
    let ctx = Context::new(state, request, &chosen);
    let chunks = candidates(&ctx);
    let described: Vec<Candidate> = chunks.iter().map(|(_, c)| c.clone()).collect();
    let Some(pieces) = knapsack::plan(&described, need) else {
        return plan_eviction(&mut KeepRelevanceReplacer, state, request);
    };
    chosen.extend(
        pieces
            .into_iter()
            .map(|(k, col)| state.piece_of(chunks[k].0, col)),
    );
    Some(chosen)
}

/// The chunks offered to the knapsack, described (see the module doc).
fn candidates(ctx: &Context<'_>) -> Vec<(ChunkId, Candidate)> {
    let state = ctx.state;
    let almost = state.almost_starved_mask();
    let mut out: Vec<(u64, u64, ChunkId, Candidate)> = Vec::new();
    for class in state.classes() {
        let scans: Vec<(u64, u64)> = class
            .mask()
            .iter()
            .map(|s| {
                let weight = if almost.contains(s) {
                    ALMOST_STARVED_WEIGHT
                } else {
                    1
                };
                (state.active_scan(s).cols, weight)
            })
            .collect();
        let described = ctx.unguarded(class).filter_map(|ch| {
            let evictable: Vec<(u32, u64)> = bits(state.resident_cols(ch))
                .map(|col| state.piece_of(ch, col))
                .filter(|p| ctx.evictable(*p))
                .map(|p| (state.col_bit(p).trailing_zeros(), state.piece_bytes(p)))
                .collect();
            let oldest = evictable
                .iter()
                .filter_map(|(col, _)| state.pool().last_use(state.piece_of(ch, *col)))
                .min()?;
            let candidate = Candidate {
                evictable,
                scans: scans.clone(),
            };
            let cheapest = knapsack::options(&candidate).iter().map(|o| o.loss).min()?;
            Some((cheapest, oldest, ch, candidate))
        });
        out.extend(described.take(PER_CLASS));
    }
    out.sort_by_key(|(loss, oldest, ch, _)| (*loss, *oldest, *ch));
    out.truncate(MAX_GROUPS);
    out.into_iter().map(|(_, _, ch, c)| (ch, c)).collect()
}
