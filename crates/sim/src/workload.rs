//! What the simulated queries do: streams of queries, each a CScan over chunk ranges
//! of one table with a CPU cost in cycles per byte. A run over several tables in one
//! buffer (`SimConfig::tables`, the 2012 paper's TPC-H throughput run, §4.2) mixes
//! queries of different tables, in one stream or across streams.

use coopscan_buffer::{CpuShares, Split};
use serde::Serialize;
use std::collections::HashMap;
use std::ops::Range;

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct QuerySpec {
    pub name: String,
    /// Query type for per-type statistics, e.g. "F-10".
    pub kind: String,
    pub cycles_per_byte: f64,
    /// The table it scans: `TableId(table)`, an index into `SimConfig::tables` (0: the
    /// one table when `tables` is empty).
    #[serde(skip_serializing_if = "is_zero")]
    pub table: u32,
    /// Chunk ranges scanned, of its table; several non-contiguous ranges are allowed.
    pub chunks: Vec<Range<u32>>,
    /// Columns read, one bit each, on a columnar (DSM) table; 0 = every column.
    pub columns: u64,
    /// Workers processing its chunks at once (a parallel CScan, 2012 paper §2.2); 1 is
    /// the papers' one core per query.
    pub workers: u16,
    /// How its workers share its chunks: one ABM scan (dynamic, the default) or one
    /// scan per worker over a fixed run of the chunks (the 2012 paper's static split).
    pub split: Split,
    /// The table version it reads, as chunk ranges (2012 §2.1, bulk appends: a shared
    /// prefix and chunks of its own); `chunks` must lie in it. `None`: every chunk.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub snapshot: Option<Vec<Range<u32>>>,
}

fn is_zero(table: &u32) -> bool {
    *table == 0
}

/// Queries run one after another; the stream starts at `start_s`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct StreamSpec {
    pub start_s: f64,
    pub queries: Vec<QuerySpec>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Workload {
    pub streams: Vec<StreamSpec>,
    /// Checkpoints during the run (2012 paper §2.1, case (iv)), in any order.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub checkpoints: Vec<SimCheckpoint>,
}

/// A checkpoint of table `table` at `at_s`, and again every `every_s` after it while
/// queries run: its new stable image shares no page with the old one, so the buffer
/// takes it as a table of its own (`Catalog::add_table_of_kind`) and retires the old
/// version. Queries that arrive from then on read the new version; those running keep
/// reading the old one, which is freed when the last of them leaves.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct SimCheckpoint {
    pub at_s: f64,
    /// As `QuerySpec::table`.
    pub table: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub every_s: Option<f64>,
}

/// How every query of a workload runs its scan: its workers and how they share its
/// chunks (the 2012 paper's parallel CScans, §2.2), and how the queries share the
/// cores. The default is the papers': one worker per query, cores shared equally.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QueryShape {
    pub workers: u16,
    pub split: Split,
    /// The run's `CpuModel::shares`: set with the queries' shape by `shaped_run`.
    pub cpu_shares: CpuShares,
}

impl Default for QueryShape {
    fn default() -> Self {
        QueryShape {
            workers: 1,
            split: Split::Dynamic,
            cpu_shares: CpuShares::Equal,
        }
    }
}

impl Workload {
    /// Streams without checkpoints.
    pub fn new(streams: Vec<StreamSpec>) -> Workload {
        Workload {
            streams,
            checkpoints: Vec::new(),
        }
    }

    /// This workload with `checkpoints` as well.
    pub fn with_checkpoints(mut self, checkpoints: Vec<SimCheckpoint>) -> Workload {
        self.checkpoints.extend(checkpoints);
        self
    }

    /// This workload with every query of `shape`'s workers and split (the CPU's
    /// shares are the config's: `shaped_run` sets both).
    pub fn shaped(mut self, shape: QueryShape) -> Workload {
        let queries = self.streams.iter_mut().flat_map(|s| s.queries.iter_mut());
        for query in queries {
            query.workers = shape.workers;
            query.split = shape.split;
        }
        self
    }
}

impl Workload {
    /// One single-query stream per (start, query): the 2004 report's setups.
    pub fn independent(queries: Vec<(f64, QuerySpec)>) -> Self {
        let streams = queries
            .into_iter()
            .map(|(start_s, q)| StreamSpec {
                start_s,
                queries: vec![q],
            })
            .collect();
        Workload::new(streams)
    }

    pub fn query_count(&self) -> usize {
        self.streams.iter().map(|s| s.queries.len()).sum()
    }

    /// Every query of every stream by its name (a name given twice: the last one).
    pub fn queries_by_name(&self) -> HashMap<&str, &QuerySpec> {
        let queries = self.streams.iter().flat_map(|s| &s.queries);
        queries.map(|q| (q.name.as_str(), q)).collect()
    }
}
