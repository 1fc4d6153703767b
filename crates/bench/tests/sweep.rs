//! Figures 5-8 of a preset's reports, on synthetic reports whose numbers come from
//! formulas in this file: the SVG has one line per policy and panel through the right
//! points in x order, the tables list the formulas' values, the mixes where relevance
//! is not best are the ones built that way, and a non-sweep draws no sweep figure.
#![allow(clippy::unwrap_used)] // test code: an unwrap that fails is a failed test

mod common;

use common::{assert_balanced_svgs, sweep_stats, synthetic_report, SWEEP_TOTAL_TIME_S};
use coopscan_bench::presets::{self, preset, Overrides};
use coopscan_bench::report::{html, json, text};
use coopscan_bench::stats::PolicyStats;
use coopscan_bench::{BenchReport, Params};
use coopscan_paper::experiments as defs;
use serde_json::Value;

const POLICIES: [&str; 4] = ["normal", "attach", "elevator", "relevance"];

fn is_cpu_bound(p: &Params) -> bool {
    p.mix.name.starts_with("FS")
}

/// Fig 6's I/Os: fewer with a bigger buffer, fewer for later policies, except
/// relevance at 87.5 %, which reads more than normal there.
fn fig6_io(p: &Params, policy: usize) -> u64 {
    let base = 1000 - (8.0 * p.buffer_pct) as u64;
    let factor = if policy == 3 && p.buffer_pct == 87.5 {
        5
    } else {
        4 - policy as u64
    };
    base * factor + if is_cpu_bound(p) { 7 } else { 0 }
}

/// Fig 6's stream time: a V over the buffer (lowest at 50 %), so a line drawn out of
/// x order would not go down then up.
fn fig6_time(p: &Params, policy: usize) -> f64 {
    let d = p.buffer_pct - 50.0;
    10.0 + d * d / 100.0 + policy as f64
}

fn build(
    runs: Vec<Params>,
    stats: impl Fn(&Params, usize) -> Option<PolicyStats>,
) -> Vec<BenchReport> {
    runs.into_iter()
        .map(|p| {
            let policies = POLICIES
                .iter()
                .enumerate()
                .filter_map(|(i, name)| Some((*name, stats(&p, i)?)))
                .collect();
            synthetic_report(p, policies)
        })
        .collect()
}

/// Fig 6's reports, given in reverse preset order so the figure has to sort them.
fn fig6_reports() -> Vec<BenchReport> {
    let mut runs = presets::runs(&defs::FIG6).unwrap();
    runs.reverse();
    build(runs, |p, i| {
        Some(sweep_stats(fig6_io(p, i), fig6_time(p, i), 2.0, None))
    })
}

/// Each `<svg>…</svg>` of the page.
fn svgs(html: &str) -> Vec<&str> {
    html.split("<svg")
        .skip(1)
        .map(|s| &s[..s.find("</svg>").expect("unclosed svg")])
        .collect()
}

/// The `(title, points)` of every polyline, in document order.
fn polylines(svg: &str) -> Vec<(String, Vec<(f64, f64)>)> {
    svg.split("<polyline points=\"")
        .skip(1)
        .map(|rest| {
            let points = rest[..rest.find('"').unwrap()]
                .split(' ')
                .map(|xy| {
                    let (x, y) = xy.split_once(',').unwrap();
                    (x.parse().unwrap(), y.parse().unwrap())
                })
                .collect();
            let title = rest.split("<title>").nth(1).unwrap();
            (title[..title.find("</title>").unwrap()].to_string(), points)
        })
        .collect()
}

/// The one SVG whose group title contains `needle`.
fn group_svg<'a>(html: &'a str, needle: &str) -> &'a str {
    let found: Vec<&str> = svgs(html)
        .into_iter()
        .filter(|s| s.contains(needle))
        .collect();
    assert_eq!(found.len(), 1, "{needle}");
    found[0]
}

