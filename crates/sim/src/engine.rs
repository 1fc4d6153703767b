//! The discrete-event loop: virtual time, the same `Abm` the runtime uses, a device
//! that serves one chunk read at a time (queueing any extra in-flight loads), and a
//! processor-sharing CPU.
//!
//! Each iteration: let the idle loader ask `next_load`; find the earliest of (a query
//! finishes its chunk, a load completes, a query arrives, a throttled query's hold
//! ends); advance the CPU to it; apply it to the ABM; optionally `check_invariants`. At
//! equal times CPU completions go first, then load completions, then arrivals, then
//! hold ends, so runs are deterministic. Queries ask with `next_chunk_paced` and honour
//! a `Paced::Hold` by asking again at its end (only `pbm-throttle` holds).
//!
//! The buffer is a [`Catalog`]: one table (`SimConfig::chunk_count`, `chunk_bytes`,
//! `column_bytes`) or several ([`SimConfig::tables`], the 2012 paper's §4.2 setup: one
//! buffer for every TPC-H table), each with its own policy under one byte budget and
//! one device. A query scans the table its [`QuerySpec::table`] names; a chunk costs it
//! cycles per byte of that chunk's pieces it reads. A run's counters (loads, bytes,
//! evictions, boundaries, equivalence classes) are summed over the tables.

use crate::boundaries::Boundaries;
use crate::model::{nanos, CpuModel, DeviceModel};
use crate::result::{QueryResult, RunResult};
use crate::timeline::Timeline;
use crate::workload::{QueryShape, QuerySpec, SimCheckpoint, Workload};
use checkpoints::checkpoints_in_order;

mod checkpoints;
mod loader;
use crate::SimError;
use coopscan_buffer::static_slices;
use coopscan_buffer::{
    Abm, AbmConfig, Answer, AnyPolicy, BufferBudget, BufferError, Catalog, ChunkId, ChunkRanges,
    ColumnMask, ColumnOrder, CpuShares, Driver, EvictionStrategy, HolderId, Mail, OnLoadFailure,
    PieceId, Policy, PolicyKind, RowRanges, ScanId, ScanSpec, Snapshot, Split, TableGeometry,
    TableId,
};
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::Serialize;
use std::collections::{BTreeSet, HashMap};
use std::ops::Range;
use std::time::{Duration, Instant};

/// Rows per chunk of the simulated table; only the chunk mapping matters here.
const ROWS_PER_CHUNK: u64 = 1024;

/// Guard against a policy that never finishes: far above any preset's event count.
pub const DEFAULT_MAX_EVENTS: u64 = 50_000_000;

#[derive(Clone, Debug, Serialize)]
pub struct SimConfig {
    /// DSM: bytes of each column's piece of every chunk (empty: NSM/PAX, one piece of
    /// `chunk_bytes` per chunk). Ignored when `tables` is not empty.
    pub column_bytes: Vec<u64>,
    /// Chunks of the one table; ignored when `tables` is not empty.
    pub chunk_count: u32,
    /// Bytes of each NSM/PAX chunk of the one table; ignored when `tables` is not empty.
    pub chunk_bytes: u64,
    /// Several tables in the one buffer (table `i` is `TableId(i)`, which
    /// `QuerySpec::table` names), replacing the one table of `chunk_count`,
    /// `chunk_bytes` and `column_bytes`. Empty: that one table.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tables: Vec<SimTable>,
    /// The buffer, in chunks of the largest chunk of any table (unless `budget_bytes`).
    pub frames: u32,
    /// The buffer in bytes, replacing `frames`: what a run of tables of unequal chunks
    /// (`tables`) is naturally given. `None`: `frames` chunks.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub budget_bytes: Option<u64>,
    pub max_inflight: u32,
    pub device: DeviceModel,
    pub cpu: CpuModel,
    /// Call `check_invariants` after every event (tests).
    pub check_invariants: bool,
    pub record_timeline: bool,
    /// Record every piece reference for an offline replay under OPT (see `opt.rs`).
    pub record_trace: bool,
    /// Injected read failures (see [`SimFaults`]); `None`: every read succeeds.
    pub faults: Option<SimFaults>,
    pub max_events: u64,
    /// How relevance finds room for a load (greedy: the paper; knapsack: its footnote).
    pub eviction: EvictionStrategy,
    /// The order of a DSM load's columns (smallest first: the paper).
    pub column_order: ColumnOrder,
    /// Columnar chunks are CSM tiles: loads follow Clotho's page schemas
    /// (`TableGeometry::with_tiles`). A load is one device request either way here.
    pub tiles: bool,
}

/// One table of a run over several tables ([`SimConfig::tables`]): columnar (DSM), its
/// chunks free to differ in size (a last chunk smaller, say). Rows do not matter here:
/// every chunk has the engine's synthetic rows, as in the one-table setup.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SimTable {
    pub name: String,
    /// Per chunk, the bytes of each column's piece: `column_bytes[chunk][column]`; every
    /// chunk has the same columns, none of 0 bytes.
    pub column_bytes: Vec<Vec<u64>>,
}

/// Transient read failures, drawn from a seed: each completed piece read fails with
/// probability `per_mille` / 1000. The ABM is told (`load_failed`), keeps the scans'
/// interest and chooses the chunk again later, which models a driver that retries; the
/// run must still deliver every query exactly its chunks.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct SimFaults {
    pub seed: u64,
    pub per_mille: u32,
}

/// Above this failure rate a run may retry for very long; 50 % is plenty for tests.
pub const MAX_FAULT_PER_MILLE: u32 = 500;

