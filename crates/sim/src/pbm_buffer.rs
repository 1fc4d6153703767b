//! `pbm-buffer`: the 2012 paper's Figure 11 on the simulator. Eight streams of sixteen
//! queries (FAST ≈ Q6, SLOW ≈ Q1, each over a random 1/10/50/100 % range) start
//! together on the Table 2 machine; the buffer varies from 10 % to 100 % of the chunks
//! the queries touch. Reported per buffer size and policy: average stream time and I/O
//! volume, plus OPT's I/O volume replayed on the PBM run's reference trace (the
//! paper's method), LRU replayed on the same trace as a check of the replay, and PBM's
//! own rule replayed on it (`pbm_replay`: the run's loads less read-ahead and timing).
//!
//! Paper's finding: LRU's I/O grows first as the buffer shrinks; PBM and CScans stay
//! flat down to 40 %; at 10 % PBM falls to LRU's level while CScans stay good; OPT lies
//! between PBM and CScans.

use crate::engine::{simulate, SimConfig};
use crate::experiments::table2_config;
use crate::experiments::{defs, range_workload};
use crate::presets::standalone_latencies;
use crate::workload::Workload;
use crate::SimError;
use coopscan_buffer::trace::opt::{replay_lru, replay_opt, Replay};
use coopscan_buffer::trace::pbm_replay::replay_pbm;
use coopscan_buffer::{PolicyKind, ADMISSION_CHUNKS_PER_SCAN};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

#[derive(Clone, Debug, Serialize)]
pub struct PbmBufferRow {
    pub avg_stream_s: f64,
    pub loads: u64,
    pub bytes_loaded: u64,
    /// Mean over the queries of latency ÷ standalone cold latency on the same machine.
    pub avg_normalized_latency: Option<f64>,
    /// Total time the policy held queries back (`pbm-throttle`; 0 for the others).
    pub held_s: f64,
}

#[derive(Clone, Debug, Serialize)]
pub struct PbmBufferPoint {
    pub buffer_pct: u32,
    pub frames: u32,
    pub policies: BTreeMap<String, PbmBufferRow>,
    /// Replays of the PBM run's trace (present when PBM ran).
    pub opt: Option<Replay>,
    pub lru_replay: Option<Replay>,
    pub pbm_replay: Option<Replay>,
}

#[derive(Clone, Debug, Serialize)]
pub struct PbmBufferReport {
    pub seed: u64,
    pub chunks_touched: u32,
    pub points: Vec<PbmBufferPoint>,
}

/// The microbenchmark's workload (`coopscan_paper::experiments::PBM_BUFFER`): 8
/// streams × 16 random queries, all streams starting at once.
pub fn pbm_buffer_workload(cfg: &SimConfig, seed: u64) -> Result<Workload, SimError> {
    range_workload(cfg, &defs::PBM_BUFFER.workload, seed, |s, k| {
        format!("s{s}q{k:02}")
    })
}

pub(crate) fn chunks_touched(workload: &Workload) -> u32 {
    let touched: BTreeSet<u32> = workload
        .streams
        .iter()
        .flat_map(|s| &s.queries)
        .flat_map(|q| q.chunks.iter().flat_map(|r| r.clone()))
        .collect();
    touched.len() as u32
}

/// Runs every policy at every buffer size; OPT, LRU and PBM replay the PBM run's trace.
pub fn pbm_buffer(
    policies: &[PolicyKind],
    seed: u64,
    percents: &[u32],
) -> Result<PbmBufferReport, SimError> {
    if let Some(bad) = percents.iter().find(|&&p| p == 0 || p > 100) {
        return Err(SimError::InvalidSetup(format!(
            "buffer {bad} %: each size must be in 1..=100"
        )));
    }
    let base = SimConfig {
        record_timeline: false,
        ..table2_config()
    };
    let workload = pbm_buffer_workload(&base, seed)?;
    let touched = chunks_touched(&workload);
    let mut points = Vec::new();
    for &pct in percents {
        let frames = (u64::from(touched) * u64::from(pct)).div_ceil(100) as u32;
        let cfg = SimConfig {
            // The ABM admits a scan only with room for this many chunks of its own.
            frames: frames.max(ADMISSION_CHUNKS_PER_SCAN),
            ..base.clone()
        };
        points.push(point(&cfg, &workload, policies, pct)?);
    }
    Ok(PbmBufferReport {
        seed,
        chunks_touched: touched,
        points,
    })
}

