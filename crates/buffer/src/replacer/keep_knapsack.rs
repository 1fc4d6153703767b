//! Knapsack eviction by keepRelevance (relevance with `EvictionStrategy::Knapsack`):
//! the 2007 paper's footnote built. Same protection as the greedy keepRelevance
//! replacer (never a piece in use, of the loading chunk, of a protected in-order
//! window, or of a chunk a starved scan or the loading scan can use now), and the same
//! first step (pieces of columns no scan needs for their chunk cost nothing). Then,
//! instead of one lowest-`E/Pe` piece at a time, the set of pieces that loses the least
//! keepRelevance-weighted value: a scan's weight is `Qmax` when it is almost starved,
//! else 1 (Figure 3's keepRelevance), and it is lost when any column it reads goes
//! (`knapsack.rs`).
//!
//! Candidates are bounded so a decision stays cheap: groups (relevance: equivalence
//! classes) are visited by the loss of a whole chunk of theirs (keepRelevance of their
//! scan set), each offering its [`PER_CLASS`] least recently used unguarded chunks with
//! an evictable piece (chunks of a group differ only in their resident columns; found
//! as the greedy finds its LRU
//! ties, `Context::least_recent`), until [`MAX_GROUPS`] chunks are offered; the solver
//! sees them by their cheapest option's loss (least recently used first on ties). If they
//! cannot free enough, the greedy plan is used, so the knapsack never blocks a load the
//! greedy loop would make.
//!
//! What only the scheduler knows (groups, their scans and weights, what is held or
//! guarded) comes from the policy's [`KeepRanking`], as for the greedy replacer.

use super::keep_relevance::Context;
use super::knapsack::{self, Candidate, EvictOption};
use super::{plan_eviction, EvictionRequest, KeepRanking, KeepRelevanceReplacer};
use crate::{ChunkId, PieceId, Pool};

/// Chunks per group offered to the knapsack.
pub const PER_CLASS: usize = 4;
/// Chunks offered to the knapsack in all.
pub const MAX_GROUPS: usize = 32;

/// The victims that make `request` fit, chosen as a set; `None` when nothing can.
pub fn plan_knapsack<K: KeepRanking>(
    pool: &Pool,
    ranking: &K,
    request: &EvictionRequest,
) -> Option<Vec<PieceId>> {
    let mut free = pool.free_bytes();
    let mut chosen = Vec::new();
    while free < request.bytes {
        let ctx = Context {
            pool,
            ranking,
            request,
            chosen: &chosen,
        };
        let Some(spare) = ctx.unneeded_piece() else {
            break;
        };
        free = free.saturating_add(pool.bytes(spare)?);
        chosen.push(spare);
    }
    if free >= request.bytes {
        return Some(chosen);
    }
    let need = request.bytes - free;
    let ctx = Context {
        pool,
        ranking,
        request,
        chosen: &chosen,
    };
    let (offered, complete) = candidates(&ctx);
    let freeable = offered
        .iter()
        .flat_map(|o| o.candidate.evictable.iter())
        .fold(0u64, |a, (_, b)| a.saturating_add(*b));
    if complete && freeable < need {
        // Every evictable piece was offered: the greedy loop cannot free more.
        return None;
    }
    let planned = (freeable >= need)
        .then(|| {
            let (pieces, described, groups) = split(offered);
            let picked = knapsack::plan_with(&described, &groups, need)?;
            Some((pieces, picked))
        })
        .flatten();
    let Some((pieces, picked)) = planned else {
        return plan_eviction(&mut KeepRelevanceReplacer, pool, ranking, request);
    };
    // A pick's columns are among its candidate's evictable ones, each one piece.
    chosen.extend(
        picked
            .into_iter()
            .filter_map(|(k, col)| pieces[k].iter().find(|(_, c)| *c == col))
            .map(|(piece, _)| *piece),
    );
    Some(chosen)
}

/// A chunk offered to the knapsack: its evictable pieces with their column numbers,
/// described as a [`Candidate`], and the candidate's options.
struct Offered {
    chunk: ChunkId,
    pieces: Vec<(PieceId, u32)>,
    candidate: Candidate,
    options: Vec<EvictOption>,
}