impl SimConfig {
    /// The 2007 paper's machine (§5): a 200 MiB/s disk read one chunk at a time, two
    /// 2 GHz CPUs; no invariant checks, no timeline. NSM/PAX chunks of `chunk_bytes`.
    pub fn paper_2007(chunk_count: u32, chunk_bytes: u64, frames: u32) -> SimConfig {
        SimConfig {
            column_bytes: Vec::new(),
            chunk_count,
            chunk_bytes,
            tables: Vec::new(),
            frames,
            budget_bytes: None,
            max_inflight: 1,
            device: DeviceModel::Bandwidth {
                bytes_per_sec: PAPER_2007_DISK_BYTES_PER_S,
                latency_s: 0.0,
            },
            cpu: CpuModel::new(crate::model::CPU_HZ_2GHZ, 2),
            check_invariants: false,
            record_timeline: false,
            record_trace: false,
            faults: None,
            max_events: DEFAULT_MAX_EVENTS,
            eviction: EvictionStrategy::Greedy,
            column_order: ColumnOrder::SmallestFirst,
            tiles: false,
        }
    }
}

/// The 2007 paper's disk: 200 MiB/s (`coopscan_paper::table2::DISK_MIB_S`).
const PAPER_2007_DISK_BYTES_PER_S: f64 = coopscan_paper::table2::DISK_MIB_S * (1u64 << 20) as f64;

#[derive(Clone, Copy, Debug, PartialEq, PartialOrd)]
enum Event {
    /// Query `.0`'s worker `.1` finishes its chunk.
    ChunkDone(usize, u16),
    LoadDone(usize),
    /// The loader's turn on the CPU after its reads ends (`LoaderCpu`).
    LoaderTurnEnds,
    /// The run's next checkpoint: before the arrivals at its time, so a query that
    /// arrives then reads the new version.
    Checkpoint,
    Arrival(usize),
    /// A throttled query's hold ends: it asks again.
    HoldEnds(usize),
}

impl Event {
    fn rank(self) -> u8 {
        match self {
            Event::ChunkDone(..) => 0,
            Event::LoadDone(_) => 1,
            Event::LoaderTurnEnds => 2,
            Event::Checkpoint => 3,
            Event::Arrival(_) => 4,
            Event::HoldEnds(_) => 5,
        }
    }
}

struct Query {
    spec: QuerySpec,
    stream: usize,
    index_in_stream: usize,
    /// Its ABM scans: one whose workers share the chunks (dynamic split), or one per
    /// worker over a fixed run of them (static split).
    scans: Vec<ScanId>,
    start_s: f64,
    wanted: ChunkRanges,
    got: Vec<bool>,
    got_count: u32,
    /// Per worker: since when it waits for a chunk.
    waiting_since: Vec<Option<f64>>,
    io_wait_s: f64,
    loads: u64,
    /// Chunks its workers process: (worker, chunk, cycles left, started at).
    processing: Vec<(u16, u32, f64, f64)>,
    /// Per worker: told its scan has nothing more for it.
    finished: Vec<bool>,
    /// Registered `ScanOrder::InOrder` (a Scan): must get its chunks ascending.
    in_order: bool,
    /// The last chunk it was given.
    last_chunk: Option<u32>,
    /// Throttled until then (`Paced::Hold`); it asks again at that time.
    held_until: Option<f64>,
    /// Total time held, and the number of holds.
    held_s: f64,
    holds: u32,
}

/// Cycles per second of the chunks in process, numbered query by query in the order of
/// their `processing`, and of the loader when it has a turn (`Sim::cpu_rates`).
enum CpuRates {
    /// Every chunk alike (equal shares), the loader not on the CPU.
    Same(f64),
    /// One per chunk in process; the loader's last when it has a turn.
    Each(Vec<f64>),
}

impl CpuRates {
    fn at(&self, k: usize) -> f64 {
        match self {
            CpuRates::Same(rate) => *rate,
            CpuRates::Each(rates) => rates[k],
        }
    }
}

/// One piece being read; the pieces of a load arrive one after another.
struct InFlight {
    piece: PieceId,
    started_s: f64,
    done_s: f64,
}

struct Sim<'a> {
    cfg: &'a SimConfig,
    workload: &'a Workload,
    /// Names of the queries registered in order (Scans); the others are CScans.
    in_order: &'a BTreeSet<String>,
    policy: PolicyKind,
    /// The one driver of the ABM contract, shared with the threaded runtime.
    driver: Driver<AnyPolicy, ()>,
    now: f64,
    queries: Vec<Query>,
    /// Each ABM scan's query and the query's worker its worker 0 is.
    by_scan: HashMap<ScanId, (usize, u16)>,
    /// Per stream: (arrival time, index of the query in the stream).
    arrivals: Vec<Option<(f64, usize)>>,
    stream_end: Vec<f64>,
    disk_free_at: f64,
    inflight: Vec<InFlight>,
    /// The loader's turn on the CPU and the reads it has yet to announce (`loader.rs`).
    loader: loader::LoaderTurn,
    timeline: Option<Timeline>,
    results: Vec<Option<QueryResult>>,
    cpu_busy_core_s: f64,
    scheduling: Duration,
    abm_calls: u64,
    max_classes: usize,
    /// Draws of the injected read failures (present when `cfg.faults` is).
    faults: Option<(ChaCha8Rng, u32)>,
    /// Chunk boundaries of the pieces read (straddling pages; `boundaries.rs`).
    boundaries: Boundaries,
    /// The checkpoints still to come, in time order, and how many were taken.
    checkpoints: Vec<SimCheckpoint>,
    checkpoints_done: u32,
    /// Each workload table's newest version (`QuerySpec::table` indexes it).
    versions: Vec<TableId>,
    /// Versions retired by a checkpoint and not yet freed, and how many were freed.
    retired: BTreeSet<TableId>,
    versions_freed: u32,
}

/// The simulated table: `chunk_count` equal chunks of `chunk_bytes` (or of
/// `column_bytes`), or the one table of `tables`. A run of several tables has no one
/// geometry: see [`geometries`].
pub fn geometry(cfg: &SimConfig) -> Result<TableGeometry, SimError> {
    let mut all = geometries(cfg)?;
    match (all.pop(), all.is_empty()) {
        (Some(geometry), true) => Ok(geometry),
        _ => Err(SimError::InvalidSetup(format!(
            "{} tables have no one geometry (see `geometries`)",
            cfg.tables.len()
        ))),
    }
}

