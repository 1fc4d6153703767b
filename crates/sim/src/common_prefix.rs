//! Scans of snapshots with a common prefix (2012 paper §2.1, "Bulk Appends";
//! `coopscan_paper::common_prefix`) on the simulated Table 2 machine: the streams'
//! loads when they all read one snapshot, when half read a snapshot sharing 90 % of
//! its chunks, and when half read a disjoint version.

use std::fmt::Write as _;

use coopscan_buffer::{PolicyKind, Split};
use coopscan_paper::common_prefix::{self as def, Snapshots};
use serde::Serialize;

use crate::experiments::{cycles_per_byte_for, table2_config, FAST_CPU_PER_IO, SLOW_CPU_PER_IO};
use crate::{simulate, QuerySpec, SimConfig, SimError, StreamSpec, Workload};

/// One run: a way of snapshots under a policy.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CommonPrefixRun {
    pub snapshots: String,
    pub policy: PolicyKind,
    pub loads: u64,
    pub avg_stream_s: f64,
    /// Loads ÷ the one-snapshot run's under the same policy.
    pub loads_over_one: f64,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CommonPrefixReport {
    pub runs: Vec<CommonPrefixRun>,
    pub target: f64,
}

/// The machine: Table 2's, with a table holding every snapshot's chunks.
fn config(snapshots: Snapshots) -> SimConfig {
    SimConfig {
        chunk_count: snapshots.table_chunks(),
        frames: def::BUFFER_CHUNKS,
        record_timeline: false,
        ..table2_config()
    }
}

/// The streams: full scans of their snapshot, FAST and SLOW alternating.
fn workload(cfg: &SimConfig, snapshots: Snapshots) -> Workload {
    let streams = (0..def::STREAMS)
        .map(|s| {
            let snapshot = snapshots.snapshot_of(s);
            let queries = (0..def::QUERIES_PER_STREAM)
                .map(|q| {
                    let (letter, ratio) = match def::is_slow(s, q) {
                        true => ('S', SLOW_CPU_PER_IO),
                        false => ('F', FAST_CPU_PER_IO),
                    };
                    QuerySpec {
                        name: format!("s{s}q{q}"),
                        kind: format!("{letter}-100"),
                        cycles_per_byte: cycles_per_byte_for(cfg, ratio),
                        chunks: snapshot.clone(),
                        columns: 0,
                        workers: 1,
                        split: Split::Dynamic,
                        snapshot: Some(snapshot.clone()),
                        table: 0,
                    }
                })
                .collect();
            StreamSpec {
                start_s: def::STAGGER_S * s as f64,
                queries,
            }
        })
        .collect();
    Workload::new(streams)
}

/// Every way of snapshots under each of `policies`.
pub fn common_prefix(policies: &[PolicyKind]) -> Result<CommonPrefixReport, SimError> {
    let mut runs = Vec::new();
    for &policy in policies {
        let mut one = None;
        for snapshots in Snapshots::ALL {
            let cfg = config(snapshots);
            let run = simulate(&cfg, &workload(&cfg, snapshots), policy)?;
            let streams = run.stream_times_s.len().max(1) as f64;
            let loads = run.chunk_loads;
            let one_loads = *one.get_or_insert(loads);
            runs.push(CommonPrefixRun {
                snapshots: snapshots.name().into(),
                policy,
                loads,
                avg_stream_s: run.stream_times_s.iter().sum::<f64>() / streams,
                loads_over_one: def::loads_over_one(loads, one_loads),
            });
        }
    }
    Ok(CommonPrefixReport {
        runs,
        target: def::TARGET,
    })
}

pub fn common_prefix_text(report: &CommonPrefixReport) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "common-prefix (2012 paper §2.1, bulk appends; simulated): {} streams × {} full \
         scans of {}-chunk snapshots, buffer {} chunks; the second snapshot shares {} % \
         (target: loads ≤ {} × one snapshot's)",
        def::STREAMS,
        def::QUERIES_PER_STREAM,
        def::SNAPSHOT_CHUNKS,
        def::BUFFER_CHUNKS,
        def::SHARED_PCT,
        report.target
    );
    let _ = writeln!(
        out,
        "{:<10} {:<18} {:>7} {:>12} {:>13}",
        "policy", "snapshots", "loads", "× one's", "avg stream s"
    );
    for r in &report.runs {
        let _ = writeln!(
            out,
            "{:<10} {:<18} {:>7} {:>12.3} {:>13.1}",
            r.policy.name(),
            r.snapshots,
            r.loads,
            r.loads_over_one,
            r.avg_stream_s
        );
    }
    out
}
