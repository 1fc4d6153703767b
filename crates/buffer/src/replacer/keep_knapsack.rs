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
//! Candidates are bounded so a decision stays cheap: classes are visited by the loss of
//! a whole chunk of theirs (keepRelevance of their scan set), each offering its
//! [`PER_CLASS`] least recently used unguarded chunks with an evictable piece (chunks of
//! a class differ only in their resident columns; found as the greedy finds its LRU
//! ties, `Context::least_recent`), until [`MAX_GROUPS`] chunks are offered; the solver
//! sees them by their cheapest option's loss (least recently used first on ties). If they
//! cannot free enough, the greedy plan is used, so the knapsack never blocks a load the
//! greedy loop would make.

use super::keep_relevance::Context;
use super::knapsack::{self, Candidate, EvictOption};
use super::{plan_eviction, EvictionRequest, KeepRelevanceReplacer};
use crate::config::MAX_SCANS;
use crate::policy::keep_relevance;
use crate::state::bits;
use crate::{AbmState, ChunkClass, ChunkId, PieceId, ScanSet};

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
    while free < request.bytes {
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
    let (offered, complete) = candidates(&ctx);
    let freeable = offered
        .iter()
        .flat_map(|(_, c, _)| c.evictable.iter())
        .fold(0u64, |a, (_, b)| a.saturating_add(*b));
    if complete && freeable < need {
        // Every evictable piece was offered: the greedy loop cannot free more.
        return None;
    }
    let planned = (freeable >= need)
        .then(|| {
            let (chunks, described, groups) = split(offered);
            let pieces = knapsack::plan_with(&described, &groups, need)?;
            Some((chunks, pieces))
        })
        .flatten();
    let Some((chunks, pieces)) = planned else {
        return plan_eviction(&mut KeepRelevanceReplacer, state, request);
    };
    chosen.extend(
        pieces
            .into_iter()
            .map(|(k, col)| state.piece_of(chunks[k], col)),
    );
    Some(chosen)
}

type Offered = (ChunkId, Candidate, Vec<EvictOption>);

fn split(offered: Vec<Offered>) -> (Vec<ChunkId>, Vec<Candidate>, Vec<Vec<EvictOption>>) {
    let mut out = (Vec::new(), Vec::new(), Vec::new());
    for (chunk, candidate, options) in offered {
        out.0.push(chunk);
        out.1.push(candidate);
        out.2.push(options);
    }
    out
}

/// The chunks offered to the knapsack, described, with their options (see the module
/// doc). Classes are visited cheapest first by the loss of a whole chunk of them (Figure
/// 3's keepRelevance of their scan set, O(1) per class), and the walk stops once
/// [`MAX_GROUPS`] chunks are offered, so a decision does not describe every class.
/// `complete` when every unguarded chunk with an evictable piece was offered.
fn candidates(ctx: &Context<'_>) -> (Vec<Offered>, bool) {
    let state = ctx.state;
    let almost = state.almost_starved_mask();
    let mut classes: Vec<(u32, &ChunkClass)> = state
        .classes()
        .map(|c| (keep_relevance(c.mask(), almost), c))
        .collect();
    classes.sort_by_key(|(key, _)| *key);
    let mut ranked: Vec<(u64, u64, Offered)> = Vec::new();
    let mut complete = true;
    for (_, class) in classes {
        if ranked.len() >= MAX_GROUPS {
            complete = false;
            break;
        }
        complete &= offer_class(ctx, class, &mut ranked);
    }
    complete &= ranked.len() <= MAX_GROUPS;
    ranked.sort_by_key(|(loss, oldest, (ch, ..))| (*loss, *oldest, *ch));
    ranked.truncate(MAX_GROUPS);
    let offered = ranked.into_iter().map(|(_, _, offered)| offered).collect();
    (offered, complete)
}

/// The [`PER_CLASS`] least recently used unguarded chunks of `class` with an evictable
/// piece (by their least recently used evictable piece), ranked by their cheapest
/// option's loss and that piece. False if the class has more such chunks than it
/// offered. (The first version offered the class's first chunks by id, so among
/// chunks nobody needs the knapsack too kept stale high chunks and evicted the ones a
/// finished scan had just read, `tests/keep_relevance_ties.rs`.)
fn offer_class(
    ctx: &Context<'_>,
    class: &ChunkClass,
    ranked: &mut Vec<(u64, u64, Offered)>,
) -> bool {
    let state = ctx.state;
    let almost = state.almost_starved_mask();
    let mask = class.mask();
    let size = class.resident().len() + class.partial_len();
    let walk = ctx
        .unguarded(class)
        .flat_map(|ch| bits(state.resident_cols(ch)).map(move |col| state.piece_of(ch, col)));
    let in_set = |p: PieceId| state.interest(p.chunk) == mask && !ctx.guarded(mask, p.chunk);
    // Chunks nobody needs hold only spare pieces, which the pool also keeps in LRU order.
    let pool = state.pool();
    let lru: Box<dyn Iterator<Item = PieceId>> = if mask.is_empty() {
        Box::new(pool.spare_lru())
    } else {
        Box::new(pool.lru())
    };
    let oldest = ctx.least_recent(size, walk, lru, in_set, PER_CLASS + 1, true);
    let mut scans: Option<Vec<(u64, u64)>> = None;
    for piece in oldest.iter().take(PER_CLASS) {
        let ch = piece.chunk;
        let Some(used) = state.pool().last_use(*piece) else {
            continue;
        };
        let evictable: Vec<(u32, u64)> = bits(state.resident_cols(ch))
            .map(|col| state.piece_of(ch, col))
            .filter(|p| ctx.evictable(*p))
            .map(|p| (state.col_bit(p).trailing_zeros(), state.piece_bytes(p)))
            .collect();
        let scans = scans.get_or_insert_with(|| merged_scans(state, class, almost));
        let candidate = Candidate {
            evictable,
            scans: scans.clone(),
        };
        let options = knapsack::options(&candidate);
        let Some(cheapest) = options.iter().map(|o| o.loss).min() else {
            continue;
        };
        ranked.push((cheapest, used, (ch, candidate, options)));
    }
    oldest.len() <= PER_CLASS
}

/// The class's scans as (columns, summed weight), one entry per distinct column set.
fn merged_scans(state: &AbmState, class: &ChunkClass, almost: ScanSet) -> Vec<(u64, u64)> {
    let mut sets: Vec<(u64, u64)> = Vec::new();
    for s in class.mask().iter() {
        let cols = state.active_scan(s).cols;
        let weight = if almost.contains(s) {
            ALMOST_STARVED_WEIGHT
        } else {
            1
        };
        match sets.iter_mut().find(|(c, _)| *c == cols) {
            Some((_, w)) => *w = w.saturating_add(weight),
            None => sets.push((cols, weight)),
        }
    }
    sets
}
