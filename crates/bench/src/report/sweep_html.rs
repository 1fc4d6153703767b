//! The sweep figures of the HTML report: Figure 5's table under its scatter, and
//! Figures 6-8 as line charts (one SVG per query set, a panel per metric, a line per
//! policy), each with its table and the paper's finding as its caption.

use super::fig5_table::{fig5_table, Fig5Table, FIG5_CAPTION};
use super::figures::sweep_figure;
use super::html_table::{html_table, note, Cell};
use super::line_chart::{self, Area, Line, Panel};
use super::palette::policy_color;
use super::svg::{escape, Svg};
use super::sweep::{Group, SweepFigure};
use super::sweep_text::{fig5_cell, fig5_summary, format_x, sweep_cell};
use crate::bench::BenchReport;
use std::fmt::Write;

const PLOT_WIDTH: f64 = 240.0;
const PLOT_HEIGHT: f64 = 170.0;
/// Room left of each panel for its y tick labels.
const PANEL_LEFT: f64 = 60.0;
const RIGHT_MARGIN: f64 = 20.0;
const GROUP_TITLE_Y: f64 = 16.0;
const LEGEND_Y: f64 = 36.0;
const PLOT_TOP: f64 = 72.0;
const BOTTOM_MARGIN: f64 = 45.0;

/// Figure 5's caption and, for the `fig5` preset, its table of mixes.
pub fn fig5_extras(reports: &[BenchReport]) -> String {
    let mut out = format!(
        "<p><em>Paper (§5.2.1): “{}”</em></p>\n",
        escape(FIG5_CAPTION)
    );
    if let Some(table) = fig5_table(reports) {
        out.push_str(&fig5_html(&table));
    }
    out
}

/// A row per mix: each policy's stream time / normalized latency ÷ relevance's.
fn fig5_html(table: &Fig5Table) -> String {
    let mut headers = vec!["mix".to_string()];
    headers.extend(table.policies.iter().cloned());
    headers.push("relevance not best on both axes".to_string());
    let rows: Vec<Vec<Cell>> = table
        .rows
        .iter()
        .map(|row| {
            let mut cells = vec![Cell::from(row.label.as_str())];
            cells.extend(table.policies.iter().map(|p| Cell::from(fig5_cell(row, p))));
            cells.push(Cell::from(row.describe_beaten()));
            cells
        })
        .collect();
    let caption = "each policy ÷ relevance: avg stream time / avg normalized latency \
                   (below 1 beats relevance)";
    let mut out = html_table(caption, &headers, &rows);
    out.push_str(&note(&fig5_summary(table)));
    out
}

/// Figure 6, 7 or 8 when `reports` form its sweep, else "".
pub fn line_figure(reports: &[BenchReport]) -> String {
    let Some(figure) = sweep_figure(reports) else {
        return String::new();
    };
    let spec = figure.spec;
    let mut out = format!("<h2>{}</h2>\n<figure>\n", escape(spec.title));
    for group in &figure.groups {
        out.push_str(&group_svg(&figure, group));
    }
    let _ = write!(
        out,
        "<figcaption><em>Paper: “{}”</em>",
        escape(spec.caption)
    );
    for group in &figure.groups {
        if let Some(ours) = (spec.ours)(spec, group) {
            let _ = write!(
                out,
                "<br>Ours ({}): {}",
                escape(&group.title),
                escape(&ours)
            );
        }
    }
    out.push_str("</figcaption>\n</figure>\n");
    for group in &figure.groups {
        for m in 0..spec.metrics.len() {
            out.push_str(&block_html(&figure, group, m));
        }
    }
    out
}

/// The values of metric `m` in one query set: a row per x, a column per policy.
fn block_html(figure: &SweepFigure, group: &Group, m: usize) -> String {
    let spec = figure.spec;
    let mut headers = vec![spec.x_short.to_string()];
    headers.extend(group.series.iter().map(|s| s.policy.clone()));
    let rows: Vec<Vec<Cell>> = group
        .xs
        .iter()
        .enumerate()
        .map(|(i, x)| {
            let mut cells = vec![Cell::from(format_x(*x))];
            cells.extend(
                group
                    .series
                    .iter()
                    .map(|s| Cell::from(sweep_cell(figure, s, m, i))),
            );
            cells
        })
        .collect();
    let metric = spec.metrics.get(m).map_or("", |metric| metric.label);
    html_table(&format!("{} — {metric}", group.title), &headers, &rows)
}

/// One query set: its title, the legend, then a panel per metric side by side.
fn group_svg(figure: &SweepFigure, group: &Group) -> String {
    let spec = figure.spec;
    let panels = spec.metrics.len().max(1) as f64;
    let width = panels * (PANEL_LEFT + PLOT_WIDTH) + RIGHT_MARGIN;
    let mut svg = Svg::new(width, PLOT_TOP + PLOT_HEIGHT + BOTTOM_MARGIN);
    svg.text(PANEL_LEFT, GROUP_TITLE_Y, "start", &group.title);
    legend(&mut svg, figure, group);
    for (m, metric) in spec.metrics.iter().enumerate() {
        let area = Area {
            left: PANEL_LEFT + m as f64 * (PANEL_LEFT + PLOT_WIDTH),
            top: PLOT_TOP,
            width: PLOT_WIDTH,
            height: PLOT_HEIGHT,
        };
        let lines = group
            .series
            .iter()
            .map(|s| Line {
                name: &s.policy,
                color: policy_color(&s.policy),
                points: s.points(m, &group.xs),
            })
            .collect();
        let panel = Panel {
            title: metric.label,
            x_label: spec.x_label,
            xs: &group.xs,
            log_x: spec.log_x,
            lines,
            markers: true,
        };
        line_chart::draw(&mut svg, area, &panel);
    }
    svg.finish()
}

/// The policies with a line, then those without any value (e.g. a run that did not
/// measure its scheduling time), so an absent line is explained.
fn legend(svg: &mut Svg, figure: &SweepFigure, group: &Group) {
    let metrics = figure.spec.metrics.len();
    let (drawn, empty): (Vec<_>, Vec<_>) = group
        .series
        .iter()
        .partition(|s| (0..metrics).any(|m| !s.points(m, &group.xs).is_empty()));
    let entries: Vec<(&str, &str)> = drawn
        .iter()
        .map(|s| (s.policy.as_str(), policy_color(&s.policy)))
        .collect();
    let end = line_chart::legend(svg, PANEL_LEFT, LEGEND_Y, &entries);
    if !empty.is_empty() {
        let names: Vec<&str> = empty.iter().map(|s| s.policy.as_str()).collect();
        svg.text(
            end,
            LEGEND_Y,
            "start",
            &format!("no values: {}", names.join(", ")),
        );
    }
}