/// Lines of `policy` in one group's SVG: one per panel, each through `values` (in
/// x order): x strictly ascending, and y up where the value goes up.
fn assert_lines(svg: &str, policy: &str, panels: &[Vec<f64>]) {
    let lines: Vec<Vec<(f64, f64)>> = polylines(svg)
        .into_iter()
        .filter(|(t, _)| t == policy)
        .map(|(_, p)| p)
        .collect();
    assert_eq!(lines.len(), panels.len(), "{policy}: one line per panel");
    for (line, values) in lines.iter().zip(panels) {
        assert_eq!(line.len(), values.len(), "{policy}: one point per x");
        for (pair, vals) in line.windows(2).zip(values.windows(2)) {
            assert!(pair[0].0 < pair[1].0, "{policy}: x not ascending");
            // SVG's y grows downwards.
            let went_up = pair[1].1 < pair[0].1;
            assert_eq!(
                went_up,
                vals[1] > vals[0],
                "{policy}: {vals:?} drawn {pair:?}"
            );
        }
    }
}

/// Rows (x, cells) of the text block titled `heading`.
fn text_block(text: &str, heading: &str) -> Vec<(String, Vec<String>)> {
    let mut lines = text.lines().skip_while(|l| l.trim() != heading);
    assert!(lines.next().is_some(), "no block {heading:?} in\n{text}");
    let header = lines.next().unwrap();
    assert!(header.split_whitespace().count() > 1);
    lines
        .take_while(|l| l.starts_with("  ") && !l.contains('—'))
        .map(|l| {
            let mut cells = l.split_whitespace().map(str::to_string);
            (cells.next().unwrap(), cells.collect())
        })
        .collect()
}

const FIG6_PCTS: [f64; 8] = [12.5, 25.0, 37.5, 50.0, 62.5, 75.0, 87.5, 100.0];

fn fig6_params(mix: &str, pct: f64) -> Params {
    let mut p = presets::table2();
    p.mix = mix.parse().unwrap();
    p.buffer_pct = pct;
    p
}

#[test]
fn fig6_draws_a_line_per_policy_and_panel_in_buffer_order() {
    let html = html::render(&fig6_reports());
    // Figure 5's scatter and Figure 6's two query sets; the synthetic runs logged no
    // loads, so no Figure 4 chart but a line saying so per run and policy.
    assert_eq!(assert_balanced_svgs(&html), 1 + 2);
    assert_eq!(html.matches("reports no chunk loads").count(), 16 * 4);
    assert!(html.contains("Figure 6: I/O requests and average stream time"));
    assert!(html.contains("performance advantages of relevance"));
    // 2 query sets × 2 panels × 4 policies.
    assert_eq!(html.matches("<polyline").count(), 16);
    for (needle, mix) in [
        ("disk-bound set F-1,10,50,100", "F-1,10,50,100"),
        ("CPU-bound set FS-1,10,50,100", "FS-1,10,50,100"),
    ] {
        let svg = group_svg(&html, needle);
        for (i, policy) in POLICIES.iter().enumerate() {
            let params: Vec<Params> = FIG6_PCTS.iter().map(|&b| fig6_params(mix, b)).collect();
            let io = params.iter().map(|p| fig6_io(p, i) as f64).collect();
            let time = params.iter().map(|p| fig6_time(p, i)).collect();
            assert_lines(svg, policy, &[io, time]);
        }
    }
}

