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
use crate::pbm_bandwidth::PBM_DEFAULT_BUFFER_PCT;
use crate::pbm_buffer::{chunks_touched, point, policy_columns, replay_loads, PbmBufferPoint};
use crate::presets::{random_range_query, table2_config};
use crate::workload::{StreamSpec, Workload};
use crate::SimError;
use coopscan_buffer::{PolicyKind, ADMISSION_CHUNKS_PER_SCAN, MAX_SCANS};
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::Serialize;
use std::fmt::Write as _;

/// Stream counts of Figure 13.
pub const PBM_STREAMS: [u32; 6] = [1, 2, 4, 8, 16, 32];
const QUERIES_PER_STREAM: usize = 16;
/// Every query scans this share of the table.
const RANGE_PERCENT: u32 = 50;

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

/// `streams` streams × 16 FAST/SLOW queries over 50 % ranges, all starting at once.
pub fn pbm_streams_workload(cfg: &SimConfig, streams: u32, seed: u64) -> Workload {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let streams = (0..streams)
        .map(|s| StreamSpec {
            start_s: 0.0,
            queries: (0..QUERIES_PER_STREAM)
                .map(|k| {
                    let slow = rng.random_bool(0.5);
                    let name = format!("s{s:02}q{k:02}");
                    random_range_query(&mut rng, cfg, name, slow, RANGE_PERCENT)
                })
                .collect(),
        })
        .collect();
    Workload { streams }
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
    let mut points = Vec::new();
    for &n in streams {
        let workload = pbm_streams_workload(&base, n, seed);
        let touched = chunks_touched(&workload);
        let frames = (u64::from(touched) * u64::from(PBM_DEFAULT_BUFFER_PCT)).div_ceil(100);
        let cfg = SimConfig {
            frames: (frames as u32).max(ADMISSION_CHUNKS_PER_SCAN),
            ..base.clone()
        };
        points.push(PbmStreamsPoint {
            streams: n,
            chunks_touched: touched,
            point: point(&cfg, &workload, policies, PBM_DEFAULT_BUFFER_PCT)?,
        });
    }
    Ok(PbmStreamsReport {
        seed,
        buffer_pct: PBM_DEFAULT_BUFFER_PCT,
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
            let nlat = r.avg_normalized_latency.unwrap_or(f64::NAN);
            let _ = write!(
                out,
                " {:>7} / {:>7.1} / {:>6.2}",
                r.loads, r.avg_stream_s, nlat
            );
        }
        let _ = writeln!(out, " {:>9}", replay_loads(p.point.opt));
    }
    let _ = writeln!(
        out,
        "paper: stream time and I/O grow with the streams for all; PBM and CScans cope \
         much better than LRU from more than 4 streams"
    );
    out
}
