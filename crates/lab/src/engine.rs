//! The DataFusion side of `coopscan bench`: a [`QueryEngine`] that runs FAST/SLOW as
//! SQL over a coopscan table, and the per-policy factory that gives every policy a
//! fresh Runtime (a cold buffer) on a throttled O_DIRECT device.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::Context;
use coopscan_bench::{
    Consumption, IoStats, LoadRecord, LoaderTime, PolicyRun, PolicySetup, QueryEngine,
    QueryInstance, QueryKind, QueryOutput, Refresher, SchedulingCost,
};
use coopscan_buffer::{CpuShares, EvictionStrategy, Reference};
use coopscan_exec::datafusion::arrow::array::RecordBatch;
use coopscan_exec::datafusion::prelude::SessionContext;
use coopscan_exec::{
    query_session, query_session_config, run_sql, CoopTable, InOrderHint, Query, QueryTag,
    ScanMode, ScanWorkers, StaticSplit,
};
use coopscan_runtime::{PolicyKind, Runtime, RuntimeConfig};
use coopscan_storage::device::{Bandwidth, Device, DeviceConfig, DirectMode};
use coopscan_storage::Table;
use coopscan_tpch::answers::rows_with_null;
use coopscan_tpch::synthetic::SYNTHETIC_TABLE;

use crate::refresh::DfRefresher;

/// The name queries use for the table: lineitem, or Table 4's synthetic relation.
pub const TABLE_NAME: &str = "lineitem";

/// The table `kind` queries (and the name the engine registers it under).
pub fn table_of(kind: QueryKind) -> &'static str {
    match kind {
        QueryKind::Fast | QueryKind::Slow => TABLE_NAME,
        QueryKind::Columns { .. } => SYNTHETIC_TABLE,
    }
}

/// The SQL of one benchmark query.
pub fn sql_of(q: &QueryInstance, slow_extra: u32) -> String {
    let query = match q.query_type.kind {
        QueryKind::Fast => Query::Fast,
        QueryKind::Slow => Query::Slow { extra: slow_extra },
        QueryKind::Columns { first } => Query::Columns {
            first: usize::from(first),
        },
    };
    query.sql(table_of(q.query_type.kind), Some(q.rows.clone()))
}
/// The ABM needs at least two frames per scan to admit one.
const MIN_FRAMES: u32 = 2;

/// How the benchmark's queries are written and executed.
#[derive(Clone, Copy, Debug)]
pub struct QueryShape {
    /// Extra aggregates that make SLOW CPU-bound.
    pub slow_extra: u32,
    /// Cores one query may use ([`query_session_config`]).
    pub threads: usize,
    /// Workers of each cooperative scan (`ScanWorkers`; 1: one partition).
    pub scan_workers: usize,
    /// The workers split the chunks statically (`StaticSplit`).
    pub static_split: bool,
    /// How the cores are shared among the scans (`CpuShares`).
    pub cpu_shares: CpuShares,
}

/// Which optimizer rules a [`DfEngine`]'s sessions have.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rules {
    /// coopscan's sessions ([`query_session`]: DataFusion's rules and ours).
    Coopscan,
    /// DataFusion's own rules only: the reference the timed runs are checked against,
    /// so that our rules (decimal arithmetic in 64 bits) are checked too.
    PlainDataFusion,
}

/// Runs the benchmark's queries through DataFusion over one provider.
pub struct DfEngine {
    tokio: Arc<tokio::runtime::Runtime>,
    provider: Arc<CoopTable>,
    shape: QueryShape,
    rules: Rules,
}

impl DfEngine {
    pub fn new(
        tokio: Arc<tokio::runtime::Runtime>,
        provider: Arc<CoopTable>,
        shape: QueryShape,
        rules: Rules,
    ) -> Self {
        DfEngine {
            tokio,
            provider,
            shape,
            rules,
        }
    }
}

impl QueryEngine for DfEngine {
    fn run(&self, q: &QueryInstance) -> anyhow::Result<QueryOutput> {
        let sql = sql_of(q, self.shape.slow_extra);
        // A session per query carries the query's id down to its CScan, which tags
        // its loads with it (per-query I/O counts). `block_on` runs the plan on this
        // stream's own thread: with one partition nothing is spawned elsewhere.
        let mut config =
            query_session_config(self.shape.threads).with_extension(Arc::new(QueryTag(q.id)));
        if q.in_order {
            config = config.with_extension(Arc::new(InOrderHint));
        }
        config = config.with_extension(Arc::new(self.shape.cpu_shares));
        if self.shape.scan_workers > 1 {
            config = config.with_extension(Arc::new(ScanWorkers(self.shape.scan_workers)));
            if self.shape.static_split {
                config = config.with_extension(Arc::new(StaticSplit));
            }
        }
        let ctx = match self.rules {
            Rules::Coopscan => query_session(config),
            Rules::PlainDataFusion => SessionContext::new_with_config(config),
        };
        ctx.register_table(table_of(q.query_type.kind), Arc::clone(&self.provider) as _)?;
        let batches = self
            .tokio
            .block_on(run_sql(&ctx, &sql))
            .with_context(|| format!("query {q}"))?;
        Ok(QueryOutput {
            rows: canonical_rows(&batches)?,
        })
    }
}

