//! The simulator's side of the TPC-H throughput run (`coopscan bench --preset tpch-…
//! --simulate`): the same streams, buffer, device and policies as the real run, replayed
//! by the discrete-event simulator (`coopscan_sim`, the same ABM and policies through
//! the same driver) over the database's own tables in one buffer.
//!
//! How a TPC-H query becomes simulated scans ([`SimulatedStreams::measure`]):
//! - **Its scans** are read off its physical plan (`coopscan_exec::planned_scans`): per
//!   scan through the buffer its table, chunks, columns, workers and order. A stream
//!   runs them one after another, in plan order (a join's build side first); a query
//!   that starts both sides of a join at once is simulated as if it did not.
//! - **Its CPU** is measured: each query of each stream alone, warm (every piece
//!   buffered, the device unthrottled), in process CPU-seconds, spread over its scans'
//!   bytes as the simulator's cycles per byte (2004 report §3.1's CPU model: a query's
//!   work is proportional to the bytes it processes). CPU of scans straight from
//!   storage and of operators above the scans is so attributed to the buffered scans.
//! - **Tables** are the runtime's own geometry: every column's piece of every chunk
//!   (DSM only: one piece per column, as the runtime loads them).
//!
//! Not modelled: chunks a join's runtime filter prunes while the query runs (the plan
//! does not know them; the simulated scan reads them), pages on a chunk boundary copied
//! from a resident neighbour instead of read (the simulated tables have no shared
//! pages), and a device that reads several requests at once (one loader, as the
//! runtime's default). OPT is replayed on each simulated run's own references.

use std::collections::BTreeSet;
use std::sync::Arc;

use anyhow::Context;
use coopscan_bench::bandwidth::BYTES_PER_MB;
use coopscan_bench::cpu::process_cpu_time;
use coopscan_bench::tpch_throughput::{TpchRun, SIMULATED};
use coopscan_buffer::trace::opt::replay_opt;
use coopscan_buffer::{ChunkId, ColumnMask, CpuShares, PolicyKind, Split, TableGeometry, TableId};
use coopscan_exec::datafusion::physical_plan::collect;
use coopscan_exec::datafusion::prelude::SessionContext;
use coopscan_exec::{plan_read_only, planned_scans, PlannedScan};
use coopscan_sim::{
    simulate_tables, CpuModel, DeviceModel, QuerySpec, SimConfig, SimTable, StreamSpec, Workload,
    CPU_HZ_2GHZ,
};
use coopscan_storage::device::{Device, DeviceConfig};
use coopscan_storage::Layout;
use coopscan_tpch::Params;

use super::throughput::{Conditions, Setup};
use crate::session_args::{OpenTables, SqlPolicy};

/// One TPC-H query of a stream as the simulator runs it.
struct SimQuery {
    /// Its scans through the buffer, in plan order.
    scans: Vec<PlannedScan>,
    /// Process CPU-seconds it took alone, warm.
    cpu_s: f64,
    name: String,
}

/// The throughput run's streams as simulated queries, over the database's tables.
pub struct SimulatedStreams {
    tables: Vec<SimTable>,
    geometries: Vec<TableGeometry>,
    /// Per stream, its queries in its order.
    streams: Vec<Vec<SimQuery>>,
    cores: u32,
    /// How the engine's scans share the cores (`--cpu-shares`).
    shares: CpuShares,
}

impl SimulatedStreams {
    /// Refuses tables the simulator cannot lay out, before any work: it knows DSM
    /// tables only (one piece per column of a chunk).
    pub fn check_layouts(open: &OpenTables) -> anyhow::Result<()> {
        match open.tables.iter().find(|t| t.layout() != Layout::Dsm) {
            Some(table) => anyhow::bail!(
                "--simulate needs a DSM database (one piece per column, as the \
                 simulator's tables are); {} is {}",
                table.dir().display(),
                table.layout()
            ),
            None => Ok(()),
        }
    }