/// Every policy on one configuration; OPT, LRU and PBM replay the PBM run's trace.
pub(crate) fn point(
    cfg: &SimConfig,
    workload: &Workload,
    policies: &[PolicyKind],
    pct: u32,
) -> Result<PbmBufferPoint, SimError> {
    let mut rows = BTreeMap::new();
    let (mut opt, mut lru_replay, mut pbm_replay) = (None, None, None);
    let standalone = standalone_latencies(cfg, workload)?;
    for &policy in policies {
        let cfg = SimConfig {
            record_trace: policy == PolicyKind::Pbm,
            ..cfg.clone()
        };
        let mut run = simulate(&cfg, workload, policy)?;
        for q in &mut run.queries {
            q.standalone_s = standalone.get(&q.name).copied();
        }
        if let Some(trace) = &run.trace {
            let capacity = cfg.chunk_bytes * u64::from(cfg.frames);
            opt = Some(replay_opt(trace, capacity));
            lru_replay = Some(replay_lru(trace, capacity));
            pbm_replay = Some(replay_pbm(trace, capacity));
        }
        let row = PbmBufferRow {
            avg_stream_s: run.avg_stream_time_s(),
            loads: run.chunk_loads,
            bytes_loaded: run.bytes_loaded,
            avg_normalized_latency: run.avg_normalized_latency(),
            held_s: run.queries.iter().map(|q| q.held_s).sum(),
        };
        rows.insert(policy.to_string(), row);
    }
    Ok(PbmBufferPoint {
        buffer_pct: pct,
        frames: cfg.frames,
        policies: rows,
        opt,
        lru_replay,
        pbm_replay,
    })
}

/// The policy columns of a sweep's text table: those of its first point.
pub(crate) fn policy_columns(first: Option<&PbmBufferPoint>) -> Vec<&String> {
    first
        .map(|p| p.policies.keys().collect())
        .unwrap_or_default()
}

/// One policy's cell of a sweep's text table: loads / average stream time / average
/// normalized latency (NaN when it was not measured).
pub(crate) fn policy_cell(loads: u64, avg_stream_s: f64, nlat: Option<f64>) -> String {
    let nlat = nlat.unwrap_or(f64::NAN);
    format!(" {loads:>7} / {avg_stream_s:>7.1} / {nlat:>6.2}")
}

/// A replay's loads for a text cell, `-` when there was none.
pub(crate) fn replay_loads(replay: Option<Replay>) -> String {
    replay.map_or("-".to_string(), |r| r.loads.to_string())
}

/// The report as a text table: one line per buffer size, I/O (chunk loads) and
/// average stream time per policy; OPT's, LRU's and PBM's replayed loads on the PBM
/// trace.
pub fn pbm_buffer_text(report: &PbmBufferReport) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "pbm-buffer (2012 paper Figure 11, simulated; seed {}): {} streams x {} queries, \
         buffer as % of the {} chunks touched; loads / avg stream time (s) / avg \
         normalized latency",
        report.seed,
        defs::PBM_BUFFER.workload.streams,
        defs::PBM_BUFFER.workload.queries_per_stream,
        report.chunks_touched
    );
    let names = policy_columns(report.points.first());
    let _ = write!(out, "{:>7} {:>7}", "buffer", "frames");
    for name in &names {
        let _ = write!(out, " {name:>26}");
    }
    let _ = writeln!(
        out,
        " {:>9} {:>10} {:>10}",
        "OPT(pbm)", "LRU(pbm)", "PBM(pbm)"
    );
    for p in &report.points {
        let _ = write!(out, "{:>6}% {:>7}", p.buffer_pct, p.frames);
        for name in &names {
            let r = &p.policies[*name];
            out.push_str(&policy_cell(
                r.loads,
                r.avg_stream_s,
                r.avg_normalized_latency,
            ));
        }
        let _ = writeln!(
            out,
            " {:>9} {:>10} {:>10}",
            replay_loads(p.opt),
            replay_loads(p.lru_replay),
            replay_loads(p.pbm_replay)
        );
    }
    out
}
