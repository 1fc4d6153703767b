//! One benchmark run end to end, for one [`Params`]:
//!
//! 1. resolve bandwidth (override, else calibration; times `bandwidth_scale`) and
//!    stagger (from the unscaled bandwidth, so a bandwidth sweep runs one workload);
//! 2. generate the workload (seeded: identical for every policy);
//! 3. compute reference outputs for every distinct query (reference engine, untimed);
//! 4. standalone cold runs: each query type alone on a fresh policy run (cold buffer),
//!    `standalone_runs` times, the median kept;
//! 5. per policy: a fresh policy run, the timed streams, statistics (for `pbm-sharing`
//!    also the sharing potential, from the engine's consumptions); with a trace
//!    directory, the run's piece-reference trace is kept there.

use crate::bandwidth::BandwidthMbS;
use crate::bandwidth::BYTES_PER_MB;
use crate::calibration::Calibration;
use crate::engine::{LoadRecord, PolicyFactory, PolicyRun, PolicySetup, QueryEngine};
use crate::error::BenchError;
use crate::mix::{QueryKind, QueryType};
use crate::presets::{check_params, Params, PBM_SHARING};
use crate::reference::References;
use crate::runner::run_policy;
use crate::samples::Samples;
use crate::stats::{PolicyStats, QueryRun, Standalone};
pub use crate::table_info::TableInfo;
use crate::workload::{standalone_queries, QueryInstance, Workload, WorkloadSpec};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

const PROGRESS_TEMPLATE: &str = "{prefix:>12} [{elapsed_precise}] {wide_bar} {pos}/{len}";

/// What [`run_benchmark`] needs from the caller.
pub struct BenchInput<'a> {
    pub params: &'a Params,
    pub table: TableInfo,
    /// From [`crate::calibration::calibrate`]; used unless `params.bandwidth_mb` is set.
    pub calibration: Option<Calibration>,
    pub factory: &'a dyn PolicyFactory,
    /// Computes the outputs every policy's must equal (e.g. plain DataFusion on the
    /// data in memory).
    pub reference: &'a dyn QueryEngine,
    /// Draw progress bars on stderr.
    pub progress: bool,
    /// Keep each policy's timed-run trace here, as [`trace_path`] names it (engines
    /// that record none write nothing).
    pub trace_dir: Option<&'a Path>,
}

/// One policy's results.
#[derive(Clone, Debug)]
pub struct PolicyResult {
    pub name: String,
    pub stats: PolicyStats,
    pub runs: Vec<QueryRun>,
    pub loads: Vec<LoadRecord>,
}

impl PolicyResult {
    /// Queries of the run that read in table order (in-order Scans).
    pub fn in_order_queries(&self) -> usize {
        self.runs.iter().filter(|r| r.query.in_order).count()
    }
}

/// Everything a report shows.
#[derive(Clone, Debug)]
pub struct BenchReport {
    pub params: Params,
    pub table: TableInfo,
    pub bandwidth_mb_s: Option<f64>,
    pub stagger_s: f64,
    pub calibration: Option<Calibration>,
    /// Median standalone time per query type (the base of normalized latency).
    pub standalone: Standalone,
    /// Every standalone run's time, per query type.
    pub standalone_samples: BTreeMap<QueryType, Samples>,
    /// Distinct queries the reference engine computed.
    pub reference_queries: usize,
    /// In `params.policies` order.
    pub policies: Vec<PolicyResult>,
}

