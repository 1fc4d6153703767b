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
