//! Bounds the benchmark states without seeing the crates that enforce them.

#[test]
fn the_benchmarks_scan_worker_bound_is_the_buffer_managers() {
    assert_eq!(
        coopscan_bench::presets::MAX_SCAN_WORKERS,
        usize::from(coopscan_buffer::MAX_WORKERS)
    );
}
