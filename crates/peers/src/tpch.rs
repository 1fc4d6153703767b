//! The TPC-H throughput run's peers (`coopscan bench --preset tpch-… --engines
//! coopscan,duckdb,datafusion-parquet`): DuckDB on its own database file, and plain
//! DataFusion over Parquet files (its Python package, the alternative a DataFusion user
//! has), both holding the coopscan database's own rows, each run on the same streams'
//! statements at once, on the same throttled device, with no page cache.
//!
//! ```text
//!  coopscan tables ─► text ─► DuckDB file ─► Parquet files (DuckDB's COPY)   (setup, cached)
//!  per run: cgroup (blkio read throttle + memory cap), files dropped from the page
//!           cache ─► fresh driver ─► one thread per stream ─► rows, times, CPU, bytes
//! ```
//!
//! Memory: DuckDB's `memory_limit` is the caller's budget (the point's buffer), doubled
//! while the streams run out of it (its buffer and its operators share it, where
//! coopscan's operators have their own) up to the caller's bound; its process gets
//! [`DUCKDB_SLACK_BYTES`] more and no page cache (`page_cache::NoPageCache`).
//! DataFusion has no buffer of its own: it runs with no page cache either and its
//! operators uncapped; its run reports the most its process held beyond its idle size.

use crate::canonical::RawRow;
use crate::driver::{check_module, Driver, DriverSpec, SERVE_LOOP};
use crate::duckdb::{start_driver, DUCKDB_MIN_MEMORY_BYTES, DUCKDB_SLACK_BYTES};
use crate::error::PeerError;
use crate::export::{self, Dialect, RowNumber};
use crate::page_cache::NoPageCache;
use crate::run::{self, Counters, Regime};
use crate::sys::{self, Cgroup};
use coopscan_storage::Table;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// A memory cgroup's cap that caps nothing (cgroup v1 rounds it to its own
/// "unlimited").
const UNCAPPED_BYTES: u64 = i64::MAX as u64;
const DATAFUSION: &str = "DataFusion";
const DATAFUSION_INSTALL: &str = "pip install datafusion   (Python 3; it brings pyarrow)";
const DUCKDB_INSTALL: &str = "pip install duckdb   (Python 3; the wheel installs in seconds)";
/// The file marking a finished setup; it holds what the setup was made from.
const DONE_FILE: &str = "done";

/// The DataFusion driver: argv = Parquet directory, target partitions, table names
/// (comma-separated); the request loop is [`SERVE_LOOP`].
const DATAFUSION_DRIVER: &str = r#"
import sys
import datafusion
directory, threads, tables = sys.argv[1], int(sys.argv[2]), sys.argv[3].split(",")
ctx = datafusion.SessionContext(datafusion.SessionConfig().with_target_partitions(threads))
for t in tables:
    ctx.register_parquet(t, directory + "/" + t + ".parquet")
VERSION = datafusion.__version__
def run(sql):
    rows = []
    for batch in ctx.sql(sql).collect():
        rows.extend(zip(*[c.to_pylist() for c in batch.columns]))
    return rows
"#;

/// A peer of the TPC-H runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TpchPeer {
    DuckDb,
    DataFusionParquet,
}

impl TpchPeer {
    pub const ALL: [TpchPeer; 2] = [TpchPeer::DuckDb, TpchPeer::DataFusionParquet];

    /// Its name in `--engines` and in reports.
    pub fn name(self) -> &'static str {
        match self {
            TpchPeer::DuckDb => "duckdb",
            TpchPeer::DataFusionParquet => "datafusion-parquet",
        }
    }

    pub fn by_name(name: &str) -> Option<TpchPeer> {
        TpchPeer::ALL.into_iter().find(|p| p.name() == name)
    }

    /// Fails, saying how to install it, unless the peer can run here. Setup needs
    /// DuckDB for both (it writes the Parquet files).
    pub fn check_installed(self) -> Result<(), PeerError> {
        check_module("DuckDB", "duckdb", DUCKDB_INSTALL)?;
        match self {
            TpchPeer::DuckDb => Ok(()),
            TpchPeer::DataFusionParquet => {
                check_module(DATAFUSION, "datafusion", DATAFUSION_INSTALL)
            }
        }
    }
}

/// The peers' copy of a TPC-H database: DuckDB's file and the Parquet files.
pub struct TpchData {
    names: Vec<String>,
    duckdb: PathBuf,
    parquet: PathBuf,
    threads: usize,
}

