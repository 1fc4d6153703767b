//! One colour per policy, the same in every figure of a report.

/// The paper's policies keep fixed colours (relevance green, as its (1, 1) point in
/// Figure 5), and so do the other policies and the peer engines, so that no two of
/// them share a colour in a legend; any other name takes one of [`OTHERS`].
const KNOWN: &[(&str, &str)] = &[
    ("normal", "#7f7f7f"),
    ("attach", "#ff7f0e"),
    ("elevator", "#9467bd"),
    ("relevance", "#2ca02c"),
    ("pbm", "#1f77b4"),
    ("pbm-lru", "#17becf"),
    ("mixed", "#8c564b"),
    ("pbm-throttle", "#e377c2"),
    ("pbm-opportunistic", "#bcbd22"),
    ("duckdb", "#d62728"),
    ("postgres", "#393b79"),
];
const OTHERS: &[&str] = &[
    "#1f77b4", "#d62728", "#8c564b", "#e377c2", "#17becf", "#bcbd22",
];

pub fn policy_color(policy: &str) -> &'static str {
    if let Some((_, color)) = KNOWN.iter().find(|(name, _)| *name == policy) {
        return color;
    }
    // A stable pick: the same name gets the same colour in every figure.
    let sum = policy
        .bytes()
        .fold(0usize, |acc, b| acc.wrapping_add(usize::from(b)));
    OTHERS[sum % OTHERS.len()]
}

/// Colours told apart by position (the queries of a timeline): `nth_color(i)` cycles.
const SERIES: [&str; 8] = [
    "#d62728", "#1f77b4", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#8c564b", "#e377c2",
];

/// How many colours [`nth_color`] cycles through.
pub const SERIES_COLORS: usize = SERIES.len();

/// The `i`-th of a fixed cycle of colours.
pub fn nth_color(i: usize) -> &'static str {
    SERIES[i % SERIES.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paper_policies_differ_and_others_are_stable() {
        let colors: Vec<&str> = KNOWN.iter().map(|(n, _)| policy_color(n)).collect();
        for (i, c) in colors.iter().enumerate() {
            assert!(!colors[i + 1..].contains(c));
        }
        assert_eq!(policy_color("pbm"), policy_color("pbm"));
    }
}
