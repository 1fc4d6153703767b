//! Knapsack eviction (2007 paper §6.2, footnote 1): "if multiple chunks need to be
//! freed, the dependency between them should be taken into account, something missed
//! by the greedy iterative approach ... Choosing the optimal set of chunks to free is a
//! good example of a knapsack problem."
//!
//! Pure functions, no ABM state: the caller (`keep_knapsack.rs`) describes each
//! candidate chunk as a [`Candidate`] — its evictable columns with their bytes, and the
//! scans that still need the chunk with their keepRelevance weight — and gets back the
//! pieces to evict.
//!
//! The value lost by evicting a set of columns of a chunk is the summed weight of the
//! scans that read any of them: such a scan can no longer process the chunk without a
//! reload, however many of its columns go. That dependency is what makes this a
//! knapsack and not a sort. For each chunk only "closed" choices matter: for a set `A`
//! of the scans to sacrifice, evict every evictable column no other scan reads (more
//! bytes at the same loss). [`options`] lists them; [`min_loss_cover`] picks at most
//! one option per chunk (a multiple-choice covering knapsack) minimising (loss, bytes)
//! with enough bytes freed; [`trim`] then drops pieces the cover does not need.
//!
//! The solver keeps the Pareto frontier of partial solutions (bytes freed, capped at
//! the need; cost), so it is exact for any sizes; the frontier never holds more states
//! than there are distinct costs, and [`MAX_FRONTIER`] bounds it (see there).

/// Scans (column sets) per chunk up to which every subset is an option; above it the
/// options are nested (lightest scans sacrificed first), which is exact only for the
/// lightest prefixes. 4 covers every Table 4 family.
pub const MAX_EXACT_SCAN_SETS: usize = 4;

/// Partial solutions kept per step. The frontier holds one state per distinct cost
/// (loss, bytes) at most, so this only binds on many candidates with many distinct
/// weights; then the costliest states are dropped (the result stays a valid cover).
pub const MAX_FRONTIER: usize = 4096;

/// A chunk that may lose pieces: its evictable columns and who would miss them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Candidate {
    /// (column bit number, bytes) of each evictable resident piece.
    pub evictable: Vec<(u32, u64)>,
    /// (column bits read, weight) of each scan that still needs the chunk.
    pub scans: Vec<(u64, u64)>,
}

/// One way to take pieces from a chunk.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EvictOption {
    /// Column bits evicted.
    pub cols: u64,
    pub bytes: u64,
    /// Summed weight of the scans reading any evicted column.
    pub loss: u64,
}

impl Candidate {
    /// Bytes of the evictable columns in `cols`.
    pub fn bytes_of(&self, cols: u64) -> u64 {
        self.evictable
            .iter()
            .filter(|(c, _)| cols >> c & 1 == 1)
            .fold(0, |a, (_, b)| a.saturating_add(*b))
    }

    /// The value lost by evicting `cols`: weight of the scans reading any of them.
    pub fn loss_of(&self, cols: u64) -> u64 {
        self.scans
            .iter()
            .filter(|(read, _)| read & cols != 0)
            .fold(0, |a, (_, w)| a.saturating_add(*w))
    }

    fn evictable_cols(&self) -> u64 {
        self.evictable.iter().fold(0, |a, (c, _)| a | 1u64 << c)
    }
}

/// The closed eviction options of a chunk (see the module doc), without the empty one.
pub fn options(candidate: &Candidate) -> Vec<EvictOption> {
    let evictable = candidate.evictable_cols();
    // Scans with the same columns fall together; scans that lose nothing here are out.
    let mut sets: Vec<(u64, u64)> = Vec::new();
    for &(cols, w) in &candidate.scans {
        if cols & evictable == 0 {
            continue;
        }
        match sets.iter_mut().find(|(c, _)| *c == cols) {
            Some((_, total)) => *total = total.saturating_add(w),
            None => sets.push((cols, w)),
        }
    }
    sets.sort_by_key(|&(cols, w)| (w, cols));
    let sacrificed: Vec<u64> = if sets.len() <= MAX_EXACT_SCAN_SETS {
        (0..1u64 << sets.len()).collect()
    } else {
        (0..=sets.len()).map(|k| (1u64 << k) - 1).collect()
    };
    let mut out: Vec<EvictOption> = Vec::new();
    for lost in sacrificed {
        let kept = sets
            .iter()
            .enumerate()
            .filter(|(i, _)| lost >> i & 1 == 0)
            .fold(0, |a, (_, (cols, _))| a | cols);
        let cols = evictable & !kept;
        if cols == 0 || out.iter().any(|o| o.cols == cols) {
            continue;
        }
        out.push(EvictOption {
            cols,
            bytes: candidate.bytes_of(cols),
            loss: candidate.loss_of(cols),
        });
    }
    out
}

