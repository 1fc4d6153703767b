//! The DSM choices the 2007 paper leaves open (§6.2), compared on the same runs:
//! greedy vs knapsack eviction (its footnote) and smallest-first vs completes-query
//! column loading order, each under relevance, on the `table4` workload (same seed,
//! same queries). Normal is listed once as the baseline: it evicts by LRU, so only the
//! column order could change it.

use crate::table4::{table4_config, table4_on, Table4Report};
use crate::SimError;
use coopscan_buffer::{ColumnOrder, EvictionStrategy, PolicyKind};
use std::fmt::Write;

/// Every (eviction, column order) pair; the first is the paper's.
pub const VARIANTS: [(EvictionStrategy, ColumnOrder); 4] = [
    (EvictionStrategy::Greedy, ColumnOrder::SmallestFirst),
    (EvictionStrategy::Knapsack, ColumnOrder::SmallestFirst),
    (EvictionStrategy::Greedy, ColumnOrder::CompletesQuery),
    (EvictionStrategy::Knapsack, ColumnOrder::CompletesQuery),
];

/// `table4` under relevance once per variant, plus normal with the paper's choices.
pub fn table4_variants(seed: u64) -> Result<Vec<Table4Report>, SimError> {
    let mut out = vec![table4_on(&table4_config(), &[PolicyKind::Normal], seed)?];
    for (eviction, column_order) in VARIANTS {
        let cfg = crate::SimConfig {
            eviction,
            column_order,
            ..table4_config()
        };
        out.push(table4_on(&cfg, &[PolicyKind::Relevance], seed)?);
    }
    Ok(out)
}

/// One line per family and run: column pieces read, average stream time, average
/// normalized latency, and pieces evicted that some scan still needed (the only ones
/// the eviction strategy chooses among).
pub fn variants_text(reports: &[Table4Report]) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:<17} {:<10} {:<9} {:<16} {:>7} {:>11} {:>9} {:>8} {:>8}",
        "family",
        "policy",
        "eviction",
        "column order",
        "pieces",
        "stream (s)",
        "norm lat",
        "evicted",
        "needed"
    );
    let families = reports.first().map_or(Vec::new(), |r| {
        r.rows.iter().map(|row| row.family.clone()).collect()
    });
    for family in families {
        for row in reports
            .iter()
            .flat_map(|r| &r.rows)
            .filter(|row| row.family == family)
        {
            let _ = writeln!(
                out,
                "{:<17} {:<10} {:<9} {:<16} {:>7} {:>11.3} {:>9.3} {:>8} {:>8}",
                row.family,
                row.policy,
                row.eviction,
                row.column_order,
                row.pieces,
                row.avg_stream_time_s,
                row.avg_normalized_latency,
                row.evictions,
                row.evictions - row.spare_evictions
            );
        }
    }
    out
}
