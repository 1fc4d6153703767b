//! Table 2's statistics from one policy run: system statistics (its rows) and per query
//! type statistics (its lower half).
//!
//! Definitions (the paper's §5.2):
//! - stream time: from the start of a stream's first query to the end of its last;
//!   `avg_stream_time_s` averages it over streams (system throughput);
//! - normalized latency: a query's latency ÷ the standalone cold time of its type;
//!   averaged over all queries (system latency) and per type;
//! - total time: wall time from the run's start to the end of the last query;
//! - per type I/Os: chunk loads the ABM scheduled for queries of that type (tags);
//!   `None` when no load in the run carried a tag (elevator: the paper's empty column).

use crate::engine::{Consumption, IoStats, LoadRecord, LoaderTime, SchedulingCost};
use crate::mix::QueryType;
use crate::refresh::{RefreshRun, RefreshStats};
use crate::sharing::{sharing_potential, SharingPotential, SHARING_SAMPLES};
pub use crate::workload::QueryRun;
use coopscan_paper::stats as paper_stats;
use serde::Serialize;
use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

/// What the runner measured for one policy.
#[derive(Clone, Debug, Default)]
pub struct PolicyMeasurement {
    pub policy: String,
    pub runs: Vec<QueryRun>,
    pub wall: Duration,
    pub cpu_use: f64,
    pub io: IoStats,
    pub loads: Vec<LoadRecord>,
    pub results_checked: usize,
    /// OPT's chunk loads on this run's references, if the engine recorded them.
    pub opt_chunk_loads: Option<u64>,
    /// Time in buffer-manager decisions, if the engine measured it.
    pub scheduling: Option<SchedulingCost>,
    /// Time the loaders spent on loads and waiting for the lock, if measured.
    pub loader: Option<LoaderTime>,
    /// When each query took each chunk, if asked for (`pbm-sharing`) and recorded.
    pub consumptions: Option<Vec<Consumption>>,
    /// The refresh stream's pairs, when the run had one.
    pub refreshes: Vec<RefreshRun>,
}

