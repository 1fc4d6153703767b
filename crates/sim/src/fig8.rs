//! Figure 8 of the 2007 paper, simulated: the host time spent in ABM decisions as a
//! fraction of the (virtual) run time, as the same 2 GB table is cut into more and
//! smaller chunks. 16 streams × 4 I/O-bound (FAST) queries over 1%, 10% or 100%.

use crate::engine::{simulate, SimConfig};
use crate::presets::random_range_query;
use crate::workload::{StreamSpec, Workload};
use crate::SimError;
use coopscan_buffer::PolicyKind;
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::Serialize;

const TABLE_BYTES: u64 = 2 << 30;
/// Buffer of 1 GB as in §5 (half of the trimmed 2 GB table).
const BUFFER_FRACTION: f64 = 0.5;
const STREAMS: usize = 16;
const QUERIES_PER_STREAM: usize = 4;
const STAGGER_S: f64 = 3.0;
const RANGE_PERCENTS: [u32; 3] = [1, 10, 100];

/// Chunk counts of the default sweep (16 MB … 128 KB chunks).
pub const FIG8_DEFAULT_CHUNKS: [u32; 8] = [128, 256, 512, 1024, 2048, 4096, 8192, 16384];

#[derive(Clone, Debug, Serialize)]
pub struct Fig8Point {
    pub chunks: u32,
    pub chunk_bytes: u64,
    pub run_time_s: f64,
    pub scheduling_s: f64,
    /// scheduling_s / run_time_s.
    pub fraction: f64,
    pub abm_calls: u64,
    pub us_per_call: f64,
    pub chunk_loads: u64,
    pub max_classes: usize,
}

#[derive(Clone, Debug, Serialize)]
pub struct Fig8Report {
    pub policy: String,
    pub seed: u64,
    pub points: Vec<Fig8Point>,
}

fn config(chunks: u32) -> SimConfig {
    let frames = ((f64::from(chunks) * BUFFER_FRACTION) as u32).max(2 * STREAMS as u32);
    SimConfig::paper_2007(chunks, TABLE_BYTES / u64::from(chunks), frames)
}

fn workload(cfg: &SimConfig, seed: u64) -> Workload {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let streams = (0..STREAMS)
        .map(|s| {
            let queries = (0..QUERIES_PER_STREAM)
                .map(|k| {
                    let percent = RANGE_PERCENTS[rng.random_range(0..RANGE_PERCENTS.len())];
                    random_range_query(&mut rng, cfg, format!("s{s:02}q{k}"), false, percent)
                })
                .collect();
            StreamSpec {
                start_s: STAGGER_S * s as f64,
                queries,
            }
        })
        .collect();
    Workload { streams }
}

pub fn fig8(chunk_counts: &[u32], policy: PolicyKind, seed: u64) -> Result<Fig8Report, SimError> {
    let mut points = Vec::new();
    for &chunks in chunk_counts {
        let cfg = config(chunks);
        let run = simulate(&cfg, &workload(&cfg, seed), policy)?;
        points.push(Fig8Point {
            chunks,
            chunk_bytes: cfg.chunk_bytes,
            run_time_s: run.total_time_s,
            scheduling_s: run.scheduling_s,
            fraction: run.scheduling_s / run.total_time_s.max(f64::MIN_POSITIVE),
            abm_calls: run.abm_calls,
            us_per_call: run.scheduling_s * 1e6 / run.abm_calls.max(1) as f64,
            chunk_loads: run.chunk_loads,
            max_classes: run.max_classes,
        });
    }
    Ok(Fig8Report {
        policy: policy.to_string(),
        seed,
        points,
    })
}

impl Fig8Report {
    pub fn to_text(&self) -> String {
        let mut s = format!(
            "fig8 ({}, seed {}): scheduling cost vs number of chunks\n",
            self.policy, self.seed
        );
        s.push_str("  chunks  chunk KB   run (s)  sched (ms)  fraction  calls    us/call  loads  classes\n");
        for p in &self.points {
            s.push_str(&format!(
                "{:>8} {:>9} {:>9.1} {:>11.2} {:>8.4}% {:>6} {:>10.2} {:>6} {:>8}\n",
                p.chunks,
                p.chunk_bytes >> 10,
                p.run_time_s,
                p.scheduling_s * 1e3,
                p.fraction * 100.0,
                p.abm_calls,
                p.us_per_call,
                p.chunk_loads,
                p.max_classes
            ));
        }
        s
    }
}