/// Every table of the run, table `i` at `i`: the one table of `chunk_count`,
/// `chunk_bytes` and `column_bytes` when `tables` is empty, else `tables`.
pub fn geometries(cfg: &SimConfig) -> Result<Vec<TableGeometry>, SimError> {
    if cfg.tables.is_empty() {
        return Ok(vec![single_geometry(cfg)?]);
    }
    if cfg.tiles {
        return Err(SimError::InvalidSetup(
            "tiles are a setting of the one table, not of `tables`".into(),
        ));
    }
    cfg.tables.iter().map(table_geometry).collect()
}

/// The one table of `chunk_count`, `chunk_bytes` and `column_bytes`.
fn single_geometry(cfg: &SimConfig) -> Result<TableGeometry, SimError> {
    let geometry = TableGeometry::uniform(cfg.chunk_count, ROWS_PER_CHUNK).map_err(setup)?;
    if cfg.tiles && cfg.column_bytes.is_empty() {
        return Err(setup(BufferError::InvalidGeometry(
            "tiles need column sizes (a columnar table)".into(),
        )));
    }
    if !cfg.column_bytes.is_empty() {
        let columns = vec![cfg.column_bytes.clone(); cfg.chunk_count as usize];
        let geometry = geometry.with_column_bytes(columns).map_err(setup)?;
        return match cfg.tiles {
            true => geometry.with_tiles().map_err(setup),
            false => Ok(geometry),
        };
    }
    let sizes = vec![cfg.chunk_bytes.max(1); cfg.chunk_count as usize];
    geometry.with_chunk_bytes(sizes).map_err(setup)
}

/// A table of `tables`: its chunks' column sizes over synthetic rows (rows per chunk
/// do not matter to the simulator).
fn table_geometry(table: &SimTable) -> Result<TableGeometry, SimError> {
    let invalid = |why: String| SimError::InvalidSetup(format!("table {:?}: {why}", table.name));
    let chunks = match u32::try_from(table.column_bytes.len()) {
        Ok(0) => return Err(invalid("no chunks".into())),
        Ok(n) => n,
        Err(_) => return Err(invalid("more than 2^32 chunks".into())),
    };
    TableGeometry::uniform(chunks, ROWS_PER_CHUNK)
        .and_then(|g| g.with_column_bytes(table.column_bytes.clone()))
        .map_err(|e| invalid(e.to_string()))
}

/// Bytes of chunk `chunk` that `query` processes: those of the columns it reads of
/// its table (every column when `columns` is 0). Chunks of `tables` may differ in
/// size, so the cost is per chunk, not per query.
fn processed_bytes(cfg: &SimConfig, query: &QuerySpec, chunk: u32) -> u64 {
    match cfg.tables.get(query.table as usize) {
        Some(table) => table
            .column_bytes
            .get(chunk as usize)
            .map_or(0, |pieces| read_bytes(pieces, query.columns)),
        None if cfg.column_bytes.is_empty() => cfg.chunk_bytes,
        None => read_bytes(&cfg.column_bytes, query.columns),
    }
}

/// The bytes of the pieces `columns` reads (0 = every column) of one chunk.
fn read_bytes(column_bytes: &[u64], columns: u64) -> u64 {
    let read = |(i, b): (usize, &u64)| (columns == 0 || columns >> i & 1 == 1).then_some(*b);
    column_bytes.iter().enumerate().filter_map(read).sum()
}

/// The ABM configuration of a run: a buffer of `frames` chunks, or of `budget_bytes`.
pub fn abm_config(cfg: &SimConfig) -> AbmConfig {
    let config = match cfg.budget_bytes {
        Some(bytes) => AbmConfig::with_budget(BufferBudget::Bytes(bytes)),
        None => AbmConfig::new(cfg.frames),
    };
    config
        .with_max_inflight(cfg.max_inflight)
        .with_eviction(cfg.eviction)
        .with_column_order(cfg.column_order)
}

/// `cfg` and `workload` with every query run as `shape` says: the queries' workers and
/// split (`Workload::shaped`) and the CPU's shares of the cores (`CpuModel::shares`).
pub fn shaped_run(
    mut cfg: SimConfig,
    workload: Workload,
    shape: QueryShape,
) -> (SimConfig, Workload) {
    cfg.cpu.shares = shape.cpu_shares;
    (cfg, workload.shaped(shape))
}

/// Runs `workload` under the policy of `kind` (one per table) and reports per-query
/// latencies and chunk loads.
pub fn simulate(
    cfg: &SimConfig,
    workload: &Workload,
    kind: PolicyKind,
) -> Result<RunResult, SimError> {
    simulate_tables(cfg, workload, kind, &BTreeSet::new())
}

/// [`simulate`] with the queries named in `in_order` registered as in-order Scans (see
/// [`simulate_ordered`]): every table of the run in one buffer, each under its own
/// policy of `kind`.
pub fn simulate_tables(
    cfg: &SimConfig,
    workload: &Workload,
    kind: PolicyKind,
    in_order: &BTreeSet<String>,
) -> Result<RunResult, SimError> {
    simulate_catalog(cfg, workload, table_policies(cfg, kind)?, in_order)
}

/// One policy of `kind` per table of the run (see [`geometries`]), each built for its
/// table's geometry and [`abm_config`].
pub fn table_policies(cfg: &SimConfig, kind: PolicyKind) -> Result<Vec<AnyPolicy>, SimError> {
    let config = abm_config(cfg);
    let geometries = geometries(cfg)?;
    Ok(geometries
        .iter()
        .map(|g| AnyPolicy::new(kind, g, &config))
        .collect())
}

/// Runs `workload` under an already built policy (built for [`geometry`] and
/// [`abm_config`] of `cfg`), so a policy can carry knowledge, e.g. of the future.
/// One table only; [`simulate_catalog`] takes one policy per table.
pub fn simulate_policy(
    cfg: &SimConfig,
    workload: &Workload,
    policy: AnyPolicy,
) -> Result<RunResult, SimError> {
    simulate_ordered(cfg, workload, policy, &BTreeSet::new())
}