    /// Plans every query of `setup`'s streams and measures its CPU alone, warm: one
    /// pass over all streams fills a buffer of `buffer_bytes` (every touched piece),
    /// the second measures. Refuses what [`Self::check_layouts`] refuses (the preset
    /// calls that first too, to fail before its calibration runs).
    pub fn measure(
        setup: &Setup,
        buffer_bytes: u64,
        tokio: &tokio::runtime::Runtime,
    ) -> anyhow::Result<SimulatedStreams> {
        Self::check_layouts(&setup.open)?;
        let config = setup.session.device.config()?;
        let device = Arc::new(Device::new(DeviceConfig {
            bandwidth: None,
            ..config
        }));
        let mut session = setup.session.clone();
        session.buffer_bytes = Some(buffer_bytes);
        let relevance = SqlPolicy::Cooperative(PolicyKind::Relevance);
        let (ctx, runtime) = session.open_with(setup.open.clone(), relevance, device)?;
        let runtime = runtime.context("a cooperative session has a runtime")?;
        let mut streams = Vec::new();
        for pass in ["filling the buffer", "measuring"] {
            eprintln!("[simulator] every query alone, {pass}");
            streams = run_alone(&ctx, &setup.streams, tokio)?;
        }
        let queries = streams.iter().flatten();
        let cpu_s: f64 = queries.clone().map(|q| q.cpu_s).sum();
        eprintln!(
            "[simulator] {} queries planned and measured alone, warm: {cpu_s:.2} CPU-s",
            queries.clone().count()
        );
        let unbuffered = queries.filter(|q| q.scans.is_empty()).count();
        if unbuffered > 0 {
            eprintln!(
                "[simulator] note: {unbuffered} queries read nothing through the buffer; \
                 their CPU is not simulated"
            );
        }
        let geometries = (0..setup.open.tables.len() as u32)
            .map(|t| Ok(runtime.geometry(TableId(t))?))
            .collect::<anyhow::Result<Vec<_>>>()?;
        let tables = geometries
            .iter()
            .zip(&setup.open.names)
            .map(|(g, name)| sim_table(name, g))
            .collect();
        let cores = u32::try_from(session.threads()).unwrap_or(u32::MAX);
        Ok(SimulatedStreams {
            tables,
            geometries,
            streams,
            cores,
            shares: session.cpu_shares,
        })
    }

    /// The first `streams` streams at once under `policy` in the simulator, on the
    /// point's buffer and device.
    pub fn run(
        &self,
        streams: usize,
        policy: PolicyKind,
        conditions: Conditions,
    ) -> anyhow::Result<TpchRun> {
        let mut config = self.config(conditions)?;
        config.record_trace = true;
        let (workload, in_order) = self.workload(streams)?;
        let result = simulate_tables(&config, &workload, policy, &in_order)
            .with_context(|| format!("simulating {policy}"))?;
        // Belady's OPT on the simulated run's own references, as for a real run.
        let opt = (result.trace.as_ref()).zip(config.budget_bytes);
        let opt = opt.map(|(trace, budget)| replay_opt(trace, budget));
        let stream_s = result.stream_times_s.clone();
        let avg_stream_s = result.avg_stream_time_s();
        Ok(TpchRun {
            policy: format!("{SIMULATED}{policy}"),
            streams: stream_s.len(),
            avg_stream_s,
            max_stream_s: stream_s.iter().copied().fold(0.0, f64::max),
            stream_s,
            cpu_s: result.cpu_use * f64::from(self.cores) * result.total_time_s,
            bytes_read: result.bytes_read,
            piece_loads: None,
            opt_piece_loads: opt.as_ref().map(|o| o.loads),
            opt_bytes: opt.as_ref().map(|o| o.bytes_loaded),
            rounds_avg_stream_s: vec![avg_stream_s],
            memory_bytes: None,
            engine_version: None,
        })
    }

    fn config(&self, conditions: Conditions) -> anyhow::Result<SimConfig> {
        let mut config = SimConfig::paper_2007(1, 1, 1);
        config.tables = self.tables.clone();
        config.budget_bytes = conditions.buffer_bytes;
        config.cpu = CpuModel {
            shares: self.shares,
            ..CpuModel::new(CPU_HZ_2GHZ, self.cores)
        };
        config.device = match conditions.bandwidth_mb_s {
            Some(mb_s) => DeviceModel::Bandwidth {
                bytes_per_sec: mb_s * BYTES_PER_MB,
                latency_s: 0.0,
            },
            None => anyhow::bail!("the simulator needs the point's bandwidth"),
        };
        Ok(config)
    }

