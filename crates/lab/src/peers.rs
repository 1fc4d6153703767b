//! `coopscan bench --engines coopscan,duckdb,postgres --regimes io,cached` (issue 11):
//! the preset's exact workload on each engine, every engine's policy runs in one report.
//! A peer is one more policy run (`duckdb`, `postgres`) of its own benchmark run (so
//! its normalized latency divides by its own standalone time) on the same workload,
//! bandwidth, stagger and reference results; its columns are appended to coopscan's.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use anyhow::Context;
use coopscan_bench::{
    run_benchmark, BenchInput, BenchReport, Calibration, Params, PolicyFactory, PolicyRun,
    PolicySetup, QueryEngine, QueryInstance, QueryKind, QueryOutput, QueryType, TableInfo,
};
use coopscan_peers::duckdb::DuckDbPeer;
use coopscan_peers::postgres::PgPeer;
use coopscan_peers::{PeerSetup, Regime, SqlFor};
use coopscan_storage::Table;

use crate::engine::sql_of;

/// Engines `--engines` accepts.
pub const ENGINES: [&str; 3] = ["coopscan", "duckdb", "postgres"];

/// Parses `--engines` (any non-empty subset of [`ENGINES`], in the given order).
pub fn parse_engines(list: &str) -> anyhow::Result<Vec<String>> {
    let engines: Vec<String> = list.split(',').map(|s| s.trim().to_string()).collect();
    for e in &engines {
        anyhow::ensure!(
            ENGINES.contains(&e.as_str()),
            "--engines: unknown engine {e:?} (known: {})",
            ENGINES.join(", ")
        );
    }
    anyhow::ensure!(!engines.is_empty(), "--engines needs at least one engine");
    Ok(engines)
}

/// Fails, naming the missing program, unless every peer in `engines` can run here.
/// Every engine there was asked for (`--engines` defaults to coopscan alone, and no
/// preset adds a peer), so one that cannot run is an error, found before the dataset
/// and the calibration; it used to be skipped with exit 0, a report without it.
pub fn check_installed(engines: &[String]) -> anyhow::Result<()> {
    for name in engines {
        let checked = match name.as_str() {
            "duckdb" => DuckDbPeer::check_installed(),
            "postgres" => PgPeer::check_installed(),
            _ => Ok(()),
        };
        checked.with_context(|| format!("--engines {name}: {name} cannot run here"))?;
    }
    Ok(())
}

/// Parses `--regimes` (`io`, `cached`).
pub fn parse_regimes(list: &str) -> anyhow::Result<Vec<Regime>> {
    list.split(',')
        .map(|s| {
            s.trim()
                .parse::<Regime>()
                .map_err(|e| anyhow::anyhow!("--regimes: {e}"))
        })
        .collect()
}

/// The benchmark's SQL (DataFusion's text) for a query, as the peers rewrite it.
pub fn sql_for(slow_extra: u32) -> SqlFor {
    Arc::new(move |q: &QueryInstance| sql_of(q, slow_extra))
}

/// A peer set up for one dataset.
pub enum Peer {
    DuckDb(DuckDbPeer),
    Postgres(PgPeer),
}

impl Peer {
    pub fn name(&self) -> &'static str {
        match self {
            Peer::DuckDb(_) => "duckdb",
            Peer::Postgres(_) => "postgres",
        }
    }

    pub fn version(&self) -> String {
        match self {
            Peer::DuckDb(p) => format!("DuckDB {}", p.version()),
            Peer::Postgres(p) => p.version().to_string(),
        }
    }

    pub fn start(&self, setup: PolicySetup<'_>) -> anyhow::Result<Box<dyn PolicyRun>> {
        Ok(match self {
            Peer::DuckDb(p) => p.start(setup)?,
            Peer::Postgres(p) => p.start(setup)?,
        })
    }

    /// Bytes of the peer's table files.
    pub fn file_bytes(&self) -> u64 {
        let path = match self {
            Peer::DuckDb(p) => p.files().to_path_buf(),
            Peer::Postgres(p) => p.files(),
        };
        coopscan_peers::sys::bytes_under(&path).unwrap_or(0)
    }
}

/// What the peers of one dataset need to be set up.
pub struct PeerContext<'a> {
    pub table: &'a Table,
    pub cache: &'a Path,
    pub table_bytes: u64,
    pub slow_extra: u32,
    pub regime: Regime,
    pub use_cgroups: bool,
}

/// Sets up (or finds cached) every requested peer; one that cannot be set up (not
/// installed after all, say) fails the run, naming it and the command that installs it.
pub fn prepare_peers(engines: &[String], ctx: &PeerContext<'_>) -> anyhow::Result<Vec<Peer>> {
    let mut peers = Vec::new();
    for name in engines.iter().filter(|e| e.as_str() != "coopscan") {
        let started = Instant::now();
        let setup = PeerSetup {
            table: ctx.table,
            cache: ctx.cache,
            sql: sql_for(ctx.slow_extra),
            table_bytes: ctx.table_bytes,
            regime: ctx.regime,
            use_cgroups: ctx.use_cgroups,
        };
        let prepared = match name.as_str() {
            "duckdb" => DuckDbPeer::prepare(&setup).map(Peer::DuckDb),
            _ => PgPeer::prepare(&setup).map(Peer::Postgres),
        };
        match prepared {
            Ok(peer) => {
                eprintln!(
                    "{name}: {} ready in {:.1} s ({:.1} MB of table files)",
                    peer.version(),
                    started.elapsed().as_secs_f64(),
                    peer.file_bytes() as f64 / 1e6
                );
                peers.push(peer);
            }
            Err(e) => {
                return Err(e).with_context(|| format!("--engines {name}: setting up {name}"))
            }
        }
    }
    Ok(peers)
}

