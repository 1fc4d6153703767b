//! Reports of a fake run: JSON has every documented key, the text has Table 2's rows
//! beside the paper's, the HTML has Figures 5 and 4 as balanced SVG.
#![allow(clippy::unwrap_used)] // test code: an unwrap that fails is a failed test

mod common;

use common::{assert_balanced_svgs, fake_factory, small_params, Reference};
use coopscan_bench::report::{html, json, text};
use coopscan_bench::{run_benchmark, BenchInput, BenchReport, TableInfo};
use serde_json::Value;

fn report() -> BenchReport {
    report_of(small_params())
}

fn report_of(params: coopscan_bench::Params) -> BenchReport {
    let factory = fake_factory(None);
    let input = BenchInput {
        params: &params,
        table: TableInfo {
            rows: 10_000,
            bytes: 40_960_000,
            fast_read_bytes: 40_960_000,
        },
        calibration: None,
        factory: &factory,
        reference: &Reference,
        progress: false,
        trace_dir: None,
    };
    run_benchmark(&input).unwrap()
}

#[test]
fn json_has_every_required_key() {
    let value: Value = serde_json::from_str(&json::to_json(&report()).unwrap()).unwrap();
    for key in [
        "schema_version",
        "parameters",
        "bandwidth_mb_s",
        "calibration",
        "policies",
        "standalone_s",
        "standalone_samples_s",
        "paper",
    ] {
        assert!(value.get(key).is_some(), "missing {key}");
    }
    for key in [
        "streams",
        "queries_per_stream",
        "buffer_pct",
        "chunk_mb",
        "bandwidth_mb",
        "stagger_s",
        "mix",
        "seed",
        "policies",
        "standalone_runs",
        "query_threads",
        "layout",
        "slow_cpu_over_fast_read",
    ] {
        assert!(
            value["parameters"].get(key).is_some(),
            "missing parameters.{key}"
        );
    }
    assert_eq!(value["parameters"]["mix"], "table2");
    assert_eq!(value["bandwidth_mb_s"], 100.0);
    let policies = value["policies"].as_object().unwrap();
    let names: Vec<&String> = policies.keys().collect();
    assert_eq!(names.len(), 4);
    for (name, policy) in policies {
        for key in [
            "avg_stream_time_s",
            "avg_normalized_latency",
            "total_time_s",
            "cpu_use",
            "io_requests",
            "io_bytes",
            "results_checked",
            "query_types",
            "loads",
            "query_runs",
        ] {
            assert!(policy.get(key).is_some(), "missing policies.{name}.{key}");
        }
        assert_eq!(policy["results_checked"], 6);
        for (qt, stats) in policy["query_types"].as_object().unwrap() {
            assert!(qt.starts_with("F-") || qt.starts_with("S-"), "{qt}");
            for key in [
                "count",
                "standalone_s",
                "latency_avg_s",
                "latency_stddev_s",
                "normalized_latency",
                "io_requests",
            ] {
                assert!(
                    stats.get(key).is_some(),
                    "missing {name}.query_types.{qt}.{key}"
                );
            }
            assert_eq!(stats["io_requests"].is_null(), name == "elevator");
        }
    }
}

#[test]
fn text_has_table2_rows_and_the_papers_numbers() {
    let out = text::render(&report());
    for needle in [
        "Avg. stream time",
        "Avg. normalized latency",
        "CPU use",
        "I/O requests",
        "(283.72)",
        "(99.55)",
        "(paper)",
        "execution: one core per query",
        "standalone (median [min–max] of 3): F-01 ",
    ] {
        assert!(out.contains(needle), "missing {needle:?} in\n{out}");
    }
    assert!(!out.contains("shorter scans first"), "{out}");
    let mut params = small_params();
    params.cpu_shares = "short-first".to_string();
    let out = text::render(&report_of(params));
    let needle =
        "execution: one core per query (the paper's model), cores shared shorter scans first";
    assert!(out.contains(needle), "missing {needle:?} in\n{out}");
}

#[test]
fn a_dsm_run_is_shown_beside_table3_and_never_beside_table2() {
    let mut params = small_params();
    params.layout = "dsm".to_string();
    let report = report_of(params);
    let out = text::render(&report);
    // Table 3's normal and relevance stream times, F-100 cold time and a latency.
    for needle in [
        "Table 3 in parentheses",
        "(536.18)",
        "(264.82)",
        "26.53",
        "90.16",
    ] {
        assert!(out.contains(needle), "missing {needle:?} in\n{out}");
    }
    for table2_number in ["283.72", "99.55", "20.37", "Table 2"] {
        assert!(!out.contains(table2_number), "{table2_number} in\n{out}");
    }
    let value: Value = serde_json::from_str(&json::to_json(&report).unwrap()).unwrap();
    assert!(value["paper"]["source"]
        .as_str()
        .unwrap()
        .contains("Table 3"));
    assert_eq!(value["parameters"]["layout"], "dsm");
    assert_eq!(value["paper"]["system"][0]["avg_stream_time_s"], 536.18);
}

#[test]
fn html_has_figures_5_and_4_as_balanced_svg() {
    let out = html::render(&[report()]);
    assert!(out.starts_with("<!DOCTYPE html>"));
    assert!(out.trim_end().ends_with("</html>"));
    // Figure 5, and Figure 4's chart for each of the four policies.
    assert_eq!(assert_balanced_svgs(&out), 1 + 4);
    assert!(out.contains("Figure 4") && out.contains("Figure 5"));
    // Relevance's point and three other policies' points.
    assert_eq!(out.matches("<circle class=\"pt\"").count(), 4);
    // Each policy logged six loads: 24 marks.
    assert_eq!(out.matches("<rect class=\"pt\"").count(), 24);
}

/// A lone F-100 that read at well under the throttle names the disk as the limit, in
/// the text; one that kept up does not.
#[test]
fn a_disk_slower_than_the_throttle_is_reported() {
    use coopscan_bench::{device_shortfall, QueryKind, QueryType};
    let f100 = QueryType {
        kind: QueryKind::Fast,
        percent: 100,
    };
    // 40.96 MB at the report's 100 MB/s throttle takes 0.41 s.
    let mut slow = common::synthetic_report(small_params(), Vec::new());
    slow.standalone.insert(f100, 0.82);
    let got = device_shortfall(&slow).expect("half the throttle");
    assert!((got - 50.0).abs() < 0.1, "{got}");
    assert!(text::render(&slow).contains("the disk is slower than the throttle"));
    let mut kept_up = common::synthetic_report(small_params(), Vec::new());
    kept_up.standalone.insert(f100, 0.42);
    assert_eq!(device_shortfall(&kept_up), None);
    assert!(!text::render(&kept_up).contains("slower than the throttle"));
}
