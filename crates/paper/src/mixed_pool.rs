//! Scans and CScans in one pool (PBM 2012 §2.3 and §5, proposed there, never built):
//! the experiment that measures it, defined once for the simulator (`coopscan sim --preset
//! mixed-pool`) and the benchmark (`coopscan bench --preset mixed-pool`).
//!
//! The `pbm-buffer` microbenchmark at a few buffer sizes, its queries run three ways:
//! all in table order under PBM (a system without CScans), all as CScans under
//! relevance (every query free to reorder: the least I/O any mix can need), and a mix
//! of both under the one-temperature `mixed` policy. The bound: the mix's
//! loads at most [`TARGET`] × the better of the two pure runs ([`mixed_over_best`]).

/// Shares of the queries, %, that read in table order: all CScans, a mix, all Scans.
pub const IN_ORDER_PCT: [u32; 5] = [0, 25, 50, 75, 100];
/// The policy of the queries all in order (a system without CScans).
pub const ALL_SCANS_POLICY: &str = "pbm";
/// The policy of the queries none in order (every query free to reorder).
pub const ALL_CSCANS_POLICY: &str = "relevance";
/// The mix's policies: one temperature, then relevance with its own eviction.
pub const MIX_POLICIES: [&str; 2] = ["mixed", "relevance"];
/// The bound on [`mixed_over_best`].
pub const TARGET: f64 = 1.05;

/// The mixed pool's loads ÷ the fewer of the two pure runs' loads (all Scans under
/// PBM, all CScans under relevance).
pub fn mixed_over_best(mixed: u64, all_scans: u64, all_cscans: u64) -> f64 {
    mixed as f64 / all_scans.min(all_cscans).max(1) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_better_pure_run_is_the_one_with_fewer_loads() {
        assert_eq!(mixed_over_best(630, 1000, 600), 630.0 / 600.0);
        assert_eq!(mixed_over_best(630, 600, 1000), 630.0 / 600.0);
        // No loads at all (everything resident): no division by zero.
        assert_eq!(mixed_over_best(3, 0, 0), 3.0);
    }
}