impl TpchData {
    /// The copy of `tables` (named `names`) under `cache`, made unless a finished one
    /// of the same tables is there.
    pub fn prepare(
        names: &[String],
        tables: &[Table],
        cache: &Path,
    ) -> Result<TpchData, PeerError> {
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
        let data = TpchData {
            names: names.to_vec(),
            duckdb: cache.join("tpch.duckdb"),
            parquet: cache.join("parquet"),
            threads,
        };
        let done = cache.join(DONE_FILE);
        let key = setup_key(names, tables);
        if std::fs::read_to_string(&done).ok().as_deref() == Some(key.as_str()) {
            return Ok(data);
        }
        std::fs::create_dir_all(&data.parquet).map_err(|e| PeerError::io(&data.parquet, e))?;
        let _ = std::fs::remove_file(&done);
        data.load(tables, cache)?;
        std::fs::write(&done, &key).map_err(|e| PeerError::io(&done, e))?;
        Ok(data)
    }

    /// Every table into a fresh DuckDB file through text, checked by its row count,
    /// then written out as Parquet.
    fn load(&self, tables: &[Table], cache: &Path) -> Result<(), PeerError> {
        for stale in [
            self.duckdb.clone(),
            self.duckdb.with_extension("duckdb.wal"),
        ] {
            if stale.exists() {
                std::fs::remove_file(&stale).map_err(|e| PeerError::io(&stale, e))?;
            }
        }
        let driver = start_driver(&self.duckdb, false, 0, self.threads, None)?;
        for (name, table) in self.names.iter().zip(tables) {
            let text = cache.join(format!("{name}.tbl"));
            let loaded = load_table(&driver, table, name, &text);
            let _ = std::fs::remove_file(&text);
            loaded?;
            let parquet = self.parquet.join(format!("{name}.parquet"));
            if parquet.exists() {
                std::fs::remove_file(&parquet).map_err(|e| PeerError::io(&parquet, e))?;
            }
            driver.query(&format!(
                "COPY {name} TO '{}' (FORMAT parquet)",
                parquet.display()
            ))?;
        }
        driver.query("CHECKPOINT")?;
        Ok(())
    }

    /// The files a peer reads (what is dropped from the page cache before its runs).
    pub fn files(&self, peer: TpchPeer) -> &Path {
        match peer {
            TpchPeer::DuckDb => &self.duckdb,
            TpchPeer::DataFusionParquet => &self.parquet,
        }
    }

    /// `streams` (each its statements in order) at once on a fresh process of `peer`,
    /// confined as `limits` say. DuckDB, out of memory (its own error, or killed by its
    /// memory cgroup: its allocations beyond `memory_limit` can pass the group's slack),
    /// runs again with twice the `memory_limit`, up to `limits.most_memory_bytes`: it
    /// holds its operators' memory in the same budget as its data, where coopscan's
    /// operators have their own.
    pub fn run_streams(
        &self,
        peer: TpchPeer,
        streams: &[Vec<String>],
        limits: &PeerLimits,
    ) -> Result<StreamsRun, PeerError> {
        let mut budget = limits.memory_bytes;
        loop {
            match self.run_once(peer, streams, limits, budget) {
                Err(e) if peer == TpchPeer::DuckDb && out_of_memory(&e) => {
                    let tried = Memory::of(peer, budget).limit_bytes;
                    if tried >= limits.most_memory_bytes {
                        return Err(e);
                    }
                    budget = tried.saturating_mul(2).min(limits.most_memory_bytes);
                    eprintln!(
                        "[{}] out of memory with {:.0} MB; again with {:.0} MB",
                        peer.name(),
                        tried as f64 / 1e6,
                        budget as f64 / 1e6
                    );
                }
                done => return done,
            }
        }
    }

