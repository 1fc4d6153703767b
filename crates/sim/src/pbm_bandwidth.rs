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
//!
//! [`PbmBandwidthOptions`] varies the machine and the queries' balance (cores, clock,
//! SLOW's CPU cost over FAST's) to test why our I/O volume grows with the bandwidth
//! while the paper's does not; its default is the experiment above.

use crate::engine::SimConfig;
use crate::experiments::table2_config;
use crate::experiments::{bandwidth_points, buffer_pct, defs};
use crate::model::{CpuModel, DeviceModel};
use crate::pbm_buffer::{
    chunks_touched, pbm_buffer_workload, point, policy_columns, replay_loads, PbmBufferPoint,
};
use crate::workload::Workload;
use crate::SimError;
use coopscan_buffer::{PolicyKind, ADMISSION_CHUNKS_PER_SCAN};
use serde::Serialize;
use std::fmt::Write as _;

/// Most a sweep point may scale the disk by (a typo must not plan a zero-time disk).
const MAX_PAPER_MB_S: u32 = 100_000;
/// Most cores an option may ask for (a typo must not plan a huge machine).
const MAX_CORES: u32 = 1024;
/// Clock bounds of an option, Hz: 1 MHz to 1 THz.
const CLOCK_HZ_RANGE: std::ops::RangeInclusive<f64> = 1.0e6..=1.0e12;
/// Bounds of SLOW's CPU cost over FAST's (1 = equal speeds).
const SLOW_OVER_FAST_RANGE: std::ops::RangeInclusive<f64> = 0.01..=1000.0;

/// The machine and the queries' balance of one sweep. The default is the Table 2
/// machine and the `pbm-buffer` queries, as the paper's figure is mapped onto them.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct PbmBandwidthOptions {
    /// Cores of the simulated CPU (Table 2 machine: 2; the 2012 paper's: 8).
    pub cores: u32,
    /// Clock of each core, Hz (Table 2 machine: 2 GHz). With more cores at a lower
    /// clock the machine keeps its total cycles per second.
    pub clock_hz: f64,
    /// SLOW's CPU cost per chunk ÷ FAST's, with the workload's total CPU work kept (so
    /// the sweep still goes from I/O bound to CPU bound). `None`: the Table 2 queries'
    /// own costs (1.75 and 0.125 × the chunk read time: 14).
    pub slow_over_fast_cpu: Option<f64>,
}

impl Default for PbmBandwidthOptions {
    fn default() -> Self {
        let CpuModel { hz, cores, .. } = table2_config().cpu;
        PbmBandwidthOptions {
            cores,
            clock_hz: hz,
            slow_over_fast_cpu: None,
        }
    }
}

impl PbmBandwidthOptions {
    /// Rejects values no machine or workload can have.
    fn validate(&self) -> Result<(), SimError> {
        if self.cores == 0 || self.cores > MAX_CORES {
            return Err(SimError::InvalidSetup(format!(
                "{} cores: must be in 1..={MAX_CORES}",
                self.cores
            )));
        }
        if !CLOCK_HZ_RANGE.contains(&self.clock_hz) {
            return Err(SimError::InvalidSetup(format!(
                "clock {} Hz: must be in {:e}..={:e}",
                self.clock_hz,
                CLOCK_HZ_RANGE.start(),
                CLOCK_HZ_RANGE.end()
            )));
        }
        match self.slow_over_fast_cpu {
            Some(r) if !SLOW_OVER_FAST_RANGE.contains(&r) => Err(SimError::InvalidSetup(format!(
                "SLOW/FAST CPU cost ratio {r}: must be in {}..={}",
                SLOW_OVER_FAST_RANGE.start(),
                SLOW_OVER_FAST_RANGE.end()
            ))),
            _ => Ok(()),
        }
    }

    fn is_default(&self) -> bool {
        *self == PbmBandwidthOptions::default()
    }
}

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
    pub options: PbmBandwidthOptions,
    pub chunks_touched: u32,
    pub buffer_pct: u32,
    pub points: Vec<PbmBandwidthPoint>,
}

/// Runs every policy at every bandwidth (in the paper's MB/s) on the default machine;
/// OPT and LRU replay the PBM run's trace at each.
pub fn pbm_bandwidth(
    policies: &[PolicyKind],
    seed: u64,
    paper_mb_s: &[u32],
) -> Result<PbmBandwidthReport, SimError> {
    pbm_bandwidth_with(policies, seed, paper_mb_s, &PbmBandwidthOptions::default())
}

