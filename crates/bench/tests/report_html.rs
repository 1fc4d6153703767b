//! The HTML report a person reads, checked from its text (and, where Chromium is
//! installed, rendered by it): a Table 2 run with peer engines, where coopscan's
//! policies logged chunk loads over very different times and the peers logged none,
//! and PostgreSQL's normalized latency is about 50× relevance's.
#![allow(clippy::unwrap_used)] // test code: an unwrap that fails is a failed test

mod common;

use common::html_check::{check_charts, check_tables, plot_areas, svgs};
use common::{small_params, sweep_stats, synthetic_report};
use coopscan_bench::report::html;
use coopscan_bench::stats::QueryTypeStats;
use coopscan_bench::{BenchReport, LoadRecord};
use std::time::Duration;

/// (policy, avg stream time s, avg normalized latency, seconds of chunk loads: none
/// for a peer, which logs no loads).
const RUNS: [(&str, f64, f64, Option<f64>); 6] = [
    ("normal", 30.0, 4.0, Some(20.0)),
    ("attach", 22.0, 3.0, Some(12.0)),
    ("elevator", 18.0, 2.6, Some(9.0)),
    ("relevance", 12.0, 2.0, Some(2.0)),
    ("duckdb", 15.0, 3.2, None),
    ("postgres", 60.0, 100.0, None),
];
const LOADS_PER_RUN: u32 = 40;

/// `count` loads of chunks 0.. spread evenly over `0..=span_s`.
fn loads(span_s: f64, count: u32) -> Vec<LoadRecord> {
    (0..count)
        .map(|i| LoadRecord {
            at: Duration::from_secs_f64(span_s * f64::from(i) / f64::from(count - 1)),
            chunk: i % 16,
            tag: None,
            bytes: 4096,
        })
        .collect()
}

fn report(runs: &[(&str, f64, f64, Option<f64>)]) -> BenchReport {
    let policies = runs
        .iter()
        .map(|(name, stream, latency, _)| (*name, sweep_stats(100, *stream, *latency, None)))
        .collect();
    let mut report = synthetic_report(small_params(), policies);
    let query_type = report.params.mix.query_types()[0];
    for (p, run) in report.policies.iter_mut().zip(runs) {
        p.loads = run.3.map_or(Vec::new(), |span| loads(span, LOADS_PER_RUN));
        p.stats.query_types.insert(query_type, type_stats(run.2));
    }
    report
}

fn type_stats(normalized_latency: f64) -> QueryTypeStats {
    QueryTypeStats {
        count: 2,
        standalone_s: 1.0,
        latency_avg_s: normalized_latency,
        latency_stddev_s: 0.1,
        normalized_latency,
        io_requests: Some(3.0),
    }
}

/// max ÷ min of the values Figure 5 plots on one axis (relevance's 1 among them).
fn span(values: impl Iterator<Item = f64>) -> f64 {
    let values: Vec<f64> = values.chain([1.0]).collect();
    let max = values.iter().copied().fold(f64::MIN, f64::max);
    max / values.iter().copied().fold(f64::MAX, f64::min)
}

fn figure5_area(page: &str) -> common::html_check::PlotArea {
    let svg = svgs(page)
        .into_iter()
        .find(|s| s.contains("avg normalized latency"))
        .expect("Figure 5");
    plot_areas(svg).remove(0)
}

#[test]
fn tables_are_tables_and_charts_hold_their_points() {
    let page = html::render(&[report(&RUNS)]);
    // System statistics and the per-query-type table.
    assert_eq!(check_tables(&page), 2);
    // The paper's Table 2 numbers beside ours.
    assert!(
        page.contains("<span class=\"paper\">(283.72)</span>"),
        "no paper number"
    );
    // Figure 5, and a Figure 4 chart for each policy that logged loads.
    let with_loads = RUNS.iter().filter(|r| r.3.is_some()).count();
    assert_eq!(check_charts(&page).len(), 1 + with_loads);
}

#[test]
fn each_load_chart_spans_its_own_loads_and_peers_get_a_line() {
    let page = html::render(&[report(&RUNS)]);
    for svg in svgs(&page).into_iter().filter(|s| s.contains(" loads)")) {
        let charts = check_charts(&format!("<svg{svg}</svg>"));
        let (area, points) = &charts[0];
        let [left, _, width, _] = area.rect;
        let right_most = points.iter().map(|p| p.0).fold(left, f64::max);
        // On one time scale for all, relevance's 2 s of loads of normal's 20 s would end
        // in the first tenth; on its own they reach well into the right half.
        assert!(right_most > left + width / 2.0, "squeezed loads:\n{svg}");
    }
    for (name, ..) in RUNS.iter().filter(|r| r.3.is_none()) {
        assert!(
            page.contains(&format!("{name} reports no chunk loads")),
            "{name}"
        );
    }
}

#[test]
fn figure5_is_logarithmic_exactly_where_its_values_span_10x() {
    let relevance = RUNS[3];
    let others = || RUNS.iter().filter(|r| r.0 != "relevance");
    let latency_span = span(others().map(|r| r.2 / relevance.2));
    let stream_span = span(others().map(|r| r.1 / relevance.1));
    assert!(
        latency_span >= 10.0 && stream_span < 10.0,
        "the data's premise"
    );
    let area = figure5_area(&html::render(&[report(&RUNS)]));
    assert_eq!(
        (area.x_scale.as_str(), area.y_scale.as_str()),
        ("log", "linear")
    );
    // Without PostgreSQL nothing spans 10×: both axes linear.
    let area = figure5_area(&html::render(&[report(&RUNS[..5])]));
    assert_eq!(
        (area.x_scale.as_str(), area.y_scale.as_str()),
        ("linear", "linear")
    );
}

#[test]
fn chromium_renders_the_report() {
    let page = html::render(&[report(&RUNS)]);
    let dir = std::env::temp_dir().join(format!("coopscan-report-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (html_path, png_path) = (dir.join("report.html"), dir.join("report.png"));
    std::fs::write(&html_path, &page).unwrap();
    let chromium = ["chromium", "chromium-browser"].iter().any(|b| {
        std::process::Command::new("sh")
            .args(["-c", &format!("command -v {b}")])
            .output()
            .is_ok_and(|o| o.status.success())
    });
    if !chromium {
        println!("chromium not installed: report not rendered (structural checks only)");
        return;
    }
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../scripts/screenshot-report.sh"
    );
    let status = std::process::Command::new("bash")
        .arg(script)
        .args([&html_path, &png_path])
        .status()
        .unwrap();
    assert!(status.success(), "screenshot-report.sh failed");
    let png = std::fs::read(&png_path).unwrap();
    assert!(png.starts_with(b"\x89PNG\r\n\x1a\n"), "not a PNG");
    // A blank page compresses to a few kB; a rendered report with its charts does not.
    assert!(
        png.len() > 20_000,
        "a nearly blank screenshot: {} bytes",
        png.len()
    );
    let _ = std::fs::remove_dir_all(&dir);
}
