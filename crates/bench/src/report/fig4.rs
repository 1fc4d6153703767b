//! Figure 4: a chart per policy (or peer engine) of its chunk loads over time, x = time,
//! y = chunk, coloured by the kind of query the load was scheduled for. Each chart has
//! its own time scale, so a fast run's loads fill its chart rather than the first
//! tenth of the slowest run's; a run that logged no loads gets a line, not a chart.

use super::axis::Axis;
use super::html_table::note;
use super::svg::{Frame, Svg};
use crate::bench::{BenchReport, PolicyResult};
use crate::mix::QueryKind;
use std::collections::HashMap;

const WIDTH: f64 = 760.0;
const MARGIN_LEFT: f64 = 70.0;
const MARGIN_RIGHT: f64 = 20.0;
const MARGIN_TOP: f64 = 24.0;
const MARGIN_BOTTOM: f64 = 44.0;
const PLOT_HEIGHT: f64 = 160.0;
const LOAD_MARK: f64 = 3.0;
const TITLE_GAP: f64 = 8.0;
const COLOR_FAST: &str = "#1f77b4";
const COLOR_SLOW: &str = "#d62728";
const COLOR_UNTAGGED: &str = "#555555";

/// The charts of one run, then a line for each policy without loads.
pub fn figure4(report: &BenchReport) -> String {
    let (with, without): (Vec<&PolicyResult>, Vec<&PolicyResult>) =
        report.policies.iter().partition(|p| !p.loads.is_empty());
    let mut out: String = with.into_iter().map(load_chart).collect();
    let lines: String = without
        .iter()
        .map(|p| format!("{} reports no chunk loads: no chart.\n", p.name))
        .collect();
    out.push_str(&note(&lines));
    out
}

/// One policy's loads: time from 0 to its last load, chunks from 0 to its highest.
fn load_chart(policy: &PolicyResult) -> String {
    let last_s = policy
        .loads
        .iter()
        .map(|l| l.at.as_secs_f64())
        .fold(0.0, f64::max);
    let chunks = policy
        .loads
        .iter()
        .map(|l| l.chunk.saturating_add(1))
        .max()
        .unwrap_or(1);
    let frame = Frame {
        left: MARGIN_LEFT,
        top: MARGIN_TOP,
        width: WIDTH - MARGIN_LEFT - MARGIN_RIGHT,
        height: PLOT_HEIGHT,
        x_axis: Axis::linear(last_s),
        y_axis: Axis::linear(f64::from(chunks)),
    };
    let mut svg = Svg::new(WIDTH, MARGIN_TOP + PLOT_HEIGHT + MARGIN_BOTTOM);
    frame.axes(&mut svg, "time (s)", "chunk");
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
        let (x, y) = (
            frame.x(load.at.as_secs_f64()),
            frame.y(f64::from(load.chunk)),
        );
        // The mark's corner at the point, the mark inside the plot area.
        svg.mark(
            x.min(frame.left + frame.width - LOAD_MARK),
            y - LOAD_MARK,
            LOAD_MARK,
            color,
        );
    }
    let title = format!("{} ({} loads)", policy.name, policy.loads.len());
    svg.text(WIDTH / 2.0, MARGIN_TOP - TITLE_GAP, "middle", &title);
    svg.finish()
}