pub fn run_benchmark(input: &BenchInput<'_>) -> Result<BenchReport, BenchError> {
    let params = input.params;
    check_params(params)?;
    let unscaled = params
        .bandwidth_mb
        .or(input.calibration.as_ref().map(|c| c.bandwidth_mb_s));
    let stagger_s = resolve_stagger(params, input.table, unscaled)?;
    let bandwidth_mb_s = resolve_bandwidth(params, input.calibration.as_ref())?;
    let stagger = Duration::try_from_secs_f64(stagger_s).map_err(|e| {
        BenchError::BadParameter(format!("stagger {stagger_s:?} s is not a duration: {e}"))
    })?;
    let workload = Workload::generate(&WorkloadSpec {
        streams: params.streams,
        queries_per_stream: params.queries_per_stream,
        mix: params.mix.clone(),
        seed: params.seed,
        stagger,
        table_rows: input.table.rows,
        in_order_pct: params.in_order_pct,
    })?;
    let alone = standalone_queries(&params.mix, input.table.rows, params.seed);
    let bar = progress_bar(
        input.progress,
        "reference",
        (workload.query_count() + alone.len()) as u64,
    );
    let references = References::compute(input.reference, workload.queries().chain(&alone), &bar)?;
    bar.finish_and_clear();
    let standalone_samples = run_standalone(input, bandwidth_mb_s, &alone, &references)?;
    let standalone: Standalone = standalone_samples
        .iter()
        .map(|(t, s)| (*t, s.median()))
        .collect();
    let mut policies = Vec::with_capacity(params.policies.len());
    for policy in &params.policies {
        let run = start(input, policy, bandwidth_mb_s)?;
        let bar = progress_bar(input.progress, policy, workload.query_count() as u64);
        let sharing = params.preset == PBM_SHARING;
        let every = refresh_every(params)?;
        let measured = run_policy(
            policy,
            run.as_ref(),
            &workload,
            &references,
            &bar,
            sharing,
            every,
        )?;
        bar.finish_and_clear();
        if let Some(dir) = input.trace_dir {
            save_trace(
                run.as_ref(),
                &trace_path(dir, &params.label, policy),
                policy,
            )?;
        }
        drop(run); // free this policy's buffer before the next starts
        policies.push(PolicyResult {
            name: policy.clone(),
            stats: PolicyStats::compute(&measured, &standalone),
            runs: measured.runs,
            loads: measured.loads,
        });
    }
    Ok(BenchReport {
        params: params.clone(),
        table: input.table,
        bandwidth_mb_s,
        stagger_s,
        calibration: input.calibration.clone(),
        standalone,
        standalone_samples,
        reference_queries: references.len(),
        policies,
    })
}

/// Where a run's trace is kept under `dir`: `<label>-<policy>.trace`, each name reduced
/// to ASCII letters, digits, `.` and `_` with `-` between words (`table2 · I/O bound`,
/// `relevance/knapsack` → `table2-I-O-bound-relevance-knapsack.trace`).
pub fn trace_path(dir: &Path, label: &str, policy: &str) -> PathBuf {
    dir.join(format!("{}-{}.trace", file_safe(label), file_safe(policy)))
}

fn file_safe(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    for c in name.chars() {
        if c.is_ascii_alphanumeric() || c == '.' || c == '_' {
            out.push(c);
        } else if !out.is_empty() && !out.ends_with('-') {
            out.push('-');
        }
    }
    out.trim_end_matches('-').to_string()
}

/// Writes `run`'s trace to `path`; nothing when the engine records none. The trace is
/// built in memory first (48 bytes per reference: a few MB for the largest presets),
/// so a failed write never leaves half a file that `coopscan opt` would refuse later.
fn save_trace(run: &dyn PolicyRun, path: &Path, policy: &str) -> Result<(), BenchError> {
    let error = |source| BenchError::Trace {
        policy: policy.to_string(),
        path: path.to_path_buf(),
        source,
    };
    let mut bytes = Vec::new();
    match run.write_trace(&mut bytes) {
        None => Ok(()),
        Some(written) => written
            .and_then(|()| std::fs::write(path, &bytes))
            .map_err(error),
    }
}

/// The device bandwidth of a run: `bandwidth_mb` (else the calibration's) times
/// `bandwidth_scale`; `None` (unthrottled) when there is neither. A scale other than 1
/// without a bandwidth to scale is an error (the sweep would silently run unthrottled).
pub fn resolve_bandwidth(
    params: &Params,
    calibration: Option<&Calibration>,
) -> Result<Option<f64>, BenchError> {
    let unscaled = params
        .bandwidth_mb
        .or(calibration.map(|c| c.bandwidth_mb_s));
    match unscaled {
        Some(b) => Ok(Some(b.get() * params.bandwidth_scale)),
        None if params.bandwidth_scale == 1.0 => Ok(None),
        None => Err(BenchError::BadParameter(format!(
            "bandwidth_scale {} needs a bandwidth to scale (--bandwidth-mb or a calibration)",
            params.bandwidth_scale
        ))),
    }
}

/// The stagger given, else the paper's fraction of F-100's read (finite: the bandwidth
/// is at least `BANDWIDTH_MB_S_MIN`).
/// The refresh stream's period, when the run has one.
fn refresh_every(params: &Params) -> Result<Option<Duration>, BenchError> {
    params
        .refresh
        .map(|r| {
            Duration::try_from_secs_f64(r.every_s).map_err(|e| {
                BenchError::BadParameter(format!("refresh every {} s: {e}", r.every_s))
            })
        })
        .transpose()
}