#[test]
fn fig6_tables_list_each_buffer_size_and_policy() {
    let out = text::render_sweep(&fig6_reports());
    let rows = text_block(&out, "CPU-bound set FS-1,10,50,100 — I/O requests");
    let xs: Vec<&str> = rows.iter().map(|(x, _)| x.as_str()).collect();
    assert_eq!(
        xs,
        ["12.5", "25", "37.5", "50", "62.5", "75", "87.5", "100"]
    );
    for ((_, cells), pct) in rows.iter().zip(FIG6_PCTS) {
        let p = fig6_params("FS-1,10,50,100", pct);
        let want: Vec<String> = (0..4).map(|i| fig6_io(&p, i).to_string()).collect();
        assert_eq!(cells, &want, "buffer {pct}");
    }
    let rows = text_block(&out, "disk-bound set F-1,10,50,100 — avg stream time (s)");
    for ((_, cells), pct) in rows.iter().zip(FIG6_PCTS) {
        let p = fig6_params("F-1,10,50,100", pct);
        for (i, cell) in cells.iter().enumerate() {
            let got: f64 = cell.parse().unwrap();
            assert!((got - fig6_time(&p, i)).abs() < 0.006, "{cell} at {pct}");
        }
    }
    assert!(out.contains("paper: Interestingly, Figure 6 shows"));
    // Relevance's stream time is normal's + 3 s; both at t = 10 + 37.5²/100 at either end.
    let t = 10.0 + 37.5 * 37.5 / 100.0;
    let ratio = format!("{:.2}×", (t + 3.0) / t);
    let ours = format!(
        "ours (disk-bound set F-1,10,50,100): relevance has the fewest I/O requests at 6 of 7 \
         buffer sizes below 100%; its avg stream time ÷ the best other policy's is {ratio} at \
         12.5% and {ratio} at 87.5%"
    );
    assert!(out.contains(&ours), "{ours}\n{out}");
}

#[test]
fn fig6_json_has_the_plotted_series() {
    let doc: Value = serde_json::from_str(&json::preset_to_json(&fig6_reports()).unwrap()).unwrap();
    assert_eq!(doc["runs"].as_array().unwrap().len(), 16);
    let sweep = &doc["sweep"];
    assert_eq!(sweep["figure"], "fig6");
    assert_eq!(sweep["x"], "buffer_pct");
    let group = sweep["groups"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["mix"] == "F-1,10,50,100")
        .unwrap();
    let xs: Vec<f64> = serde_json::from_value(group["x"].clone()).unwrap();
    assert_eq!(xs, FIG6_PCTS);
    let io: Vec<f64> =
        serde_json::from_value(group["series"]["relevance"]["io_requests"].clone()).unwrap();
    let want: Vec<f64> = FIG6_PCTS
        .iter()
        .map(|&b| fig6_io(&fig6_params("F-1,10,50,100", b), 3) as f64)
        .collect();
    assert_eq!(io, want);
    assert_eq!(group["policies"], serde_json::json!(POLICIES));
}

/// Fig 7: I/Os grow with concurrency, stream time and latency by policy and size.
fn fig7_stats(p: &Params, i: usize) -> Option<PolicyStats> {
    let size = p.mix.percents[0] as f64;
    let io = (p.streams as u64) * 10 * (4 - i as u64);
    let time = size + p.streams as f64 / (i + 1) as f64;
    let latency = 1.0 + (p.streams as f64).sqrt() * (4 - i) as f64;
    Some(sweep_stats(io, time, latency, None))
}

