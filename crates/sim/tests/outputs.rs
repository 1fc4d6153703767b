//! The output contract (JSON keys the CLI and reports rely on, SVG timeline, fig8) and
//! the simulator's models checked against hand-computed times.

use coopscan_buffer::PolicyKind;
use coopscan_sim::{fig8, run_preset, simulate, svg, PresetName, QuerySpec, Workload};

#[test]
fn json_has_per_policy_loads_and_query_latencies() {
    let report = run_preset(PresetName::Homogeneous, &PolicyKind::ALL, 1).expect("runs");
    let json: serde_json::Value = serde_json::to_value(&report).expect("serializes");
    for policy in PolicyKind::ALL {
        let p = &json["policies"][policy.name()];
        assert!(
            p["chunk_loads"].as_u64().is_some_and(|n| n > 0),
            "{policy}: chunk_loads"
        );
        let queries = p["queries"].as_array().expect("queries array");
        assert_eq!(queries.len(), 3);
        for q in queries {
            assert!(q["name"].is_string() && q["start_s"].is_f64() && q["latency_s"].is_f64());
        }
    }
}

#[test]
fn svg_has_one_panel_per_policy() {
    let report = run_preset(PresetName::Heterogeneous, &PolicyKind::ALL, 1).expect("runs");
    let picture = svg::timeline_svg(&report);
    assert!(picture.starts_with("<svg") && picture.trim_end().ends_with("</svg>"));
    for policy in PolicyKind::ALL {
        assert!(
            picture.contains(&format!("{policy}: ")),
            "panel for {policy}"
        );
    }
}

#[test]
fn fig8_reports_every_chunk_count() {
    let report = fig8(&[64, 128], PolicyKind::Relevance, 3).expect("runs");
    assert_eq!(
        report.points.iter().map(|p| p.chunks).collect::<Vec<_>>(),
        vec![64, 128]
    );
    assert!(report
        .points
        .iter()
        .all(|p| p.abm_calls > 0 && p.run_time_s > 0.0));
}

/// A lone I/O-bound scan (homogeneous setup: 0.1 s per chunk read, 20 c/b = 0.05 s of
/// CPU per 5 MB chunk) takes 20 reads plus the CPU time of the last chunk; a lone
/// CPU-bound scan (45 c/b = 0.1125 s per chunk) takes one read plus 20 chunks of CPU.
#[test]
fn lone_scan_time_matches_the_device_and_cpu_models() {
    let (cfg, _) = coopscan_sim::presets::homogeneous();
    let alone = |cpb: f64| {
        let q = QuerySpec {
            name: "q".into(),
            kind: "k".into(),
            cycles_per_byte: cpb,
            chunks: vec![0..20, 20..20],
            columns: 0,
            workers: 1,
            split: coopscan_buffer::Split::Dynamic,
            snapshot: None,
            table: 0,
        };
        simulate(
            &cfg,
            &Workload::independent(vec![(0.0, q)]),
            PolicyKind::Relevance,
        )
        .expect("runs")
        .total_time_s
    };
    assert!(
        (alone(20.0) - (20.0 * 0.1 + 0.05)).abs() < 1e-6,
        "{}",
        alone(20.0)
    );
    assert!(
        (alone(45.0) - (0.1 + 20.0 * 0.1125)).abs() < 1e-6,
        "{}",
        alone(45.0)
    );
}

#[test]
fn an_unknown_preset_names_every_known_one() {
    let err = "fig99"
        .parse::<coopscan_sim::presets::PresetName>()
        .unwrap_err()
        .to_string();
    for p in coopscan_sim::presets::PresetName::ALL {
        assert!(err.contains(p.name()), "{err}");
    }
}
