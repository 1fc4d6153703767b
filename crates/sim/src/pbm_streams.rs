//! `pbm-streams`: the 2012 paper's Figure 13 on the simulator. 1 … 32 streams of 16
//! queries, a mix of FAST (≈ Q6) and SLOW (≈ Q1), every query over 50 % of the table
//! from a random start ("to make streams more homogeneous"), all streams starting at
//! once on the Table 2 machine; buffer 40 % of the chunks the queries touch. Reported
//! per stream count and policy: chunk loads, average stream time and normalized
//! latency; OPT replayed on the PBM run's trace.
//!
//! Paper's finding: stream time and I/O grow with the number of streams for every
//! policy; PBM and CScans cope much better than LRU from more than 4 streams.

use crate::engine::SimConfig;
use crate::experiments::table2_config;
use crate::experiments::{buffer_pct, defs, range_workload};
use crate::pbm_buffer::{
    chunks_touched, point, policy_cell, policy_columns, replay_loads, PbmBufferPoint,
};
use crate::workload::Workload;
use crate::SimError;
use coopscan_buffer::{PolicyKind, ADMISSION_CHUNKS_PER_SCAN, MAX_SCANS};
use coopscan_paper::experiment::WorkloadShape;
use serde::Serialize;
use std::fmt::Write as _;

#[derive(Clone, Debug, Serialize)]
pub struct PbmStreamsPoint {
    pub streams: u32,
    pub chunks_touched: u32,
    pub point: PbmBufferPoint,
}

#[derive(Clone, Debug, Serialize)]
pub struct PbmStreamsReport {
    pub seed: u64,
    pub buffer_pct: u32,
    pub points: Vec<PbmStreamsPoint>,
}

/// `streams` streams of `coopscan_paper::experiments::PBM_STREAMS`' queries: 16
/// FAST/SLOW queries each over 50 % ranges, all starting at once.
pub fn pbm_streams_workload(
    cfg: &SimConfig,
    streams: u32,
    seed: u64,
) -> Result<Workload, SimError> {
    let shape = WorkloadShape {
        streams: streams as usize,
        ..defs::PBM_STREAMS.workload
    };
    range_workload(cfg, &shape, seed, |s, k| format!("s{s:02}q{k:02}"))
}

/// Runs every policy at every stream count; OPT and LRU replay the PBM run's trace.
pub fn pbm_streams(
    policies: &[PolicyKind],
    seed: u64,
    streams: &[u32],
) -> Result<PbmStreamsReport, SimError> {
    // More streams than scan slots would only queue at admission (a typo guard).
    if let Some(bad) = streams.iter().find(|&&n| n == 0 || n as usize > MAX_SCANS) {
        return Err(SimError::InvalidSetup(format!(
            "{bad} streams: each count must be in 1..={MAX_SCANS}"
        )));
    }
    let base = SimConfig {
        record_timeline: false,
        ..table2_config()
    };
    let pct = buffer_pct(&defs::PBM_STREAMS)?;
    let mut points = Vec::new();
    for &n in streams {
        let workload = pbm_streams_workload(&base, n, seed)?;
        let touched = chunks_touched(&workload);
        let frames = (u64::from(touched) * u64::from(pct)).div_ceil(100);
        let cfg = SimConfig {
            frames: (frames as u32).max(ADMISSION_CHUNKS_PER_SCAN),
            ..base.clone()
        };
        points.push(PbmStreamsPoint {
            streams: n,
            chunks_touched: touched,
            point: point(&cfg, &workload, policies, pct)?,
        });
    }
    Ok(PbmStreamsReport {
        seed,
        buffer_pct: pct,
        points,
    })
}

/// One line per stream count: loads / average stream time / average normalized
/// latency per policy, OPT's loads on the PBM trace; the paper's finding underneath.
pub fn pbm_streams_text(report: &PbmStreamsReport) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "pbm-streams (2012 paper Figure 13, simulated; seed {}): N streams x 16 queries \
         (FAST/SLOW over 50 %), buffer {} % of the chunks touched; \
         loads / avg stream time (s) / avg normalized latency",
        report.seed, report.buffer_pct
    );
    let names = policy_columns(report.points.first().map(|p| &p.point));
    let _ = write!(out, "{:>7} {:>6}", "streams", "frames");
    for name in &names {
        let _ = write!(out, " {name:>26}");
    }
    let _ = writeln!(out, " {:>9}", "OPT(pbm)");
    for p in &report.points {
        let _ = write!(out, "{:>7} {:>6}", p.streams, p.point.frames);
        for name in &names {
            let r = &p.point.policies[*name];
            out.push_str(&policy_cell(
                r.loads,
                r.avg_stream_s,
                r.avg_normalized_latency,
            ));
        }
        let _ = writeln!(out, " {:>9}", replay_loads(p.point.opt));
    }
    let _ = writeln!(out, "paper: {}", defs::PBM_STREAMS.finding);
    out
}
