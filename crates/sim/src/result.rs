//! Results of one simulated run and the metrics of the 2007 paper's Table 2.

use crate::timeline::Timeline;
use coopscan_buffer::PolicyKind;
use serde::Serialize;

#[derive(Clone, Debug, Serialize)]
pub struct QueryResult {
    pub name: String,
    pub kind: String,
    pub stream: usize,
    pub start_s: f64,
    pub end_s: f64,
    pub latency_s: f64,
    /// Time spent waiting for a chunk (including admission).
    pub io_wait_s: f64,
    /// Time the policy held the query back (`pbm-throttle`), and how many times.
    pub held_s: f64,
    pub holds: u32,
    pub chunks: u32,
    /// Loads issued on this query's behalf.
    pub loads: u64,
    /// Latency of the same query alone on a cold buffer, when computed.
    pub standalone_s: Option<f64>,
}

impl QueryResult {
    pub fn normalized_latency(&self) -> Option<f64> {
        self.standalone_s
            .filter(|s| *s > 0.0)
            .map(|s| coopscan_paper::stats::normalized_latency(self.latency_s, s))
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct RunResult {
    pub policy: PolicyKind,
    pub total_time_s: f64,
    pub chunk_loads: u64,
    /// Bytes the loads read (DSM: only the columns loaded).
    pub bytes_loaded: u64,
    /// Of `bytes_loaded`, what came from the device: the rest are DSM pages on a chunk
    /// boundary copied from a resident neighbour (`AbmStats::bytes_read`).
    pub bytes_read: u64,
    pub evictions: u64,
    /// Evicted pieces no scan needed (see `AbmStats::spare_evictions`).
    pub spare_evictions: u64,
    /// DSM: chunk boundaries (straddling pages) of the pieces read, and how many had
    /// their neighbour resident (see `boundaries.rs`).
    pub boundaries: crate::Boundaries,
    /// Reads that failed (injected faults) and were retried.
    pub load_failures: u64,
    pub queries: Vec<QueryResult>,
    /// Per stream: end of its last query minus its start.
    pub stream_times_s: Vec<f64>,
    /// Busy core-seconds / (cores × total time).
    pub cpu_use: f64,
    /// Real (host) time spent inside ABM calls, and how many calls.
    pub scheduling_s: f64,
    pub abm_calls: u64,
    /// Largest number of live equivalence classes seen.
    pub max_classes: usize,
    #[serde(skip)]
    pub timeline: Option<Timeline>,
    /// Every piece reference in order, when `SimConfig::record_trace` is set.
    #[serde(skip)]
    pub trace: Option<Vec<coopscan_buffer::Reference>>,
    /// Checkpoints taken during the run (`Workload::checkpoints`), and the old versions
    /// the buffer freed once their last scan left (all of them, or the run fails).
    #[serde(skip_serializing_if = "is_zero")]
    pub checkpoints: u32,
    #[serde(skip_serializing_if = "is_zero")]
    pub versions_freed: u32,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

impl RunResult {
    pub fn avg_stream_time_s(&self) -> f64 {
        mean(self.stream_times_s.iter().copied())
    }

    pub fn avg_latency_s(&self) -> f64 {
        mean(self.queries.iter().map(|q| q.latency_s))
    }

    pub fn avg_normalized_latency(&self) -> Option<f64> {
        let all: Option<Vec<f64>> = self
            .queries
            .iter()
            .map(QueryResult::normalized_latency)
            .collect();
        all.map(|v| mean(v.into_iter()))
    }

    pub fn query(&self, name: &str) -> Option<&QueryResult> {
        self.queries.iter().find(|q| q.name == name)
    }
}

pub(crate) fn mean(values: impl Iterator<Item = f64>) -> f64 {
    let (sum, n) = values.fold((0.0, 0usize), |(s, n), v| (s + v, n + 1));
    if n == 0 {
        0.0
    } else {
        sum / n as f64
    }
}