#[test]
fn fig7_has_a_panel_group_per_scan_size_on_a_log_axis() {
    let reports = build(presets::runs(&defs::FIG7).unwrap(), fig7_stats);
    let html = html::render(&reports);
    assert!(html.contains("Figure 7"));
    common::html_check::check_charts(&html);
    common::html_check::check_tables(&html);
    // 3 sizes × 3 panels × 4 policies.
    assert_eq!(html.matches("<polyline").count(), 36);
    let streams = [1usize, 2, 4, 8, 16, 32];
    for size in [5u32, 20, 50] {
        let svg = group_svg(&html, &format!("FS-{size}, {size}% scans"));
        for (i, policy) in POLICIES.iter().enumerate() {
            let panels: Vec<Vec<f64>> = (0..3)
                .map(|m| {
                    streams
                        .iter()
                        .map(|&n| {
                            let mut p = presets::table2();
                            p.mix = format!("FS-{size}").parse().unwrap();
                            p.streams = n;
                            let s = fig7_stats(&p, i).unwrap();
                            [
                                s.io_requests as f64,
                                s.avg_stream_time_s,
                                s.avg_normalized_latency,
                            ][m]
                        })
                        .collect()
                })
                .collect();
            assert_lines(svg, policy, &panels);
        }
        // Doubling concurrency: evenly spaced on the log axis.
        let (_, first) = &polylines(svg)[0];
        let steps: Vec<f64> = first.windows(2).map(|w| w[1].0 - w[0].0).collect();
        assert!(
            steps.iter().all(|s| (s - steps[0]).abs() < 0.2),
            "{steps:?}"
        );
    }
    let out = text::render_sweep(&reports);
    let rows = text_block(
        &out,
        "CPU-bound set FS-20, 20% scans — avg normalized latency",
    );
    let xs: Vec<&str> = rows.iter().map(|(x, _)| x.as_str()).collect();
    assert_eq!(xs, ["1", "2", "4", "8", "16", "32"]);
    let (_, at_32) = &rows[5];
    let want: Vec<String> = (0..4)
        .map(|i| format!("{:.2}", 1.0 + 32f64.sqrt() * (4 - i) as f64))
        .collect();
    assert_eq!(at_32, &want);
    // FS-20: relevance 20 + n/4, normal 20 + n, attach 20 + n/2 seconds at n streams.
    let r = |n: f64, other: f64| format!("{:.2}×", (20.0 + n / 4.0) / (20.0 + n / other));
    let ours = format!(
        "ours (CPU-bound set FS-20, 20% scans): relevance's avg stream time from 1 to 32 \
         streams: ÷ normal {} → {}, ÷ attach {} → {}",
        r(1.0, 1.0),
        r(32.0, 1.0),
        r(1.0, 2.0),
        r(32.0, 2.0)
    );
    assert!(out.contains(&ours), "{ours}\n{out}");
}

/// Fig 8: elevator and relevance measure scheduling (more with smaller chunks),
/// normal does not; attach is not in the run.
fn fig8_stats(p: &Params, i: usize) -> Option<PolicyStats> {
    let scheduling = match POLICIES[i] {
        "attach" => return None,
        "normal" => None,
        _ => Some((0.01 * i as f64 / p.chunk_mb, (1000.0 / p.chunk_mb) as u64)),
    };
    Some(sweep_stats(100, 10.0, 2.0, scheduling))
}

#[test]
fn fig8_plots_scheduling_against_chunk_size() {
    let reports = build(presets::runs(&defs::FIG8).unwrap(), fig8_stats);
    let html = html::render(&reports);
    assert!(html.contains("Figure 8: scheduling time against chunk size"));
    assert!(html.contains("does not exceed 1% of the entire execution time"));
    // Only elevator and relevance measured: 3 panels × 2 lines.
    assert_eq!(html.matches("<polyline").count(), 6);
    let svg = group_svg(&html, "disk-bound set F-1,10,100");
    assert!(svg.contains("no values: normal"));
    let chunks = [0.25, 0.5, 1.0, 2.0, 4.0, 8.0];
    for i in [2, 3] {
        let seconds: Vec<f64> = chunks.iter().map(|c| 0.01 * i as f64 / c).collect();
        let per_call: Vec<f64> = chunks
            .iter()
            .zip(&seconds)
            .map(|(c, s)| s * 1e6 / (1000.0 / c))
            .collect();
        let share = seconds.iter().map(|s| s / SWEEP_TOTAL_TIME_S).collect();
        assert_lines(svg, POLICIES[i], &[seconds, per_call, share]);
    }
    let out = text::render_sweep(&reports);
    let rows = text_block(&out, "disk-bound set F-1,10,100 — share of run time (%)");
    let xs: Vec<&str> = rows.iter().map(|(x, _)| x.as_str()).collect();
    assert_eq!(xs, ["0.25", "0.5", "1", "2", "4", "8"]);
    // 0.25 MB: elevator 0.08 s and relevance 0.12 s of an 80 s run; normal did not measure.
    assert_eq!(rows[0].1, ["-", "0.100", "0.150"]);
    let rows = text_block(&out, "disk-bound set F-1,10,100 — per ABM call (µs)");
    // 8 MB: elevator 0.0025 s and relevance 0.00375 s over 125 calls each.
    assert_eq!(rows[5].1, ["-", "20.00", "30.00"]);
    assert!(out.contains(
        "ours (disk-bound set F-1,10,100): the largest scheduling share is 0.150% of the run \
         (relevance at 0.25 MB chunks); the most per ABM call 30.00 µs (relevance at"
    ));
    assert!(html.contains("<br>Ours (disk-bound set F-1,10,100): the largest"));
}