    fn run_once(
        &self,
        peer: TpchPeer,
        streams: &[Vec<String>],
        limits: &PeerLimits,
        budget: u64,
    ) -> Result<StreamsRun, PeerError> {
        let files = self.files(peer);
        let memory = Memory::of(peer, budget);
        let cgroup = run::confine(
            peer.name(),
            Regime::IoBound,
            limits.use_cgroups,
            limits.bandwidth_mb_s,
            files,
            memory.cap_bytes,
        )?;
        // Confined, neither keeps data in the page cache: DuckDB's data memory is its
        // `memory_limit`, DataFusion has none of its own.
        let _no_page_cache = match &cgroup {
            Some(group) => Some(NoPageCache::start(files, group.disk())?),
            None => None,
        };
        let driver = self.start(peer, memory.limit_bytes, cgroup.as_deref())?;
        let idle = sys::resident_bytes(driver.pid());
        let counters = Counters::new(driver.pid());
        let (stream_s, rows) = run_at_once(&driver, streams).map_err(|e| {
            match cgroup.as_ref().filter(|c| c.oom_kills() > 0) {
                // DuckDB's own allocations beyond its `memory_limit` can pass the cap.
                Some(_) => PeerError::engine(
                    "peer",
                    format!(
                        "{OUT_OF_MEMORY}: killed by its memory cgroup at {:.0} MB ({e})",
                        memory.cap_bytes as f64 / 1e6
                    ),
                ),
                None => e,
            }
        })?;
        let stats = counters.since_start();
        let memory_bytes = match peer {
            TpchPeer::DuckDb => Some(memory.limit_bytes),
            // What its group held at most beyond its idle process.
            TpchPeer::DataFusionParquet => cgroup
                .as_ref()
                .and_then(|c| c.memory_peak_bytes())
                .zip(idle)
                .map(|(peak, idle)| peak.saturating_sub(idle)),
        };
        Ok(StreamsRun {
            version: driver.version().to_string(),
            memory_bytes,
            stream_s,
            rows,
            cpu_s: stats.cpu.as_secs_f64(),
            read_bytes: stats.read_bytes,
            disk_read_bytes: cgroup.as_ref().map(|c| c.disk_read_bytes()),
        })
    }

    fn start(
        &self,
        peer: TpchPeer,
        memory_bytes: u64,
        cgroup: Option<&Cgroup>,
    ) -> Result<Driver, PeerError> {
        match peer {
            TpchPeer::DuckDb => {
                start_driver(&self.duckdb, true, memory_bytes, self.threads, cgroup)
            }
            TpchPeer::DataFusionParquet => {
                let spec = DriverSpec {
                    peer: DATAFUSION,
                    install: DATAFUSION_INSTALL,
                    module: "datafusion",
                    script: format!("{DATAFUSION_DRIVER}{SERVE_LOOP}"),
                    args: vec![
                        self.parquet.as_os_str().to_owned(),
                        self.threads.to_string().into(),
                        self.names.join(",").into(),
                    ],
                };
                Driver::start(&spec, cgroup)
            }
        }
    }
}

/// A peer's memory: what its process tree may hold (the cgroup's cap, page cache
/// included) and what its engine is told (DuckDB's `memory_limit`).
struct Memory {
    cap_bytes: u64,
    limit_bytes: u64,
}

impl Memory {
    fn of(peer: TpchPeer, budget: u64) -> Memory {
        match peer {
            TpchPeer::DuckDb => {
                let limit = budget.max(DUCKDB_MIN_MEMORY_BYTES);
                Memory {
                    cap_bytes: limit.saturating_add(DUCKDB_SLACK_BYTES),
                    limit_bytes: limit,
                }
            }
            // Its operators take what they need (capped at coopscan's memory, 4 streams
            // of SF1 were killed for memory: their process reached 1 GB); with no page
            // cache it holds no data between reads.
            TpchPeer::DataFusionParquet => Memory {
                cap_bytes: UNCAPPED_BYTES,
                limit_bytes: 0,
            },
        }
    }
}

/// What a peer's run is confined to.
#[derive(Clone, Copy, Debug)]
pub struct PeerLimits {
    /// The device's read bandwidth (none: unthrottled).
    pub bandwidth_mb_s: Option<f64>,
    /// Memory for data and operators (DuckDB's first `memory_limit`; DataFusion's
    /// operators are not capped).
    pub memory_bytes: u64,
    /// The most DuckDB's `memory_limit` is raised to when it runs out.
    pub most_memory_bytes: u64,
    /// Confine the peer in a blkio + memory cgroup.
    pub use_cgroups: bool,
}

/// One run of the streams on a peer.
#[derive(Clone, Debug)]
pub struct StreamsRun {
    pub version: String,
    /// DuckDB: the `memory_limit` it was given (the limits', raised to what it needs to
    /// start); DataFusion: the most its process held beyond its idle size (when
    /// confined).
    pub memory_bytes: Option<u64>,
    pub stream_s: Vec<f64>,
    /// Per stream, per query, its rows (cells as text, NULL as `NULL`).
    pub rows: Vec<Vec<Vec<Vec<String>>>>,
    /// CPU-seconds of the peer's process tree.
    pub cpu_s: f64,
    /// Bytes its processes read (`/proc/PID/io`: from below its own buffer).
    pub read_bytes: u64,
    /// Bytes read from the disk itself (when confined).
    pub disk_read_bytes: Option<u64>,
}

/// What DuckDB's errors for want of memory begin with ("Out of Memory Error: could not
/// allocate block …"), and so a peer killed by its memory cgroup's.
const OUT_OF_MEMORY: &str = "Out of Memory";

/// Whether a peer failed for want of memory.
fn out_of_memory(e: &PeerError) -> bool {
    e.to_string().contains(OUT_OF_MEMORY)
}

