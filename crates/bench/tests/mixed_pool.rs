//! The `mixed-pool` table from the preset's runs, built from known numbers: each mix
//! filed under its buffer and share of in-order queries beside the pure runs of its
//! buffer, the ratios to the better pure run and to OPT, and the text and JSON that
//! carry them.
#![allow(clippy::unwrap_used)] // test code: an unwrap that fails is a failed test

mod common;

use common::{query_run, sweep_stats, synthetic_report};
use coopscan_bench::report::{html, json, mixed_pool, text};
use coopscan_bench::stats::QueryRun;
use coopscan_bench::{BenchReport, Params};

/// Four queries, the first `in_order` of them in table order.
fn runs(params: &Params, in_order: usize) -> Vec<QueryRun> {
    (0..4)
        .map(|i| query_run(params, i, 1.0, i < in_order))
        .collect()
}

/// Loads per buffer size (10, 40, 80 %): all Scans under pbm 1000, all CScans under
/// relevance 600, each of the three mixes (25, 50, 75 % in order) 630 under mixed (OPT
/// 560) and 700 under relevance; at 80 % the mixes need 660, beyond the bound.
fn reports() -> Vec<BenchReport> {
    let params = coopscan_bench::preset("mixed-pool", &Default::default()).unwrap();
    params
        .into_iter()
        .map(|p| {
            let mixed_loads = if p.buffer_pct == 80.0 { 660 } else { 630 };
            let mut mixed = sweep_stats(mixed_loads, 12.0, 2.0, None);
            mixed.opt_chunk_loads = Some(560);
            let policies = match p.in_order_pct {
                100 => vec![("pbm", sweep_stats(1000, 20.0, 3.0, None))],
                0 => vec![("relevance", sweep_stats(600, 10.0, 2.0, None))],
                _ => vec![
                    ("mixed", mixed),
                    ("relevance", sweep_stats(700, 13.0, 2.5, None)),
                ],
            };
            let mut r = synthetic_report(p.clone(), policies);
            for policy in &mut r.policies {
                policy.runs = runs(&p, 2);
            }
            r
        })
        .collect()
}

#[test]
fn each_run_lands_in_its_row_with_the_ratios_to_the_best_pure_run_and_to_opt() {
    let rows = mixed_pool::mixed_pool_rows(&reports()).unwrap();
    let buffers: Vec<f64> = rows.iter().map(|r| r.buffer_pct).collect();
    assert_eq!(
        buffers,
        [10.0, 10.0, 10.0, 40.0, 40.0, 40.0, 80.0, 80.0, 80.0]
    );
    let shares: Vec<u32> = rows.iter().map(|r| r.in_order_pct).collect();
    assert_eq!(shares[..3], [25, 50, 75]);
    // Every mix of a buffer sits beside that buffer's pure runs.
    assert!(rows
        .iter()
        .all(|r| r.all_scans_pbm.unwrap().chunk_loads == 1000
            && r.all_cscans_relevance.unwrap().chunk_loads == 600));
    let r = &rows[0];
    assert_eq!(r.all_scans_pbm.unwrap().chunk_loads, 1000);
    assert_eq!(r.all_cscans_relevance.unwrap().chunk_loads, 600);
    assert_eq!(r.mix_relevance.unwrap().chunk_loads, 700);
    assert_eq!((r.in_order_queries, r.queries), (2, 4));
    // 630 ÷ min(1000, 600) and 630 ÷ 560.
    assert!((r.mixed_over_best().unwrap() - 1.05).abs() < 1e-12);
    assert!((r.mixed_over_opt().unwrap() - 1.125).abs() < 1e-12);
    assert!((rows[6].mixed_over_best().unwrap() - 1.1).abs() < 1e-12);

    let text = text::render_sweep(&reports());
    assert!(
        text.contains("mixed-pool: Scans and CScans in one pool"),
        "{text}"
    );
    assert!(text.contains("630 / 12.0"), "{text}");
    assert!(text.contains("2 of 4"), "{text}");
    assert!(text.contains("≤ 1.05 at 6 of 9 points"), "{text}");

    let doc: serde_json::Value =
        serde_json::from_str(&json::preset_to_json(&reports()).unwrap()).unwrap();
    let table = doc["mixed_pool"].as_array().unwrap();
    assert_eq!(table.len(), 9);
    assert_eq!(table[3]["mix_mixed"]["opt_chunk_loads"], 560);
    assert_eq!(table[3]["all_scans_pbm"]["chunk_loads"], 1000);

    let page = html::render(&reports());
    assert!(page.contains("<h2>Scans and CScans in one pool</h2>"));
    assert!(page.contains("630 / 12.0"));
    assert!(common::html_check::check_tables(&page) >= 1);
    common::html_check::check_charts(&page);
}

#[test]
fn other_presets_form_no_mixed_pool_table() {
    let table2 = synthetic_report(
        coopscan_bench::presets::table2(),
        vec![("relevance", sweep_stats(600, 10.0, 2.0, None))],
    );
    assert!(mixed_pool::mixed_pool_rows(&[table2]).is_none());
    assert!(mixed_pool::mixed_pool_rows(&[]).is_none());
}

#[test]
fn a_peers_run_of_the_same_point_leaves_coopscans_cells_and_regimes_get_rows_of_their_own() {
    let mut reports = reports();
    let mut peer = synthetic_report(
        reports[0].params.clone(),
        vec![("duckdb", sweep_stats(9999, 1.0, 1.0, None))],
    );
    peer.policies[0].runs = runs(&peer.params, 4);
    reports.insert(1, peer);
    let rows = mixed_pool::mixed_pool_rows(&reports).unwrap();
    assert_eq!(rows.len(), 9);
    assert_eq!(rows[0].all_cscans_relevance.unwrap().chunk_loads, 600);

    let mut cached = reports[0].clone();
    cached
        .params
        .label
        .push_str(coopscan_bench::report::sweep::REGIME_SEPARATOR);
    cached.params.label.push_str("all cached");
    cached.policies[0].stats.chunk_loads = 5;
    reports.push(cached);
    // reports[0] is 10 %'s all-CScans run: in its own regime it has a row of its own.
    let rows = mixed_pool::mixed_pool_rows(&reports).unwrap();
    assert_eq!(rows.len(), 10);
    assert_eq!(rows[9].regime.as_deref(), Some("all cached"));
    assert_eq!(rows[9].all_cscans_relevance.unwrap().chunk_loads, 5);
    assert_eq!(rows[0].all_cscans_relevance.unwrap().chunk_loads, 600);
    assert!(mixed_pool::render(&rows).contains("all cached:"));
}
