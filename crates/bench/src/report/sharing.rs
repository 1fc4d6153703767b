//! Figure 17 of the 2012 paper in a run's reports, when its policies carry a sharing
//! potential (`crate::sharing`, the `pbm-sharing` preset): as text a small table per
//! policy (time-averaged chunks and MiB wanted by exactly 1, 2, 3, ≥ 4 active queries,
//! and the share wanted by two or more), in HTML a line chart per policy (chunks wanted
//! over time, a line per class), each with the paper's finding beside ours.

use super::html_table::{html_table, Cell};
use super::line_chart::{self, Area, Line, Panel};
use super::svg::{escape, Svg};
use crate::bench::{BenchReport, PolicyResult};
use crate::sharing::{SharingPotential, SHARING_CLASSES, SHARING_SAMPLES};
use std::fmt::Write;

/// The paper's finding (§4, "Sharing Potential", on its Figures 17 and 18).
pub const PAPER_FINDING: &str = "During the execution of the microbenchmark we find large \
     volumes of data useful to two or more Scan operators. On the other hand, in the TPC-H \
     experiment, green area dominates the graph i.e. most of the data is going to be \
     requested and processed by only one scan.";
pub(crate) const CLASS_NAMES: [&str; SHARING_CLASSES] =
    ["1 scan", "2 scans", "3 scans", "≥4 scans"];
/// The paper's green for data wanted by one scan and red for four or more.
pub(crate) const CLASS_COLORS: [&str; SHARING_CLASSES] =
    ["#2ca02c", "#1f77b4", "#ff7f0e", "#d62728"];
const POLICY_WIDTH: usize = 12;
const CELL_WIDTH: usize = 10;
const PERCENT: f64 = 100.0;
/// Time ticks per panel: 0, ¼, ½, ¾ and all of the longest run.
const TIME_TICKS: usize = 4;
const PLOT_WIDTH: f64 = 240.0;
const PLOT_HEIGHT: f64 = 170.0;
const PANEL_LEFT: f64 = 60.0;
const RIGHT_MARGIN: f64 = 20.0;
const LEGEND_Y: f64 = 16.0;
const PLOT_TOP: f64 = 52.0;
const BOTTOM_MARGIN: f64 = 45.0;

fn analysed(report: &BenchReport) -> bool {
    report.policies.iter().any(|p| p.stats.sharing.is_some())
}

/// The text table; "" when no policy was analysed.
pub fn text(report: &BenchReport) -> String {
    if !analysed(report) {
        return String::new();
    }
    let mut out = format!(
        "\nFigure 17 (2012 paper): sharing potential, time-averaged over {SHARING_SAMPLES} \
         samples of each run; chunks and MiB wanted by exactly 1 / 2 / 3 / ≥4 active \
         queries, and the share of the volume wanted by two or more\n"
    );
    let _ = write!(out, "{:<POLICY_WIDTH$}{:<8}", "policy", "");
    for name in CLASS_NAMES {
        let _ = write!(out, "{name:>CELL_WIDTH$}");
    }
    let _ = writeln!(out, "{:>CELL_WIDTH$}", "share ≥2");
    for p in &report.policies {
        policy_rows(&mut out, p);
    }
    let _ = writeln!(out, "paper: {PAPER_FINDING}\n");
    out
}

fn policy_rows(out: &mut String, p: &PolicyResult) {
    let Some(s) = &p.stats.sharing else {
        let _ = writeln!(out, "{:<POLICY_WIDTH$}no consumptions recorded", p.name);
        return;
    };
    let _ = write!(out, "{:<POLICY_WIDTH$}{:<8}", p.name, "chunks");
    for v in s.mean_chunks {
        let _ = write!(out, "{v:>CELL_WIDTH$.1}");
    }
    let share = format!("{:.1}%", s.shared_fraction * PERCENT);
    let _ = writeln!(out, "{share:>CELL_WIDTH$}");
    let _ = write!(out, "{:<POLICY_WIDTH$}{:<8}", "", "MiB");
    for v in s.mean_mib {
        let _ = write!(out, "{v:>CELL_WIDTH$.1}");
    }
    out.push('\n');
    let ignored = s.ignored;
    if ignored.unknown_tag > 0 || ignored.chunk_past_rows > 0 {
        let _ = writeln!(
            out,
            "{:<POLICY_WIDTH$}ignored consumptions: {} of no query of the run, {} past their \
             query's rows",
            "", ignored.unknown_tag, ignored.chunk_past_rows
        );
    }
}

