//! `pbm-lru-hot`: the case PBM/LRU is proposed for (2012 paper §3: "pages that are very
//! frequently used by short-running scans would thus be penalized, at those times that
//! these short-running queries do not run"). The `pbm-buffer` microbenchmark's long
//! scans plus a stream of short FAST queries over a small hot range arriving at a fixed
//! interval; between two of them no active scan wants the hot chunks, so plain PBM
//! evicts them first, while PBM/LRU files them by their reuse interval.
//!
//! Not a figure of the paper (it built no PBM/LRU); our own check of its argument.

use crate::engine::{simulate, SimConfig};
use crate::experiments::{random_range_query, table2_config};
use crate::pbm_buffer::{chunks_touched, pbm_buffer_workload};
use crate::workload::{StreamSpec, Workload};
use crate::SimError;
use coopscan_buffer::{PolicyKind, ADMISSION_CHUNKS_PER_SCAN};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// Hot range: the first 1 % of the table… 4 % here (10 chunks of 256).
pub const HOT_CHUNKS: u32 = 10;
/// Seconds between two hot queries.
pub const HOT_INTERVALS_S: [f64; 3] = [2.0, 5.0, 15.0];
/// Hot queries run while the long scans do (the long run takes ~420 s).
const HOT_SPAN_S: f64 = 400.0;
/// Buffer sizes, % of the chunks touched.
pub const HOT_BUFFER_PCT: [u32; 2] = [20, 40];
const HOT_PREFIX: &str = "hot";

#[derive(Clone, Debug, Serialize)]
pub struct HotRow {
    pub loads: u64,
    pub avg_stream_s: f64,
    /// Mean latency of the hot queries.
    pub hot_latency_s: f64,
}

#[derive(Clone, Debug, Serialize)]
pub struct HotPoint {
    pub buffer_pct: u32,
    pub interval_s: f64,
    pub policies: BTreeMap<String, HotRow>,
}

#[derive(Clone, Debug, Serialize)]
pub struct HotReport {
    pub seed: u64,
    pub points: Vec<HotPoint>,
}

/// The long scans of `pbm-buffer` plus one short FAST query over the hot range every
/// `interval_s` (each its own stream).
fn workload(cfg: &SimConfig, seed: u64, interval_s: f64) -> Result<Workload, SimError> {
    let mut w = pbm_buffer_workload(cfg, seed)?;
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let hot_cfg = SimConfig {
        chunk_count: HOT_CHUNKS,
        ..cfg.clone()
    };
    let count = (HOT_SPAN_S / interval_s) as usize;
    for k in 0..count {
        // A FAST query over all of the (hot_cfg's) table: the hot range.
        let q = random_range_query(
            &mut rng,
            &hot_cfg,
            format!("{HOT_PREFIX}{k:03}"),
            false,
            100,
        );
        w.streams.push(StreamSpec {
            start_s: interval_s * (k + 1) as f64,
            queries: vec![q],
        });
    }
    Ok(w)
}

pub fn pbm_lru_hot(policies: &[PolicyKind], seed: u64) -> Result<HotReport, SimError> {
    let base = SimConfig {
        record_timeline: false,
        ..table2_config()
    };
    let touched = chunks_touched(&pbm_buffer_workload(&base, seed)?);
    let mut points = Vec::new();
    for &buffer_pct in &HOT_BUFFER_PCT {
        let frames = (u64::from(touched) * u64::from(buffer_pct)).div_ceil(100) as u32;
        let cfg = SimConfig {
            frames: frames.max(ADMISSION_CHUNKS_PER_SCAN),
            ..base.clone()
        };
        for &interval_s in &HOT_INTERVALS_S {
            let w = workload(&cfg, seed, interval_s)?;
            let mut rows = BTreeMap::new();
            for &policy in policies {
                let run = simulate(&cfg, &w, policy)?;
                let hot: Vec<f64> = run
                    .queries
                    .iter()
                    .filter(|q| q.name.starts_with(HOT_PREFIX))
                    .map(|q| q.latency_s)
                    .collect();
                let row = HotRow {
                    loads: run.chunk_loads,
                    // Streams of the long scans only (the hot ones are one query each).
                    avg_stream_s: long_stream_avg(&run.stream_times_s),
                    hot_latency_s: hot.iter().sum::<f64>() / hot.len().max(1) as f64,
                };
                rows.insert(policy.to_string(), row);
            }
            points.push(HotPoint {
                buffer_pct,
                interval_s,
                policies: rows,
            });
        }
    }
    Ok(HotReport { seed, points })
}

/// The `pbm-buffer` workload's 8 streams come first in the stream list.
fn long_stream_avg(stream_times_s: &[f64]) -> f64 {
    let long = &stream_times_s[..stream_times_s.len().min(8)];
    long.iter().sum::<f64>() / long.len().max(1) as f64
}

pub fn pbm_lru_hot_text(report: &HotReport) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "pbm-lru-hot (seed {}): pbm-buffer's 8 streams plus a FAST query over chunks \
         0..{HOT_CHUNKS} every N s; loads / avg long-stream time (s) / mean hot latency (s)",
        report.seed
    );
    for p in &report.points {
        let _ = write!(
            out,
            "buffer {:>3}%, every {:>4.1} s:",
            p.buffer_pct, p.interval_s
        );
        for (name, r) in &p.policies {
            let _ = write!(
                out,
                "  {name} {} / {:.1} / {:.2}",
                r.loads, r.avg_stream_s, r.hot_latency_s
            );
        }
        let _ = writeln!(out);
    }
    out
}
