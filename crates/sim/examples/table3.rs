//! Prints the `table3` preset (DSM twin of Table 2) under the paper's four policies,
//! beside Table 3's published numbers (docs/simulation.md, "table3"):
//!
//! ```text
//! cargo run --release -p coopscan-sim --example table3 [-- SEED [greedy|knapsack [smallest-first|completes-query]]]
//! ```
//! (`coopscan sim --preset table3` prints the same system table once wired.)

use coopscan_buffer::{ColumnOrder, EvictionStrategy, PolicyKind};
use coopscan_sim::{presets::run_policies, table3, table3_queries_text, SimConfig, SimError};

fn main() -> Result<(), SimError> {
    let mut args = std::env::args().skip(1);
    let seed = args.next().and_then(|s| s.parse().ok()).unwrap_or(42);
    let eviction = match args.next() {
        Some(name) => name
            .parse::<EvictionStrategy>()
            .map_err(|e| SimError::InvalidSetup(e.to_string()))?,
        None => EvictionStrategy::Greedy,
    };
    let column_order = match args.next() {
        Some(name) => name
            .parse::<ColumnOrder>()
            .map_err(|e| SimError::InvalidSetup(e.to_string()))?,
        None => ColumnOrder::SmallestFirst,
    };
    let (cfg, workload) = table3(seed);
    let cfg = SimConfig {
        eviction,
        column_order,
        record_timeline: false,
        ..cfg
    };
    let report = run_policies(
        "table3",
        seed,
        &cfg,
        &workload,
        &PolicyKind::PAPER_2007,
        true,
    )?;
    println!("eviction {eviction}, column order {column_order}");
    print!("{}", report.to_text());
    println!(
        "\nbytes read (GB; I/Os above are load requests, each some columns of a chunk), and \
         the straddling pages of the pieces read whose neighbour piece was resident"
    );
    for run in &report.runs {
        let b = run.boundaries;
        println!(
            "{:<10} {:>8.2} GB  {:>6} of {:>6} boundaries ({:.0} %)",
            run.policy,
            run.bytes_loaded as f64 / 1e9,
            b.neighbour_resident,
            b.loaded,
            100.0 * b.avoidable_share()
        );
    }
    print!("{}", table3_queries_text(&report));
    Ok(())
}