/// The chart with its caption; "" when no policy was analysed.
pub fn html(report: &BenchReport) -> String {
    if !analysed(report) {
        return String::new();
    }
    let mut out = String::from(
        "<h3>Figure 17: sharing potential (chunks wanted by exactly 1, 2, 3, ≥4 active \
         queries over time)</h3>\n<figure>\n",
    );
    out.push_str(&chart(report));
    let _ = write!(
        out,
        "<figcaption><em>Paper: “{}”</em>",
        escape(PAPER_FINDING)
    );
    for p in &report.policies {
        if let Some(s) = &p.stats.sharing {
            let _ = write!(out, "<br>Ours ({}): {}", escape(&p.name), escape(&ours(s)));
        }
    }
    out.push_str("</figcaption>\n</figure>\n");
    out.push_str(&html_table_of(report));
    out
}

/// The text's table as HTML: per policy a row of chunks and one of MiB.
fn html_table_of(report: &BenchReport) -> String {
    let mut headers = vec!["policy".to_string(), "unit".to_string()];
    headers.extend(CLASS_NAMES.iter().map(|n| n.to_string()));
    headers.push("share ≥2".to_string());
    let mut rows = Vec::new();
    for p in &report.policies {
        let Some(s) = &p.stats.sharing else {
            rows.push(vec![
                Cell::from(p.name.as_str()),
                Cell::from("no consumptions recorded"),
            ]);
            continue;
        };
        let values = |unit: &str, v: &[f64]| {
            let mut row = vec![Cell::default(), Cell::from(unit)];
            row.extend(v.iter().map(|x| Cell::from(format!("{x:.1}"))));
            row
        };
        let mut chunks = values("chunks", &s.mean_chunks);
        chunks[0] = Cell::from(p.name.as_str());
        chunks.push(Cell::from(format!("{:.1}%", s.shared_fraction * PERCENT)));
        rows.push(chunks);
        rows.push(values("MiB", &s.mean_mib));
    }
    let caption = format!("time-averaged over {SHARING_SAMPLES} samples of each run");
    html_table(&caption, &headers, &rows)
}

/// One policy's finding in a sentence.
fn ours(s: &SharingPotential) -> String {
    let wanted: f64 = s.mean_mib.iter().sum();
    format!(
        "on average {wanted:.1} MiB wanted, {:.1}% of it by two or more queries",
        s.shared_fraction * PERCENT
    )
}

/// A panel per analysed policy side by side, one time scale for all.
fn chart(report: &BenchReport) -> String {
    let analysed: Vec<(&str, &SharingPotential)> = report
        .policies
        .iter()
        .filter_map(|p| p.stats.sharing.as_ref().map(|s| (p.name.as_str(), s)))
        .collect();
    let width = analysed.len().max(1) as f64 * (PANEL_LEFT + PLOT_WIDTH) + RIGHT_MARGIN;
    let mut svg = Svg::new(width, PLOT_TOP + PLOT_HEIGHT + BOTTOM_MARGIN);
    let entries: Vec<(&str, &str)> = CLASS_NAMES.into_iter().zip(CLASS_COLORS).collect();
    line_chart::legend(&mut svg, PANEL_LEFT, LEGEND_Y, &entries);
    let xs = time_ticks(report);
    for (i, (name, s)) in analysed.iter().enumerate() {
        let area = Area {
            left: PANEL_LEFT + i as f64 * (PANEL_LEFT + PLOT_WIDTH),
            top: PLOT_TOP,
            width: PLOT_WIDTH,
            height: PLOT_HEIGHT,
        };
        let lines = (0..SHARING_CLASSES)
            .map(|c| Line {
                name: CLASS_NAMES[c],
                color: CLASS_COLORS[c],
                points: s
                    .samples
                    .iter()
                    .map(|x| (x.at_s, f64::from(x.chunks[c])))
                    .collect(),
            })
            .collect();
        let panel = Panel {
            title: name,
            x_label: "time (s)",
            xs: &xs,
            log_x: false,
            lines,
            markers: false,
        };
        line_chart::draw(&mut svg, area, &panel);
    }
    svg.finish()
}

/// Round tick values over the longest analysed run (tenths of a second).
fn time_ticks(report: &BenchReport) -> Vec<f64> {
    let longest = report
        .policies
        .iter()
        .filter(|p| p.stats.sharing.is_some())
        .map(|p| p.stats.total_time_s)
        .fold(0.0, f64::max);
    (0..=TIME_TICKS)
        .map(|k| (longest * k as f64 / TIME_TICKS as f64 * 10.0).round() / 10.0)
        .collect()
}
