//! The `mixed-pool` preset's runs as one table (2012 paper §2.3, Scans and CScans in
//! one pool): per buffer size, chunk loads and average stream time of the same queries
//! run all in order under PBM, none in order under relevance, and as a mix under
//! `mixed` (with OPT on its own references) and under relevance; then the mixed
//! pool's loads over the better pure run (the bound, [`MIXED_POOL_TARGET`])
//! and over OPT. The simulator's `mixed-pool` table, on the real engine.

use super::html_table::{html_table, note, Cell};
use crate::bench::{BenchReport, PolicyResult};
use crate::presets::MIXED_POOL;
use crate::report::sweep::regime_of;
use crate::workload::MAX_IN_ORDER_PCT;
use coopscan_paper::mixed_pool::{
    mixed_over_best, ALL_CSCANS_POLICY, ALL_SCANS_POLICY, MIX_POLICIES,
};
use serde::Serialize;
use std::fmt::Write;

/// The bound: the mixed pool's loads over the better of the two pure runs.
pub const MIXED_POOL_TARGET: f64 = coopscan_paper::mixed_pool::TARGET;

/// One policy's run of one point.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct MixedPoolCell {
    pub chunk_loads: u64,
    pub avg_stream_time_s: f64,
    /// Belady's OPT on this run's references.
    pub opt_chunk_loads: Option<u64>,
}

/// One buffer size.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct MixedPoolRow {
    /// `bench --regimes`' regime of these runs (`None` without `--regimes`).
    pub regime: Option<String>,
    pub buffer_pct: f64,
    /// The mix's share asked for, % (each query drawn with this probability).
    pub in_order_pct: u32,
    /// Queries of the mix that read in order, of `queries`.
    pub in_order_queries: usize,
    pub queries: usize,
    pub all_scans_pbm: Option<MixedPoolCell>,
    pub all_cscans_relevance: Option<MixedPoolCell>,
    pub mix_mixed: Option<MixedPoolCell>,
    pub mix_relevance: Option<MixedPoolCell>,
}

impl MixedPoolRow {
    /// The mixed pool's loads ÷ the better of the two pure runs.
    pub fn mixed_over_best(&self) -> Option<f64> {
        Some(mixed_over_best(
            self.mix_mixed?.chunk_loads,
            self.all_scans_pbm?.chunk_loads,
            self.all_cscans_relevance?.chunk_loads,
        ))
    }

    /// The mixed pool's loads ÷ OPT's on the same references.
    pub fn mixed_over_opt(&self) -> Option<f64> {
        let mixed = self.mix_mixed?;
        Some(mixed.chunk_loads as f64 / mixed.opt_chunk_loads?.max(1) as f64)
    }
}

/// The table, when `reports` are a `mixed-pool` preset's runs: a row per regime,
/// buffer size and share of in-order queries in the mix, in run order, each beside the
/// two pure runs of its buffer. Only coopscan's policies fill cells (a peer's run of
/// the same point has none of them).
pub fn mixed_pool_rows(reports: &[BenchReport]) -> Option<Vec<MixedPoolRow>> {
    let all = !reports.is_empty() && reports.iter().all(|r| r.params.preset == MIXED_POOL);
    if !all {
        return None;
    }
    let key = |r: &BenchReport| (regime_of(r), r.params.buffer_pct);
    let mut rows: Vec<MixedPoolRow> = Vec::new();
    for report in reports.iter().filter(|r| is_mix(r.params.in_order_pct)) {
        let (regime, buffer_pct) = key(report);
        let mut row = MixedPoolRow {
            regime,
            buffer_pct,
            ..MixedPoolRow::default()
        };
        add_mix(&mut row, report);
        rows.push(row);
    }
    for report in reports.iter().filter(|r| !is_mix(r.params.in_order_pct)) {
        let mut mine = rows
            .iter_mut()
            .filter(|row| (row.regime.clone(), row.buffer_pct) == key(report))
            .peekable();
        if mine.peek().is_none() {
            // Pure runs without a mix at their buffer still get their row.
            let (regime, buffer_pct) = key(report);
            rows.push(MixedPoolRow {
                regime,
                buffer_pct,
                ..MixedPoolRow::default()
            });
            let last = rows.len() - 1;
            add_pure(&mut rows[last], report);
        } else {
            mine.for_each(|row| add_pure(row, report));
        }
    }
    Some(rows)
}

/// Whether a run of this share of in-order queries is a mix (not a pure run).
fn is_mix(in_order_pct: u32) -> bool {
    in_order_pct != 0 && in_order_pct != MAX_IN_ORDER_PCT
}

/// Files a pure run as the preset made it (`coopscan_paper::mixed_pool`): all in
/// order is all Scans, none all CScans. A policy the run lacks leaves its cell as it
/// was.
fn add_pure(row: &mut MixedPoolRow, report: &BenchReport) {
    let (slot, name) = if report.params.in_order_pct == MAX_IN_ORDER_PCT {
        (&mut row.all_scans_pbm, ALL_SCANS_POLICY)
    } else {
        (&mut row.all_cscans_relevance, ALL_CSCANS_POLICY)
    };
    if let Some(p) = report.policies.iter().find(|p| p.name == name) {
        *slot = Some(cell_of(p));
    }
}