fn resolve_stagger(
    params: &Params,
    table: TableInfo,
    bandwidth: Option<BandwidthMbS>,
) -> Result<f64, BenchError> {
    match (params.stagger_s, bandwidth) {
        (Some(s), _) => Ok(s),
        (None, Some(b)) => Ok(params.stagger_over_scan * b.read_seconds(table.fast_read_bytes)),
        (None, None) => Err(BenchError::BadParameter(
            "stagger_s is needed when there is neither a bandwidth nor a calibration".to_string(),
        )),
    }
}

fn start(
    input: &BenchInput<'_>,
    policy: &str,
    bandwidth_mb_s: Option<f64>,
) -> Result<Box<dyn PolicyRun>, BenchError> {
    let setup = PolicySetup {
        policy,
        params: input.params,
        bandwidth_mb_s,
    };
    input
        .factory
        .start(setup)
        .map_err(|source| BenchError::Setup {
            policy: policy.to_string(),
            source,
        })
}

/// Latencies of each query type run alone, each time on a fresh (cold) policy run.
fn run_standalone(
    input: &BenchInput<'_>,
    bandwidth_mb_s: Option<f64>,
    queries: &[QueryInstance],
    references: &References,
) -> Result<BTreeMap<QueryType, Samples>, BenchError> {
    let policy = input.params.standalone_policy.as_str();
    let runs = input.params.standalone_runs;
    let bar = progress_bar(input.progress, "standalone", (queries.len() * runs) as u64);
    let mut standalone = BTreeMap::new();
    for q in queries {
        let mut samples = Samples::default();
        for _ in 0..runs {
            let run = start(input, policy, bandwidth_mb_s)?;
            let started = Instant::now();
            let output = run.engine().run(q).map_err(|source| BenchError::Query {
                policy: format!("{policy} (standalone)"),
                query: q.to_string(),
                source,
            })?;
            samples.0.push(started.elapsed().as_secs_f64());
            references.check(&format!("{policy} (standalone)"), q, &output)?;
            bar.inc(1);
        }
        standalone.insert(q.query_type, samples);
    }
    bar.finish_and_clear();
    Ok(standalone)
}

fn progress_bar(enabled: bool, prefix: &str, len: u64) -> ProgressBar {
    if !enabled {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::with_draw_target(Some(len), ProgressDrawTarget::stderr());
    if let Ok(style) = ProgressStyle::with_template(PROGRESS_TEMPLATE) {
        bar.set_style(style);
    }
    bar.set_prefix(prefix.to_string());
    bar
}

/// A lone F-100 is I/O bound by design, so it should read at about the throttle's
/// bandwidth; below this fraction of it, the disk itself is the limit.
const DEVICE_SHORTFALL: f64 = 0.8;

/// The bandwidth a lone F-100 actually got (MB/s) when it is well below the throttle's:
/// the real disk is slower than the calibrated bandwidth, so the run is more I/O bound
/// than the balance the calibration aimed for (it happens when our CPU per query is low
/// enough to ask for more than the disk can do). `None` when F-100 was not run alone,
/// the device was not throttled, or it kept up.
pub fn device_shortfall(report: &BenchReport) -> Option<f64> {
    let throttle = report.bandwidth_mb_s?;
    let f100 = QueryType {
        kind: QueryKind::Fast,
        percent: 100,
    };
    let alone_s = *report.standalone.get(&f100)?;
    if alone_s <= 0.0 {
        return None;
    }
    let got = report.table.fast_read_bytes as f64 / alone_s / BYTES_PER_MB;
    (got < DEVICE_SHORTFALL * throttle).then_some(got)
}

#[cfg(test)]
mod tests {
    use super::trace_path;
    use std::path::Path;

    #[test]
    fn a_trace_is_named_by_its_run_and_policy_in_file_safe_words() {
        let dir = Path::new("t");
        assert_eq!(
            trace_path(dir, "table2", "pbm"),
            dir.join("table2-pbm.trace")
        );
        assert_eq!(
            trace_path(dir, "table2 (DSM) · io", "relevance/knapsack"),
            dir.join("table2-DSM-io-relevance-knapsack.trace")
        );
        assert_eq!(
            trace_path(dir, "FS-1,10 buffer 12.5 %", "pbm-lru"),
            dir.join("FS-1-10-buffer-12.5-pbm-lru.trace")
        );
        // Nothing in a label can climb out of the directory.
        assert_eq!(
            trace_path(dir, "../../etc", "x"),
            dir.join("..-..-etc-x.trace")
        );
    }
}
