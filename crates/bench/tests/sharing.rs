//! Figure 17's sharing potential: the sampling on a hand-worked case, odd input, and a
//! `pbm-sharing` run of a fake engine that hands out consumptions, through to the
//! text, JSON and HTML reports.
#![allow(clippy::unwrap_used)] // test code: an unwrap that fails is a failed test

mod common;

use common::{assert_balanced_svgs, consuming_factory, small_params, Reference, ROWS_PER_CHUNK};
use coopscan_bench::report::{html, json, text};
use coopscan_bench::sharing::{sharing_potential, IgnoredConsumptions, SHARING_SAMPLES};
use coopscan_bench::stats::QueryRun;
use coopscan_bench::{
    presets, run_benchmark, BenchInput, BenchReport, Consumption, Params, QueryInstance, QueryKind,
    QueryType, TableInfo,
};
use serde_json::Value;
use std::time::Duration;

const MIB: u64 = 1 << 20;

fn query(id: u64, start_ms: u64, end_ms: u64) -> QueryRun {
    QueryRun {
        query: QueryInstance {
            id,
            stream: id as usize,
            index: 0,
            query_type: QueryType {
                kind: QueryKind::Fast,
                percent: 10,
            },
            rows: 0..1000,
            in_order: false,
        },
        start: Duration::from_millis(start_ms),
        end: Duration::from_millis(end_ms),
    }
}

fn took(tag: u64, chunk: u32, at_ms: u64, bytes: u64) -> Consumption {
    Consumption {
        at: Duration::from_millis(at_ms),
        tag,
        chunk,
        bytes,
    }
}

/// Five queries over chunks 0-4 in a 10 s run (A 0-6 s, B 2-8, C 4-10, D 0-10,
/// E 2-5). C reads chunk 4 in two pieces (½ + ¼ MiB); E reads only ½ MiB of chunk 2,
/// which still counts as A's full MiB.
fn hand_case() -> (Vec<QueryRun>, Vec<Consumption>) {
    let runs = vec![
        query(0, 0, 6000),
        query(1, 2000, 8000),
        query(2, 4000, 10_000),
        query(3, 0, 10_000),
        query(4, 2000, 5000),
    ];
    let consumptions = vec![
        took(0, 0, 1000, MIB),
        took(0, 1, 3000, MIB),
        took(0, 2, 5000, MIB),
        took(1, 1, 2200, MIB),
        took(1, 2, 4000, MIB),
        took(1, 3, 7000, MIB),
        took(2, 2, 6000, MIB),
        took(2, 3, 9000, MIB),
        took(2, 4, 8500, MIB / 4),
        took(2, 4, 8000, MIB / 2),
        took(3, 2, 5500, MIB),
        took(3, 3, 9900, MIB),
        took(4, 2, 4800, MIB / 2),
        took(4, 3, 4900, MIB),
    ];
    (runs, consumptions)
}

/// Worked out by hand at t = 0.5, 1.5, …, 9.5 s (who wants which chunk):
/// 0.5: c0 A, c1 A, c2 A D, c3 D              → 3 / 1 / 0 / 0
/// 1.5: c1 A, c2 A D, c3 D                    → 2 / 1 / 0 / 0
/// 2.5: c1 A (B took it at 2.2), c2 A B D E, c3 B D E → 1 / 0 / 1 / 1
/// 3.5: c2 A B D E, c3 B D E                  → 0 / 0 / 1 / 1
/// 4.5: c2 A C D E, c3 B C D E, c4 C          → 1 / 0 / 0 / 2
/// 5.5: c2 C (D takes it at 5.5 exactly), c3 B C D, c4 C → 2 / 0 / 1 / 0
/// 6.5: c3 B C D, c4 C                        → 1 / 0 / 1 / 0
/// 7.5: c3 C D, c4 C                          → 1 / 1 / 0 / 0
/// 8.5: c3 C D (B ended at 8)                 → 0 / 1 / 0 / 0
/// 9.5: c3 D                                  → 1 / 0 / 0 / 0
const HAND_SAMPLES: [[u32; 4]; 10] = [
    [3, 1, 0, 0],
    [2, 1, 0, 0],
    [1, 0, 1, 1],
    [0, 0, 1, 1],
    [1, 0, 0, 2],
    [2, 0, 1, 0],
    [1, 0, 1, 0],
    [1, 1, 0, 0],
    [0, 1, 0, 0],
    [1, 0, 0, 0],
];

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-9
}

