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
use crate::experiments::table2_config;
use crate::experiments::{buffer_pct, defs};
use crate::pbm_buffer::{chunks_touched, pbm_buffer_workload};
use crate::result::RunResult;
use crate::timeline::Timeline;
use crate::workload::Workload;
use crate::SimError;
use coopscan_buffer::{PolicyKind, ADMISSION_CHUNKS_PER_SCAN};
use coopscan_paper::sharing::{sample_sharing, ScanWants, WantedPiece};
pub use coopscan_paper::sharing::{SharingSample, SHARING_CLASSES, SHARING_SAMPLES};
use serde::Serialize;
use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;

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

/// Sharing potential of one run, sampled `samples` times over its length, by the
/// paper crate's rule (`coopscan_paper::sharing`). Needs the run's timeline
/// (processing intervals).
pub fn sharing_potential(
    workload: &Workload,
    run: &RunResult,
    chunk_count: u32,
    samples: usize,
) -> Result<Vec<SharingSample>, SimError> {
    let timeline = run.timeline.as_ref().ok_or_else(|| {
        SimError::InvalidSetup("sharing potential needs a run with a timeline".into())
    })?;
    let scans = scan_wants(workload, run, timeline)?;
    // Every simulated chunk holds `chunk_bytes`, and the report scales chunk counts by
    // it, so only the counts are kept: each chunk weighs one here.
    let weights = vec![1u64; chunk_count as usize];
    Ok(sample_sharing(&scans, &weights, run.total_time_s, samples)
        .into_iter()
        .map(|s| s.sample)
        .collect())
}

/// Per query of the run (the engine's index): its active interval and each chunk of
/// its ranges, wanted until it starts processing the chunk.
fn scan_wants(
    workload: &Workload,
    run: &RunResult,
    timeline: &Timeline,
) -> Result<Vec<ScanWants>, SimError> {
    let specs = workload.queries_by_name();
    let started = processing_starts(run, timeline);
    run.queries
        .iter()
        .zip(&started)
        .map(|(result, started)| {
            let spec = specs.get(result.name.as_str()).ok_or_else(|| {
                SimError::InvalidSetup(format!("{} is not in the workload", result.name))
            })?;
            // A set, so a chunk in two overlapping ranges is still wanted once.
            let chunks: BTreeMap<u32, f64> = spec
                .chunks
                .iter()
                .flat_map(|r| r.clone())
                .map(|c| (c, started.get(&c).copied().unwrap_or(f64::INFINITY)))
                .collect();
            Ok(ScanWants {
                start_s: result.start_s,
                end_s: result.end_s,
                pieces: chunks
                    .into_iter()
                    .map(|(c, until_s)| WantedPiece {
                        piece: c as usize,
                        until_s,
                    })
                    .collect(),
            })
        })
        .collect()
}

/// Per query (the engine's index): when it starts processing each chunk (the first
/// time, should it process one twice).
fn processing_starts(run: &RunResult, timeline: &Timeline) -> Vec<HashMap<u32, f64>> {
    let mut started: Vec<HashMap<u32, f64>> = vec![HashMap::new(); run.queries.len()];
    for p in &timeline.processing {
        if let Some(s) = started.get_mut(p.query) {
            let from = s.entry(p.chunk).or_insert(p.from_s);
            *from = from.min(p.from_s);
        }
    }
    started
}

/// The microbenchmark at a 40 % buffer under every policy, with its sharing potential.
pub fn pbm_sharing(policies: &[PolicyKind], seed: u64) -> Result<PbmSharingReport, SimError> {
    let base = SimConfig {
        record_timeline: true,
        ..table2_config()
    };
    let workload = pbm_buffer_workload(&base, seed)?;
    let pct = buffer_pct(&defs::PBM_SHARING)?;
    let touched = chunks_touched(&workload);
    let frames = (u64::from(touched) * u64::from(pct)).div_ceil(100) as u32;
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
        buffer_pct: pct,
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
    let _ = writeln!(out, "paper: {}", defs::PBM_SHARING.finding);
    out
}
