//! The 2012 paper's example for parallel CScans (§2.2): a table of 10 chunks of which
//! {3, 5, 6, 7, 9} are resident, and one query scanning all of it with two workers. A
//! static split (chunks 0-4 and 5-9) leaves one worker 1 resident chunk and 4 to load,
//! the other 4 and 1; a dynamic split lets either worker take whatever is ready.
//! Printed for a range of CPU costs (cycles per byte),
//! from I/O bound to CPU bound, with Table 2 at two workers for comparison.
//!
//! ```text
//! cargo run --release -p coopscan-sim --example split_example
//! ```

use coopscan_buffer::{PolicyKind, Split};
use coopscan_sim::presets::{homogeneous, run_policies, table2};
use coopscan_sim::{simulate, QuerySpec, SimError, StreamSpec, Workload};

/// The chunks the example has resident before the query starts.
const RESIDENT: [std::ops::Range<u32>; 3] = [3..4, 5..8, 9..10];
const CHUNKS: u32 = 10;

fn query(
    name: &str,
    chunks: Vec<std::ops::Range<u32>>,
    cpb: f64,
    workers: u16,
    split: Split,
) -> QuerySpec {
    QuerySpec {
        name: name.into(),
        kind: name.into(),
        cycles_per_byte: cpb,
        chunks,
        columns: 0,
        workers,
        split,
    }
}

/// The two-worker query's latency after a one-worker query made `RESIDENT` resident.
fn example_latency(cpb: f64, split: Split, policy: PolicyKind) -> Result<(f64, u64), SimError> {
    let (mut cfg, _) = homogeneous();
    cfg.chunk_count = CHUNKS;
    // Room for the resident five, a chunk per worker and one more.
    cfg.frames = 8;
    let warm = query("warm", RESIDENT.to_vec(), 1.0, 1, Split::Dynamic);
    let scan = query("scan", std::iter::once(0..CHUNKS).collect(), cpb, 2, split);
    let workload = Workload {
        streams: vec![StreamSpec {
            start_s: 0.0,
            queries: vec![warm, scan],
        }],
    };
    let run = simulate(&cfg, &workload, policy)?;
    let q = run
        .queries
        .iter()
        .find(|q| q.name == "scan")
        .ok_or(SimError::Stuck {
            policy,
            time_s: run.total_time_s,
            unfinished: 1,
        })?;
    let warm_loads = RESIDENT
        .iter()
        .map(|r| u64::from(r.end - r.start))
        .sum::<u64>();
    Ok((q.latency_s, run.chunk_loads - warm_loads))
}

fn main() -> Result<(), SimError> {
    println!("the paper's example: latency of the 2-worker scan (s) / its loads, relevance");
    println!("(0.1 s per chunk read; 20 c/b = 0.05 s of CPU per chunk)");
    for cpb in [5.0, 20.0, 40.0, 80.0, 160.0] {
        let (d, dl) = example_latency(cpb, Split::Dynamic, PolicyKind::Relevance)?;
        let (s, sl) = example_latency(cpb, Split::Static, PolicyKind::Relevance)?;
        println!("{cpb:>5} c/b: dynamic {d:.3} s / {dl}   static {s:.3} s / {sl}");
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
