//! Any experiment of `coopscan_paper::experiments` on the simulator, with no code of
//! its own: every point of its sweep under every policy, on the Table 2 machine scaled
//! by the point (buffer, chunk count, bandwidth, streams, queries, share in order). The
//! experiments with a figure of their own here (`pbm_buffer`, `fig8`, …) add what
//! their figure needs (OPT replays, scheduling cost); a new definition gets this
//! table of loads, stream times and normalized latencies as it is.

use crate::engine::{abm_config, geometry, simulate, simulate_ordered, SimConfig};
use crate::experiments::{range_workload, short_names, table2_config};
use crate::mixed_pool::choose_scans;
use crate::model::DeviceModel;
use crate::pbm_buffer::policy_cell;
use crate::presets::standalone_latencies;
use crate::result::RunResult;
use crate::workload::Workload;
use crate::SimError;
use coopscan_buffer::{AnyPolicy, PolicyKind, ADMISSION_CHUNKS_PER_SCAN};
use coopscan_paper::experiment::{Experiment, Point};
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// One policy's run of one point.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct SweepRow {
    pub loads: u64,
    pub avg_stream_s: f64,
    pub avg_normalized_latency: Option<f64>,
}

/// One point of the sweep.
#[derive(Clone, Debug, Serialize)]
pub struct SweepPoint {
    pub label: String,
    pub chunks: u32,
    pub frames: u32,
    pub policies: BTreeMap<String, SweepRow>,
}

#[derive(Clone, Debug, Serialize)]
pub struct SweepReport {
    pub experiment: String,
    pub source: String,
    pub finding: String,
    pub seed: u64,
    pub points: Vec<SweepPoint>,
}

/// Every point of `experiment` under every policy.
pub fn run_sweep(
    experiment: &Experiment,
    policies: &[PolicyKind],
    seed: u64,
) -> Result<SweepReport, SimError> {
    let mut points = Vec::new();
    for point in experiment.points() {
        let cfg = config_of(&point)?;
        let workload = range_workload(&cfg, &point.workload, seed, short_names)?;
        let standalone = standalone_latencies(&cfg, &workload)?;
        let mut rows = BTreeMap::new();
        for &policy in policies {
            let mut run = run_one(&cfg, &workload, policy, point.workload.in_order_pct, seed)?;
            for q in &mut run.queries {
                q.standalone_s = standalone.get(&q.name).copied();
            }
            let row = SweepRow {
                loads: run.chunk_loads,
                avg_stream_s: run.avg_stream_time_s(),
                avg_normalized_latency: run.avg_normalized_latency(),
            };
            rows.insert(policy.to_string(), row);
        }
        points.push(SweepPoint {
            label: point.label.clone(),
            chunks: cfg.chunk_count,
            frames: cfg.frames,
            policies: rows,
        });
    }
    Ok(SweepReport {
        experiment: experiment.name.to_string(),
        source: experiment.source.to_string(),
        finding: experiment.finding.to_string(),
        seed,
        points,
    })
}

/// The Table 2 machine with the point's table, buffer and disk.
fn config_of(point: &Point) -> Result<SimConfig, SimError> {
    let base = SimConfig {
        record_timeline: false,
        ..table2_config()
    };
    let (chunk_count, chunk_bytes) = match point.chunks {
        Some((0, _)) => return Err(SimError::InvalidSetup("a table of 0 chunks".into())),
        Some((count, table_mib)) => (count, (table_mib << 20) / u64::from(count)),
        None => (base.chunk_count, base.chunk_bytes),
    };
    if !(point.buffer_pct > 0.0 && point.buffer_pct <= 100.0) {
        return Err(SimError::InvalidSetup(format!(
            "buffer {} %: must be in (0, 100]",
            point.buffer_pct
        )));
    }
    let frames = (f64::from(chunk_count) * point.buffer_pct / 100.0).ceil() as u32;
    let DeviceModel::Bandwidth {
        bytes_per_sec,
        latency_s,
    } = base.device
    else {
        return Err(SimError::InvalidSetup(
            "the Table 2 machine has a bandwidth disk".into(),
        ));
    };
    Ok(SimConfig {
        chunk_count,
        chunk_bytes,
        frames: frames.max(ADMISSION_CHUNKS_PER_SCAN),
        device: DeviceModel::Bandwidth {
            bytes_per_sec: bytes_per_sec * point.bandwidth_scale,
            latency_s,
        },
        ..base
    })
}