    /// The first `streams` streams as simulated streams (each query's scans one after
    /// another, its CPU spread over their bytes), and the names of the in-order scans.
    fn workload(&self, streams: usize) -> anyhow::Result<(Workload, BTreeSet<String>)> {
        let mut in_order = BTreeSet::new();
        let mut specs = Vec::with_capacity(streams);
        for (s, queries) in self.streams.iter().take(streams).enumerate() {
            let mut stream = Vec::new();
            for (q, query) in queries.iter().enumerate() {
                let scans = self.query_specs(s, q, query)?;
                for (spec, scan) in scans {
                    if scan.in_order {
                        in_order.insert(spec.name.clone());
                    }
                    stream.push(spec);
                }
            }
            specs.push(StreamSpec {
                start_s: 0.0,
                queries: stream,
            });
        }
        Ok((Workload::new(specs), in_order))
    }

    /// Query `q` of stream `s` as simulated scans with its CPU spread over their bytes.
    fn query_specs<'q>(
        &self,
        s: usize,
        q: usize,
        query: &'q SimQuery,
    ) -> anyhow::Result<Vec<(QuerySpec, &'q PlannedScan)>> {
        let mut specs = Vec::with_capacity(query.scans.len());
        let mut bytes = 0u64;
        for (i, scan) in query.scans.iter().enumerate() {
            let geometry = self.geometries.get(scan.table.0 as usize);
            let geometry = geometry.context("a scan of a table the runtime does not serve")?;
            let chunks = geometry.chunk_ranges(&scan.ranges)?;
            if chunks.is_empty() {
                continue;
            }
            let columns = ColumnMask::of(&scan.columns);
            let read = chunks.iter().map(|k| geometry.piece_bytes(k, columns));
            bytes = read.fold(bytes, u64::saturating_add);
            let spec = QuerySpec {
                name: format!("s{}-{}-{}.{i}", s + 1, q + 1, query.name),
                kind: query.name.clone(),
                cycles_per_byte: 0.0,
                chunks: chunks.ranges().to_vec(),
                columns: columns.0,
                workers: u16::try_from(scan.workers).unwrap_or(u16::MAX),
                split: Split::Dynamic,
                snapshot: None,
                table: scan.table.0,
            };
            specs.push((spec, scan));
        }
        let cycles_per_byte = query.cpu_s * CPU_HZ_2GHZ / bytes.max(1) as f64;
        for (spec, _) in &mut specs {
            spec.cycles_per_byte = cycles_per_byte;
        }
        Ok(specs)
    }
}

/// A table of the runtime as the simulator lays it out: per chunk, each column's piece.
fn sim_table(name: &str, geometry: &TableGeometry) -> SimTable {
    let columns = geometry.columns() as u16;
    let column_bytes = (0..geometry.chunk_count())
        .map(|k| {
            (0..columns)
                .map(|c| geometry.piece_bytes(ChunkId(k), ColumnMask::column(c)))
                .collect()
        })
        .collect();
    SimTable {
        name: name.to_string(),
        column_bytes,
    }
}

/// Every query of `streams`, one at a time, in stream order: its planned scans and
/// its CPU.
fn run_alone(
    ctx: &SessionContext,
    streams: &[Vec<Params>],
    tokio: &tokio::runtime::Runtime,
) -> anyhow::Result<Vec<Vec<SimQuery>>> {
    let mut measured = Vec::with_capacity(streams.len());
    for (s, params) in streams.iter().enumerate() {
        let mut queries = Vec::with_capacity(params.len());
        for p in params {
            let query = tokio.block_on(measure_query(ctx, p));
            queries.push(query.with_context(|| format!("stream {}", s + 1))?);
        }
        measured.push(queries);
    }
    Ok(measured)
}

/// Plans `params`' query, reads its scans off the plan and runs it, timing its CPU.
async fn measure_query(ctx: &SessionContext, params: &Params) -> anyhow::Result<SimQuery> {
    let sql = params.sql()?;
    let plan = plan_read_only(ctx, &sql).await?;
    let plan = plan.create_physical_plan().await?;
    let scans = planned_scans(&plan);
    let cpu0 = process_cpu_time();
    collect(plan, ctx.task_ctx())
        .await
        .with_context(|| format!("{} ({})", params.query(), params.describe()))?;
    let cpu_s = process_cpu_time().saturating_sub(cpu0).as_secs_f64();
    Ok(SimQuery {
        scans,
        cpu_s,
        name: params.query().to_string(),
    })
}