/// Whether the I/O-bound regime can confine peers here; says loudly when not.
pub fn cgroups_usable() -> bool {
    match coopscan_peers::sys::check_cgroups() {
        Ok(()) => true,
        Err(e) => {
            eprintln!(
                "\n*** WARNING: peers cannot be confined ({e}).\n*** In the I/O-bound regime their \
                 reads are NOT throttled and their page cache is NOT capped; only their files are \
                 dropped from the page cache before each run. Their numbers are not comparable.\n"
            );
            false
        }
    }
}

/// A reference engine that computes each distinct query once (every engine's run of
/// a preset checks against the same outputs).
pub struct CachedReference<'a> {
    inner: &'a dyn QueryEngine,
    cache: Mutex<HashMap<(QueryType, u64, u64), QueryOutput>>,
}

impl<'a> CachedReference<'a> {
    pub fn new(inner: &'a dyn QueryEngine) -> Self {
        CachedReference {
            inner,
            cache: Mutex::default(),
        }
    }
}

impl QueryEngine for CachedReference<'_> {
    fn run(&self, q: &QueryInstance) -> anyhow::Result<QueryOutput> {
        let key = (q.query_type, q.rows.start, q.rows.end);
        if let Some(hit) = self.cache.lock().ok().and_then(|c| c.get(&key).cloned()) {
            return Ok(hit);
        }
        let out = self.inner.run(q)?;
        if let Ok(mut c) = self.cache.lock() {
            c.insert(key, out.clone());
        }
        Ok(out)
    }
}

/// Runs the workload of `params` on `peer` alone (its own standalone runs) and returns
/// its report.
pub fn run_peer(
    peer: &Peer,
    params: &Params,
    table: TableInfo,
    calibration: Option<Calibration>,
    reference: &dyn QueryEngine,
) -> anyhow::Result<BenchReport> {
    let mut params = params.clone();
    params.policies = vec![peer.name().to_string()];
    params.standalone_policy = peer.name().to_string();
    let start = |setup: PolicySetup<'_>| peer.start(setup);
    let input = BenchInput {
        params: &params,
        table,
        calibration,
        factory: &start,
        reference,
        progress: true,
        // A peer's buffer is its own: it records no piece references.
        trace_dir: None,
    };
    run_benchmark(&input)
        .with_context(|| format!("benchmark run {} on {}", params.label, peer.name()))
}

/// Appends `other`'s policy columns to `report`'s.
pub fn merge(report: &mut BenchReport, other: BenchReport) {
    report.policies.extend(other.policies);
}

/// Item 2's check: one cold full scan (F-100) alone on a fresh run of `policy`; what
/// it read and how fast, beside the throttle. Bytes: the engine's reads below its
/// buffer, and for a confined peer what its cgroup read from the disk.
pub fn device_check(
    engine: &str,
    factory: &dyn PolicyFactory,
    policy: &str,
    params: &Params,
    bandwidth_mb_s: Option<f64>,
    rows: u64,
) -> anyhow::Result<String> {
    let run = factory.start(PolicySetup {
        policy,
        params,
        bandwidth_mb_s,
    })?;
    let q = QueryInstance {
        id: 0,
        stream: 0,
        index: 0,
        query_type: QueryType {
            kind: QueryKind::Fast,
            percent: 100,
        },
        rows: 0..rows,
        in_order: false,
    };
    let io_before = run.io_stats();
    let disk_before = run.disk_read_bytes();
    let started = Instant::now();
    run.engine()
        .run(&q)
        .with_context(|| format!("{engine}: device check"))?;
    let wall = started.elapsed().as_secs_f64();
    let io = run.io_stats().since(io_before);
    let disk = run
        .disk_read_bytes()
        .zip(disk_before)
        .map(|(after, before)| after.saturating_sub(before));
    let read = disk.unwrap_or(io.bytes) as f64 / 1e6;
    let throttle = bandwidth_mb_s.map_or("unthrottled".to_string(), |b| format!("{b:.0} MB/s"));
    Ok(format!(
        "{engine:<9} cold F-100: {wall:6.2} s; read below its buffer {:8.1} MB{}; {:6.0} MB/s (throttle {throttle}; bytes ÷ throttle = {})",
        io.bytes as f64 / 1e6,
        disk.map_or(String::new(), |d| format!(", from the disk {:.1} MB", d as f64 / 1e6)),
        read / wall.max(1e-9),
        bandwidth_mb_s.map_or("-".to_string(), |b| format!("{:.2} s", read / b)),
    ))
}
