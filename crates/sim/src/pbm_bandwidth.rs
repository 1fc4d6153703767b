//! `pbm-bandwidth`: the 2012 paper's Figure 12 on the simulator. The `pbm-buffer`
//! microbenchmark (8 streams × 16 FAST/SLOW queries over random 1/10/50/100 % ranges,
//! all starting at once) at a 40 % buffer, with the disk bandwidth varied while the
//! queries' CPU cost stays fixed.
//!
//! Scaling. The paper's default is 700 MB/s on its 8-core machine; ours is the Table 2
//! machine (200 MiB/s, 2 cores) with the queries' CPU cost fixed against that disk. So
//! the paper's bandwidth `b` becomes `b / 700 ×` our 200 MiB/s: its 200…2000 MB/s sweep
//! is 57…571 MiB/s here, keeping its ratio of I/O to CPU speed at every point.
//!
//! Paper's finding: stream time falls with bandwidth for every policy; PBM ≈ CScans
//! above about 1 GB/s, LRU ≈ the others from 2 GB/s (CPU bound); the I/O volume of
//! each policy stays about the same at every bandwidth.

use crate::engine::SimConfig;
use crate::model::DeviceModel;
use crate::pbm_buffer::{
    chunks_touched, pbm_buffer_workload, point, policy_columns, replay_loads, PbmBufferPoint,
};
use crate::presets::table2_config;
use crate::SimError;
use coopscan_buffer::{PolicyKind, ADMISSION_CHUNKS_PER_SCAN};
use serde::Serialize;
use std::fmt::Write as _;

/// The paper's bandwidths (MB/s) of Figure 12.
pub const PBM_BANDWIDTH_MB_S: [u32; 6] = [200, 400, 700, 1000, 1400, 2000];
/// The paper's default bandwidth, mapped onto our Table 2 disk.
const PAPER_DEFAULT_MB_S: f64 = 700.0;
/// The paper's default buffer: 40 % of the data the queries touch.
pub const PBM_DEFAULT_BUFFER_PCT: u32 = 40;
/// Most a sweep point may scale the disk by (a typo must not plan a zero-time disk).
const MAX_PAPER_MB_S: u32 = 100_000;

#[derive(Clone, Debug, Serialize)]
pub struct PbmBandwidthPoint {
    /// The paper's bandwidth this point stands for.
    pub paper_mb_s: u32,
    /// Our simulated disk at this point.
    pub disk_mib_s: f64,
    pub point: PbmBufferPoint,
}

#[derive(Clone, Debug, Serialize)]
pub struct PbmBandwidthReport {
    pub seed: u64,
    pub chunks_touched: u32,
    pub buffer_pct: u32,
    pub points: Vec<PbmBandwidthPoint>,
}

/// Runs every policy at every bandwidth (in the paper's MB/s); OPT and LRU replay the
/// PBM run's trace at each.
pub fn pbm_bandwidth(
    policies: &[PolicyKind],
    seed: u64,
    paper_mb_s: &[u32],
) -> Result<PbmBandwidthReport, SimError> {
    if let Some(bad) = paper_mb_s.iter().find(|&&b| b == 0 || b > MAX_PAPER_MB_S) {
        return Err(SimError::InvalidSetup(format!(
            "bandwidth {bad} MB/s: each must be in 1..={MAX_PAPER_MB_S}"
        )));
    }
    let base = SimConfig {
        record_timeline: false,
        ..table2_config()
    };
    // The queries' CPU cost is fixed here, against the base disk.
    let workload = pbm_buffer_workload(&base, seed);
    let touched = chunks_touched(&workload);
    let frames = (u64::from(touched) * u64::from(PBM_DEFAULT_BUFFER_PCT)).div_ceil(100) as u32;
    let DeviceModel::Bandwidth {
        bytes_per_sec: base_bytes_per_sec,
        latency_s,
    } = base.device
    else {
        unreachable!("the Table 2 machine has a bandwidth disk");
    };
    let mut points = Vec::new();
    for &mb_s in paper_mb_s {
        let bytes_per_sec = base_bytes_per_sec * f64::from(mb_s) / PAPER_DEFAULT_MB_S;
        let cfg = SimConfig {
            frames: frames.max(ADMISSION_CHUNKS_PER_SCAN),
            device: DeviceModel::Bandwidth {
                bytes_per_sec,
                latency_s,
            },
            ..base.clone()
        };
        points.push(PbmBandwidthPoint {
            paper_mb_s: mb_s,
            disk_mib_s: bytes_per_sec / f64::from(1u32 << 20),
            point: point(&cfg, &workload, policies, PBM_DEFAULT_BUFFER_PCT)?,
        });
    }
    Ok(PbmBandwidthReport {
        seed,
        chunks_touched: touched,
        buffer_pct: PBM_DEFAULT_BUFFER_PCT,
        points,
    })
}

/// One line per bandwidth: loads / average stream time per policy, OPT's loads on the
/// PBM trace; the paper's finding underneath.
pub fn pbm_bandwidth_text(report: &PbmBandwidthReport) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "pbm-bandwidth (2012 paper Figure 12, simulated; seed {}): 8 streams x 16 queries, \
         buffer {} % of the {} chunks touched; loads / avg stream time (s)",
        report.seed, report.buffer_pct, report.chunks_touched
    );
    let names = policy_columns(report.points.first().map(|p| &p.point));
    let _ = write!(out, "{:>9} {:>9}", "paper MB/s", "sim MiB/s");
    for name in &names {
        let _ = write!(out, " {name:>18}");
    }
    let _ = writeln!(out, " {:>9}", "OPT(pbm)");
    for p in &report.points {
        let _ = write!(out, "{:>10} {:>9.0}", p.paper_mb_s, p.disk_mib_s);
        for name in &names {
            let r = &p.point.policies[*name];
            let _ = write!(out, " {:>8} / {:>7.1}", r.loads, r.avg_stream_s);
        }
        let _ = writeln!(out, " {:>9}", replay_loads(p.point.opt));
    }
    let _ = writeln!(
        out,
        "paper: stream time falls with bandwidth for all; PBM ≈ CScans above ~1 GB/s; \
         LRU ≈ the others from 2 GB/s (CPU bound); I/O volume about constant per policy"
    );
    out
}