#[test]
fn a_hand_worked_run_is_sampled_as_worked_out() {
    let (runs, consumptions) = hand_case();
    let s = sharing_potential(&runs, &consumptions, Duration::from_secs(10), 10);
    let at: Vec<f64> = s.samples.iter().map(|x| x.at_s).collect();
    assert_eq!(at, [0.5, 1.5, 2.5, 3.5, 4.5, 5.5, 6.5, 7.5, 8.5, 9.5]);
    let chunks: Vec<[u32; 4]> = s.samples.iter().map(|x| x.chunks).collect();
    assert_eq!(chunks, HAND_SAMPLES);
    // Column sums 12 / 4 / 4 / 4 over 10 samples.
    assert_eq!(s.mean_chunks, [1.2, 0.4, 0.4, 0.4]);
    // One scan: every chunk 1 MiB but c4's ¾ (C's two pieces): 3 + 2 + 1 + 0 + ¾
    // + 1¾ + ¾ + ¾ + 0 + 1 = 11 MiB over 10 samples. The others hold no c4.
    let mib = s.mean_mib;
    assert!(close(mib[0], 1.1) && close(mib[1], 0.4), "{mib:?}");
    assert!(close(mib[2], 0.4) && close(mib[3], 0.4), "{mib:?}");
    assert!(close(s.shared_fraction, 1.2 / 2.3), "{}", s.shared_fraction);
    assert_eq!(s.ignored, IgnoredConsumptions::default());
}

#[test]
fn consumptions_of_no_query_or_past_the_rows_are_ignored_and_counted() {
    let (runs, mut consumptions) = hand_case();
    let clean = sharing_potential(&runs, &consumptions, Duration::from_secs(10), 10);
    consumptions.extend([
        took(99, 0, 100, MIB),     // no query 99
        took(u64::MAX, 3, 0, MIB), // nor this one
        took(0, 1000, 100, MIB),   // A's rows end at 1000: chunk 1000 starts later
        took(1, u32::MAX, 0, u64::MAX),
        took(2, 4, u64::MAX / 2_000, u64::MAX), // late, and bytes that would overflow
    ]);
    let s = sharing_potential(&runs, &consumptions, Duration::from_secs(10), 10);
    assert_eq!(
        s.ignored,
        IgnoredConsumptions {
            unknown_tag: 2,
            chunk_past_rows: 2,
        }
    );
    // The late record changes neither C's first time for c4 nor its classes.
    assert_eq!(s.samples, clean.samples);
    assert_eq!(s.mean_chunks, clean.mean_chunks);
    // Its bytes saturate instead of overflowing, and the volumes stay finite.
    assert!(s.mean_mib.iter().all(|v| v.is_finite()));
}

#[test]
fn empty_or_instant_runs_give_empty_samples() {
    let none = sharing_potential(&[], &[], Duration::ZERO, SHARING_SAMPLES);
    assert_eq!(none.samples.len(), SHARING_SAMPLES);
    assert!(none.samples.iter().all(|x| x.chunks == [0; 4]));
    assert_eq!((none.mean_chunks, none.shared_fraction), ([0.0; 4], 0.0));
    let (runs, consumptions) = hand_case();
    let zero = sharing_potential(&runs, &consumptions, Duration::from_secs(10), 0);
    assert!(zero.samples.is_empty());
    assert_eq!(zero.mean_chunks, [0.0; 4]);
}