type Split = (
    Vec<Vec<(PieceId, u32)>>,
    Vec<Candidate>,
    Vec<Vec<EvictOption>>,
);

fn split(offered: Vec<Offered>) -> Split {
    let mut out = (Vec::new(), Vec::new(), Vec::new());
    for o in offered {
        out.0.push(o.pieces);
        out.1.push(o.candidate);
        out.2.push(o.options);
    }
    out
}

/// The chunks offered to the knapsack, described, with their options (see the module
/// doc). Groups are visited cheapest first by the loss of a whole chunk of them (Figure
/// 3's keepRelevance of their scan set, O(1) per group), and the walk stops once
/// [`MAX_GROUPS`] chunks are offered, so a decision does not describe every group.
/// `complete` when every unguarded chunk with an evictable piece was offered.
fn candidates<K: KeepRanking>(ctx: &Context<'_, K>) -> (Vec<Offered>, bool) {
    let ranking = ctx.ranking;
    let mut groups: Vec<(u32, K::Group)> = ranking
        .groups()
        .map(|g| (ranking.keep_whole(g), g))
        .collect();
    groups.sort_by_key(|(key, _)| *key);
    let mut ranked: Vec<(u64, u64, Offered)> = Vec::new();
    let mut complete = true;
    for (_, group) in groups {
        if ranked.len() >= MAX_GROUPS {
            complete = false;
            break;
        }
        complete &= offer_group(ctx, group, &mut ranked);
    }
    complete &= ranked.len() <= MAX_GROUPS;
    ranked.sort_by_key(|(loss, oldest, o)| (*loss, *oldest, o.chunk));
    ranked.truncate(MAX_GROUPS);
    let offered = ranked.into_iter().map(|(_, _, offered)| offered).collect();
    (offered, complete)
}

/// The [`PER_CLASS`] least recently used unguarded chunks of `group` with an evictable
/// piece (by their least recently used evictable piece), ranked by their cheapest
/// option's loss and that piece. False if the group has more such chunks than it
/// offered. (The first version offered the group's first chunks by id, so among
/// chunks nobody needs the knapsack too kept stale high chunks and evicted the ones a
/// finished scan had just read, `tests/keep_relevance_ties.rs`.)
fn offer_group<K: KeepRanking>(
    ctx: &Context<'_, K>,
    group: K::Group,
    ranked: &mut Vec<(u64, u64, Offered)>,
) -> bool {
    let (pool, ranking) = (ctx.pool, ctx.ranking);
    let size = ranking.span(group);
    let walk = ranking.chunks(group).flat_map(|ch| ranking.pieces(ch));
    let in_set = |p: PieceId| ranking.member(p.chunk) == Some(group);
    // Chunks nobody needs hold only spare pieces, which the pool also keeps in LRU order.
    let lru: Box<dyn Iterator<Item = PieceId>> = if ranking.unneeded(group) {
        Box::new(pool.spare_lru())
    } else {
        Box::new(pool.lru())
    };
    let oldest = ctx.least_recent(size, walk, lru, in_set, PER_CLASS + 1, true);
    let mut scans: Option<Vec<(u64, u64)>> = None;
    for piece in oldest.iter().take(PER_CLASS) {
        let chunk = piece.chunk;
        let Some(used) = pool.last_use(*piece) else {
            continue;
        };
        let pieces: Vec<(PieceId, u32)> = ranking
            .pieces(chunk)
            .filter(|p| ctx.evictable(*p))
            .map(|p| (p, ranking.column(p)))
            .collect();
        let evictable: Vec<(u32, u64)> = pieces
            .iter()
            .filter_map(|&(p, col)| Some((col, pool.bytes(p)?)))
            .collect();
        let scans = scans.get_or_insert_with(|| ranking.scans(group));
        let candidate = Candidate {
            evictable,
            scans: scans.clone(),
        };
        let options = knapsack::options(&candidate);
        let Some(cheapest) = options.iter().map(|o| o.loss).min() else {
            continue;
        };
        let offered = Offered {
            chunk,
            pieces,
            candidate,
            options,
        };
        ranked.push((cheapest, used, offered));
    }
    oldest.len() <= PER_CLASS
}