/// A partial solution: bytes freed (capped at the need), cost, and the picks.
#[derive(Clone)]
struct State {
    freed: u64,
    cost: (u64, u64),
    picks: Vec<(usize, usize)>,
}

/// At most one option per group so that the bytes sum to at least `need`, with the
/// least (loss, bytes); `None` if even every group's largest option falls short. The
/// picks are (group, option) indices, ascending by group. Ties go to the earlier
/// groups and options.
pub fn min_loss_cover(groups: &[Vec<EvictOption>], need: u64) -> Option<Vec<(usize, usize)>> {
    let mut frontier = vec![State {
        freed: 0,
        cost: (0, 0),
        picks: Vec::new(),
    }];
    for (g, group) in groups.iter().enumerate() {
        let mut next = frontier.clone();
        for state in &frontier {
            if state.freed >= need {
                continue; // adding more only costs
            }
            for (o, option) in group.iter().enumerate() {
                let mut picks = state.picks.clone();
                picks.push((g, o));
                next.push(State {
                    freed: state.freed.saturating_add(option.bytes).min(need),
                    cost: (
                        state.cost.0.saturating_add(option.loss),
                        state.cost.1.saturating_add(option.bytes),
                    ),
                    picks,
                });
            }
        }
        frontier = pareto(next);
    }
    frontier
        .into_iter()
        .filter(|s| s.freed >= need)
        .min_by_key(|s| s.cost)
        .map(|s| s.picks)
}

/// Keeps the states no other state beats on both freed bytes (more) and cost (less).
/// The sort is stable, so among equal states the earliest (fewest late picks) stays.
fn pareto(mut states: Vec<State>) -> Vec<State> {
    states.sort_by(|a, b| b.freed.cmp(&a.freed).then(a.cost.cmp(&b.cost)));
    let mut best: Option<(u64, u64)> = None;
    states.retain(|s| {
        let keep = best.is_none_or(|b| s.cost < b);
        if keep {
            best = Some(s.cost);
        }
        keep
    });
    if states.len() > MAX_FRONTIER {
        // Sorted by freed descending: the tail frees least; the head still covers.
        states.truncate(MAX_FRONTIER);
    }
    states
}

/// Drops evicted pieces the cover does not need (largest first, while the rest still
/// frees `need`): never more loss, fewer bytes. `pieces` are (candidate, column bit).
pub fn trim(candidates: &[Candidate], pieces: &mut Vec<(usize, u32)>, need: u64) {
    let bytes = |&(k, col): &(usize, u32)| candidates[k].bytes_of(1u64 << col);
    let mut total: u64 = pieces.iter().map(bytes).fold(0, u64::saturating_add);
    let mut order: Vec<(usize, u32)> = pieces.clone();
    order.sort_by_key(|p| std::cmp::Reverse(bytes(p)));
    for p in order {
        let b = bytes(&p);
        if total.saturating_sub(b) >= need {
            total -= b;
            pieces.retain(|q| *q != p);
        }
    }
}

/// The pieces (candidate index, column bit) that free at least `need` bytes from
/// `candidates` with the least loss, then the fewest bytes; `None` if they cannot.
pub fn plan(candidates: &[Candidate], need: u64) -> Option<Vec<(usize, u32)>> {
    let groups: Vec<Vec<EvictOption>> = candidates.iter().map(options).collect();
    plan_with(candidates, &groups, need)
}

/// [`plan`] with each candidate's [`options`] already listed in `groups`.
pub fn plan_with(
    candidates: &[Candidate],
    groups: &[Vec<EvictOption>],
    need: u64,
) -> Option<Vec<(usize, u32)>> {
    let picks = min_loss_cover(groups, need)?;
    let mut pieces: Vec<(usize, u32)> = picks
        .into_iter()
        .flat_map(|(g, o)| {
            let cols = groups[g][o].cols;
            crate::state::bits(cols).map(move |col| (g, col))
        })
        .collect();
    trim(candidates, &mut pieces, need);
    Some(pieces)
}

#[cfg(test)]
mod tests;
