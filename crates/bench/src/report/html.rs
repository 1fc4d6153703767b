//! A self-contained HTML report: the text tables and inline SVG plots (no JS).
//! Figure 5 (one plot for all runs of a preset): each policy's average normalized
//! latency (x) and average stream time (y) relative to relevance = (1, 1), with its
//! table for the `fig5` preset. Figures 6-8 when the runs form their sweep
//! (`sweep_html`). Figure 4 (one plot per run, a panel per policy): chunk loads over
//! time, x = time, y = chunk, coloured by the kind of query the load was scheduled for.
//! Figure 17 of the 2012 paper under it for a run analysed for sharing (`sharing`).

use super::fig5_table::{relative, RELEVANCE};
use super::palette;
use super::svg::{escape, Frame, Svg};
use super::{sharing, sweep_html, text};
use crate::bench::{BenchReport, PolicyResult};
use crate::mix::QueryKind;
use std::collections::HashMap;
use std::fmt::Write;

const WIDTH: f64 = 760.0;
const MARGIN_LEFT: f64 = 70.0;
const MARGIN_RIGHT: f64 = 20.0;
const MARGIN_TOP: f64 = 20.0;
const MARGIN_BOTTOM: f64 = 40.0;
const PANEL_HEIGHT: f64 = 160.0;
const SCATTER_HEIGHT: f64 = 420.0;
const LOAD_MARK: f64 = 2.0;
const POINT_RADIUS: f64 = 4.0;
/// Figure 5's axes reach at least this far, so relevance's (1, 1) is never on the edge.
const SCATTER_MIN_MAX: f64 = 1.5;
const SCATTER_HEADROOM: f64 = 1.1;
const COLOR_FAST: &str = "#1f77b4";
const COLOR_SLOW: &str = "#d62728";
const COLOR_UNTAGGED: &str = "#555555";

pub fn render(reports: &[BenchReport]) -> String {
    let title = reports.first().map_or("coopscan bench".to_string(), |r| {
        format!("coopscan bench: {}", r.params.preset)
    });
    let mut out = String::new();
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>{}</title>\
         <style>body{{font-family:sans-serif;margin:2em}} pre{{font-size:12px}}</style></head><body>\n<h1>{}</h1>\n",
        escape(&title),
        escape(&title)
    );
    out.push_str("<h2>Figure 5: stream time and normalized latency relative to relevance</h2>\n");
    out.push_str(&figure5(reports));
    out.push_str(&sweep_html::fig5_extras(reports));
    out.push_str(&sweep_html::line_figure(reports));
    if let Some(rows) = super::mixed_pool::mixed_pool_rows(reports) {
        let _ = write!(
            out,
            "<h2>Scans and CScans in one pool</h2>\n<pre>{}</pre>\n",
            escape(&super::mixed_pool::render(&rows))
        );
    }
    for report in reports {
        let _ = write!(
            out,
            "<h2>{}</h2>\n<pre>{}</pre>\n",
            escape(&report.params.label),
            escape(&text::render(report))
        );
        out.push_str(
            "<h3>Figure 4: chunk loads over time (blue: FAST, red: SLOW, grey: untagged)</h3>\n",
        );
        out.push_str(&figure4(report));
        out.push_str(&sharing::html(report));
    }
    out.push_str("</body></html>\n");
    out
}

/// One panel per policy, sharing the time and chunk scales.
pub fn figure4(report: &BenchReport) -> String {
    let panel = PANEL_HEIGHT + MARGIN_TOP + MARGIN_BOTTOM;
    let mut svg = Svg::new(WIDTH, panel * report.policies.len().max(1) as f64);
    let time_max = report
        .policies
        .iter()
        .map(|p| p.stats.total_time_s)
        .fold(0.0, f64::max);
    let chunks = report
        .policies
        .iter()
        .flat_map(|p| &p.loads)
        .map(|l| l.chunk + 1)
        .max()
        .unwrap_or(1);
    for (i, policy) in report.policies.iter().enumerate() {
        let frame = Frame {
            left: MARGIN_LEFT,
            top: MARGIN_TOP + panel * i as f64,
            width: WIDTH - MARGIN_LEFT - MARGIN_RIGHT,
            height: PANEL_HEIGHT,
            x_max: time_max,
            y_max: chunks as f64,
        };
        load_panel(&mut svg, &frame, policy);
    }
    svg.finish()
}