/// Each stream's time and, per query, its rows.
type Outcome = (Vec<f64>, Vec<Vec<Vec<Vec<String>>>>);

/// Runs the streams at once, each on its own thread. After a stream fails the others
/// stop at their next query (DuckDB out of memory runs again), and the failure is
/// returned.
fn run_at_once(driver: &Driver, streams: &[Vec<String>]) -> Result<Outcome, PeerError> {
    let start = Instant::now();
    let failed = AtomicBool::new(false);
    let outcomes: Vec<Result<Option<StreamDone>, PeerError>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (streams.iter())
            .map(|sqls| scope.spawn(|| run_stream(driver, sqls, start, &failed)))
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(PeerError::engine("peer", "a stream panicked")))
            })
            .collect()
    });
    let mut times = Vec::with_capacity(streams.len());
    let mut rows = Vec::with_capacity(streams.len());
    let mut stopped = false;
    for (s, outcome) in outcomes.into_iter().enumerate() {
        let done = outcome.map_err(|e| PeerError::Result {
            query: format!("stream {}", s + 1),
            message: e.to_string(),
        })?;
        match done {
            Some((time, stream_rows)) => {
                times.push(time.as_secs_f64());
                rows.push(stream_rows);
            }
            None => stopped = true,
        }
    }
    match stopped {
        // Only a stream that failed stops the others, and its error was returned.
        true => Err(PeerError::engine(
            "peer",
            "streams stopped without a failure",
        )),
        false => Ok((times, rows)),
    }
}

/// A stream's time and each of its queries' rows.
type StreamDone = (Duration, Vec<Vec<Vec<String>>>);

/// A stream's queries in order; `None` if it stopped because another stream failed.
fn run_stream(
    driver: &Driver,
    sqls: &[String],
    start: Instant,
    failed: &AtomicBool,
) -> Result<Option<StreamDone>, PeerError> {
    let mut rows = Vec::with_capacity(sqls.len());
    for sql in sqls {
        if failed.load(Ordering::Relaxed) {
            return Ok(None);
        }
        let statement = sql.trim().trim_end_matches(';');
        match driver.query(statement) {
            Ok(result) => rows.push(result.into_iter().map(text_row).collect()),
            Err(e) => {
                failed.store(true, Ordering::Relaxed);
                return Err(e);
            }
        }
    }
    Ok(Some((start.elapsed(), rows)))
}

/// A driver's row as coopscan's results print it (`coopscan_tpch::answers::rows_of`:
/// NULL as `NULL`).
fn text_row(row: RawRow) -> Vec<String> {
    row.into_iter()
        .map(|c| c.unwrap_or_else(|| "NULL".to_string()))
        .collect()
}

fn load_table(driver: &Driver, table: &Table, name: &str, text: &Path) -> Result<(), PeerError> {
    {
        let file = std::fs::File::create(text).map_err(|e| PeerError::io(text, e))?;
        let mut out = std::io::BufWriter::with_capacity(1 << 20, file);
        export::write_text(table, &mut out, RowNumber::Omitted)?;
    }
    driver.query(&export::create_table_sql(
        table,
        name,
        Dialect::DuckDb,
        RowNumber::Omitted,
    ))?;
    driver.query(&format!(
        "COPY {name} FROM '{}' (DELIMITER '|', HEADER false, QUOTE '', ESCAPE '')",
        text.display()
    ))?;
    let count = driver.query(&format!("SELECT count(*) FROM {name}"))?;
    let got = count.first().and_then(|r| r.first().cloned().flatten());
    if got != Some(table.rows().to_string()) {
        return Err(PeerError::engine(
            "DuckDB",
            format!("{name}: loaded {got:?} rows of {}", table.rows()),
        ));
    }
    Ok(())
}

/// What a setup was made from: each table's name, directory, row count and manifest
/// checksum (a regenerated table has another).
fn setup_key(names: &[String], tables: &[Table]) -> String {
    names
        .iter()
        .zip(tables)
        .map(|(n, t)| {
            let manifest = t.manifest().checksum().unwrap_or_default();
            format!("{n} {} rows {} {manifest}\n", t.dir().display(), t.rows())
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn peers_are_known_by_their_names() {
        for p in TpchPeer::ALL {
            assert_eq!(TpchPeer::by_name(p.name()), Some(p));
        }
        assert_eq!(TpchPeer::by_name("postgres"), None);
    }

    #[test]
    fn nulls_read_as_coopscan_prints_them() {
        let row = text_row(vec![Some("1.50".to_string()), None]);
        assert_eq!(row, ["1.50", "NULL"]);
    }
}
