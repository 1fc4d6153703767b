//! Runs the decision benchmark's driver at a tiny size so it keeps compiling and working
//! under the normal `cargo test` (the benchmark itself: `cargo bench`).

#[path = "../benches/support/driver.rs"]
mod driver;

use coopscan_buffer::PolicyKind;

#[test]
fn benchmark_driver_runs_and_keeps_invariants() {
    for kind in PolicyKind::ALL {
        let mut d = driver::Driver::new(kind, 200, 16, 1);
        for _ in 0..20 {
            d.run(100);
            d.abm().check_invariants().expect("invariants hold");
        }
        assert!(
            d.abm().state().stats().deliveries > 0,
            "{kind} delivered nothing"
        );
        let mut d = driver::Driver::with_columns(kind, 200, 16, 16, 1);
        for _ in 0..20 {
            d.run(100);
            d.abm().check_invariants().expect("DSM invariants hold");
        }
        assert!(d.abm().state().stats().deliveries > 0, "{kind}: DSM");
    }
}
