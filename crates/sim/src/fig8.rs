//! Figure 8 of the 2007 paper, simulated: the host time spent in ABM decisions as a
//! fraction of the (virtual) run time, as the same 2 GB table is cut into more and
//! smaller chunks. 16 streams × 4 I/O-bound (FAST) queries over 1%, 10% or 100%.

use crate::engine::{simulate, SimConfig};
use crate::experiments::{chunk_points, defs, range_workload, short_names};
use crate::workload::Workload;
use crate::SimError;
use coopscan_buffer::PolicyKind;
use serde::Serialize;

/// The chunk counts of Figure 8's definition (`coopscan_paper::experiments::FIG8`):
/// 64 … 16384 chunks of the paper's 2 GB table (32 MB … 128 KB).
pub fn fig8_default_chunks() -> Result<Vec<u32>, SimError> {
    Ok(chunk_points(&defs::FIG8)?.1)
}

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

fn config(chunks: u32) -> Result<SimConfig, SimError> {
    let table_bytes = chunk_points(&defs::FIG8)?.0 << 20;
    let streams = defs::FIG8.workload.streams as u32;
    let share = defs::FIG8.buffer_pct / 100.0;
    let frames = ((f64::from(chunks) * share) as u32).max(2 * streams);
    Ok(SimConfig::paper_2007(
        chunks,
        table_bytes / u64::from(chunks),
        frames,
    ))
}

fn workload(cfg: &SimConfig, seed: u64) -> Result<Workload, SimError> {
    range_workload(cfg, &defs::FIG8.workload, seed, short_names)
}

pub fn fig8(chunk_counts: &[u32], policy: PolicyKind, seed: u64) -> Result<Fig8Report, SimError> {
    let mut points = Vec::new();
    for &chunks in chunk_counts {
        let cfg = config(chunks)?;
        let run = simulate(&cfg, &workload(&cfg, seed)?, policy)?;
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
