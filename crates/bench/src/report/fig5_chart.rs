//! Figure 5 as a scatter plot (one for all runs of a preset): each policy's average
//! normalized latency (x) and average stream time (y) relative to relevance = (1, 1).
//! An axis is logarithmic when its values span 10× or more (a peer 50× slower would
//! otherwise press every other point against the axis); points carry no labels, a
//! legend names the colours and each point's title names its run.

use super::axis::Axis;
use super::fig5_table::{relative, RELEVANCE};
use super::line_chart::legend;
use super::palette::policy_color;
use super::svg::{Frame, Svg};
use crate::bench::BenchReport;

const WIDTH: f64 = 760.0;
const MARGIN_LEFT: f64 = 70.0;
const MARGIN_RIGHT: f64 = 20.0;
const MARGIN_TOP: f64 = 40.0;
const MARGIN_BOTTOM: f64 = 44.0;
const LEGEND_Y: f64 = 16.0;
const PLOT_HEIGHT: f64 = 420.0;
const POINT_RADIUS: f64 = 4.0;
/// A linear axis reaches at least this far, so relevance's (1, 1) is never on the edge.
const MIN_LINEAR_MAX: f64 = 1.5;
const HEADROOM: f64 = 1.1;
const GUIDE_COLOR: &str = "#bbb";

/// One plotted point: a policy of a run, ÷ relevance.
struct Point {
    policy: String,
    label: String,
    latency: f64,
    stream_time: f64,
}

fn points(report: &BenchReport) -> Vec<Point> {
    relative(report)
        .unwrap_or_default()
        .into_iter()
        .map(|r| Point {
            label: format!("{} {}", r.policy, report.params.label),
            policy: r.policy,
            latency: r.normalized_latency,
            stream_time: r.stream_time,
        })
        .collect()
}

/// The axis for `values` and relevance's 1.
fn axis(values: impl Iterator<Item = f64>) -> Axis {
    let values: Vec<f64> = values.chain([1.0]).collect();
    match Axis::fit(&values, HEADROOM) {
        Axis::Linear { max, .. } if max < MIN_LINEAR_MAX => Axis::linear(MIN_LINEAR_MAX),
        fitted => fitted,
    }
}

pub fn figure5(reports: &[BenchReport]) -> String {
    let points: Vec<Point> = reports.iter().flat_map(points).collect();
    let frame = Frame {
        left: MARGIN_LEFT,
        top: MARGIN_TOP,
        width: WIDTH - MARGIN_LEFT - MARGIN_RIGHT,
        height: PLOT_HEIGHT,
        x_axis: axis(points.iter().map(|p| p.latency)),
        y_axis: axis(points.iter().map(|p| p.stream_time)),
    };
    let mut svg = Svg::new(WIDTH, MARGIN_TOP + PLOT_HEIGHT + MARGIN_BOTTOM);
    frame.axes(
        &mut svg,
        "avg normalized latency ÷ relevance's",
        "avg stream time ÷ relevance's",
    );
    guides(&mut svg, &frame);
    let mut names: Vec<&str> = vec![RELEVANCE];
    for p in &points {
        if !names.contains(&p.policy.as_str()) {
            names.push(&p.policy);
        }
    }
    let entries: Vec<(&str, &str)> = names.iter().map(|n| (*n, policy_color(n))).collect();
    legend(&mut svg, MARGIN_LEFT, LEGEND_Y, &entries);
    let (x, y) = (frame.x(1.0), frame.y(1.0));
    svg.point(
        x,
        y,
        POINT_RADIUS,
        policy_color(RELEVANCE),
        "relevance (1, 1)",
    );
    for p in &points {
        let (x, y) = (frame.x(p.latency), frame.y(p.stream_time));
        svg.point(x, y, POINT_RADIUS, policy_color(&p.policy), &p.label);
    }
    if points.is_empty() {
        let note = "no relevance run to compare with";
        svg.text(
            frame.left + frame.width / 2.0,
            frame.top + 20.0,
            "middle",
            note,
        );
    }
    svg.finish()
}

/// Lines through relevance's (1, 1).
fn guides(svg: &mut Svg, frame: &Frame) {
    let (x, y) = (frame.x(1.0), frame.y(1.0));
    let (bottom, right) = (frame.top + frame.height, frame.left + frame.width);
    svg.line(x, frame.top, x, bottom, GUIDE_COLOR);
    svg.line(frame.left, y, right, y, GUIDE_COLOR);
}
