//! The sweep figures of the HTML report: Figure 5's table under its scatter, and
//! Figures 6-8 as line charts (one SVG per query set, a panel per metric, a line per
//! policy), each with its table and the paper's finding as its caption.

use super::fig5_table::{fig5_table, FIG5_CAPTION};
use super::line_chart::{self, Area, Line, Panel};
use super::palette::policy_color;
use super::svg::{escape, Svg};
use super::sweep::{sweep_figure, Group, SweepFigure};
use super::sweep_text;
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
        let mut text = String::new();
        sweep_text::fig5(&mut text, &table);
        let _ = writeln!(out, "<pre>{}</pre>", escape(&text));
    }
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
    let mut text = String::new();
    sweep_text::line_figure(&mut text, &figure);
    let _ = writeln!(out, "<pre>{}</pre>", escape(&text));
    out
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