/// [`simulate_policy`], with the queries named in `in_order` registered as in-order
/// Scans (`ScanOrder::InOrder`; the run fails if one gets a chunk out of order) and the
/// others as CScans.
pub fn simulate_ordered(
    cfg: &SimConfig,
    workload: &Workload,
    policy: AnyPolicy,
    in_order: &BTreeSet<String>,
) -> Result<RunResult, SimError> {
    simulate_catalog(cfg, workload, vec![policy], in_order)
}

/// [`simulate_ordered`] over every table of the run in one buffer: `policies[i]`, of
/// one kind, built for table `i` of [`geometries`] (e.g. by [`table_policies`]), so
/// each table's policy may carry knowledge of its own.
pub fn simulate_catalog(
    cfg: &SimConfig,
    workload: &Workload,
    policies: Vec<AnyPolicy>,
    in_order: &BTreeSet<String>,
) -> Result<RunResult, SimError> {
    if let Some(loader) = &cfg.cpu.loader {
        loader.check().map_err(SimError::InvalidSetup)?;
    }
    if let Some(f) = cfg.faults.filter(|f| f.per_mille > MAX_FAULT_PER_MILLE) {
        return Err(SimError::InvalidSetup(format!(
            "fault rate {} per mille: at most {MAX_FAULT_PER_MILLE}",
            f.per_mille
        )));
    }
    let geometries = geometries(cfg)?;
    let kind = one_kind(&policies, geometries.len())?;
    check_query_tables(workload, geometries.len())?;
    let checkpoints = checkpoints_in_order(cfg, workload, geometries.len())?;
    if cfg.record_timeline && geometries.len() > 1 {
        return Err(SimError::InvalidSetup(
            "the timeline draws one table: not with several `tables`".into(),
        ));
    }
    let first_chunks = geometries.first().map_or(0, TableGeometry::chunk_count);
    let versions = (0..geometries.len() as u32).map(TableId).collect();
    let tables = geometries.into_iter().zip(policies).collect();
    let catalog = Catalog::new(tables, &abm_config(cfg)).map_err(setup)?;
    // An injected failure is transient: the scans keep their interest and the policy
    // reads the chunk again (see `SimFaults`).
    let mut driver = Driver::new(catalog, OnLoadFailure::Retry);
    if cfg.record_trace {
        driver.record_trace();
    }
    let arrivals = workload
        .streams
        .iter()
        .map(|s| (!s.queries.is_empty()).then_some((s.start_s, 0)))
        .collect();
    let sim = Sim {
        cfg,
        workload,
        in_order,
        policy: kind,
        driver,
        now: 0.0,
        queries: Vec::new(),
        by_scan: HashMap::new(),
        arrivals,
        stream_end: workload.streams.iter().map(|s| s.start_s).collect(),
        disk_free_at: 0.0,
        inflight: Vec::new(),
        loader: loader::LoaderTurn::default(),
        timeline: cfg.record_timeline.then(|| Timeline::new(first_chunks)),
        results: Vec::new(),
        cpu_busy_core_s: 0.0,
        scheduling: Duration::ZERO,
        abm_calls: 0,
        max_classes: 0,
        faults: cfg
            .faults
            .map(|f| (ChaCha8Rng::seed_from_u64(f.seed), f.per_mille)),
        boundaries: Boundaries::default(),
        checkpoints,
        checkpoints_done: 0,
        versions,
        retired: BTreeSet::new(),
        versions_freed: 0,
    };
    sim.run()
}

/// Refuses what [`simulate_catalog`] would refuse of `workload` on `cfg`'s tables — a
/// query of a table the run does not have, a checkpoint it cannot take — before
/// anything runs (a preset runs every query alone first: `presets::run_policies`).
pub fn check_setup(cfg: &SimConfig, workload: &Workload) -> Result<(), SimError> {
    let tables = geometries(cfg)?.len();
    check_query_tables(workload, tables)?;
    checkpoints_in_order(cfg, workload, tables).map(|_| ())
}

/// The one policy kind of `policies`, one per table: a run reports one policy.
fn one_kind(policies: &[AnyPolicy], tables: usize) -> Result<PolicyKind, SimError> {
    if policies.len() != tables {
        return Err(SimError::InvalidSetup(format!(
            "{} policies for {tables} tables: one per table",
            policies.len()
        )));
    }
    let kinds: BTreeSet<PolicyKind> = policies.iter().map(AnyPolicy::kind).collect();
    match (kinds.first(), kinds.len()) {
        (Some(kind), 1) => Ok(*kind),
        _ => Err(SimError::InvalidSetup(format!(
            "policies of {} kinds: a run reports one",
            kinds.len()
        ))),
    }
}

/// Refuses a query of a table the run does not have, before anything runs.
fn check_query_tables(workload: &Workload, tables: usize) -> Result<(), SimError> {
    let queries = workload.streams.iter().flat_map(|s| &s.queries);
    match queries.into_iter().find(|q| q.table as usize >= tables) {
        Some(q) => Err(SimError::InvalidSetup(format!(
            "query {} scans table {}, but the run has {tables} table(s)",
            q.name, q.table
        ))),
        None => Ok(()),
    }
}

/// A table's ABM in the run's catalog.
fn table(driver: &Driver<AnyPolicy, ()>, id: TableId) -> Result<&Abm<AnyPolicy>, BufferError> {
    driver.catalog().table(id)
}

/// Each chunk of `snapshot` with its first row in the snapshot's rows.
fn snapshot_starts(geometry: &TableGeometry, snapshot: &Snapshot) -> Vec<(ChunkId, u64)> {
    let mut row = 0;
    snapshot
        .chunks()
        .iter()
        .filter(|c| c.0 < geometry.chunk_count())
        .map(|c| {
            let start = row;
            let rows = geometry.chunk_rows(c);
            row += rows.end - rows.start;
            (c, start)
        })
        .collect()
}

