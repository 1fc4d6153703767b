//! A TPC-H throughput preset's reports (the 2012 paper's Figures 14-16 and 18): as
//! text a table per sweep point and policy with the paper's finding beside ours; in
//! HTML the same table, a line chart per metric over the swept x (Figures 14-16), and
//! Figure 18's volumes over time for the single-point preset. JSON is the
//! [`TpchReport`] itself.

use super::html_table::{html_table, note, Cell, STYLE};
use super::line_chart::{self, Area, Line, Panel};
use super::sharing::{CLASS_COLORS, CLASS_NAMES};
use super::svg::{escape, Svg};
use crate::bandwidth::BYTES_PER_MB;
use crate::tpch_throughput::{TpchPoint, TpchReport, TpchRun, TpchSharing};
use coopscan_paper::sharing::SHARING_CLASSES;
use coopscan_render::palette::policy_color;
use std::fmt::Write;

const PERCENT: f64 = 100.0;
const PLOT_WIDTH: f64 = 300.0;
const PLOT_HEIGHT: f64 = 190.0;
const PANEL_LEFT: f64 = 64.0;
const RIGHT_MARGIN: f64 = 20.0;
const LEGEND_Y: f64 = 16.0;
const PLOT_TOP: f64 = 52.0;
const BOTTOM_MARGIN: f64 = 48.0;
/// Time ticks of Figure 18: 0, ¼, ½, ¾ and all of the run.
const TIME_TICKS: usize = 4;

/// A plotted quantity of Figures 14-16.
struct Metric {
    label: &'static str,
    value: fn(&TpchRun) -> Option<f64>,
}

const METRICS: [Metric; 3] = [
    Metric {
        label: "average stream time (s)",
        value: |r| Some(r.avg_stream_s),
    },
    Metric {
        label: "I/O volume (MB)",
        value: |r| Some(r.mb_read()),
    },
    Metric {
        label: "OPT's I/O volume on the run's references (MB)",
        value: |r| r.opt_bytes.map(|b| b as f64 / BYTES_PER_MB),
    },
];

/// The report as text.
pub fn text(report: &TpchReport) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{} — {}", report.preset, report.source);
    out.push_str(&calibration_line(report));
    out.push('\n');
    let x = match report.x_label.is_empty() {
        true => "point".to_string(),
        false => report.x_key.clone(),
    };
    let _ = writeln!(
        out,
        "{x:>10} {:<18} {:>10} {:>6} {:>10} {:>8} {:>9} {:>8} {:>9} {:>7}",
        "policy",
        "avg strm s",
        "÷ LRU",
        "max strm s",
        "CPU s",
        "MB read",
        "pieces",
        "OPT MB",
        "mem MB"
    );
    for point in &report.points {
        for run in &point.runs {
            out.push_str(&run_row(point, run));
        }
    }
    if let Some(line) = peers_line(report) {
        out.push_str(&line);
    }
    out.push_str(&failures_text(report));
    if let Some(sharing) = &report.sharing {
        out.push_str(&sharing_text(sharing));
    }
    let _ = writeln!(out, "paper: {}", report.finding);
    let _ = writeln!(out, "ours:  {}", ours(report));
    let _ = writeln!(out, "results: {}", results_line(report));
    out
}

/// The peers that ran, with their versions and what they were given.
fn peers_line(report: &TpchReport) -> Option<String> {
    let mut peers: Vec<String> = Vec::new();
    for run in report.points.iter().flat_map(|p| &p.runs) {
        if let Some(version) = &run.engine_version {
            let named = format!("{} {version}", run.policy);
            if !peers.contains(&named) {
                peers.push(named);
            }
        }
    }
    (!peers.is_empty()).then(|| {
        format!(
            "peers: {} — on the same throttled device, no page cache; mem MB: coopscan's \
             growth beyond its idle process, DuckDB's memory_limit (the buffer, doubled \
             while it ran out, at most coopscan's), DataFusion's growth (uncapped)\n",
            peers.join(", ")
        )
    })
}

