//! Table 2 (seed 42, simulated) with every query a parallel CScan of 1, 2 or 4 workers
//! (`QuerySpec::workers`): does the simulator show what the real engine did at
//! `--query-threads 2` (docs/performance.md, "Parallel CScans on Table 2")?
//!
//! ```text
//! cargo run --release -p coopscan-sim --example table2_workers [-- SEED]
//! ```

use coopscan_buffer::PolicyKind;
use coopscan_sim::presets::{run_policies, table2};
use coopscan_sim::SimError;

fn main() -> Result<(), SimError> {
    let seed = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(42);
    let policies = [PolicyKind::Normal, PolicyKind::Relevance];
    println!("table2 (seed {seed}), every query with W workers; per policy: avg stream (s) / avg latency (s) / avg normalized latency / loads");
    for workers in [1u16, 2, 4] {
        let (cfg, mut workload) = table2(seed)?;
        for q in workload.streams.iter_mut().flat_map(|s| &mut s.queries) {
            q.workers = workers;
        }
        let report = run_policies("table2", seed, &cfg, &workload, &policies, true)?;
        let cells: Vec<String> = report
            .policies
            .iter()
            .map(|(name, p)| {
                let lat = p.avg_normalized_latency.unwrap_or(f64::NAN);
                format!(
                    "{name} {:.1} / {:.2} / {lat:.2} / {}",
                    p.avg_stream_time_s, p.avg_latency_s, p.chunk_loads
                )
            })
            .collect();
        println!("W={workers}: {}", cells.join("   "));
    }
    Ok(())
}
