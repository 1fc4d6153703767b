//! The sweep tables as text, printed after a preset's runs: Figure 5 as one row per mix,
//! and for Figures 6-8 one block per query set and plotted metric (rows: x; columns:
//! policies), the same numbers the HTML plots.

use super::fig5_table::{fig5_table, Fig5Table, MixRow, FIG5_CAPTION};
use super::figures::sweep_figure;
use super::sweep::{Group, Series, SweepFigure};
use crate::bench::BenchReport;
use std::fmt::Write;

const X_WIDTH: usize = 12;
const CELL_WIDTH: usize = 11;
const MIX_WIDTH: usize = 16;
const RELATIVE_WIDTH: usize = 14;
const MISSING: &str = "-";

/// Every sweep table `reports` form (Figure 5's mixes, or Figure 6, 7 or 8), each
/// followed by the paper's finding; "" when they form none (e.g. one `table2` run).
pub fn render_sweep(reports: &[BenchReport]) -> String {
    let mut out = String::new();
    if let Some(table) = fig5_table(reports) {
        fig5(&mut out, &table);
    }
    if let Some(figure) = sweep_figure(reports) {
        line_figure(&mut out, &figure);
    }
    if let Some(families) = super::table4::table4_families(reports) {
        out.push_str(&super::table4::render(&families));
    }
    if let Some(rows) = super::mixed_pool::mixed_pool_rows(reports) {
        out.push_str(&super::mixed_pool::render(&rows));
    }
    out
}

pub(crate) fn fig5(out: &mut String, table: &Fig5Table) {
    let _ = writeln!(
        out,
        "Figure 5: each policy ÷ relevance, avg stream time / avg normalized latency \
         (below 1 beats relevance)"
    );
    let _ = write!(out, "{:<MIX_WIDTH$}", "mix");
    for policy in &table.policies {
        let _ = write!(out, "{policy:>RELATIVE_WIDTH$}");
    }
    let _ = writeln!(out, "  relevance not best on both axes");
    for row in &table.rows {
        let _ = write!(out, "{:<MIX_WIDTH$}", row.label);
        for policy in &table.policies {
            let _ = write!(out, "{:>RELATIVE_WIDTH$}", fig5_cell(row, policy));
        }
        let beaten = row.describe_beaten();
        if beaten.is_empty() {
            out.push('\n');
        } else {
            let _ = writeln!(out, "  {beaten}");
        }
    }
    let _ = writeln!(out, "{}", fig5_summary(table));
    let _ = writeln!(out, "paper: {FIG5_CAPTION}\n");
}

/// In how many mixes relevance is not best on both axes, and which.
pub(crate) fn fig5_summary(table: &Fig5Table) -> String {
    let not_best = table.relevance_not_best();
    if not_best.is_empty() {
        return "relevance is best on both axes in every mix".to_string();
    }
    format!(
        "relevance is not best on both axes in {} of {} mixes: {}",
        not_best.len(),
        table.rows.len(),
        not_best.join(", ")
    )
}

/// A policy's (stream time / normalized latency) ÷ relevance's in one mix, or "-".
pub(crate) fn fig5_cell(row: &MixRow, policy: &str) -> String {
    row.relative
        .iter()
        .flatten()
        .find(|r| r.policy == policy)
        .map_or(MISSING.to_string(), |r| {
            format!("{:.2}/{:.2}", r.stream_time, r.normalized_latency)
        })
}

pub(crate) fn line_figure(out: &mut String, figure: &SweepFigure) {
    let spec = figure.spec;
    let _ = writeln!(out, "{}", spec.title);
    for group in &figure.groups {
        for (m, metric) in spec.metrics.iter().enumerate() {
            let _ = writeln!(out, "  {} — {}", group.title, metric.label);
            block(out, figure, group, m);
        }
    }
    let _ = writeln!(out, "paper: {}", spec.caption);
    for group in &figure.groups {
        if let Some(ours) = (spec.ours)(spec, group) {
            let _ = writeln!(out, "ours ({}): {ours}", group.title);
        }
    }
    out.push('\n');
}

/// Rows: x ascending; columns: the policies' values of metric `m`.
fn block(out: &mut String, figure: &SweepFigure, group: &Group, m: usize) {
    let spec = figure.spec;
    let width = group
        .series
        .iter()
        .map(|s| s.policy.len() + 1)
        .fold(CELL_WIDTH, usize::max);
    let _ = write!(out, "  {:<X_WIDTH$}", spec.x_short);
    for s in &group.series {
        let _ = write!(out, "{:>width$}", s.policy);
    }
    out.push('\n');
    for (i, x) in group.xs.iter().enumerate() {
        let _ = write!(out, "  {:<X_WIDTH$}", format_x(*x));
        for s in &group.series {
            let _ = write!(out, "{:>width$}", sweep_cell(figure, s, m, i));
        }
        out.push('\n');
    }
}

/// Series `s`'s value of metric `m` at its `i`-th x, with the metric's decimals.
pub(crate) fn sweep_cell(figure: &SweepFigure, s: &Series, m: usize, i: usize) -> String {
    let decimals = figure
        .spec
        .metrics
        .get(m)
        .map_or(0, |metric| metric.decimals);
    s.value(m, i)
        .map_or(MISSING.to_string(), |v| format!("{v:.decimals$}"))
}

/// 12.5, 25, 0.25: as short as the value allows.
pub fn format_x(x: f64) -> String {
    format!("{x}")
}