/// Every result row as `v1|v2|…`, sorted, nulls empty: the form results are compared
/// in (the peers' `coopscan_peers::canonical` writes theirs the same way).
pub fn canonical_rows(batches: &[RecordBatch]) -> anyhow::Result<Vec<String>> {
    let mut rows: Vec<String> = rows_with_null(batches, "")?
        .into_iter()
        .map(|cells| cells.join("|"))
        .collect();
    rows.sort();
    Ok(rows)
}

/// One policy's run: its Runtime and the engine over it.
pub struct DfRun {
    runtime: Arc<Runtime>,
    engine: DfEngine,
    /// The run's piece references, taken from the runtime once (taking empties it) and
    /// read by both OPT and the sharing analysis.
    trace: Mutex<Option<Arc<Vec<Reference>>>>,
    refresher: Option<DfRefresher>,
}

impl DfRun {
    fn trace(&self) -> Arc<Vec<Reference>> {
        let mut trace = self.trace.lock().unwrap_or_else(|e| e.into_inner());
        Arc::clone(trace.get_or_insert_with(|| Arc::new(self.runtime.take_trace())))
    }
}

impl PolicyRun for DfRun {
    fn engine(&self) -> &dyn QueryEngine {
        &self.engine
    }

    fn load_log(&self) -> Vec<LoadRecord> {
        let (log, _dropped) = self.runtime.load_log();
        log.iter()
            .map(|r| LoadRecord {
                at: r.at,
                chunk: r.chunk,
                tag: r.tag,
                bytes: r.bytes,
            })
            .collect()
    }

    fn io_stats(&self) -> IoStats {
        let s = self.runtime.device_stats();
        IoStats {
            requests: s.requests,
            bytes: s.bytes,
        }
    }

    /// Belady's OPT replayed on the references recorded since the run started (the
    /// trace is consumed).
    fn opt_chunk_loads(&self) -> Option<u64> {
        let opt =
            coopscan_buffer::trace::opt::replay_opt(&self.trace(), self.runtime.buffer_bytes());
        Some(opt.loads)
    }

    /// Each reference of a tagged scan, named by its query (Figure 17's analysis).
    fn consumptions(&self) -> Option<Vec<Consumption>> {
        let tags = self.runtime.traced_tags();
        let out = self
            .trace()
            .iter()
            .filter_map(|r| {
                Some(Consumption {
                    at: Duration::from_nanos(r.at.0),
                    tag: *tags.get(&r.scan)?,
                    chunk: r.piece.chunk.0,
                    bytes: r.bytes,
                })
            })
            .collect();
        Some(out)
    }

    /// The same references OPT replayed, in `coopscan_buffer`'s trace format.
    fn write_trace(&self, out: &mut dyn std::io::Write) -> Option<std::io::Result<()>> {
        Some(coopscan_buffer::write_trace(out, &self.trace()))
    }

    fn scheduling(&self) -> Option<SchedulingCost> {
        let s = self.runtime.scheduling();
        Some(SchedulingCost {
            seconds: s.time.as_secs_f64(),
            calls: s.calls,
        })
    }

    fn loader_time(&self) -> Option<LoaderTime> {
        let s = self.runtime.stats();
        Some(LoaderTime {
            busy_s: s.loader_busy.as_secs_f64(),
            lock_wait_s: s.loader_lock_wait.as_secs_f64(),
        })
    }

    fn refresher(&self) -> Option<&dyn Refresher> {
        self.refresher.as_ref().map(|r| r as &dyn Refresher)
    }
}

/// Builds a [`DfRun`] per policy: fresh device (throttled) and Runtime.
pub struct DfFactory {
    pub table: Table,
    pub tokio: Arc<tokio::runtime::Runtime>,
    pub slow_extra: u32,
    /// The all-cached regime (issue 11): read through the page cache, unthrottled,
    /// whatever bandwidth the setup asks for.
    pub cached: bool,
}

