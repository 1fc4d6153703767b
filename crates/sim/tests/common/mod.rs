//! Shared by the seeded randomized simulation tests.

/// The seeds to run: `COOPSCAN_SIM_SEED=N` reproduces one failure from its seed,
/// `COOPSCAN_SIM_SEEDS=N` runs seeds 0..N, otherwise seeds 0..`default`.
pub fn seeds(default: u64) -> Vec<u64> {
    if let Some(seed) = std::env::var("COOPSCAN_SIM_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
    {
        return vec![seed];
    }
    let count = std::env::var("COOPSCAN_SIM_SEEDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default);
    (0..count).collect()
}

/// Whether some query processed two chunks at overlapping times (two of its workers
/// at once).
#[allow(dead_code)] // used by some of the test files that include this module
pub fn overlapping_processing(timeline: &coopscan_sim::Timeline) -> bool {
    let mut spans: Vec<_> = timeline
        .processing
        .iter()
        .map(|p| (p.query, p.from_s, p.to_s))
        .collect();
    spans.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.total_cmp(&b.1)));
    spans
        .windows(2)
        .any(|w| w[0].0 == w[1].0 && w[1].1 < w[0].2)
}

/// Gives every query of `workload` 1 to 3 workers, drawn from `seed` (a buffer needs
/// room for 2 chunks plus one per further worker: at least 4 frames).
#[allow(dead_code)] // used by some of the test files that include this module
pub fn give_workers(workload: &mut coopscan_sim::Workload, seed: u64) {
    use rand::{RngExt, SeedableRng};
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    for q in workload.streams.iter_mut().flat_map(|s| &mut s.queries) {
        q.workers = rng.random_range(1..=3);
    }
}

/// Runs `workload` under every policy; each run must finish every query (the simulator
/// itself fails a duplicate, unwanted or missing chunk). Returns the runs.
#[allow(dead_code)] // used by some of the test files that include this module
pub fn every_policy_finishes(
    cfg: &coopscan_sim::SimConfig,
    workload: &coopscan_sim::Workload,
    seed: u64,
) -> Vec<coopscan_sim::RunResult> {
    coopscan_buffer::PolicyKind::ALL
        .into_iter()
        .map(|policy| {
            let run = coopscan_sim::simulate(cfg, workload, policy)
                .unwrap_or_else(|e| panic!("seed {seed} {policy}: {e}"));
            let want = workload.query_count();
            assert_eq!(run.queries.len(), want, "seed {seed} {policy}");
            run
        })
        .collect()
}

/// 1 to `most` streams starting in the first second, each of 1 to 3 queries over one
/// random run of `chunks` chunks; `query(rng, name, run)` makes each query (its name
/// `s{stream}q{index}`) and draws whatever else it varies.
#[allow(dead_code)] // used by some of the test files that include this module
pub fn random_streams(
    rng: &mut rand_chacha::ChaCha8Rng,
    most: usize,
    chunks: u32,
    mut query: impl FnMut(
        &mut rand_chacha::ChaCha8Rng,
        String,
        std::ops::Range<u32>,
    ) -> coopscan_sim::QuerySpec,
) -> Vec<coopscan_sim::StreamSpec> {
    use rand::RngExt;
    (0..rng.random_range(1..=most))
        .map(|s| coopscan_sim::StreamSpec {
            start_s: rng.random_range(0.0..1.0),
            queries: (0..rng.random_range(1..=3))
                .map(|k| {
                    let start = rng.random_range(0..chunks);
                    let len = rng.random_range(1..=chunks - start);
                    query(rng, format!("s{s}q{k}"), start..start + len)
                })
                .collect(),
        })
        .collect()
}

/// One to three 2 GHz cores, shared equally or shorter scans first; in half the runs
/// the loader needs a turn on them after each load, as heavy as a feeder or three times.
#[allow(dead_code)] // used by some of the test files that include this module
pub fn random_cpu(rng: &mut rand_chacha::ChaCha8Rng) -> coopscan_sim::CpuModel {
    use coopscan_buffer::CpuShares;
    use rand::RngExt;
    let cores = rng.random_range(1..=3);
    let shares = match rng.random_bool(0.5) {
        true => CpuShares::ShortFirst,
        false => CpuShares::Equal,
    };
    let loader = rng.random_bool(0.5).then(|| coopscan_sim::LoaderCpu {
        s_per_load: rng.random_range(0.0..0.02),
        weight: [1.0, 3.0][rng.random_range(0..2)],
    });
    coopscan_sim::CpuModel {
        shares,
        loader,
        ..coopscan_sim::CpuModel::new(2e9, cores)
    }
}