/// Files a mix's runs under its two policies.
fn add_mix(row: &mut MixedPoolRow, report: &BenchReport) {
    let policy = |name: &str| report.policies.iter().find(|p| p.name == name);
    let [mixed, mix_relevance] = MIX_POLICIES;
    row.in_order_pct = report.params.in_order_pct;
    if let Some(p) = policy(mixed) {
        row.queries = p.runs.len();
        row.in_order_queries = p.in_order_queries();
        row.mix_mixed = Some(cell_of(p));
    }
    row.mix_relevance = policy(mix_relevance).map(cell_of);
}

fn cell_of(p: &PolicyResult) -> MixedPoolCell {
    MixedPoolCell {
        chunk_loads: p.stats.chunk_loads as u64,
        avg_stream_time_s: p.stats.avg_stream_time_s,
        opt_chunk_loads: p.stats.opt_chunk_loads,
    }
}

const MISSING: &str = "-";

fn loads_and_time(cell: Option<MixedPoolCell>) -> String {
    cell.map_or(MISSING.to_string(), |c| {
        format!("{} / {:.1}", c.chunk_loads, c.avg_stream_time_s)
    })
}

fn ratio(x: Option<f64>) -> String {
    x.map_or(MISSING.to_string(), |x| format!("{x:.3}"))
}

/// The rows as text, then which meet the bound.
pub fn render(rows: &[MixedPoolRow]) -> String {
    let mut out = String::from(
        "mixed-pool: Scans and CScans in one pool (2012 paper §2.3), chunk loads / avg \
         stream time (s)\n",
    );
    let _ = writeln!(
        out,
        "{:>7} {:>14} {:>16} {:>16} {:>16} {:>10} {:>16} {:>8} {:>8}",
        "buffer",
        "mix: Scans",
        "all Scans: pbm",
        "all CScans: rel",
        "mix: mixed",
        "OPT(mix)",
        "mix: relevance",
        "÷ best",
        "÷ OPT"
    );
    let mut last_regime = None;
    for r in rows {
        if let Some(regime) = r.regime.as_deref().filter(|&g| Some(g) != last_regime) {
            let _ = writeln!(out, "{regime}:");
            last_regime = Some(regime);
        }
        let scans = format!("{} of {}", r.in_order_queries, r.queries);
        let opt = r
            .mix_mixed
            .and_then(|c| c.opt_chunk_loads)
            .map_or(MISSING.to_string(), |o| o.to_string());
        let _ = writeln!(
            out,
            "{:>6}% {scans:>14} {:>16} {:>16} {:>16} {opt:>10} {:>16} {:>8} {:>8}",
            r.buffer_pct,
            loads_and_time(r.all_scans_pbm),
            loads_and_time(r.all_cscans_relevance),
            loads_and_time(r.mix_mixed),
            loads_and_time(r.mix_relevance),
            ratio(r.mixed_over_best()),
            ratio(r.mixed_over_opt()),
        );
    }
    out.push_str(&summary(rows));
    out.push('\n');
    out
}

/// Which rows meet the bound, and why the all-CScans run cannot be the bound.
fn summary(rows: &[MixedPoolRow]) -> String {
    let judged: Vec<f64> = rows
        .iter()
        .filter_map(MixedPoolRow::mixed_over_best)
        .collect();
    let within = judged.iter().filter(|x| **x <= MIXED_POOL_TARGET).count();
    format!(
        "mixed ÷ the better pure run ≤ {MIXED_POOL_TARGET} at {within} of {} points. \
         The all-CScans run is a bound no mix can be held to: its queries may all \
         reorder (docs/simulation.md, mixed-pool)\n",
        judged.len()
    )
}

const HTML_HEADERS: [&str; 10] = [
    "regime",
    "buffer",
    "mix: Scans",
    "all Scans: pbm",
    "all CScans: relevance",
    "mix: mixed",
    "OPT (mix)",
    "mix: relevance",
    "mixed ÷ best",
    "mixed ÷ OPT",
];

/// The rows as an HTML table (loads / avg stream time in s), then which meet the bound.
pub fn html(rows: &[MixedPoolRow]) -> String {
    let headers: Vec<String> = HTML_HEADERS.iter().map(|h| h.to_string()).collect();
    let cells: Vec<Vec<Cell>> = rows.iter().map(html_row).collect();
    let caption = "chunk loads / avg stream time (s), 2012 paper §2.3";
    let mut out = html_table(caption, &headers, &cells);
    out.push_str(&note(&summary(rows)));
    out
}

fn html_row(r: &MixedPoolRow) -> Vec<Cell> {
    let opt = r
        .mix_mixed
        .and_then(|c| c.opt_chunk_loads)
        .map_or(MISSING.to_string(), |o| o.to_string());
    vec![
        Cell::from(r.regime.as_deref().unwrap_or("")),
        Cell::from(format!("{}%", r.buffer_pct)),
        Cell::from(format!("{} of {}", r.in_order_queries, r.queries)),
        Cell::from(loads_and_time(r.all_scans_pbm)),
        Cell::from(loads_and_time(r.all_cscans_relevance)),
        Cell::from(loads_and_time(r.mix_mixed)),
        Cell::from(opt),
        Cell::from(loads_and_time(r.mix_relevance)),
        Cell::from(ratio(r.mixed_over_best())),
        Cell::from(ratio(r.mixed_over_opt())),
    ]
}
