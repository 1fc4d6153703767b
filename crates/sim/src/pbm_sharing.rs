//! `pbm-sharing`: the 2012 paper's Figure 17 ("sharing potential") on the simulator.
//! At any moment each chunk is still wanted by some number of active scans; the volume
//! wanted by exactly 1, 2, 3 and ≥ 4 scans, over time, is how much the buffer could
//! share. Run on the `pbm-buffer` microbenchmark at a 40 % buffer under each policy
//! (a policy changes how fast scans move, so the curves differ a little).
//!
//! A query wants a chunk of its ranges from its arrival until it starts processing it.
//!
//! Paper's finding: in the microbenchmark large volumes are wanted by two or more
//! scans (much reuse potential); in TPC-H most data is wanted by one scan only.

use crate::engine::{simulate, SimConfig};
use crate::pbm_bandwidth::PBM_DEFAULT_BUFFER_PCT;
use crate::pbm_buffer::{chunks_touched, pbm_buffer_workload};
use crate::presets::table2_config;
use crate::result::RunResult;
use crate::workload::{QuerySpec, Workload};
use crate::SimError;
use coopscan_buffer::{PolicyKind, ADMISSION_CHUNKS_PER_SCAN};
use serde::Serialize;
use std::collections::HashMap;
use std::fmt::Write as _;

/// Classes of Figure 17: wanted by 1, 2, 3 and ≥ 4 scans.
pub const SHARING_CLASSES: usize = 4;
/// Samples over a run (evenly spaced, at the middle of each interval).
pub const SHARING_SAMPLES: usize = 200;

/// Chunks wanted by exactly 1, 2, 3 and ≥ 4 active scans at `at_s`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct SharingSample {
    pub at_s: f64,
    pub chunks: [u32; SHARING_CLASSES],
}

#[derive(Clone, Debug, Serialize)]
pub struct PbmSharingRun {
    pub policy: String,
    pub avg_stream_s: f64,
    pub loads: u64,
    /// Time-averaged chunks per class.
    pub mean_chunks: [f64; SHARING_CLASSES],
    pub samples: Vec<SharingSample>,
}

#[derive(Clone, Debug, Serialize)]
pub struct PbmSharingReport {
    pub seed: u64,
    pub chunks_touched: u32,
    pub chunk_bytes: u64,
    pub buffer_pct: u32,
    pub runs: Vec<PbmSharingRun>,
}

/// Sharing potential of one run, sampled `samples` times over its length. Needs the
/// run's timeline (processing intervals).
pub fn sharing_potential(
    workload: &Workload,
    run: &RunResult,
    chunk_count: u32,
    samples: usize,
) -> Result<Vec<SharingSample>, SimError> {
    let timeline = run.timeline.as_ref().ok_or_else(|| {
        SimError::InvalidSetup("sharing potential needs a run with a timeline".into())
    })?;
    let specs: HashMap<&str, &QuerySpec> = workload
        .streams
        .iter()
        .flat_map(|s| &s.queries)
        .map(|q| (q.name.as_str(), q))
        .collect();
    // When each query (the engine's index) starts processing each chunk.
    let mut started: Vec<HashMap<u32, f64>> = vec![HashMap::new(); run.queries.len()];
    for p in &timeline.processing {
        if let Some(s) = started.get_mut(p.query) {
            s.insert(p.chunk, p.from_s);
        }
    }
    let mut out = Vec::with_capacity(samples);
    let mut wanted = vec![0u32; chunk_count as usize];
    for i in 0..samples {
        let at = (i as f64 + 0.5) * run.total_time_s / samples as f64;
        wanted.iter_mut().for_each(|w| *w = 0);
        for (q, result) in run.queries.iter().enumerate() {
            if !(result.start_s <= at && at < result.end_s) {
                continue;
            }
            let spec = specs.get(result.name.as_str()).ok_or_else(|| {
                SimError::InvalidSetup(format!("{} is not in the workload", result.name))
            })?;
            for chunk in spec.chunks.iter().flat_map(|r| r.clone()) {
                let taken = started[q].get(&chunk).is_some_and(|&from| from <= at);
                if !taken {
                    if let Some(w) = wanted.get_mut(chunk as usize) {
                        *w += 1;
                    }
                }
            }
        }
        let mut chunks = [0u32; SHARING_CLASSES];
        for &w in wanted.iter().filter(|&&w| w > 0) {
            chunks[(w as usize).min(SHARING_CLASSES) - 1] += 1;
        }
        out.push(SharingSample { at_s: at, chunks });
    }
    Ok(out)
}

