//! Seeded randomized simulations: random tables, buffers, devices, CPUs, arrivals,
//! speeds and (multi-)range scans, under every policy, with `check_invariants` after
//! every event. The simulator itself fails a run on a duplicate, unwanted or missing
//! chunk and when queries never finish. A failure prints the seed that replays it:
//!
//! ```text
//! COOPSCAN_SIM_SEED=1234 cargo test -p coopscan-sim --test random_sims
//! COOPSCAN_SIM_SEEDS=5000 cargo test -p coopscan-sim --release --test random_sims
//! ```

use common::random_cpu;
use coopscan_buffer::policy::THROTTLE_MAX_SHARE;
use coopscan_buffer::PolicyKind;
use coopscan_sim::{simulate, DeviceModel, QuerySpec, SimConfig, SimFaults, StreamSpec, Workload};
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::ops::Range;

mod common;

/// Seeds run by a plain `cargo test` (kept well under a few seconds in debug).
const DEFAULT_SEEDS: u64 = 300;

fn random_ranges(rng: &mut ChaCha8Rng, chunks: u32) -> Vec<Range<u32>> {
    let count = rng.random_range(1..=3);
    (0..count)
        .map(|_| {
            let start = rng.random_range(0..chunks);
            let len = rng.random_range(1..=chunks - start);
            start..start + len
        })
        .collect()
}

fn random_setup(seed: u64) -> (SimConfig, Workload) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let chunk_count = rng.random_range(1..=48);
    let frames = rng.random_range(2..=24);
    let device = if rng.random_bool(0.5) {
        DeviceModel::FixedPerChunk {
            seconds: rng.random_range(0.01..0.2),
        }
    } else {
        DeviceModel::Bandwidth {
            bytes_per_sec: rng.random_range(20e6..400e6),
            latency_s: rng.random_range(0.0..0.01),
        }
    };
    let cfg = SimConfig {
        column_bytes: Vec::new(),
        chunk_count,
        chunk_bytes: 1 << 20,
        tables: Vec::new(),
        frames,
        budget_bytes: None,
        max_inflight: rng.random_range(1..=3),
        device,
        cpu: random_cpu(&mut rng),
        check_invariants: true,
        record_timeline: rng.random_bool(0.2),
        record_trace: false,
        // A third of the setups also fail some reads (retried by the policy).
        faults: rng.random_bool(0.3).then(|| SimFaults {
            seed,
            per_mille: rng.random_range(1..=300),
        }),
        max_events: 1_000_000,
        eviction: Default::default(),
        column_order: Default::default(),
        tiles: false,
    };
    let streams = (0..rng.random_range(1..=10))
        .map(|s| StreamSpec {
            start_s: rng.random_range(0.0..2.0),
            queries: (0..rng.random_range(1..=3))
                .map(|k| QuerySpec {
                    name: format!("s{s}q{k}"),
                    kind: "random".into(),
                    cycles_per_byte: rng.random_range(0.5..80.0),
                    chunks: random_ranges(&mut rng, chunk_count),
                    columns: 0,
                    workers: 1,
                    split: coopscan_buffer::Split::Dynamic,
                    snapshot: None,
                    table: 0,
                })
                .collect(),
        })
        .collect();
    (cfg, Workload::new(streams))
}

#[test]
fn every_policy_delivers_every_chunk_exactly_once() {
    for seed in common::seeds(DEFAULT_SEEDS) {
        let (cfg, workload) = random_setup(seed);
        for policy in PolicyKind::ALL {
            let result = simulate(&cfg, &workload, policy);
            let run = match result {
                Ok(run) => run,
                Err(e) => panic!("seed {seed}, {policy}: {e}\nreplay: COOPSCAN_SIM_SEED={seed} cargo test -p coopscan-sim --test random_sims"),
            };
            // (Loads may exceed deliveries: LRU can evict a read-ahead chunk before use.)
            assert_eq!(
                run.queries.len(),
                workload.query_count(),
                "seed {seed}, {policy}: unfinished queries"
            );
        }
    }
}

/// Same seed, same numbers: the simulation is a pure function of its input.
#[test]
fn runs_are_deterministic() {
    let (cfg, workload) = random_setup(7);
    for policy in PolicyKind::ALL {
        let a = simulate(&cfg, &workload, policy).expect("runs");
        let b = simulate(&cfg, &workload, policy).expect("runs");
        let latencies =
            |r: &coopscan_sim::RunResult| r.queries.iter().map(|q| q.latency_s).collect::<Vec<_>>();
        assert_eq!(latencies(&a), latencies(&b));
        assert_eq!(a.chunk_loads, b.chunk_loads);
    }
}

