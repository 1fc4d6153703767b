//! Seeded randomized DSM simulations: columns of different sizes, queries reading
//! random column subsets, under every policy and every eviction strategy and column
//! order, with `check_invariants` after every event. The simulator fails a run on a
//! duplicate, unwanted or missing chunk and when queries never finish.
//!
//! ```text
//! COOPSCAN_SIM_SEED=1234 cargo test -p coopscan-sim --test random_dsm_sims
//! COOPSCAN_SIM_SEEDS=2000 cargo test -p coopscan-sim --release --test random_dsm_sims
//! ```

use common::random_cpu;
use coopscan_buffer::{ColumnOrder, EvictionStrategy, PolicyKind};
use coopscan_sim::{simulate, DeviceModel, QuerySpec, SimConfig, Workload};
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

mod common;

/// Seeds run by a plain `cargo test` (every seed runs 5 policies × 4 variants).
const DEFAULT_SEEDS: u64 = 30;

fn random_setup(seed: u64) -> (SimConfig, Workload) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let chunk_count = rng.random_range(1..=32);
    let columns = rng.random_range(1..=8);
    let column_bytes = (0..columns)
        .map(|_| rng.random_range(1..=8) << 17)
        .collect();
    let mut cfg = SimConfig {
        column_bytes,
        check_invariants: true,
        max_events: 1_000_000,
        max_inflight: rng.random_range(1..=2),
        device: DeviceModel::Bandwidth {
            bytes_per_sec: rng.random_range(20e6..400e6),
            latency_s: rng.random_range(0.0..0.01),
        },
        cpu: random_cpu(&mut rng),
        ..SimConfig::paper_2007(chunk_count, 1 << 20, 2)
    };
    cfg.frames = rng.random_range(2..=12);
    let streams = common::random_streams(&mut rng, 8, chunk_count, |rng, name, run| QuerySpec {
        name,
        kind: "random".into(),
        cycles_per_byte: rng.random_range(0.5..40.0),
        chunks: std::iter::once(run).collect(),
        columns: rng.random_range(1..1u64 << columns),
        workers: 1,
        split: coopscan_buffer::Split::Dynamic,
        snapshot: None,
        table: 0,
    });
    (cfg, Workload::new(streams))
}

#[test]
fn every_policy_and_variant_delivers_every_dsm_chunk_exactly_once() {
    for seed in common::seeds(DEFAULT_SEEDS) {
        let (base, workload) = random_setup(seed);
        for eviction in EvictionStrategy::ALL {
            for column_order in ColumnOrder::ALL {
                let cfg = SimConfig {
                    eviction,
                    column_order,
                    ..base.clone()
                };
                for policy in PolicyKind::ALL {
                    let run = simulate(&cfg, &workload, policy).unwrap_or_else(|e| {
                        panic!(
                            "seed {seed}, {policy} {eviction} {column_order}: {e}\nreplay: \
                             COOPSCAN_SIM_SEED={seed} cargo test -p coopscan-sim --test random_dsm_sims"
                        )
                    });
                    assert_eq!(run.queries.len(), workload.query_count(), "seed {seed}");
                }
            }
        }
    }
}

/// DSM queries of 1 to 3 workers under every policy: each still gets exactly its
/// chunks (the simulator checks), invariants after every event.
#[test]
fn dsm_queries_with_several_workers_get_every_chunk_exactly_once() {
    for seed in 0..40 {
        let (mut cfg, mut workload) = random_setup(seed);
        cfg.frames = cfg.frames.max(4);
        common::give_workers(&mut workload, seed);
        common::every_policy_finishes(&cfg, &workload, seed);
    }
}