impl DfFactory {
    pub fn start_run(&self, setup: PolicySetup<'_>) -> anyhow::Result<Box<dyn PolicyRun>> {
        let (policy, eviction) = parse_policy(setup.policy)?;
        let bandwidth = setup
            .bandwidth_mb_s
            .filter(|_| !self.cached)
            .map(Bandwidth::mb_per_s)
            .transpose()
            .map_err(|e| anyhow::anyhow!("bandwidth: {e}"))?;
        let device = Arc::new(Device::new(DeviceConfig {
            direct: if self.cached {
                DirectMode::Off
            } else {
                DirectMode::Auto
            },
            bandwidth,
            ..DeviceConfig::default()
        }));
        let frames = frames_for(&self.table, setup.params.buffer_pct);
        let mut config = RuntimeConfig::new(frames, policy);
        config.abm.eviction = eviction;
        let runtime = Arc::new(Runtime::new(self.table.clone(), device, config)?);
        // Every piece reference, for OPT beside the policy (40 bytes per chunk a query
        // consumes: a few hundred kB for a Table 2 run).
        runtime.record_trace();
        let mut provider = CoopTable::cooperative(Arc::clone(&runtime));
        let log = setup.params.refresh.map(|_| DfRefresher::private_log());
        if let Some(log) = &log {
            provider = provider.with_log_at(log.clone());
        }
        let provider = Arc::new(provider);
        let refresher = match (setup.params.refresh, log) {
            (Some(refresh), Some(log)) => Some(DfRefresher::new(
                Arc::clone(&self.tokio),
                (TABLE_NAME, Arc::clone(&provider)),
                refresh.per_mille,
                log,
            )?),
            _ => None,
        };
        let shape = QueryShape {
            slow_extra: self.slow_extra,
            threads: setup.params.query_threads,
            scan_workers: setup.params.scan_workers,
            static_split: setup.params.static_split,
            cpu_shares: setup.params.cpu_shares.parse()?,
        };
        let engine = DfEngine::new(Arc::clone(&self.tokio), provider, shape, Rules::Coopscan);
        Ok(Box::new(DfRun {
            runtime,
            engine,
            trace: Mutex::new(None),
            refresher,
        }))
    }
}

/// A policy as `bench --policies` names it: `relevance`, or with how it frees room
/// for DSM pieces of different sizes, `relevance/knapsack` (the 2007 paper's footnote)
/// or `relevance/greedy` (its loop, the default).
pub fn parse_policy(name: &str) -> anyhow::Result<(PolicyKind, EvictionStrategy)> {
    let (policy, eviction) = name.split_once('/').unwrap_or((name, "greedy"));
    let policy: PolicyKind = policy.parse().map_err(|e| anyhow::anyhow!("{e}"))?;
    let eviction: EvictionStrategy = eviction.parse().map_err(|e| anyhow::anyhow!("{e}"))?;
    Ok((policy, eviction))
}

/// Buffer frames for `buffer_pct` of the table's chunks.
pub fn frames_for(table: &Table, buffer_pct: f64) -> u32 {
    let frames = (table.chunk_count() as f64 * buffer_pct / 100.0).round();
    (frames as u32).max(MIN_FRAMES)
}

/// An engine reading in table order (Scan) on an unthrottled device, planned by plain
/// DataFusion: the reference every policy's (and every peer's) results must equal.
pub fn scan_engine(
    table: &Table,
    tokio: Arc<tokio::runtime::Runtime>,
    shape: QueryShape,
) -> anyhow::Result<DfEngine> {
    let device = Arc::new(Device::new(DeviceConfig {
        direct: DirectMode::Off,
        ..DeviceConfig::default()
    }));
    let provider = Arc::new(CoopTable::new(table.clone(), device, ScanMode::Scan)?);
    Ok(DfEngine::new(
        tokio,
        provider,
        shape,
        Rules::PlainDataFusion,
    ))
}

/// The calibration's engine: the timed runs' own path (CScans through a Runtime), with a
/// buffer that holds the whole table, so after one warm-up pass every chunk is resident
/// and a query costs exactly what it costs its own core in the timed runs. The Scan
/// path would also charge the checksum verification of every page to the query, which
/// in the timed runs the loader does once per load on behalf of all its scans (issue
/// 10: that made S-100 look 1.25× dearer and put the device too slow for the paper's
/// balance).
pub fn resident_engine(
    table: &Table,
    tokio: Arc<tokio::runtime::Runtime>,
    shape: QueryShape,
) -> anyhow::Result<(DfEngine, Arc<Runtime>)> {
    let device = Arc::new(Device::new(DeviceConfig {
        direct: DirectMode::Off,
        ..DeviceConfig::default()
    }));
    let frames = u32::try_from(table.chunk_count())
        .context("too many chunks for one buffer")?
        .max(MIN_FRAMES);
    let runtime = Arc::new(Runtime::new(
        table.clone(),
        device,
        RuntimeConfig::new(frames, PolicyKind::Normal),
    )?);
    let provider = Arc::new(CoopTable::cooperative(Arc::clone(&runtime)));
    Ok((
        DfEngine::new(tokio, provider, shape, Rules::Coopscan),
        runtime,
    ))
}