/// The microbenchmark at a 40 % buffer under every policy, with its sharing potential.
pub fn pbm_sharing(policies: &[PolicyKind], seed: u64) -> Result<PbmSharingReport, SimError> {
    let base = SimConfig {
        record_timeline: true,
        ..table2_config()
    };
    let workload = pbm_buffer_workload(&base, seed);
    let touched = chunks_touched(&workload);
    let frames = (u64::from(touched) * u64::from(PBM_DEFAULT_BUFFER_PCT)).div_ceil(100) as u32;
    let cfg = SimConfig {
        frames: frames.max(ADMISSION_CHUNKS_PER_SCAN),
        ..base
    };
    let mut runs = Vec::new();
    for &policy in policies {
        let run = simulate(&cfg, &workload, policy)?;
        let samples = sharing_potential(&workload, &run, cfg.chunk_count, SHARING_SAMPLES)?;
        let mut mean_chunks = [0.0; SHARING_CLASSES];
        for s in &samples {
            for (m, &c) in mean_chunks.iter_mut().zip(&s.chunks) {
                *m += f64::from(c) / samples.len() as f64;
            }
        }
        runs.push(PbmSharingRun {
            policy: policy.to_string(),
            avg_stream_s: run.avg_stream_time_s(),
            loads: run.chunk_loads,
            mean_chunks,
            samples,
        });
    }
    Ok(PbmSharingReport {
        seed,
        chunks_touched: touched,
        chunk_bytes: cfg.chunk_bytes,
        buffer_pct: PBM_DEFAULT_BUFFER_PCT,
        runs,
    })
}

/// Per policy: the time-averaged volume wanted by 1, 2, 3, ≥ 4 scans, and the same at
/// ten points of the run (the shape of Figure 17); the paper's finding underneath.
pub fn pbm_sharing_text(report: &PbmSharingReport) -> String {
    let mut out = String::new();
    let mib = report.chunk_bytes as f64 / f64::from(1u32 << 20);
    let _ = writeln!(
        out,
        "pbm-sharing (2012 paper Figure 17, simulated; seed {}): 8 streams x 16 queries, \
         buffer {} %; MiB wanted by exactly 1 / 2 / 3 / >=4 active scans",
        report.seed, report.buffer_pct
    );
    let classes = |c: &[f64; SHARING_CLASSES]| {
        c.iter()
            .map(|v| format!("{:>6.0}", v * mib))
            .collect::<Vec<_>>()
            .join(" /")
    };
    for run in &report.runs {
        let _ = writeln!(
            out,
            "{:>10}: mean {}   (loads {}, avg stream {:.1} s)",
            run.policy,
            classes(&run.mean_chunks),
            run.loads,
            run.avg_stream_s
        );
        for s in run.samples.iter().step_by((run.samples.len() / 10).max(1)) {
            let c = s.chunks.map(f64::from);
            let _ = writeln!(out, "{:>10}  at {:>6.1} s: {}", "", s.at_s, classes(&c));
        }
    }
    let _ = writeln!(
        out,
        "paper: in the microbenchmark large volumes are wanted by 2 or more scans \
         (much reuse potential); in TPC-H (not simulated) most data is wanted by one scan"
    );
    out
}