/// Fig 5: relevance's numbers fixed; the others ÷ relevance as `ratio` says.
fn fig5_reports(ratio: impl Fn(&str, &str) -> (f64, f64)) -> Vec<BenchReport> {
    presets::runs(&defs::FIG5)
        .unwrap()
        .into_iter()
        .map(|p| {
            let policies = POLICIES
                .iter()
                .map(|&name| {
                    let (time, latency) = ratio(&p.label, name);
                    (name, sweep_stats(100, 20.0 * time, 3.0 * latency, None))
                })
                .collect();
            synthetic_report(p, policies)
        })
        .collect()
}

/// Relevance is beaten in F-L (normal on both axes, attach on latency) and FS-S
/// (elevator on stream time); elsewhere everyone is behind it or level with it.
fn fig5_ratio(mix: &str, policy: &str) -> (f64, f64) {
    match (mix, policy) {
        (_, "relevance") => (1.0, 1.0),
        ("F-L", "normal") => (0.9, 0.95),
        ("F-L", "attach") => (1.2, 0.8),
        ("FS-S", "elevator") => (0.5, 4.0),
        (_, "attach") => (1.0, 1.0), // a tie does not beat relevance
        _ => (1.5, 2.0),
    }
}

#[test]
fn fig5_table_names_the_mixes_where_relevance_is_not_best() {
    let reports = fig5_reports(fig5_ratio);
    let out = text::render_sweep(&reports);
    let row = |mix: &str| {
        out.lines()
            .find(|l| l.split_whitespace().next() == Some(mix))
            .unwrap_or_else(|| panic!("no row {mix} in\n{out}"))
    };
    assert_eq!(
        row("F-L").split_whitespace().collect::<Vec<_>>()[1..4],
        ["0.90/0.95", "1.20/0.80", "1.50/2.00"]
    );
    assert!(row("F-L")
        .ends_with("normal (stream time, normalized latency); attach (normalized latency)"));
    assert!(row("FS-S").ends_with("elevator (stream time)"));
    assert!(
        row("S-M").trim_end().ends_with("1.50/2.00"),
        "{}",
        row("S-M")
    );
    assert!(out.contains("relevance is not best on both axes in 2 of 15 mixes: F-L, FS-S"));
    assert_eq!(out.lines().filter(|l| l.contains('/')).count(), 15 + 1); // + the title

    let doc: Value = serde_json::from_str(&json::preset_to_json(&reports).unwrap()).unwrap();
    assert_eq!(
        doc["sweep"]["relevance_not_best"],
        serde_json::json!(["F-L", "FS-S"])
    );
    let fl = &doc["sweep"]["mixes"][2];
    assert_eq!(fl["label"], "F-L");
    assert_eq!(
        fl["relevance_beaten_on"]["attach"],
        serde_json::json!(["normalized_latency"])
    );
    let ratio = fl["relative"]["normal"]["stream_time"].as_f64().unwrap();
    assert!((ratio - 0.9).abs() < 1e-12, "{ratio}");

    let html = html::render(&reports);
    assert!(html.contains("relevance is not best on both axes in 2 of 15 mixes"));
    assert!(html.contains("consistently better than all other policies"));
    assert!(!html.contains("<polyline"));
}

#[test]
fn fig5_says_so_when_relevance_is_best_everywhere() {
    let out = text::render_sweep(&fig5_reports(|_, p| {
        if p == "relevance" {
            (1.0, 1.0)
        } else {
            (1.1, 1.3)
        }
    }));
    assert!(
        out.contains("relevance is best on both axes in every mix"),
        "{out}"
    );
}

