//! Table 4's report from a `table4` preset's runs, built from known numbers: per family
//! the I/Os and latency statistics computed from the query runs, the paper's cells
//! beside them, and the count of families where relevance beats normal on both axes.
#![allow(clippy::unwrap_used)] // test code: an unwrap that fails is a failed test

mod common;

use common::{query_run, sweep_stats, synthetic_report};
use coopscan_bench::report::{json, table4, text};
use coopscan_bench::stats::QueryRun;
use coopscan_bench::{BenchReport, Params};

/// Runs with these latencies (seconds), all starting at 1 s.
fn runs(params: &Params, latencies: &[f64]) -> Vec<QueryRun> {
    latencies
        .iter()
        .enumerate()
        .map(|(i, l)| query_run(params, i, *l, false))
        .collect()
}

/// Family `k`: normal 1000 I/Os at latencies 2 and 4 s (norm 3.0), relevance 400 I/Os
/// at 1 s (norm 1.5) — except the last family, where relevance reads more.
fn reports() -> Vec<BenchReport> {
    let params = coopscan_bench::preset("table4", &Default::default()).unwrap();
    let n = params.len();
    params
        .into_iter()
        .enumerate()
        .map(|(k, p)| {
            let relevance_io = if k + 1 == n { 1200 } else { 400 };
            let mut r = synthetic_report(
                p.clone(),
                vec![
                    ("normal", sweep_stats(1000, 10.0, 3.0, None)),
                    ("relevance", sweep_stats(relevance_io, 5.0, 1.5, None)),
                ],
            );
            r.policies[0].runs = runs(&p, &[2.0, 4.0]);
            r.policies[1].runs = runs(&p, &[1.0, 1.0]);
            r
        })
        .collect()
}

#[test]
fn families_carry_statistics_from_the_runs_and_the_papers_cells() {
    let families = table4::table4_families(&reports()).unwrap();
    let names: Vec<&str> = families.iter().map(|f| f.family.as_str()).collect();
    assert_eq!(
        names,
        [
            "ABC",
            "ABC,DEF",
            "ABC,BCD",
            "ABC,BCD,CDE",
            "ABC,BCD,CDE,DEF"
        ]
    );
    let first = &families[0];
    let normal = &first.cells[0];
    assert_eq!(
        (normal.policy.as_str(), normal.io_requests),
        ("normal", 1000)
    );
    assert!((normal.avg_latency_s - 3.0).abs() < 1e-9);
    assert!((normal.stddev_latency_s - 1.0).abs() < 1e-9);
    assert_eq!(
        first.paper.unwrap()[1].0,
        1560,
        "the paper's relevance I/Os for ABC"
    );
    let wins: Vec<Option<bool>> = families.iter().map(|f| f.relevance_wins()).collect();
    assert_eq!(
        wins,
        [Some(true), Some(true), Some(true), Some(true), Some(false)]
    );
}

#[test]
fn the_text_shows_ours_beside_the_papers_and_counts_the_wins() {
    let out = text::render_sweep(&reports());
    for needle in [
        "Table 4 (DSM, column overlap)",
        "(5094, 100.58 ± 20.71)",
        "(3299, 60.20 ± 12.50)",
        "ours 0.40 × / 0.33 ×; paper 0.31 × / 0.24 ×",
        "in 4 of 5 families (paper: all 5)",
    ] {
        assert!(out.contains(needle), "missing {needle:?} in\n{out}");
    }
    // The HTML table puts the paper's numbers beside ours.
    let page = coopscan_bench::report::html::render(&reports());
    assert!(common::html_check::check_tables(&page) >= 1);
    assert!(
        page.contains("<span class=\"paper\">(5094)</span>"),
        "{page}"
    );
}

#[test]
fn the_json_has_a_table4_object_and_other_presets_none() {
    let doc: serde_json::Value =
        serde_json::from_str(&json::preset_to_json(&reports()).unwrap()).unwrap();
    assert_eq!(doc["table4"].as_array().unwrap().len(), 5);
    assert_eq!(doc["table4"][4]["cells"][1]["io_requests"], 1200);
    let table2 = synthetic_report(
        coopscan_bench::presets::table2(),
        vec![("normal", sweep_stats(1, 1.0, 1.0, None))],
    );
    assert!(table4::table4_families(&[table2]).is_none());
}