fn load_panel(svg: &mut Svg, frame: &Frame, policy: &PolicyResult) {
    let kinds: HashMap<u64, QueryKind> = policy
        .runs
        .iter()
        .map(|r| (r.query.id, r.query.query_type.kind))
        .collect();
    for load in &policy.loads {
        let color = match load.tag.and_then(|t| kinds.get(&t)) {
            Some(QueryKind::Fast | QueryKind::Columns { .. }) => COLOR_FAST,
            Some(QueryKind::Slow) => COLOR_SLOW,
            None => COLOR_UNTAGGED,
        };
        let (x, y) = (frame.x(load.at.as_secs_f64()), frame.y(load.chunk as f64));
        svg.rect(x, y - LOAD_MARK, LOAD_MARK, LOAD_MARK, color);
    }
    frame.axes(svg, "time (s)", "chunk");
    let title = format!("{} ({} loads)", policy.name, policy.loads.len());
    svg.text(
        frame.left + frame.width / 2.0,
        frame.top - 6.0,
        "middle",
        &title,
    );
}

/// (normalized latency, stream time) of each non-relevance policy ÷ relevance's.
fn relative_points(report: &BenchReport) -> Vec<(String, String, f64, f64)> {
    relative(report)
        .unwrap_or_default()
        .into_iter()
        .map(|r| {
            let label = format!("{} {}", r.policy, report.params.label);
            (r.policy, label, r.normalized_latency, r.stream_time)
        })
        .collect()
}

pub fn figure5(reports: &[BenchReport]) -> String {
    let points: Vec<(String, String, f64, f64)> =
        reports.iter().flat_map(relative_points).collect();
    let x_max = points.iter().map(|p| p.2).fold(SCATTER_MIN_MAX, f64::max) * SCATTER_HEADROOM;
    let y_max = points.iter().map(|p| p.3).fold(SCATTER_MIN_MAX, f64::max) * SCATTER_HEADROOM;
    let mut svg = Svg::new(WIDTH, SCATTER_HEIGHT + MARGIN_TOP + MARGIN_BOTTOM);
    let frame = Frame {
        left: MARGIN_LEFT,
        top: MARGIN_TOP,
        width: WIDTH - MARGIN_LEFT - MARGIN_RIGHT,
        height: SCATTER_HEIGHT,
        x_max,
        y_max,
    };
    frame.axes(
        &mut svg,
        "avg normalized latency (both ÷ relevance's)",
        "stream time",
    );
    // Guides through relevance's point.
    svg.line(
        frame.x(1.0),
        frame.top,
        frame.x(1.0),
        frame.top + frame.height,
        "#ccc",
    );
    svg.line(
        frame.left,
        frame.y(1.0),
        frame.left + frame.width,
        frame.y(1.0),
        "#ccc",
    );
    svg.circle(
        frame.x(1.0),
        frame.y(1.0),
        POINT_RADIUS,
        palette::policy_color(RELEVANCE),
    );
    svg.text(frame.x(1.0) + 6.0, frame.y(1.0) - 6.0, "start", RELEVANCE);
    if points.is_empty() {
        svg.text(
            frame.left + frame.width / 2.0,
            frame.top + 20.0,
            "middle",
            "no relevance run to compare with",
        );
    }
    for (policy, label, x, y) in &points {
        let color = palette::policy_color(policy);
        svg.circle(frame.x(*x), frame.y(*y), POINT_RADIUS, color);
        svg.text(frame.x(*x) + 6.0, frame.y(*y) + 4.0, "start", label);
    }
    svg.finish()
}