/// [`pbm_bandwidth`] on the machine and query balance of `options`.
pub fn pbm_bandwidth_with(
    policies: &[PolicyKind],
    seed: u64,
    paper_mb_s: &[u32],
    options: &PbmBandwidthOptions,
) -> Result<PbmBandwidthReport, SimError> {
    options.validate()?;
    if let Some(bad) = paper_mb_s.iter().find(|&&b| b == 0 || b > MAX_PAPER_MB_S) {
        return Err(SimError::InvalidSetup(format!(
            "bandwidth {bad} MB/s: each must be in 1..={MAX_PAPER_MB_S}"
        )));
    }
    let table2 = table2_config();
    // The queries' CPU cost is fixed here, against the base disk (the clock changes
    // only the machine they run on, not the cycles they need).
    let mut workload = pbm_buffer_workload(&table2, seed)?;
    if let Some(ratio) = options.slow_over_fast_cpu {
        rebalance_cpu(&mut workload, ratio)?;
    }
    let base = SimConfig {
        record_timeline: false,
        cpu: CpuModel::new(options.clock_hz, options.cores),
        ..table2
    };
    let touched = chunks_touched(&workload);
    let pct = buffer_pct(&defs::PBM_BANDWIDTH)?;
    let frames = (u64::from(touched) * u64::from(pct)).div_ceil(100) as u32;
    let (paper_default_mb_s, _) = bandwidth_points(&defs::PBM_BANDWIDTH)?;
    let DeviceModel::Bandwidth {
        bytes_per_sec: base_bytes_per_sec,
        latency_s,
    } = base.device
    else {
        unreachable!("the Table 2 machine has a bandwidth disk");
    };
    let mut points = Vec::new();
    for &mb_s in paper_mb_s {
        let bytes_per_sec = base_bytes_per_sec * f64::from(mb_s) / paper_default_mb_s;
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
            point: point(&cfg, &workload, policies, pct)?,
        });
    }
    Ok(PbmBandwidthReport {
        seed,
        options: *options,
        chunks_touched: touched,
        buffer_pct: pct,
        points,
    })
}

