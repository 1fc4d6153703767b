//! Our side of each sweep figure's finding: one sentence per query set, in the terms of
//! the paper's sentence (its caption), so the two can be read side by side.

use super::fig5_table::RELEVANCE;
use super::sweep::{FigureSpec, Group, Series};

/// A buffer of the whole table: every policy reads each chunk once, so the paper's
/// I/O claim is about the sizes below it.
const WHOLE_TABLE_PCT: f64 = 100.0;

fn series<'a>(group: &'a Group, policy: &str) -> Option<&'a Series> {
    group.series.iter().find(|s| s.policy == policy)
}

fn metric(spec: &FigureSpec, key: &str) -> Option<usize> {
    spec.metrics.iter().position(|m| m.key == key)
}

/// Figure 6: at how many buffer sizes below 100 % relevance reads least, and its
/// stream time beside the best other policy's at the smallest and largest of them.
pub fn fig6(spec: &FigureSpec, group: &Group) -> Option<String> {
    let (io, time) = (
        metric(spec, "io_requests")?,
        metric(spec, "avg_stream_time_s")?,
    );
    let relevance = series(group, RELEVANCE)?;
    let below: Vec<usize> = (0..group.xs.len())
        .filter(|&i| group.xs[i] < WHOLE_TABLE_PCT)
        .collect();
    let fewest = below
        .iter()
        .filter(|&&i| strictly_least(group, relevance, io, i))
        .count();
    let (first, last) = (*below.first()?, *below.last()?);
    let ratio = |i: usize| ratio_to_best_other(group, relevance, time, i);
    Some(format!(
        "relevance has the fewest I/O requests at {fewest} of {} buffer sizes below 100%; \
         its avg stream time ÷ the best other policy's is {} at {}% and {} at {}%",
        below.len(),
        show(ratio(first)),
        group.xs[first],
        show(ratio(last)),
        group.xs[last],
    ))
}

/// Figure 7: relevance's stream time ÷ normal's and ÷ attach's, at the fewest and
/// the most concurrent queries.
pub fn fig7(spec: &FigureSpec, group: &Group) -> Option<String> {
    let time = metric(spec, "avg_stream_time_s")?;
    let relevance = series(group, RELEVANCE)?;
    let (first, last) = (0, group.xs.len().checked_sub(1)?);
    let versus: Vec<String> = ["normal", "attach"]
        .iter()
        .filter_map(|&other| {
            let other = series(group, other)?;
            let at = |i: usize| Some(relevance.value(time, i)? / other.value(time, i)?);
            Some(format!(
                "÷ {} {} → {}",
                other.policy,
                show(at(first)),
                show(at(last))
            ))
        })
        .collect();
    if versus.is_empty() {
        return None;
    }
    Some(format!(
        "relevance's avg stream time from {} to {} streams: {}",
        group.xs[first],
        group.xs[last],
        versus.join(", ")
    ))
}

/// Figure 8: the largest share of a run spent scheduling, and by whom.
pub fn fig8(spec: &FigureSpec, group: &Group) -> Option<String> {
    let share = metric(spec, "scheduling_pct_of_run")?;
    let per_call = metric(spec, "scheduling_us_per_call")?;
    let worst = largest(group, share)?;
    let slowest = largest(group, per_call)?;
    Some(format!(
        "the largest scheduling share is {:.3}% of the run ({} at {} MB chunks); \
         the most per ABM call {:.2} µs ({} at {} MB)",
        worst.0, worst.1, worst.2, slowest.0, slowest.1, slowest.2
    ))
}

/// The 2012 paper's Figures 11-13: PBM's I/O requests ÷ LRU's (`normal`) and ÷
/// CScans' (`relevance`), at the first and the last point of the sweep.
pub fn pbm(spec: &FigureSpec, group: &Group) -> Option<String> {
    let io = metric(spec, "io_requests")?;
    let pbm = series(group, "pbm")?;
    let (first, last) = (0, group.xs.len().checked_sub(1)?);
    let versus: Vec<String> = [("normal", "LRU"), (RELEVANCE, "CScans")]
        .iter()
        .filter_map(|&(policy, name)| {
            let other = series(group, policy)?;
            let at = |i: usize| Some(pbm.value(io, i)? / other.value(io, i)?);
            Some(format!("÷ {name} {} → {}", show(at(first)), show(at(last))))
        })
        .collect();
    if versus.is_empty() {
        return None;
    }
    Some(format!(
        "PBM's I/O requests from {} {} to {}: {}",
        spec.x_short,
        group.xs[first],
        group.xs[last],
        versus.join(", ")
    ))
}

/// (value, policy, x) of the largest value of metric `m` in the group.
fn largest(group: &Group, m: usize) -> Option<(f64, &str, f64)> {
    group
        .series
        .iter()
        .flat_map(|s| {
            s.points(m, &group.xs)
                .into_iter()
                .map(move |(x, v)| (v, s.policy.as_str(), x))
        })
        .max_by(|a, b| a.0.total_cmp(&b.0))
}

/// Relevance's value of `m` at `i` is below every other policy's that has one.
fn strictly_least(group: &Group, relevance: &Series, m: usize, i: usize) -> bool {
    let Some(ours) = relevance.value(m, i) else {
        return false;
    };
    group
        .series
        .iter()
        .filter(|s| s.policy != RELEVANCE)
        .filter_map(|s| s.value(m, i))
        .all(|other| ours < other)
}

fn ratio_to_best_other(group: &Group, relevance: &Series, m: usize, i: usize) -> Option<f64> {
    let best = group
        .series
        .iter()
        .filter(|s| s.policy != RELEVANCE)
        .filter_map(|s| s.value(m, i))
        .min_by(f64::total_cmp)?;
    Some(relevance.value(m, i)? / best)
}

fn show(ratio: Option<f64>) -> String {
    ratio
        .filter(|r| r.is_finite())
        .map_or("-".to_string(), |r| format!("{r:.2}×"))
}
