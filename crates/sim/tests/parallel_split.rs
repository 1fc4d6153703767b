//! The 2012 paper's example for parallel CScans (§2.2) against a bound computed here,
//! not by the simulator: the absent chunks read one after another on the example's
//! disk plus the last one's CPU, or all chunks' CPU over the two workers.

use coopscan_buffer::{PolicyKind, Split};
use coopscan_sim::{
    split_example, SPLIT_EXAMPLE_CHUNKS, SPLIT_EXAMPLE_RESIDENT, SPLIT_EXAMPLE_WORKERS,
};

/// The example's disk: 5 MB chunks at 50 MB/s.
const READ_S: f64 = 0.1;
/// 5 MB of a 2 GHz CPU at one cycle per byte.
const CPU_S_PER_CPB: f64 = 5.0e6 / 2.0e9;

fn bound(cpb: f64) -> f64 {
    let resident: u32 = SPLIT_EXAMPLE_RESIDENT.iter().map(|r| r.end - r.start).sum();
    let absent = f64::from(SPLIT_EXAMPLE_CHUNKS - resident);
    let cpu = cpb * CPU_S_PER_CPB;
    let spread = f64::from(SPLIT_EXAMPLE_CHUNKS) * cpu / f64::from(SPLIT_EXAMPLE_WORKERS);
    (absent * READ_S + cpu).max(spread)
}

#[test]
fn the_dynamic_split_reaches_the_bound_on_the_papers_example() {
    for cpb in [5.0, 20.0, 40.0, 80.0, 160.0] {
        let dynamic = split_example(cpb, Split::Dynamic, PolicyKind::Relevance).unwrap();
        let fixed = split_example(cpb, Split::Static, PolicyKind::Relevance).unwrap();
        let bound = bound(cpb);
        assert!(
            dynamic.latency_s >= bound - 1e-6,
            "{cpb} c/b: {dynamic:?} below {bound}"
        );
        // The simulator's event granularity (a CPU step of the 1 c/b warm-up) aside.
        assert!(
            dynamic.latency_s <= bound + 0.005,
            "{cpb} c/b: dynamic {dynamic:?} above the bound {bound} (static {fixed:?})"
        );
        assert!(
            dynamic.latency_s <= fixed.latency_s + 1e-6,
            "{cpb} c/b: {dynamic:?} vs {fixed:?}"
        );
        // Each absent chunk read once, whatever the split.
        assert_eq!(dynamic.loads, 5, "{cpb} c/b");
    }
}