/// Gives SLOW queries `ratio` × FAST's CPU cost per byte while the workload's total
/// cycles stay the same: FAST are the queries at the lowest cost per byte, SLOW all
/// others (the workload has just these two costs). Every chunk has the same bytes, so
/// chunks weigh the cycles.
fn rebalance_cpu(workload: &mut Workload, ratio: f64) -> Result<(), SimError> {
    let queries = || workload.streams.iter().flat_map(|s| &s.queries);
    let fast_cpb = queries()
        .map(|q| q.cycles_per_byte)
        .fold(f64::INFINITY, f64::min);
    let chunks = |q: &crate::workload::QuerySpec| -> f64 {
        q.chunks.iter().map(|r| f64::from(r.end - r.start)).sum()
    };
    let (mut fast_chunks, mut slow_chunks, mut cycles) = (0.0, 0.0, 0.0);
    for q in queries() {
        let n = chunks(q);
        cycles += n * q.cycles_per_byte;
        if q.cycles_per_byte == fast_cpb {
            fast_chunks += n;
        } else {
            slow_chunks += n;
        }
    }
    let weight = fast_chunks + ratio * slow_chunks;
    if !(weight > 0.0 && cycles.is_finite()) {
        return Err(SimError::InvalidSetup(
            "the workload scans no chunks: nothing to rebalance".into(),
        ));
    }
    let new_fast = cycles / weight;
    for q in workload.streams.iter_mut().flat_map(|s| &mut s.queries) {
        q.cycles_per_byte = if q.cycles_per_byte == fast_cpb {
            new_fast
        } else {
            ratio * new_fast
        };
    }
    Ok(())
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
    // Only a changed machine gets a line: the default table stays as it always was.
    if !report.options.is_default() {
        let o = &report.options;
        let ratio = o
            .slow_over_fast_cpu
            .map_or("Table 2's (14)".to_string(), |r| {
                format!("{r} (total CPU work kept)")
            });
        let _ = writeln!(
            out,
            "machine: {} core(s) at {:.2} GHz; SLOW/FAST CPU cost per chunk {ratio}",
            o.cores,
            o.clock_hz / 1e9
        );
    }
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
    let _ = writeln!(out, "paper: {}", defs::PBM_BANDWIDTH.finding);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Relevance (CScans) loads at the paper's 2000 MB/s over those at 200 MB/s, minus 1.
    fn cscans_io_growth(options: &PbmBandwidthOptions) -> f64 {
        let report =
            pbm_bandwidth_with(&[PolicyKind::Relevance], 42, &[200, 2000], options).unwrap();
        let loads = |i: usize| report.points[i].point.policies["relevance"].loads as f64;
        loads(1) / loads(0) - 1.0
    }

    fn machine(cores: u32, slow_over_fast_cpu: Option<f64>) -> PbmBandwidthOptions {
        PbmBandwidthOptions {
            cores,
            slow_over_fast_cpu,
            ..PbmBandwidthOptions::default()
        }
    }

    /// The paper's "total I/O volume remains approximately constant" holds for CScans
    /// once FAST and SLOW cost the same CPU per chunk, on 2 cores as on the paper's 8:
    /// on a CPU-bound fast disk the scans then still move together.
    #[test]
    fn cscans_read_about_the_same_at_every_bandwidth_when_fast_and_slow_cost_the_same() {
        for cores in [2, 8] {
            let growth = cscans_io_growth(&machine(cores, Some(1.0)));
            assert!(growth.abs() < 0.2, "{cores} cores: {growth:.3}");
        }
    }

    /// What spreads CScans apart on a fast disk is SLOW's CPU cost over FAST's, not the
    /// core count: the growth falls with the ratio, and 8 cores at Table 2's ratio (14)
    /// read much more at 2000 MB/s than at 200, as 2 cores do.
    #[test]
    fn cscans_io_growth_follows_the_slow_over_fast_cpu_ratio_not_the_cores() {
        let growths: Vec<f64> = [Some(1.0), Some(4.0), None]
            .into_iter()
            .map(|ratio| cscans_io_growth(&machine(2, ratio)))
            .collect();
        assert!(growths.windows(2).all(|w| w[0] < w[1]), "{growths:?}");
        assert!(growths[2] > 0.5, "Table 2's ratio: {growths:?}");
        let eight_cores = cscans_io_growth(&machine(8, None));
        assert!(eight_cores > 0.5, "8 cores: {eight_cores:.3}");
    }

    /// Rebalancing keeps the workload's total cycles and gives SLOW `ratio` × FAST's cost.
    #[test]
    fn rebalancing_keeps_total_cpu_work_and_sets_the_ratio() {
        let cfg = table2_config();
        let total = |w: &Workload| -> f64 {
            w.streams
                .iter()
                .flat_map(|s| &s.queries)
                .map(|q| q.cycles_per_byte * f64::from(q.chunks[0].end - q.chunks[0].start))
                .sum()
        };
        let original = pbm_buffer_workload(&cfg, 7).unwrap();
        let mut w = original.clone();
        rebalance_cpu(&mut w, 3.0).unwrap();
        assert!((total(&w) / total(&original) - 1.0).abs() < 1e-9);
        let costs = |w: &Workload, letter: char| -> Vec<f64> {
            w.streams
                .iter()
                .flat_map(|s| &s.queries)
                .filter(|q| q.kind.starts_with(letter))
                .map(|q| q.cycles_per_byte)
                .collect()
        };
        let (fast, slow) = (costs(&w, 'F'), costs(&w, 'S'));
        assert!(!fast.is_empty() && !slow.is_empty());
        assert!(fast.iter().all(|f| f == &fast[0]), "{fast:?}");
        for s in &slow {
            assert!(
                (s / fast[0] - 3.0).abs() < 1e-9,
                "FAST {}, SLOW {s}",
                fast[0]
            );
        }
        // Before, SLOW cost more than FAST: the ratio is a real change here.
        assert!(costs(&original, 'S')[0] / costs(&original, 'F')[0] > 10.0);
    }

    #[test]
    fn impossible_machines_are_refused() {
        let bad = [
            machine(0, None),
            machine(MAX_CORES + 1, None),
            machine(2, Some(0.0)),
            machine(2, Some(f64::NAN)),
            machine(2, Some(f64::INFINITY)),
            PbmBandwidthOptions {
                clock_hz: f64::NAN,
                ..PbmBandwidthOptions::default()
            },
            PbmBandwidthOptions {
                clock_hz: 0.0,
                ..PbmBandwidthOptions::default()
            },
        ];
        for options in bad {
            assert!(
                pbm_bandwidth_with(&[PolicyKind::Relevance], 42, &[700], &options).is_err(),
                "{options:?}"
            );
        }
    }

    /// Only a changed machine is named in the table: the default keeps its old header.
    #[test]
    fn the_text_names_the_machine_only_when_it_is_not_the_default() {
        let run = |o: &PbmBandwidthOptions| {
            pbm_bandwidth_text(
                &pbm_bandwidth_with(&[PolicyKind::Relevance], 42, &[2000], o).unwrap(),
            )
        };
        assert!(!run(&PbmBandwidthOptions::default()).contains("machine:"));
        assert!(run(&machine(8, Some(1.0))).contains("machine: 8 core(s)"));
    }
}