/// Injected read failures under every policy: each failed read is chosen again later,
/// every query still gets exactly its chunks (the simulator checks), and invariants
/// hold after every event.
#[test]
fn failed_reads_are_retried_and_every_query_gets_its_chunks() {
    for seed in 0..20 {
        let (mut cfg, workload) = random_setup(seed);
        cfg.faults = Some(SimFaults {
            seed,
            per_mille: 250,
        });
        for policy in PolicyKind::ALL {
            let run = simulate(&cfg, &workload, policy)
                .unwrap_or_else(|e| panic!("seed {seed} {policy}: {e}"));
            let wanted: usize = workload.streams.iter().map(|s| s.queries.len()).sum();
            assert_eq!(run.queries.len(), wanted, "seed {seed} {policy}");
            assert!(
                run.load_failures > 0 || run.chunk_loads < 4,
                "seed {seed} {policy}: {} loads and no failure at 25 %",
                run.chunk_loads
            );
        }
    }
}

/// pbm-throttle's bound, measured by the simulator itself (not the policy's books):
/// every query finishes, none is held more than `THROTTLE_MAX_SHARE` of its latency,
/// and none is held more often than it gets chunks (a delivery between any two holds).
#[test]
fn throttling_is_bounded_and_starves_no_query() {
    let (num, den) = THROTTLE_MAX_SHARE;
    let mut holds = 0;
    for seed in common::seeds(DEFAULT_SEEDS) {
        let (cfg, workload) = random_setup(seed);
        let run = simulate(&cfg, &workload, PolicyKind::PbmThrottle)
            .unwrap_or_else(|e| panic!("seed {seed}: {e}"));
        assert_eq!(run.queries.len(), workload.query_count(), "seed {seed}");
        for q in &run.queries {
            let bound = q.latency_s * num as f64 / den as f64;
            assert!(
                q.held_s <= bound + 1e-6,
                "seed {seed}, {}: held {:.6} s of {:.6} s",
                q.name,
                q.held_s,
                q.latency_s
            );
            assert!(
                q.holds <= q.chunks,
                "seed {seed}, {}: {} holds",
                q.name,
                q.holds
            );
            holds += q.holds;
        }
    }
    eprintln!("holds over all seeds: {holds}");
    assert!(holds > 0, "some query is throttled: the bound is exercised");
}

/// Seed `seed`'s random setup with queries of 1 to 3 workers split as `split`, room for
/// a scan of 3 workers (2 chunks plus one per further worker), timeline recorded.
fn parallel_setup(seed: u64, split: coopscan_buffer::Split) -> (SimConfig, Workload) {
    let (mut cfg, mut workload) = random_setup(seed);
    cfg.frames = cfg.frames.max(4);
    cfg.record_timeline = true;
    common::give_workers(&mut workload, seed);
    for q in workload.streams.iter_mut().flat_map(|s| &mut s.queries) {
        q.split = split;
    }
    (cfg, workload)
}

/// Queries of 1 to 3 workers (parallel CScans: one scan, one exactly-once ledger, each
/// worker processing its own chunk) under every policy: every query still gets exactly
/// its chunks (the simulator checks) with invariants after every event, and a query
/// of several workers really has several chunks in process at once somewhere.
#[test]
fn queries_with_several_workers_get_every_chunk_exactly_once() {
    let mut overlapped = false;
    for seed in 0..60 {
        let (cfg, workload) = parallel_setup(seed, coopscan_buffer::Split::Dynamic);
        let parallel: std::collections::HashSet<&str> = (workload.streams.iter())
            .flat_map(|s| &s.queries)
            .filter(|q| q.workers > 1)
            .map(|q| q.name.as_str())
            .collect();
        for run in common::every_policy_finishes(&cfg, &workload, seed) {
            let policy = run.policy;
            // A hold is per scan: the ABM holds no scan of several workers.
            for r in run
                .queries
                .iter()
                .filter(|r| parallel.contains(r.name.as_str()))
            {
                assert_eq!(r.holds, 0, "seed {seed} {policy}: {} was held", r.name);
            }
            let timeline = run.timeline.as_ref().expect("recorded");
            overlapped |= common::overlapping_processing(timeline);
        }
    }
    assert!(
        overlapped,
        "no query ever had two chunks in process at once"
    );
}

/// The same queries with the static split (one scan per worker over a fixed run of
/// the chunks): every query still gets exactly its chunks under every policy, with
/// invariants after every event, and somewhere two of its chunks are in process at once.
#[test]
fn statically_split_queries_get_every_chunk_exactly_once() {
    let mut overlapped = false;
    for seed in 0..60 {
        let (cfg, workload) = parallel_setup(seed, coopscan_buffer::Split::Static);
        for run in common::every_policy_finishes(&cfg, &workload, seed) {
            let timeline = run.timeline.as_ref().expect("recorded");
            overlapped |= common::overlapping_processing(timeline);
        }
    }
    assert!(
        overlapped,
        "no split query ever had two chunks in process at once"
    );
}

/// A query of 0 workers is an error naming the limit, not silently one worker.
#[test]
fn a_query_of_no_workers_is_refused() {
    let (cfg, mut workload) = random_setup(3);
    workload.streams[0].queries[0].workers = 0;
    let err = simulate(&cfg, &workload, PolicyKind::Relevance).expect_err("0 workers");
    assert!(err.to_string().contains("1 to 64 workers"), "{err}");
}