/// Each failed peer run, a line each.
fn failures_text(report: &TpchReport) -> String {
    let mut out = String::new();
    for point in &report.points {
        for f in &point.failures {
            let _ = writeln!(
                out,
                "FAILED at {}: {} (round {}): {}",
                point_name(report, point),
                f.engine,
                f.round + 1,
                f.error.lines().next().unwrap_or_default()
            );
        }
    }
    out
}

/// What the result checks found: every run returned the same rows, or one run had no
/// other to compare with.
fn results_line(report: &TpchReport) -> String {
    match report.results_checked {
        0 => "one run of each query, nothing to compare with".to_string(),
        n => format!("{n} queries, every run's result the same"),
    }
}

fn calibration_line(report: &TpchReport) -> String {
    let c = &report.calibration;
    let how = match (c.bandwidth_given, c.lru_bytes) {
        (true, _) | (false, None) => "given".to_string(),
        (false, Some(lru)) => format!(
            "calibrated: LRU read {:.0} MB unthrottled, half the rate at which that \
             keeps up with the CPU-bound streams",
            lru as f64 / BYTES_PER_MB
        ),
    };
    format!(
        "SF {}, seed {}, {} queries per stream; the queries touch {:.1} MB (CPU-bound \
         stream time {:.2} s); device {:.1} MB/s for the paper's 600 ({how})\n",
        report.sf,
        report.seed,
        report.queries_per_stream,
        c.touched_bytes as f64 / BYTES_PER_MB,
        c.cpu_bound_stream_s,
        c.bandwidth_mb_s,
    )
}

/// One run's cells, in the headers' order.
fn fields(point: &TpchPoint, run: &TpchRun) -> [String; 10] {
    let dash = |v: Option<String>| v.unwrap_or_else(|| "-".to_string());
    [
        format!("{}", point.x),
        run.policy.clone(),
        format!("{:.2}", run.avg_stream_s),
        dash(point.over_lru(&run.policy).map(|r| format!("{r:.2}"))),
        format!("{:.2}", run.max_stream_s),
        format!("{:.2}", run.cpu_s),
        format!("{:.1}", run.mb_read()),
        dash(run.piece_loads.map(|p| p.to_string())),
        dash(
            run.opt_bytes
                .map(|b| format!("{:.1}", b as f64 / BYTES_PER_MB)),
        ),
        dash(
            run.memory_bytes
                .map(|b| format!("{:.0}", b as f64 / BYTES_PER_MB)),
        ),
    ]
}

fn run_row(point: &TpchPoint, run: &TpchRun) -> String {
    let [x, policy, avg, over, max, cpu, mb, pieces, opt, mem] = fields(point, run);
    format!(
        "{x:>10} {policy:<18} {avg:>10} {over:>6} {max:>10} {cpu:>8} {mb:>9} {pieces:>8} {opt:>9} {mem:>7}\n"
    )
}

fn sharing_text(s: &TpchSharing) -> String {
    let mut out = format!(
        "Figure 18, sharing potential of the {} run (time-averaged MiB wanted by):\n",
        s.policy
    );
    for (name, mib) in CLASS_NAMES.iter().zip(s.mean_mib) {
        let _ = writeln!(out, "  {name:<9} {mib:>9.1}");
    }
    let _ = writeln!(
        out,
        "  wanted by two or more: {:.1} %",
        s.shared_fraction * PERCENT
    );
    out
}

/// Our side of the paper's finding: each policy ÷ LRU at each point, and the sharing
/// potential where it was computed.
fn ours(report: &TpchReport) -> String {
    let mut parts = Vec::new();
    for point in &report.points {
        let ratios: Vec<String> = point
            .runs
            .iter()
            .filter(|r| !r.lru())
            .filter_map(|r| Some(format!("{} {:.2}", r.policy, point.over_lru(&r.policy)?)))
            .collect();
        if !ratios.is_empty() {
            parts.push(format!(
                "at {} ÷ LRU: {}",
                point_name(report, point),
                ratios.join(", ")
            ));
        }
        parts.extend(best_over_peers(report, point));
    }
    if let Some(s) = &report.sharing {
        parts.push(format!(
            "{:.1} % of the wanted volume is wanted by two or more scans",
            s.shared_fraction * PERCENT
        ));
    }
    match parts.is_empty() {
        true => "no LRU run to compare with".to_string(),
        false => parts.join("; "),
    }
}

