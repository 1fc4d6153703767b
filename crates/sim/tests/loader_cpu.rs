//! The loader on the CPU (`LoaderCpu`): after each read the loader runs for a while on
//! a core, at its weight beside the chunks in process, before the scans see the chunk
//! and the device reads again. Checked against timings worked out by hand here.
#![allow(clippy::unwrap_used)] // test code: an unwrap that fails is a failed test

use coopscan_buffer::{PolicyKind, Split};
use coopscan_sim::{
    simulate, CpuModel, DeviceModel, LoaderCpu, QuerySpec, SimConfig, StreamSpec, Workload,
};

const CHUNK_BYTES: u64 = 1 << 20;
/// A chunk's read on the device.
const READ_S: f64 = 0.1;
/// The loader's turn on an idle core after each read.
const TURN_S: f64 = 0.05;
const HZ: f64 = 2e9;

/// Every chunk fits; one core; the loader's turn as given (`None`: the papers' loader).
fn config(loader: Option<LoaderCpu>) -> SimConfig {
    SimConfig {
        check_invariants: true,
        device: DeviceModel::FixedPerChunk { seconds: READ_S },
        cpu: CpuModel {
            loader,
            ..CpuModel::new(HZ, 1)
        },
        ..SimConfig::paper_2007(8, CHUNK_BYTES, 8)
    }
}

fn loader(weight: f64) -> Option<LoaderCpu> {
    Some(LoaderCpu {
        s_per_load: TURN_S,
        weight,
    })
}

/// A scan of `chunks` costing `cpu_s` each on a core of its own.
fn scan(name: &str, chunks: std::ops::Range<u32>, cpu_s: f64) -> QuerySpec {
    QuerySpec {
        name: name.into(),
        kind: name.into(),
        cycles_per_byte: cpu_s * HZ / CHUNK_BYTES as f64,
        table: 0,
        chunks: vec![chunks; 1],
        columns: 0,
        workers: 1,
        split: Split::Dynamic,
        snapshot: None,
    }
}

/// One stream of one scan of chunks `0..chunks`.
fn one_scan(chunks: u32, cpu_s: f64) -> Workload {
    Workload::new(vec![StreamSpec {
        start_s: 0.0,
        queries: vec![scan("scan", 0..chunks, cpu_s)],
    }])
}

fn latency(cfg: &SimConfig, workload: &Workload, policy: PolicyKind) -> f64 {
    let run = simulate(cfg, workload, policy).unwrap();
    assert_eq!(run.queries.len(), 1);
    run.queries[0].latency_s
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-6
}

#[test]
fn the_device_waits_for_the_loaders_turn() {
    // Three chunks of next to no CPU: each read is followed by the loader's turn on
    // the idle core before the next read starts.
    let workload = one_scan(3, 1e-6);
    for policy in [PolicyKind::Normal, PolicyKind::Relevance] {
        let without = latency(&config(None), &workload, policy);
        let with = latency(&config(loader(1.0)), &workload, policy);
        assert!(close(without, 3.0 * READ_S + 1e-6), "{policy}: {without}");
        assert!(
            close(with, 3.0 * (READ_S + TURN_S) + 1e-6),
            "{policy}: {with}"
        );
    }
}

#[test]
fn the_loader_shares_the_core_with_the_chunks_in_process_by_weight() {
    // A hog of one chunk and 10 s of CPU starts first, its chunk read by 0.1 s and seen
    // at 0.15 (the loader's turn on the idle core). A scan of three chunks of next to no
    // CPU arrives at 0.01: each of its reads takes 0.1 s and the turn after it shares
    // the core with the hog, the loader getting w / (1 + w) of it: 0.05 (1 + w) / w.
    let stream = |start_s, q| StreamSpec {
        start_s,
        queries: vec![q],
    };
    let workload = Workload::new(vec![
        stream(0.0, scan("hog", 0..1, 10.0)),
        stream(0.01, scan("scan", 1..4, 1e-6)),
    ]);
    for policy in [PolicyKind::Normal, PolicyKind::Relevance] {
        let scan_latency = |cfg: &SimConfig| {
            let run = simulate(cfg, &workload, policy).unwrap();
            run.queries
                .iter()
                .find(|q| q.name == "scan")
                .unwrap()
                .latency_s
        };
        let without = scan_latency(&config(None));
        assert!(
            (without - (4.0 * READ_S - 0.01)).abs() < 1e-4,
            "{policy}: {without}"
        );
        for weight in [1.0, 3.0] {
            let turn_s = TURN_S * (1.0 + weight) / weight;
            let expected = READ_S + TURN_S + 3.0 * (READ_S + turn_s) - 0.01;
            let with = scan_latency(&config(loader(weight)));
            assert!(
                (with - expected).abs() < 1e-4,
                "{policy}, weight {weight}: {with}"
            );
        }
    }
}

#[test]
fn a_loader_without_cpu_is_the_papers() {
    let workload = one_scan(3, 0.2);
    let papers = simulate(&config(None), &workload, PolicyKind::Relevance).unwrap();
    let free = simulate(
        &config(loader(1.0).map(|l| LoaderCpu {
            s_per_load: 0.0,
            ..l
        })),
        &workload,
        PolicyKind::Relevance,
    )
    .unwrap();
    assert_eq!(papers.total_time_s, free.total_time_s);
    assert_eq!(papers.chunk_loads, free.chunk_loads);
}

#[test]
fn an_unusable_loader_is_refused() {
    for (s_per_load, weight) in [
        (-1.0, 1.0),
        (f64::NAN, 1.0),
        (0.1, 0.0),
        (0.1, f64::INFINITY),
    ] {
        let cfg = config(Some(LoaderCpu { s_per_load, weight }));
        let err = simulate(&cfg, &one_scan(1, 0.1), PolicyKind::Normal).unwrap_err();
        assert!(err.to_string().contains("loader CPU"), "{err}");
    }
}