/// Long enough that the three streams' queries overlap for most of each run even when
/// their threads start a little apart on a busy machine.
const PER_QUERY: Duration = Duration::from_millis(100);
const TABLE: TableInfo = TableInfo {
    rows: 10_000,
    bytes: 40_960_000,
    fast_read_bytes: 40_960_000,
};
const TABLE_CHUNKS: u32 = (TABLE.rows / ROWS_PER_CHUNK) as u32;

fn run(params: &Params, per_query: Duration) -> BenchReport {
    let factory = consuming_factory(per_query);
    run_benchmark(&BenchInput {
        params,
        table: TABLE,
        calibration: None,
        factory: &factory,
        reference: &Reference,
        progress: false,
        trace_dir: None,
    })
    .unwrap()
}

/// `pbm-sharing` shrunk: three streams of one full scan each, all starting at once.
fn small_sharing_params() -> Params {
    let mut params = presets::runs(&coopscan_paper::experiments::PBM_SHARING)
        .unwrap()
        .remove(0);
    params.streams = 3;
    params.queries_per_stream = 1;
    params.mix = "F-100".parse().unwrap();
    params.stagger_s = Some(0.0);
    params.bandwidth_mb = coopscan_bench::BandwidthMbS::checked(100.0);
    params.standalone_runs = 1;
    params
}

#[test]
fn a_pbm_sharing_run_carries_the_engines_consumptions_into_every_report() {
    let report = run(&small_sharing_params(), PER_QUERY);
    assert_eq!(
        report.policies.len(),
        coopscan_paper::experiments::PBM_POLICIES.len()
    );
    for p in &report.policies {
        let s = p.stats.sharing.as_ref().unwrap();
        assert_eq!(s.samples.len(), SHARING_SAMPLES);
        assert_eq!(s.ignored, IgnoredConsumptions::default());
        // Each query wants the whole table until it ends, so a sample sees every chunk
        // wanted by the same queries (or none), and mid-run all three are active.
        for x in &s.samples {
            let wanted: u32 = x.chunks.iter().sum();
            assert!(wanted == 0 || wanted == TABLE_CHUNKS, "{x:?}");
        }
        let middle = s.samples[SHARING_SAMPLES / 2];
        assert_eq!(middle.chunks, [0, 0, TABLE_CHUNKS, 0], "{}", p.name);
        assert!(s.shared_fraction > 0.5, "{}: {}", p.name, s.shared_fraction);
    }

    let text = text::render(&report);
    assert!(text.contains("Figure 17 (2012 paper)"), "{text}");
    assert!(text.contains("large volumes of data useful to two or more"));
    assert!(text.contains("share ≥2") && text.contains("MiB"));

    let value: Value = serde_json::from_str(&json::to_json(&report).unwrap()).unwrap();
    let sharing = &value["policies"]["pbm"]["sharing"];
    assert_eq!(
        sharing["samples"].as_array().unwrap().len(),
        SHARING_SAMPLES
    );
    assert_eq!(sharing["samples"][100]["chunks"][2], TABLE_CHUNKS);
    assert_eq!(sharing["mean_chunks"].as_array().unwrap().len(), 4);
    assert!(sharing["shared_fraction"].as_f64().unwrap() > 0.5);

    let page = html::render(std::slice::from_ref(&report));
    assert!(page.contains("Figure 17: sharing potential"));
    assert!(page.contains("Ours (relevance)"));
    assert!(page.contains("<title>≥4 scans</title>"));
    assert_balanced_svgs(&page);
    common::html_check::check_charts(&page);
    assert!(common::html_check::check_tables(&page) >= 1);
}

#[test]
fn other_presets_are_not_analysed_even_when_the_engine_records_consumptions() {
    let mut params = small_params();
    params.standalone_runs = 1;
    let report = run(&params, common::QUERY_DELAY);
    assert!(report.policies.iter().all(|p| p.stats.sharing.is_none()));
    assert!(!text::render(&report).contains("Figure 17"));
    let value: Value = serde_json::from_str(&json::to_json(&report).unwrap()).unwrap();
    assert!(value["policies"]["normal"]["sharing"].is_null());
}
