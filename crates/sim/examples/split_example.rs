//! The 2012 paper's example for parallel CScans (§2.2, `coopscan_sim::split_example`):
//! 10 chunks, {3, 5, 6, 7, 9} resident, one query over all of them with two workers,
//! split statically (chunks 0-4 and 5-9) or dynamically. Printed for a range of CPU
//! costs (cycles per byte), from I/O bound to CPU bound, with the lower bound no split
//! can beat, and Table 2 at two workers for comparison.
//!
//! ```text
//! cargo run --release -p coopscan-sim --example split_example
//! ```

use coopscan_buffer::{PolicyKind, Split};
use coopscan_sim::presets::{run_policies, table2};
use coopscan_sim::{split_example, SimError, SPLIT_EXAMPLE_CHUNKS, SPLIT_EXAMPLE_RESIDENT};

fn main() -> Result<(), SimError> {
    println!(
        "the paper's example: latency of the 2-worker scan (s) / loads on its behalf, relevance"
    );
    let absent = SPLIT_EXAMPLE_CHUNKS
        - SPLIT_EXAMPLE_RESIDENT
            .iter()
            .map(|r| r.len() as u32)
            .sum::<u32>();
    for cpb in [5.0, 20.0, 40.0, 80.0, 160.0] {
        let d = split_example(cpb, Split::Dynamic, PolicyKind::Relevance)?;
        let s = split_example(cpb, Split::Static, PolicyKind::Relevance)?;
        // The absent chunks read one after another and the last one processed, or the
        // CPU of all chunks spread over both workers, whichever is longer.
        let bound = (f64::from(absent) * d.read_per_chunk_s + d.cpu_per_chunk_s)
            .max(f64::from(SPLIT_EXAMPLE_CHUNKS) * d.cpu_per_chunk_s / 2.0);
        println!(
            "{cpb:>5} c/b ({:.4} s CPU per chunk): dynamic {:.3} s / {}   static {:.3} s / {}   bound {bound:.3} s",
            d.cpu_per_chunk_s, d.latency_s, d.loads, s.latency_s, s.loads
        );
    }
    println!();
    println!("Table 2 (seed 42), every query 2 workers: avg stream (s) / avg latency (s) / loads");
    for split in [Split::Dynamic, Split::Static] {
        let (cfg, mut workload) = table2(42)?;
        for q in workload.streams.iter_mut().flat_map(|s| &mut s.queries) {
            q.workers = 2;
            q.split = split;
        }
        let policies = [PolicyKind::Normal, PolicyKind::Relevance];
        let report = run_policies("table2", 42, &cfg, &workload, &policies, false)?;
        let cells: Vec<String> = report
            .policies
            .iter()
            .map(|(name, p)| {
                format!(
                    "{name} {:.1} / {:.2} / {}",
                    p.avg_stream_time_s, p.avg_latency_s, p.chunk_loads
                )
            })
            .collect();
        println!("{split:?}: {}", cells.join("   "));
    }
    Ok(())
}