/// Standalone cold time per query type, in seconds.
pub type Standalone = BTreeMap<QueryType, f64>;

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct QueryTypeStats {
    pub count: usize,
    pub standalone_s: f64,
    pub latency_avg_s: f64,
    /// Sample standard deviation (n − 1); 0 for a single query.
    pub latency_stddev_s: f64,
    pub normalized_latency: f64,
    /// Loads scheduled for a query of this type, averaged over its queries (the paper's
    /// per-type I/O column); `None` when no load was attributed to any query (elevator).
    pub io_requests: Option<f64>,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PolicyStats {
    pub avg_stream_time_s: f64,
    pub avg_normalized_latency: f64,
    pub total_time_s: f64,
    /// 0..=1 of all cores.
    pub cpu_use: f64,
    pub io_requests: u64,
    pub io_bytes: u64,
    pub chunk_loads: usize,
    /// Belady's OPT on this run's piece references under the same buffer.
    pub opt_chunk_loads: Option<u64>,
    /// Seconds the buffer manager spent deciding during the run (Figure 8).
    pub scheduling_s: Option<f64>,
    /// Buffer-manager calls during the run.
    pub abm_calls: Option<u64>,
    /// Seconds the loaders spent on loads, summed over loaders: near `total_time_s`
    /// per loader, the loader is the bottleneck.
    pub loader_busy_s: Option<f64>,
    /// Of `loader_busy_s`, seconds the loaders waited to take the buffer manager's
    /// lock back after reading.
    pub loader_lock_wait_s: Option<f64>,
    pub queries: usize,
    pub results_checked: usize,
    pub query_types: BTreeMap<QueryType, QueryTypeStats>,
    /// The 2012 paper's Figure 17 for this run, when the engine gave consumptions.
    pub sharing: Option<SharingPotential>,
    /// What the refresh stream did, when the run had one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub refresh: Option<RefreshStats>,
}

impl PolicyStats {
    pub fn compute(m: &PolicyMeasurement, standalone: &Standalone) -> PolicyStats {
        let normalized: Vec<f64> = m.runs.iter().map(|r| normalize(r, standalone)).collect();
        let last_end = m.runs.iter().map(|r| r.end).max().unwrap_or_default();
        let total = m.wall.max(last_end);
        PolicyStats {
            avg_stream_time_s: mean(&stream_times(&m.runs)),
            avg_normalized_latency: mean(&normalized),
            total_time_s: total.as_secs_f64(),
            cpu_use: m.cpu_use,
            io_requests: m.io.requests,
            io_bytes: m.io.bytes,
            chunk_loads: m.loads.len(),
            opt_chunk_loads: m.opt_chunk_loads,
            scheduling_s: m.scheduling.map(|s| s.seconds),
            abm_calls: m.scheduling.map(|s| s.calls),
            loader_busy_s: m.loader.map(|l| l.busy_s),
            loader_lock_wait_s: m.loader.map(|l| l.lock_wait_s),
            queries: m.runs.len(),
            results_checked: m.results_checked,
            query_types: per_type(m, standalone),
            sharing: m
                .consumptions
                .as_deref()
                .map(|c| sharing_potential(&m.runs, c, total, SHARING_SAMPLES)),
            refresh: RefreshStats::of(&m.refreshes),
        }
    }
}

fn normalize(run: &QueryRun, standalone: &Standalone) -> f64 {
    let base = standalone
        .get(&run.query.query_type)
        .copied()
        .unwrap_or(f64::NAN);
    paper_stats::normalized_latency(run.latency().as_secs_f64(), base)
}

/// Per stream: end of its last query − start of its first.
fn stream_times(runs: &[QueryRun]) -> Vec<f64> {
    paper_stats::stream_times_s(runs.iter().map(|r| paper_stats::Span {
        stream: r.query.stream,
        start_s: r.start.as_secs_f64(),
        end_s: r.end.as_secs_f64(),
    }))
}

fn per_type(m: &PolicyMeasurement, standalone: &Standalone) -> BTreeMap<QueryType, QueryTypeStats> {
    let loads_per_query = loads_per_tag(&m.loads);
    let mut by_type: BTreeMap<QueryType, Vec<&QueryRun>> = BTreeMap::new();
    for r in &m.runs {
        by_type.entry(r.query.query_type).or_default().push(r);
    }
    by_type
        .into_iter()
        .map(|(query_type, runs)| {
            let latencies: Vec<f64> = runs.iter().map(|r| r.latency().as_secs_f64()).collect();
            let normalized: Vec<f64> = runs.iter().map(|r| normalize(r, standalone)).collect();
            let io_requests = loads_per_query.as_ref().map(|per_query| {
                let total: u64 = runs
                    .iter()
                    .map(|r| per_query.get(&r.query.id).copied().unwrap_or(0))
                    .sum();
                total as f64 / runs.len() as f64
            });
            let stats = QueryTypeStats {
                count: runs.len(),
                standalone_s: standalone.get(&query_type).copied().unwrap_or(f64::NAN),
                latency_avg_s: mean(&latencies),
                latency_stddev_s: sample_stddev(&latencies),
                normalized_latency: mean(&normalized),
                io_requests,
            };
            (query_type, stats)
        })
        .collect()
}

/// Loads per tag, or `None` when no load was tagged (nothing can be attributed).
fn loads_per_tag(loads: &[LoadRecord]) -> Option<HashMap<u64, u64>> {
    let mut per_tag: HashMap<u64, u64> = HashMap::new();
    for tag in loads.iter().filter_map(|l| l.tag) {
        *per_tag.entry(tag).or_default() += 1;
    }
    (!per_tag.is_empty()).then_some(per_tag)
}

pub fn mean(values: &[f64]) -> f64 {
    if values.is_empty() {
        return 0.0;
    }
    values.iter().sum::<f64>() / values.len() as f64
}

pub fn sample_stddev(values: &[f64]) -> f64 {
    if values.len() < 2 {
        return 0.0;
    }
    let m = mean(values);
    let squares: f64 = values.iter().map(|v| (v - m) * (v - m)).sum();
    (squares / (values.len() - 1) as f64).sqrt()
}