/// One policy on the point; a seeded share of the queries in order when it has one.
fn run_one(
    cfg: &SimConfig,
    workload: &Workload,
    policy: PolicyKind,
    in_order_pct: u32,
    seed: u64,
) -> Result<RunResult, SimError> {
    if in_order_pct == 0 {
        return simulate(cfg, workload, policy);
    }
    let scans = choose_scans(workload, in_order_pct, seed);
    let built = AnyPolicy::new(policy, &geometry(cfg)?, &abm_config(cfg));
    simulate_ordered(cfg, workload, built, &scans)
}

/// One line per point: loads / average stream time (s) / average normalized latency
/// per policy, the paper's finding underneath.
pub fn sweep_text(report: &SweepReport) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{} (simulated; seed {}): {}\nloads / avg stream time (s) / avg normalized latency",
        report.experiment, report.seed, report.source
    );
    let names: Vec<&String> = report
        .points
        .first()
        .map(|p| p.policies.keys().collect())
        .unwrap_or_default();
    let width = report
        .points
        .iter()
        .map(|p| p.label.chars().count())
        .max()
        .unwrap_or(0)
        .max(5);
    let _ = write!(out, "{:<width$} {:>6} {:>6}", "point", "chunks", "frames");
    for name in &names {
        let _ = write!(out, " {name:>26}");
    }
    out.push('\n');
    for p in &report.points {
        let _ = write!(out, "{:<width$} {:>6} {:>6}", p.label, p.chunks, p.frames);
        for name in &names {
            let r = &p.policies[*name];
            out.push_str(&policy_cell(
                r.loads,
                r.avg_stream_s,
                r.avg_normalized_latency,
            ));
        }
        out.push('\n');
    }
    let _ = writeln!(out, "paper: {}", report.finding);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use coopscan_paper::experiment::{Axis, QueryShape, Starts, WorkloadShape};

    const SMALL: Experiment = Experiment {
        name: "small",
        source: "test",
        workload: WorkloadShape {
            streams: 3,
            queries_per_stream: 2,
            queries: QueryShape::Ranges {
                speeds: "FS",
                range_percents: &[10, 50],
            },
            starts: Starts::Staggered,
            in_order_pct: 0,
        },
        buffer_pct: 100.0,
        layout: "pax",
        sweep: &[
            Axis::Chunks {
                table_mib: 64,
                counts: &[16, 32],
            },
            Axis::InOrderPct(&[0, 50]),
        ],
        policies: &["normal", "relevance"],
        published: None,
        finding: "none",
    };

    /// With the whole table in the buffer every policy loads each chunk the queries
    /// touch exactly once: the loads are the distinct chunks of the workload.
    #[test]
    fn a_whole_table_buffer_loads_each_touched_chunk_once() {
        let policies = [PolicyKind::Normal, PolicyKind::Relevance, PolicyKind::Pbm];
        let report = run_sweep(&SMALL, &policies, 5).unwrap();
        let labels: Vec<&str> = report.points.iter().map(|p| p.label.as_str()).collect();
        assert_eq!(
            labels,
            [
                "16 chunks 0% Scans",
                "16 chunks 50% Scans",
                "32 chunks 0% Scans",
                "32 chunks 50% Scans"
            ]
        );
        for (point, p) in SMALL.points().iter().zip(&report.points) {
            let cfg = config_of(point).unwrap();
            assert_eq!((cfg.chunk_count, cfg.frames), (p.chunks, p.chunks));
            assert_eq!(cfg.chunk_bytes, (64 << 20) / u64::from(p.chunks));
            let workload = range_workload(&cfg, &point.workload, 5, short_names).unwrap();
            let touched: std::collections::BTreeSet<u32> = workload
                .streams
                .iter()
                .flat_map(|s| &s.queries)
                .flat_map(|q| q.chunks.iter().flat_map(|r| r.clone()))
                .collect();
            for (policy, row) in &p.policies {
                assert_eq!(row.loads, touched.len() as u64, "{} {policy}", p.label);
                assert!(row.avg_normalized_latency.is_some_and(f64::is_finite));
            }
        }
        assert!(sweep_text(&report).contains("32 chunks 50% Scans"));
    }
}
