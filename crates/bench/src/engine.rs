//! The seam between the benchmark and a query engine. The lead implements these with
//! DataFusion + coopscan-exec; tests implement them with in-memory fakes.
//!
//! ```text
//!  PolicyFactory::start(setup) ──► Box<dyn PolicyRun>   (fresh runtime: cold buffer)
//!                                     ├─ engine() ──► &dyn QueryEngine ─ run(query) ─► QueryOutput
//!                                     ├─ load_log()  chunk loads, tagged with query ids
//!                                     ├─ io_stats()  device requests and bytes so far
//!                                     └─ consumptions()  when each query took each chunk
//! ```

use crate::presets::Params;
use crate::workload::QueryInstance;
use serde::Serialize;
use std::time::Duration;

/// A query's result in canonical form (e.g. its rows rendered as strings in a fixed
/// order, or a digest), compared for equality with the reference engine's.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct QueryOutput {
    pub rows: Vec<String>,
}

/// Runs one query of the benchmark.
pub trait QueryEngine: Sync {
    /// Runs `q` (its type over `q.rows`) under the engine's current policy, tagging its
    /// scan with `q.id` (`Runtime::register_tagged(.., Some(q.id))`), and returns its
    /// canonical result. Called concurrently from one thread per stream.
    fn run(&self, q: &QueryInstance) -> anyhow::Result<QueryOutput>;
}

/// One completed chunk load (the runtime's `LoadRecord`, copied so this crate does not
/// depend on the runtime).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct LoadRecord {
    /// Completion time since the policy run started.
    pub at: Duration,
    pub chunk: u32,
    /// The id of the query the load was scheduled for; `None` when the policy does not
    /// schedule for a query (elevator).
    pub tag: Option<u64>,
    pub bytes: u64,
}

/// One query starting to process one chunk: the chunk (or pieces of it) delivered to
/// the query's scan. The sharing-potential analysis (`crate::sharing`, the 2012 paper's
/// Figure 17) counts a chunk as still wanted by an active query until this moment.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Consumption {
    /// Delivery time since the policy run started: the clock of [`LoadRecord::at`]
    /// (the runtime's, started when the factory built the run).
    pub at: Duration,
    /// The id of the query whose scan took the chunk ([`QueryInstance::id`], the tag
    /// its scan was registered with).
    pub tag: u64,
    /// The chunk's index in the table, as in [`LoadRecord::chunk`] (the runtime's
    /// `ChunkId`): a contiguous run of rows, of whatever row count the table has.
    pub chunk: u32,
    /// Bytes delivered: the whole chunk in NSM/PAX, the columns read in DSM. Several
    /// records of one query and chunk (one per DSM column piece) are added up.
    pub bytes: u64,
}

/// Device counters; the runner takes the difference over the timed run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct IoStats {
    pub requests: u64,
    pub bytes: u64,
}

impl IoStats {
    pub fn since(self, before: IoStats) -> IoStats {
        IoStats {
            requests: self.requests.saturating_sub(before.requests),
            bytes: self.bytes.saturating_sub(before.bytes),
        }
    }
}

/// One policy's live setup: a fresh runtime with an empty buffer, and an engine on it.
/// Dropped when the policy's runs are over.
pub trait PolicyRun {
    fn engine(&self) -> &dyn QueryEngine;
    /// Every chunk load since this run was started, in completion order.
    fn load_log(&self) -> Vec<LoadRecord>;
    /// Device counters since this run was started.
    fn io_stats(&self) -> IoStats;
    /// Chunk loads Belady's OPT would need for the piece references this run made,
    /// under the run's buffer (the 2012 paper's yardstick); `None` when the engine
    /// records no references. Called once, after the timed run.
    fn opt_chunk_loads(&self) -> Option<u64> {
        None
    }
    /// When each query of this run started processing each chunk of its ranges, one
    /// record per delivery (per piece in DSM), since this run was started; `None` when
    /// the engine does not record deliveries. Called once, after the timed run and
    /// before [`PolicyRun::opt_chunk_loads`], and only when the preset analyses
    /// sharing (`pbm-sharing`). An engine whose two answers come from one consumable
    /// reference trace must take it once and keep it for both.
    fn consumptions(&self) -> Option<Vec<Consumption>> {
        None
    }
    /// Writes the piece-reference trace this run recorded, in `coopscan_buffer`'s
    /// binary format (`coopscan opt` replays it); `None` when the engine records none.
    /// Called after the timed run, after [`PolicyRun::opt_chunk_loads`], and only when
    /// the caller keeps traces ([`crate::BenchInput::trace_dir`]).
    fn write_trace(&self, _out: &mut dyn std::io::Write) -> Option<std::io::Result<()>> {
        None
    }
    /// Time the engine's buffer manager spent deciding since this run started (the
    /// paper's scheduling cost, Figure 8); `None` when the engine does not measure it.
    fn scheduling(&self) -> Option<SchedulingCost> {
        None
    }
    /// Time the engine's loaders spent on loads since this run started, and how much
    /// of it they waited for the buffer manager's lock; `None` when not measured.
    fn loader_time(&self) -> Option<LoaderTime> {
        None
    }
    /// CPU time spent since this run started by processes other than this one (a peer
    /// engine's server or driver); the runner adds it to this process's CPU time.
    fn external_cpu_time(&self) -> Duration {
        Duration::ZERO
    }
    /// Bytes read from the disk itself since this run started, when the engine can
    /// tell (a peer confined in a cgroup); `None` otherwise.
    fn disk_read_bytes(&self) -> Option<u64> {
        None
    }
    /// The run's refresh stream (`Params::refresh`); `None` when the engine has none.
    fn refresher(&self) -> Option<&dyn crate::refresh::Refresher> {
        None
    }
}

/// Time spent in buffer-manager decisions, and how many were made.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct SchedulingCost {
    pub seconds: f64,
    pub calls: u64,
}

/// Time the loaders spent on loads (summed over loaders), and the part of it spent
/// waiting to take the buffer manager's lock back after reading.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct LoaderTime {
    pub busy_s: f64,
    pub lock_wait_s: f64,
}

/// What a [`PolicyFactory`] is asked to set up.
#[derive(Clone, Copy, Debug)]
pub struct PolicySetup<'a> {
    /// `normal`, `attach`, `elevator` or `relevance`.
    pub policy: &'a str,
    /// Buffer size, chunk size etc. (the factory sizes the runtime from these).
    pub params: &'a Params,
    /// Device throttle to apply; `None` = unthrottled.
    pub bandwidth_mb_s: Option<f64>,
}

/// Creates a fresh [`PolicyRun`] (new runtime, cold buffer) for each timed run and each
/// standalone run. Any `Fn(PolicySetup) -> anyhow::Result<Box<dyn PolicyRun>> + Sync`
/// closure is one.
pub trait PolicyFactory: Sync {
    fn start(&self, setup: PolicySetup<'_>) -> anyhow::Result<Box<dyn PolicyRun>>;
}

impl<F> PolicyFactory for F
where
    F: Fn(PolicySetup<'_>) -> anyhow::Result<Box<dyn PolicyRun>> + Sync,
{
    fn start(&self, setup: PolicySetup<'_>) -> anyhow::Result<Box<dyn PolicyRun>> {
        self(setup)
    }
}