/// The rows of the chunks `chunks` in the row numbering of `starts` (a snapshot's, or
/// the table's); a chunk outside it is a setup error.
fn rows_of(
    starts: &[(ChunkId, u64)],
    chunks: &[Range<u32>],
    geometry: &TableGeometry,
) -> Result<RowRanges, SimError> {
    let mut rows = Vec::new();
    for k in chunks.iter().flat_map(|r| r.clone()) {
        let Ok(i) = starts.binary_search_by_key(&ChunkId(k), |(c, _)| *c) else {
            return Err(SimError::InvalidSetup(format!(
                "a query reads chunk {k}, which is not in its snapshot"
            )));
        };
        let len = geometry.chunk_rows(ChunkId(k));
        let start = starts[i].1;
        rows.push(start..start + (len.end - len.start));
    }
    Ok(RowRanges::new(rows))
}

fn setup(e: BufferError) -> SimError {
    SimError::InvalidSetup(e.to_string())
}

impl Sim<'_> {
    fn run(mut self) -> Result<RunResult, SimError> {
        let mut events = 0u64;
        loop {
            self.pump_loader()?;
            self.record_series();
            let Some((t, event)) = self.next_event() else {
                break;
            };
            self.advance_cpu(t);
            match event {
                Event::ChunkDone(q, w) => self.on_chunk_done(q, w)?,
                Event::LoadDone(i) => self.on_load_done(i)?,
                Event::LoaderTurnEnds => self.on_loader_turn_end()?,
                Event::Checkpoint => self.on_checkpoint()?,
                Event::Arrival(s) => self.on_arrival(s)?,
                Event::HoldEnds(q) => self.on_hold_end(q)?,
            }
            // An ask may have told a sibling worker of its scan it is finished.
            self.serve_deliveries()?;
            self.note_freed();
            if self.cfg.check_invariants {
                self.driver
                    .catalog()
                    .check_invariants()
                    .map_err(|e| self.buffer_error(e))?;
            }
            self.max_classes = self.max_classes.max(self.class_count());
            events += 1;
            if events > self.cfg.max_events {
                return Err(SimError::TooManyEvents {
                    policy: self.policy,
                    limit: self.cfg.max_events,
                });
            }
        }
        self.finish()
    }

    fn buffer_error(&self, source: BufferError) -> SimError {
        SimError::Buffer {
            policy: self.policy,
            time_s: self.now,
            source,
        }
    }

    /// Live equivalence classes of every table (each table has its own).
    fn class_count(&self) -> usize {
        let tables = self.driver.catalog().tables();
        tables.map(|t| t.state().class_count()).sum()
    }

    /// The ABM of table `id` (a query's, checked before the run; a load's).
    fn abm(&self, id: TableId) -> Result<&Abm<AnyPolicy>, SimError> {
        table(&self.driver, id).map_err(|e| self.buffer_error(e))
    }

    /// Times an ABM call in host time (for the Figure 8 scheduling-cost measurement).
    fn timed<T>(&mut self, f: impl FnOnce(&mut Driver<AnyPolicy, ()>) -> T) -> T {
        let started = Instant::now();
        let out = f(&mut self.driver);
        self.scheduling += started.elapsed();
        self.abm_calls += 1;
        out
    }

    /// The CPU's shares of the chunks being processed: with equal shares and no loader
    /// on the CPU one rate for all (nothing gathered, as every event asks), else each
    /// query weighted by the chunks it reads as the runtime's feeders are (`CpuShares`,
    /// `CpuModel::rates`), the loader in a turn last at its weight (`LoaderCpu`).
    fn cpu_rates(&self) -> CpuRates {
        let cpu = &self.cfg.cpu;
        let loader = self.loader_weight();
        if cpu.shares == CpuShares::Equal && loader.is_none() {
            return CpuRates::Same(cpu.rate_per_query(self.running()));
        }
        let weights: Vec<f64> = (self.queries.iter())
            .flat_map(|q| {
                let weight = cpu.shares.weight(q.wanted.len());
                q.processing.iter().map(move |_| weight)
            })
            .chain(loader)
            .collect();
        CpuRates::Each(cpu.rates(&weights))
    }

    fn next_event(&self) -> Option<(f64, Event)> {
        let rates = self.cpu_rates();
        let processing = (self.queries.iter().enumerate()).flat_map(|(i, q)| {
            q.processing
                .iter()
                .map(move |&(w, _, left, _)| (i, w, left))
        });
        let cpu = processing
            .enumerate()
            .map(|(k, (i, w, left))| (self.now + left / rates.at(k), Event::ChunkDone(i, w)));
        let loads = self
            .inflight
            .iter()
            .enumerate()
            .map(|(i, l)| (l.done_s, Event::LoadDone(i)));
        let turn = self.loader_turn_left().map(|cycles| {
            (
                self.now + cycles / rates.at(self.running()),
                Event::LoaderTurnEnds,
            )
        });
        let arrivals = self
            .arrivals
            .iter()
            .enumerate()
            .filter_map(|(s, a)| Some(((*a)?.0, Event::Arrival(s))));
        let holds = self
            .queries
            .iter()
            .enumerate()
            .filter_map(|(i, q)| Some((q.held_until?, Event::HoldEnds(i))));
        // A checkpoint after the last query would only stretch the run.
        let busy =
            self.results.iter().any(Option::is_none) || self.arrivals.iter().any(Option::is_some);
        let checkpoint = (self.checkpoints.first())
            .filter(|_| busy)
            .map(|c| (c.at_s.max(self.now), Event::Checkpoint));
        cpu.chain(loads)
            .chain(turn)
            .chain(checkpoint)
            .chain(arrivals)
            .chain(holds)
            .min_by(|a, b| a.0.total_cmp(&b.0).then(a.1.rank().cmp(&b.1.rank())))
    }

    fn running(&self) -> usize {
        self.queries.iter().map(|q| q.processing.len()).sum()
    }

    fn advance_cpu(&mut self, t: f64) {
        let dt = (t - self.now).max(0.0);
        let rates = self.cpu_rates();
        let mut k = 0;
        for q in &mut self.queries {
            for (_, _, left, _) in &mut q.processing {
                *left = (*left - rates.at(k) * dt).max(0.0);
                k += 1;
            }
        }
        // The loader in a turn has the last rate.
        let loader_on_cpu = self.loader_turn_left().is_some();
        if loader_on_cpu {
            self.loader.advance(rates.at(k) * dt);
        }
        let running = k + usize::from(loader_on_cpu);
        self.cpu_busy_core_s += dt * (running as f64).min(f64::from(self.cfg.cpu.cores));
        self.now = t.max(self.now);
    }

    /// Starts every load the ABM wants: its device requests (`model::load_requests`)
    /// one after another; its pieces (DSM columns, smallest first) arrive in order as
    /// their bytes stream in.
    fn pump_loader(&mut self) -> Result<(), SimError> {
        let now = nanos(self.now);
        // Straddling pages are DSM's: every table of `tables` is columnar, the one
        // table when it has column sizes.
        let columnar = !self.cfg.column_bytes.is_empty() || !self.cfg.tables.is_empty();
        if self.loader.busy() {
            // It has reads to announce before it chooses again.
            return Ok(());
        }
        while let Some(load) = self.timed(|driver| driver.next_load(now)) {
            let started_s = self.now.max(self.disk_free_at);
            let requests = crate::model::load_requests(&load.pieces, self.cfg.tiles);
            let read_s = self.cfg.device.load_read_s(load.bytes, requests);
            let state = table(&self.driver, load.table)
                .map_err(|e| self.buffer_error(e))?
                .state();
            if columnar {
                self.boundaries.add_load(state, &load.pieces);
            }
            let piece_bytes: Vec<u64> = load.pieces.iter().map(|p| state.piece_bytes(*p)).collect();
            let mut streamed = 0;
            for (piece, bytes) in load.pieces.iter().zip(piece_bytes) {
                streamed += bytes;
                let share = streamed as f64 / load.bytes.max(1) as f64;
                self.inflight.push(InFlight {
                    piece: *piece,
                    started_s,
                    done_s: started_s + read_s * share,
                });
            }
            self.disk_free_at = started_s + read_s;
            let evicted = self.driver.take_evicted();
            if let Some(t) = self.timeline.as_mut() {
                for evicted in evicted.iter().filter(|p| p.columns == ColumnMask::ALL) {
                    t.cache_end(evicted.chunk.0, self.now);
                }
            }
            if let Some(&(q, _)) = load.on_behalf_of.and_then(|s| self.by_scan.get(&s)) {
                self.queries[q].loads += 1;
            }
        }
        Ok(())
    }

    fn on_arrival(&mut self, stream: usize) -> Result<(), SimError> {
        let Some((_, k)) = self.arrivals[stream].take() else {
            return Ok(());
        };
        let spec = self.workload.streams[stream].queries[k].clone();
        let table = self.versions[spec.table as usize];
        let geometry = self.abm(table)?.geometry();
        let chunk_count = geometry.chunk_count();
        let snapshot = spec.snapshot.clone().map(Snapshot::new);
        // The first row of each chunk the query may read, in its snapshot's rows.
        let starts: Vec<(ChunkId, u64)> = match &snapshot {
            None => (0..chunk_count)
                .map(|k| (ChunkId(k), geometry.rows_of_chunks(k..k + 1).start))
                .collect(),
            Some(s) => snapshot_starts(geometry, s),
        };
        let rows = rows_of(&starts, &spec.chunks, geometry)?;
        let columns = match spec.columns {
            0 => ColumnMask::ALL,
            bits => ColumnMask(bits),
        };
        let in_order = self.in_order.contains(&spec.name);
        // Every scan of the query reads its table, of its snapshot when it names one.
        let on_snapshot = |mut spec: ScanSpec| {
            spec.table = table;
            match &snapshot {
                Some(s) => spec.on_snapshot(s.clone()),
                None => spec,
            }
        };
        let scan_spec = on_snapshot(match in_order {
            true => ScanSpec::new(rows, columns).in_order(),
            false => ScanSpec::new(rows, columns),
        });
        let (scan_specs, workers) = match spec.split {
            // 0 or too many workers: the ABM refuses the registration below.
            Split::Dynamic => (vec![scan_spec.with_workers(spec.workers)], spec.workers),
            Split::Static => {
                let starts: Vec<u64> = starts.iter().map(|(_, row)| *row).collect();
                let slices = static_slices(&scan_spec.ranges, &starts, usize::from(spec.workers));
                let specs: Vec<ScanSpec> = slices
                    .into_iter()
                    .filter(|s| !s.is_empty())
                    .map(|s| {
                        on_snapshot(match in_order {
                            true => ScanSpec::new(s, scan_spec.columns).in_order(),
                            false => ScanSpec::new(s, scan_spec.columns),
                        })
                    })
                    .collect();
                match specs.len() {
                    // No chunk at all: one scan, as the dynamic split registers it.
                    0 => (vec![scan_spec.with_workers(1)], 1),
                    n => (specs, n as u16),
                }
            }
        };
        let now = nanos(self.now);
        let mut scans = Vec::with_capacity(scan_specs.len());
        for (i, scan_spec) in scan_specs.iter().enumerate() {
            let registration = self.timed(|driver| driver.register(scan_spec, now));
            let scan = registration.map_err(|e| self.buffer_error(e))?.scan;
            let first_worker = match spec.split {
                Split::Dynamic => 0,
                Split::Static => i as u16,
            };
            self.by_scan
                .insert(scan, (self.queries.len(), first_worker));
            scans.push(scan);
        }
        let wanted = ChunkRanges::from_ranges(spec.chunks.clone());
        self.results.push(None);
        self.queries.push(Query {
            spec,
            stream,
            index_in_stream: k,
            scans,
            start_s: self.now,
            wanted,
            got: vec![false; chunk_count as usize],
            got_count: 0,
            waiting_since: vec![None; usize::from(workers)],
            io_wait_s: 0.0,
            loads: 0,
            processing: Vec::new(),
            finished: vec![false; usize::from(workers)],
            in_order,
            last_chunk: None,
            held_until: None,
            held_s: 0.0,
            holds: 0,
        });
        for w in 0..workers {
            self.ask_next(self.queries.len() - 1, w)?;
        }
        Ok(())
    }

    /// The ABM holder of worker `worker` of query `q`.
    fn holder(&self, q: usize, worker: u16) -> HolderId {
        let scans = &self.queries[q].scans;
        match self.queries[q].spec.split {
            Split::Dynamic => HolderId::new(scans[0], worker),
            Split::Static => HolderId::new(scans[usize::from(worker)], 0),
        }
    }

    fn ask_next(&mut self, q: usize, worker: u16) -> Result<(), SimError> {
        let (holder, now) = (self.holder(q, worker), nanos(self.now));
        let answer = self
            .timed(|driver| driver.ask(holder, now, true))
            .map_err(|e| self.buffer_error(e))?;
        match answer {
            Answer::Hold { until } => {
                self.hold(q, until);
                Ok(())
            }
            Answer::Wait => {
                self.queries[q].waiting_since[usize::from(worker)].get_or_insert(self.now);
                Ok(())
            }
            Answer::Mail(mail) => self.take(q, worker, mail),
        }
    }

    /// A worker's answer: a chunk to process, or the end of its part of the scan; the
    /// query ends with its last worker. (Injected read failures are retried, so no
    /// scan is failed.)
    fn take(&mut self, q: usize, worker: u16, mail: Mail<()>) -> Result<(), SimError> {
        match mail {
            Mail::Chunk(d) => self.start_processing(q, worker, d.chunk.0),
            Mail::Finished => {
                if self.queries[q].spec.split == Split::Static {
                    // Its own scan is done: leave the ABM now (as the runtime's worker
                    // drops its handle), or it keeps an admission other scans wait for.
                    let (scan, now) = (self.queries[q].scans[usize::from(worker)], nanos(self.now));
                    self.timed(|driver| driver.unregister(scan, now))
                        .map_err(|e| self.buffer_error(e))?;
                }
                let query = &mut self.queries[q];
                query.finished[usize::from(worker)] = true;
                if let Some(since) = query.waiting_since[usize::from(worker)].take() {
                    query.io_wait_s += self.now - since;
                }
                let split = query.spec.split;
                match query.finished.iter().all(|f| *f) {
                    true => self.finish_query(q),
                    // The scan that left may have let others in: hand out their mail.
                    false if split == Split::Static => self.serve_deliveries(),
                    false => Ok(()),
                }
            }
            Mail::Failed(()) => Err(SimError::Stuck {
                policy: self.policy,
                time_s: self.now,
                unfinished: 1,
            }),
        }
    }

    /// The policy throttles the query until `until` (later than now in nanoseconds;
    /// clamped, as seconds may round a nanosecond hold to now).
    fn hold(&mut self, q: usize, until: coopscan_buffer::Nanos) {
        let until_s = until.as_secs_f64().max(self.now);
        let query = &mut self.queries[q];
        query.held_until = Some(until_s);
        query.held_s += until_s - self.now;
        query.holds += 1;
    }

    /// The hold ends: every worker of the query that neither processes, waits nor is
    /// done asks again. (The ABM holds only scans of one worker.)
    fn on_hold_end(&mut self, q: usize) -> Result<(), SimError> {
        if self.queries[q].held_until.take().is_none() {
            return Ok(());
        }
        let query = &self.queries[q];
        let idle: Vec<u16> = (0..query.finished.len() as u16)
            .filter(|w| !query.finished[usize::from(*w)])
            .filter(|w| query.waiting_since[usize::from(*w)].is_none())
            .filter(|w| !query.processing.iter().any(|p| p.0 == *w))
            .collect();
        for w in idle {
            self.ask_next(q, w)?;
        }
        Ok(())
    }

    fn start_processing(&mut self, q: usize, worker: u16, chunk: u32) -> Result<(), SimError> {
        let (policy, now) = (self.policy, self.now);
        let bytes = processed_bytes(self.cfg, &self.queries[q].spec, chunk) as f64;
        let query = &mut self.queries[q];
        let name = || query.spec.name.clone();
        if !query.wanted.contains(ChunkId(chunk)) {
            return Err(SimError::UnwantedDelivery {
                policy,
                query: name(),
                chunk,
            });
        }
        if query.in_order && query.last_chunk.is_some_and(|last| last >= chunk) {
            return Err(SimError::OutOfOrderDelivery {
                policy,
                query: name(),
                chunk,
            });
        }
        query.last_chunk = Some(chunk);
        if std::mem::replace(&mut query.got[chunk as usize], true) {
            return Err(SimError::DuplicateDelivery {
                policy,
                query: name(),
                chunk,
            });
        }
        query.got_count += 1;
        if let Some(since) = query.waiting_since[usize::from(worker)].take() {
            query.io_wait_s += now - since;
        }
        let cycles = bytes * query.spec.cycles_per_byte;
        query.processing.push((worker, chunk, cycles, now));
        Ok(())
    }

    fn on_chunk_done(&mut self, q: usize, worker: u16) -> Result<(), SimError> {
        let processing = &mut self.queries[q].processing;
        let Some(at) = processing.iter().position(|p| p.0 == worker) else {
            return Ok(());
        };
        let (_, chunk, _, from_s) = processing.remove(at);
        if let Some(t) = self.timeline.as_mut() {
            t.processing.push(crate::timeline::Processing {
                chunk,
                query: q,
                from_s,
                to_s: self.now,
            });
        }
        let (holder, now) = (self.holder(q, worker), nanos(self.now));
        self.timed(|driver| driver.release(holder, now))
            .map_err(|e| self.buffer_error(e))?;
        self.ask_next(q, worker)
    }

    fn on_load_done(&mut self, i: usize) -> Result<(), SimError> {
        let load = self.inflight.swap_remove(i);
        match self.cfg.cpu.loader.filter(|l| l.s_per_load > 0.0) {
            None => self.announce(load),
            Some(loader) => {
                let turn_cycles = loader.s_per_load * self.cfg.cpu.hz;
                self.loader
                    .read(load, self.inflight.is_empty(), turn_cycles);
                Ok(())
            }
        }
    }

    /// Tells the ABM that `load`'s piece arrived (or failed) and hands out what it
    /// answers.
    fn announce(&mut self, load: InFlight) -> Result<(), SimError> {
        let failed = self.read_fails();
        if let Some(t) = self.timeline.as_mut() {
            let interval = crate::timeline::Interval {
                chunk: load.piece.chunk.0,
                from_s: load.started_s,
                to_s: self.now,
            };
            t.loads.push(interval);
            if load.piece.columns == ColumnMask::ALL && !failed {
                t.cache_start(load.piece.chunk.0, self.now);
            }
        }
        let now = nanos(self.now);
        if failed {
            // Interest stays: the policy reads the chunk again later (a retry).
            self.timed(|driver| driver.load_failed(load.piece, now, ()))
                .map_err(|e| self.buffer_error(e))?;
            return Ok(());
        }
        self.timed(|driver| driver.loaded(load.piece, now))
            .map_err(|e| self.buffer_error(e))?;
        self.serve_deliveries()
    }

    /// Whether the read that just completed is an injected failure.
    fn read_fails(&mut self) -> bool {
        self.faults
            .as_mut()
            .is_some_and(|(rng, per_mille)| rng.random_range(0..1000) < *per_mille)
    }

    /// Hands out the answers the last event posted.
    fn serve_deliveries(&mut self) -> Result<(), SimError> {
        for (holder, mail) in self.driver.drain_mail() {
            let (q, first_worker) = self.by_scan[&holder.scan];
            self.take(q, first_worker + holder.worker, mail)?;
        }
        Ok(())
    }

    fn finish_query(&mut self, q: usize) -> Result<(), SimError> {
        let query = &self.queries[q];
        if query.got_count != query.wanted.len() {
            let (got, want) = (query.got_count, query.wanted.len());
            return Err(SimError::MissingChunks {
                policy: self.policy,
                query: query.spec.name.clone(),
                got,
                want,
            });
        }
        // A statically split query's scans left one by one as their workers finished.
        let scans = match query.spec.split {
            Split::Dynamic => query.scans.clone(),
            Split::Static => Vec::new(),
        };
        let now = nanos(self.now);
        for scan in scans {
            self.timed(|driver| driver.unregister(scan, now))
                .map_err(|e| self.buffer_error(e))?;
        }
        self.results[q] = Some(self.query_result(q));
        let (stream, next) = (self.queries[q].stream, self.queries[q].index_in_stream + 1);
        if next < self.workload.streams[stream].queries.len() {
            self.arrivals[stream] = Some((self.now, next));
        } else {
            self.stream_end[stream] = self.now;
        }
        self.serve_deliveries()
    }

    fn query_result(&self, q: usize) -> QueryResult {
        let query = &self.queries[q];
        QueryResult {
            name: query.spec.name.clone(),
            kind: query.spec.kind.clone(),
            stream: query.stream,
            start_s: query.start_s,
            end_s: self.now,
            latency_s: self.now - query.start_s,
            io_wait_s: query.io_wait_s,
            held_s: query.held_s,
            holds: query.holds,
            chunks: query.wanted.len(),
            loads: query.loads,
            standalone_s: None,
        }
    }

    fn record_series(&mut self) {
        let waiting = self
            .queries
            .iter()
            .filter(|q| q.waiting_since.iter().any(Option::is_some))
            .count() as u32;
        let (busy, disk, now) = (self.running() as u32, self.inflight.len() as u32, self.now);
        if let Some(t) = self.timeline.as_mut() {
            Timeline::step(&mut t.io_waiting, now, waiting);
            Timeline::step(&mut t.cpu_busy, now, busy);
            Timeline::step(&mut t.disk_busy, now, disk);
        }
    }

    fn finish(mut self) -> Result<RunResult, SimError> {
        let unfinished = self.results.iter().filter(|r| r.is_none()).count()
            + self
                .workload
                .query_count()
                .saturating_sub(self.results.len());
        if unfinished > 0 {
            return Err(SimError::Stuck {
                policy: self.policy,
                time_s: self.now,
                unfinished,
            });
        }
        if let Some(&version) = self.retired.first() {
            // Every query has ended, so every retired version is idle: the buffer
            // must have freed it.
            return Err(self.buffer_error(BufferError::Invariant(format!(
                "retired {version:?} was not freed after its last scan left"
            ))));
        }
        if let Some(t) = self.timeline.as_mut() {
            t.finish(self.now);
        }
        // Every table's loads, bytes and evictions: the one device read them all.
        let stats = self.driver.catalog().abm_stats();
        let trace = self.cfg.record_trace.then(|| self.driver.take_trace());
        // A stream's first query starts when the stream does.
        let spans = self
            .workload
            .streams
            .iter()
            .zip(&self.stream_end)
            .enumerate();
        let stream_times_s =
            coopscan_paper::stats::stream_times_s(spans.map(|(stream, (s, end))| {
                coopscan_paper::stats::Span {
                    stream,
                    start_s: s.start_s,
                    end_s: *end,
                }
            }));
        let cores = f64::from(self.cfg.cpu.cores);
        Ok(RunResult {
            policy: self.policy,
            total_time_s: self.now,
            chunk_loads: stats.loads,
            bytes_loaded: stats.bytes_loaded,
            bytes_read: stats.bytes_read,
            evictions: stats.evictions,
            spare_evictions: stats.spare_evictions,
            boundaries: self.boundaries,
            load_failures: stats.load_failures,
            queries: self.results.into_iter().flatten().collect(),
            stream_times_s,
            cpu_use: if self.now > 0.0 {
                self.cpu_busy_core_s / (cores * self.now)
            } else {
                0.0
            },
            scheduling_s: self.scheduling.as_secs_f64(),
            abm_calls: self.abm_calls,
            max_classes: self.max_classes,
            timeline: self.timeline,
            trace,
            checkpoints: self.checkpoints_done,
            versions_freed: self.versions_freed,
        })
    }
}
