//! The simulator's CPU shared shorter scans first (`CpuShares::ShortFirst`): checked
//! against the shares a fair scheduler gives two threads of known weights, worked out
//! by hand here, not by the simulator's own code.
#![allow(clippy::unwrap_used)] // test code: an unwrap that fails is a failed test

use coopscan_buffer::{CpuShares, PolicyKind, Split, NICE_STEP_WEIGHT};
use coopscan_sim::{simulate, CpuModel, DeviceModel, QuerySpec, SimConfig, StreamSpec, Workload};

const CHUNKS: u32 = 16;
const CHUNK_BYTES: u64 = 1 << 20;
/// A query's processing of one chunk on a core of its own.
const CHUNK_CPU_S: f64 = 0.1;
/// When the short query arrives: the long one is halfway through its first chunk.
const SHORT_STARTS_S: f64 = 0.05;

/// Every chunk fits, a read takes a microsecond, one core shared as `shares` says.
fn config(shares: CpuShares) -> SimConfig {
    SimConfig {
        check_invariants: true,
        device: DeviceModel::FixedPerChunk { seconds: 1e-6 },
        cpu: CpuModel {
            shares,
            ..CpuModel::new(2e9, 1)
        },
        ..SimConfig::paper_2007(CHUNKS, CHUNK_BYTES, 2 * CHUNKS)
    }
}

fn scan(name: &str, chunks: std::ops::Range<u32>) -> QuerySpec {
    QuerySpec {
        name: name.into(),
        kind: name.into(),
        cycles_per_byte: CHUNK_CPU_S * 2e9 / CHUNK_BYTES as f64,
        table: 0,
        chunks: vec![chunks],
        columns: 0,
        workers: 1,
        split: Split::Dynamic,
        snapshot: None,
    }
}

/// A scan of all sixteen chunks, and while it runs one of a single chunk.
fn workload() -> Workload {
    let stream = |start_s, query| StreamSpec {
        start_s,
        queries: vec![query],
    };
    Workload::new(vec![
        stream(0.0, scan("long", 0..CHUNKS)),
        stream(SHORT_STARTS_S, scan("short", 8..9)),
    ])
}

#[test]
fn a_short_scan_beside_a_long_one_gets_the_larger_share_of_the_core() {
    // Sixteen chunks are four doublings: the long scan runs four nice levels lower and
    // weighs 1.25^-4 of the short one, which gets 1 / (1 + 1.25^-4) of the core
    // instead of half of it.
    let long_weight = NICE_STEP_WEIGHT.powi(-4);
    let short_share = 1.0 / (1.0 + long_weight);
    for policy in [PolicyKind::Normal, PolicyKind::Relevance] {
        let equal = simulate(&config(CpuShares::Equal), &workload(), policy).unwrap();
        let short_first = simulate(&config(CpuShares::ShortFirst), &workload(), policy).unwrap();
        let latency = |r: &coopscan_sim::RunResult, name: &str| {
            r.queries.iter().find(|q| q.name == name).unwrap().latency_s
        };
        let close = |a: f64, b: f64| (a - b).abs() < 1e-3;
        assert!(
            close(latency(&equal, "short"), CHUNK_CPU_S / 0.5),
            "{policy}"
        );
        assert!(
            close(latency(&short_first, "short"), CHUNK_CPU_S / short_share),
            "{policy}: {} s",
            latency(&short_first, "short")
        );
        // The core never idles: the last query ends when all seventeen chunks'
        // processing is done, whoever went first.
        let all_work_s = f64::from(CHUNKS + 1) * CHUNK_CPU_S;
        assert!(close(equal.total_time_s, all_work_s), "{policy}");
        assert!(close(short_first.total_time_s, all_work_s), "{policy}");
    }
}
