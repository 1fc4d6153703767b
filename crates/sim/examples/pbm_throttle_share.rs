//! How much of `pbm-throttle` is attach and how much is throttling: the `pbm-buffer`
//! workload (seed 42 unless given) at 10, 20, 40 and 80 % buffers, and the
//! `pbm-streams` workload with 4, 8, 16 and 32 streams (buffer 40 %), under
//! pbm-throttle with the bound on holds (`THROTTLE_MAX_SHARE`, the share of a scan's
//! life it may be held) set to 0 (never hold: PBM with attach alone), 1/8, 1/4 (the
//! default), 1/2 and 3/4.
//!
//! ```text
//! cargo run -p coopscan-sim --release --example pbm_throttle_share [-- SEED]
//! ```

use coopscan_buffer::policy::PbmThrottlePolicy;
use coopscan_buffer::{AnyPolicy, ADMISSION_CHUNKS_PER_SCAN};
use coopscan_sim::experiments::table2_config;
use coopscan_sim::{
    abm_config, geometry, pbm_buffer_workload, pbm_streams_workload, simulate_policy, SimConfig,
    SimError, Workload,
};
use std::collections::BTreeSet;

const PERCENTS: [u64; 4] = [10, 20, 40, 80];
const STREAMS: [u32; 4] = [4, 8, 16, 32];
const STREAMS_BUFFER_PCT: u64 = 40;
const SHARES: [(u64, u64); 5] = [(0, 1), (1, 8), (1, 4), (1, 2), (3, 4)];

/// Chunks the workload's queries touch (the presets size the buffer by them).
fn touched(workload: &Workload) -> u64 {
    let all = workload.streams.iter().flat_map(|s| &s.queries);
    let chunks: BTreeSet<u32> = all
        .flat_map(|q| q.chunks.iter().flat_map(|r| r.clone()))
        .collect();
    chunks.len() as u64
}

/// One line per hold bound: loads, average stream time, total held time and holds.
fn sweep(label: &str, base: &SimConfig, workload: &Workload, pct: u64) -> Result<(), SimError> {
    let frames = (touched(workload) * pct).div_ceil(100) as u32;
    let cfg = SimConfig {
        frames: frames.max(ADMISSION_CHUNKS_PER_SCAN),
        ..base.clone()
    };
    for share in SHARES {
        let policy = PbmThrottlePolicy::with_max_share(&geometry(&cfg)?, &abm_config(&cfg), share);
        let run = simulate_policy(&cfg, workload, AnyPolicy::PbmThrottle(Box::new(policy)))?;
        let held: f64 = run.queries.iter().map(|q| q.held_s).sum();
        let holds: u32 = run.queries.iter().map(|q| q.holds).sum();
        println!(
            "{label:>12}  {:>14}  {:>6}  {:>14.1}  {held:>21.1}  {holds:>5}",
            format!("{}/{}", share.0, share.1),
            run.chunk_loads,
            run.avg_stream_time_s(),
        );
    }
    Ok(())
}

fn main() -> Result<(), SimError> {
    let seed = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(42);
    let base = SimConfig {
        record_timeline: false,
        ..table2_config()
    };
    println!("pbm-throttle's hold bound (seed {seed}):");
    println!("       point  max held share   loads  avg stream (s)  held (s, all queries)  holds");
    let workload = pbm_buffer_workload(&base, seed)?;
    for pct in PERCENTS {
        sweep(&format!("buffer {pct}%"), &base, &workload, pct)?;
    }
    for n in STREAMS {
        let workload = pbm_streams_workload(&base, n, seed)?;
        sweep(
            &format!("{n} streams"),
            &base,
            &workload,
            STREAMS_BUFFER_PCT,
        )?;
    }
    Ok(())
}