#[test]
fn a_single_table2_report_draws_no_sweep() {
    let report = synthetic_report(
        presets::table2(),
        vec![
            ("normal", sweep_stats(10, 2.0, 3.0, None)),
            ("relevance", sweep_stats(5, 1.0, 1.5, Some((0.1, 10)))),
        ],
    );
    let one = [report.clone()];
    let page = html::render(&one);
    assert!(!page.contains("<polyline"));
    for figure in ["Figure 6", "Figure 7", "Figure 8"] {
        assert!(!page.contains(figure), "{figure}");
    }
    assert_eq!(text::render_sweep(&one), "");
    assert_eq!(
        json::preset_to_json(&one).unwrap(),
        json::to_json(&report).unwrap()
    );
    // Two table2 runs are no sweep either.
    let two = [report.clone(), report];
    assert_eq!(text::render_sweep(&two), "");
    let doc: Value = serde_json::from_str(&json::preset_to_json(&two).unwrap()).unwrap();
    assert!(doc.get("sweep").is_none());
}

#[test]
fn a_sweep_collapsed_by_an_override_draws_nothing() {
    let overrides = Overrides {
        buffer_pct: Some(50.0),
        ..Overrides::default()
    };
    let reports = build(preset("fig6", &overrides).unwrap(), |p, i| {
        Some(sweep_stats(fig6_io(p, i), 1.0, 1.0, None))
    });
    assert!(!html::render(&reports).contains("<polyline"));
    assert_eq!(text::render_sweep(&reports), "");
}

#[test]
fn each_regime_is_its_own_query_set() {
    let reports: Vec<BenchReport> = ["io", "cached"]
        .iter()
        .flat_map(|regime| {
            let runs = presets::runs(&defs::FIG6)
                .unwrap()
                .into_iter()
                .map(move |mut p| {
                    p.label = format!("{} · {regime}", p.label);
                    p
                });
            build(runs.collect(), |p, i| {
                Some(sweep_stats(fig6_io(p, i), 1.0, 1.0, None))
            })
        })
        .collect();
    let html = html::render(&reports);
    assert_eq!(html.matches("<polyline").count(), 32);
    group_svg(&html, "disk-bound set F-1,10,50,100, cached");
    group_svg(&html, "CPU-bound set FS-1,10,50,100, io");
}

/// The 2012 paper's Figure 12: LRU's I/Os fixed, PBM's half of them at the slowest
/// disk and all of them at the fastest, CScans' a quarter throughout.
#[test]
fn pbm_bandwidth_plots_io_and_stream_time_against_bandwidth() {
    let runs = preset("pbm-bandwidth", &Overrides::default()).unwrap();
    let last = runs.len() - 1;
    let reports: Vec<BenchReport> = runs
        .into_iter()
        .enumerate()
        .map(|(k, p)| {
            let pbm_io = if k == last { 1000 } else { 500 };
            let stats = |io| sweep_stats(io, 10.0, 2.0, None);
            let policies = vec![
                ("normal", stats(1000)),
                ("pbm", stats(pbm_io)),
                ("relevance", stats(250)),
            ];
            synthetic_report(p, policies)
        })
        .collect();
    let html = html::render(&reports);
    assert!(html.contains("2012 paper Figure 12"));
    // Two panels (I/Os, stream time) × three policies.
    assert_eq!(html.matches("<polyline").count(), 6);
    let out = text::render_sweep(&reports);
    assert!(
        out.contains("PBM's I/O requests from bandwidth × 0.2857142857142857 to 2.857142857142857: ÷ LRU 0.50× → 1.00×, ÷ CScans 2.00× → 4.00×"),
        "{out}"
    );
    let doc: Value = serde_json::from_str(&json::preset_to_json(&reports).unwrap()).unwrap();
    assert_eq!(doc["sweep"]["figure"], "pbm-bandwidth");
    assert_eq!(doc["sweep"]["x"], "bandwidth_scale");
}