/// coopscan's best policy's average stream time ÷ each peer's at `point`.
fn best_over_peers(report: &TpchReport, point: &TpchPoint) -> Option<String> {
    let ours = (point.runs.iter()).filter(|r| r.engine_version.is_none() && !r.simulated());
    let best = ours.min_by(|a, b| a.avg_stream_s.total_cmp(&b.avg_stream_s))?;
    let ratios: Vec<String> = (point.runs.iter())
        .filter(|r| r.engine_version.is_some() && r.avg_stream_s > 0.0)
        .map(|r| format!("÷ {} {:.2}", r.policy, best.avg_stream_s / r.avg_stream_s))
        .collect();
    (!ratios.is_empty()).then(|| {
        format!(
            "at {} coopscan's best ({}) {}",
            point_name(report, point),
            best.policy,
            ratios.join(", ")
        )
    })
}

fn point_name(report: &TpchReport, point: &TpchPoint) -> String {
    match report.x_key.as_str() {
        "" => "the default point".to_string(),
        key => format!("{key} {}", point.x),
    }
}

/// The report as a self-contained HTML page.
pub fn html(report: &TpchReport) -> String {
    let title = format!("coopscan bench: {}", report.preset);
    let mut out = String::new();
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>{t}</title>\
         <style>{STYLE}</style></head><body>\n<h1>{t}</h1>\n<p>{}</p>\n",
        escape(&report.source),
        t = escape(&title),
    );
    out.push_str(&note(&calibration_line(report)));
    if report.points.len() > 1 {
        out.push_str(&sweep_chart(report));
    }
    out.push_str(&html_table("", &headers(report), &rows(report)));
    if let Some(line) = peers_line(report) {
        out.push_str(&note(&line));
    }
    let failures = failures_text(report);
    if !failures.is_empty() {
        out.push_str(&note(&failures));
    }
    if let Some(sharing) = &report.sharing {
        let _ = writeln!(
            out,
            "<h2>Figure 18: sharing potential ({} run)</h2>",
            escape(&sharing.policy)
        );
        out.push_str(&sharing_chart(sharing));
    }
    out.push_str(&note(&format!(
        "paper: {}\nours: {}\nresults: {}",
        report.finding,
        ours(report),
        results_line(report)
    )));
    out.push_str("</body></html>\n");
    out
}

fn headers(report: &TpchReport) -> Vec<String> {
    let x = match report.x_label.is_empty() {
        true => "point",
        false => report.x_label.as_str(),
    };
    [
        x,
        "policy",
        "avg stream s",
        "÷ LRU",
        "max stream s",
        "CPU s",
        "MB read",
        "pieces read",
        "OPT MB",
        "memory MB",
    ]
    .map(String::from)
    .to_vec()
}

fn rows(report: &TpchReport) -> Vec<Vec<Cell>> {
    (report.points.iter())
        .flat_map(|p| {
            p.runs
                .iter()
                .map(move |r| fields(p, r).map(Cell::from).to_vec())
        })
        .collect()
}

/// Figures 14-16: a panel per metric, a line per policy over the swept x.
fn sweep_chart(report: &TpchReport) -> String {
    let xs: Vec<f64> = report.points.iter().map(|p| p.x).collect();
    let policies = policies_in_order(report);
    let width = METRICS.len() as f64 * (PANEL_LEFT + PLOT_WIDTH) + RIGHT_MARGIN;
    let mut svg = Svg::new(width, PLOT_TOP + PLOT_HEIGHT + BOTTOM_MARGIN);
    let entries: Vec<(&str, &str)> = policies
        .iter()
        .map(|p| (p.as_str(), policy_color(p)))
        .collect();
    line_chart::legend(&mut svg, PANEL_LEFT, LEGEND_Y, &entries);
    for (i, metric) in METRICS.iter().enumerate() {
        let lines = policies
            .iter()
            .map(|policy| Line {
                name: policy,
                color: policy_color(policy),
                points: report
                    .points
                    .iter()
                    .filter_map(|p| Some((p.x, (metric.value)(p.run(policy)?)?)))
                    .collect(),
            })
            .collect();
        let panel = Panel {
            title: metric.label,
            x_label: &report.x_label,
            xs: &xs,
            log_x: report.x_key == "streams",
            lines,
            markers: true,
        };
        line_chart::draw(&mut svg, area(i), &panel);
    }
    svg.finish()
}

fn area(i: usize) -> Area {
    Area {
        left: PANEL_LEFT + i as f64 * (PANEL_LEFT + PLOT_WIDTH),
        top: PLOT_TOP,
        width: PLOT_WIDTH,
        height: PLOT_HEIGHT,
    }
}

/// Every policy that ran, in the order it first ran.
fn policies_in_order(report: &TpchReport) -> Vec<String> {
    let mut seen: Vec<String> = Vec::new();
    for run in report.points.iter().flat_map(|p| &p.runs) {
        if !seen.contains(&run.policy) {
            seen.push(run.policy.clone());
        }
    }
    seen
}

/// Figure 18: MiB wanted by 1, 2, 3 and ≥ 4 active scans over the run.
fn sharing_chart(s: &TpchSharing) -> String {
    let mut svg = Svg::new(
        PANEL_LEFT + PLOT_WIDTH * 2.0 + RIGHT_MARGIN,
        PLOT_TOP + PLOT_HEIGHT + BOTTOM_MARGIN,
    );
    let entries: Vec<(&str, &str)> = CLASS_NAMES.into_iter().zip(CLASS_COLORS).collect();
    line_chart::legend(&mut svg, PANEL_LEFT, LEGEND_Y, &entries);
    let end = s.moments.last().map_or(0.0, |m| m.at_s);
    let xs: Vec<f64> = (0..=TIME_TICKS)
        .map(|k| (end * k as f64 / TIME_TICKS as f64 * 10.0).round() / 10.0)
        .collect();
    let lines = (0..SHARING_CLASSES)
        .map(|c| Line {
            name: CLASS_NAMES[c],
            color: CLASS_COLORS[c],
            points: s.moments.iter().map(|m| (m.at_s, m.mib[c])).collect(),
        })
        .collect();
    let panel = Panel {
        title: "MiB wanted",
        x_label: "time (s)",
        xs: &xs,
        log_x: false,
        lines,
        markers: false,
    };
    let area = Area {
        width: PLOT_WIDTH * 2.0,
        ..area(0)
    };
    line_chart::draw(&mut svg, area, &panel);
    svg.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tpch_throughput::{SharingMoment, TpchCalibration};

    fn run(policy: &str, avg: f64, bytes: u64) -> TpchRun {
        TpchRun {
            policy: policy.to_string(),
            streams: 2,
            avg_stream_s: avg,
            max_stream_s: avg,
            stream_s: vec![avg, avg],
            cpu_s: 1.0,
            bytes_read: bytes,
            piece_loads: Some(10),
            opt_piece_loads: Some(8),
            opt_bytes: Some(bytes / 2),
            rounds_avg_stream_s: vec![avg],
            memory_bytes: Some(64 << 20),
            engine_version: None,
        }
    }

    fn report(xs: &[f64]) -> TpchReport {
        TpchReport {
            preset: "tpch-buffer".into(),
            source: "Figure 14".into(),
            finding: "the paper's words".into(),
            x_label: "buffer".into(),
            x_key: "buffer_pct".into(),
            sf: 1.0,
            seed: 1,
            queries_per_stream: 22,
            calibration: TpchCalibration {
                touched_bytes: 100_000_000,
                cpu_bound_stream_s: 10.0,
                lru_bytes: Some(400_000_000),
                bandwidth_mb_s: 20.0,
                bandwidth_given: false,
                least_buffer_bytes: 1,
            },
            points: xs
                .iter()
                .map(|&x| TpchPoint {
                    x,
                    streams: 2,
                    buffer_bytes: 1,
                    bandwidth_mb_s: 20.0,
                    runs: vec![
                        run("normal", 20.0, 4_000_000),
                        run("relevance", 15.0, 2_000_000),
                    ],
                    failures: Vec::new(),
                })
                .collect(),
            results_checked: 44,
            sharing: None,
        }
    }

    #[test]
    fn each_policy_is_set_against_lru_at_its_point() {
        let r = report(&[10.0, 30.0]);
        assert_eq!(r.points[0].over_lru("relevance"), Some(0.75));
        assert_eq!(r.points[0].over_lru("pbm"), None, "no such run");
        // The simulator's runs against the simulated LRU, not the real one.
        let mut simulated = r.clone();
        let runs = &mut simulated.points[0].runs;
        runs.push(run("sim:normal", 10.0, 1));
        runs.push(run("sim:relevance", 6.0, 1));
        assert_eq!(simulated.points[0].over_lru("sim:relevance"), Some(0.6));
        assert_eq!(simulated.points[0].over_lru("relevance"), Some(0.75));
        assert_eq!(
            r.points[0].over_lru("sim:relevance"),
            None,
            "no simulated LRU"
        );
        let said = text(&simulated);
        assert!(
            said.contains("÷ LRU: relevance 0.75, sim:relevance 0.60;"),
            "{said}"
        );
        assert!(
            !said.contains("coopscan's best"),
            "the simulator is no peer"
        );
        let text = text(&r);
        assert!(
            text.contains("ours:  at buffer_pct 10 ÷ LRU: relevance 0.75; at buffer_pct 30"),
            "{text}"
        );
        // x, policy, average, ÷ LRU, max, CPU, MB read, pieces, OPT MB, memory MB.
        let row = text
            .lines()
            .find(|l| l.contains("relevance") && l.trim().starts_with("30"))
            .unwrap();
        assert_eq!(
            row.split_whitespace().collect::<Vec<_>>(),
            [
                "30",
                "relevance",
                "15.00",
                "0.75",
                "15.00",
                "1.00",
                "2.0",
                "10",
                "1.0",
                "67"
            ]
        );
        assert!(
            text.contains("400 MB unthrottled"),
            "the calibration is said: {text}"
        );
        let html = html(&r);
        assert_eq!(html.matches("<svg").count(), 1, "one chart of the sweep");
        assert!(
            html.contains("<td class=\"num\">0.75</td>") || html.contains(">0.75<"),
            "{html}"
        );
    }

    #[test]
    fn a_single_point_draws_figure_18_instead_of_a_sweep() {
        let mut r = report(&[30.0]);
        r.x_key.clear();
        r.x_label.clear();
        r.sharing = Some(TpchSharing {
            policy: "pbm".into(),
            mean_mib: [3.0, 1.0, 0.0, 0.0],
            shared_fraction: 0.25,
            moments: vec![SharingMoment {
                at_s: 1.0,
                mib: [3.0, 1.0, 0.0, 0.0],
            }],
        });
        let text = text(&r);
        assert!(
            text.contains(
                "at the default point ÷ LRU: relevance 0.75; 25.0 % of the wanted volume"
            ),
            "{text}"
        );
        assert!(text.contains("wanted by two or more: 25.0 %"));
        let html = html(&r);
        assert_eq!(html.matches("<svg").count(), 1, "Figure 18 only");
        assert!(html.contains("Figure 18: sharing potential (pbm run)"));
    }

    #[test]
    fn peers_are_named_and_coopscans_best_is_set_against_each() {
        let mut r = report(&[30.0]);
        let mut duckdb = run("duckdb", 10.0, 1_000_000);
        duckdb.engine_version = Some("2.0.1".into());
        duckdb.piece_loads = None;
        r.points[0].runs.push(duckdb);
        let out = text(&r);
        assert!(out.contains("peers: duckdb 2.0.1"), "{out}");
        assert!(
            out.contains("at buffer_pct 30 coopscan's best (relevance) ÷ duckdb 1.50"),
            "{out}"
        );
        assert!(html(&r).contains("peers: duckdb 2.0.1"));
        let alone = report(&[30.0]);
        assert!(!text(&alone).contains("peers:"), "no peer, no line");
        r.points[0]
            .failures
            .push(crate::tpch_throughput::TpchFailure {
                engine: "datafusion-parquet".into(),
                round: 0,
                error: "the driver process exited\nits stderr".into(),
            });
        assert!(
            text(&r).contains(
                "FAILED at buffer_pct 30: datafusion-parquet (round 1): the driver process exited\n"
            ),
            "{}",
            text(&r)
        );
    }
}
