//! DuckDB as a peer, through its Python package (`pip install duckdb`) behind a
//! JSON-lines driver process (`driver`); each request runs on its own Python thread
//! with its own cursor, so concurrent streams run concurrently.
//!
//! Setup (cached): the coopscan table is exported as text (`export`), loaded into
//! `<cache>/duckdb/lineitem.duckdb` in row order with its row number `l_rowid`
//! (DuckDB's zonemaps then prune a row range to its row groups), checkpointed, checked
//! (row count, rowid bounds) and marked done.

use crate::canonical::{canonical, peer_sql};
use crate::driver::{Driver, DriverSpec, SERVE_LOOP};
use crate::error::PeerError;
use crate::export::{self, Dialect, RowNumber, ROWID_COLUMN};
use crate::page_cache::NoPageCache;
use crate::run::{self, Counters, PeerRun, PeerSetup, Regime, SqlFor};
use crate::sys::Cgroup;
use coopscan_bench::{PolicyRun, PolicySetup, QueryEngine, QueryInstance, QueryOutput};
use coopscan_storage::Table;
use std::path::{Path, PathBuf};
use std::sync::Arc;

const PEER: &str = "DuckDB";
const INSTALL: &str = "pip install duckdb   (Python 3; the wheel installs in seconds)";
const TABLE: &str = "lineitem";
/// Memory the driver's process tree needs beyond DuckDB's buffer (Python, DuckDB's
/// code and per-thread state): measured on SF1 (issue 11). The cgroup charges page
/// cache too, but a confined DuckDB runs with none (`page_cache::NoPageCache`), so the
/// slack does not become a data cache.
pub const DUCKDB_SLACK_BYTES: u64 = 112 << 20;
/// Smallest `memory_limit` DuckDB gets: below a few MB it cannot pin its blocks
/// (seen: a 2 MB limit for a tiny test table fails with OutOfMemory). Only tiny tables'
/// buffers are this small (SF1 at 25 %: 200 MB).
pub const DUCKDB_MIN_MEMORY_BYTES: u64 = 64 << 20;

/// The driver's engine: argv = db path, read-only (0/1), memory limit in bytes,
/// threads; the request loop is [`SERVE_LOOP`].
const DRIVER: &str = r#"
import sys
import duckdb
db, read_only, memory, threads = sys.argv[1], sys.argv[2] == "1", sys.argv[3], sys.argv[4]
config = {"memory_limit": memory + "B", "threads": int(threads)} if memory != "0" else {"threads": int(threads)}
con = duckdb.connect(db, read_only=read_only, config=config)
VERSION = duckdb.__version__
def run(sql):
    cur = con.cursor()
    try:
        cur.execute(sql)
        return cur.fetchall() if cur.description else []
    finally:
        cur.close()
"#;

/// Starts a DuckDB driver on `db` (inside `cgroup` if given).
pub fn start_driver(
    db: &Path,
    read_only: bool,
    memory_bytes: u64,
    threads: usize,
    cgroup: Option<&Cgroup>,
) -> Result<Driver, PeerError> {
    let spec = DriverSpec {
        peer: PEER,
        install: INSTALL,
        module: "duckdb",
        script: format!("{DRIVER}{SERVE_LOOP}"),
        args: vec![
            db.as_os_str().to_owned(),
            (if read_only { "1" } else { "0" }).into(),
            memory_bytes.to_string().into(),
            threads.to_string().into(),
        ],
    };
    Driver::start(&spec, cgroup)
}

/// DuckDB set up for a table: the database file in the cache.
pub struct DuckDbPeer {
    db: PathBuf,
    sql: SqlFor,
    table_bytes: u64,
    regime: Regime,
    use_cgroups: bool,
    threads: usize,
    version: String,
}

impl DuckDbPeer {
    /// Fails unless DuckDB can run here: `sh` and `python3` on the search path (the
    /// driver is `sh -c … python3`) and Python's `duckdb` package. Cheap; meant for
    /// before the dataset and the calibration, since [`Self::prepare`] finds out only
    /// after exporting the whole table.
    pub fn check_installed() -> Result<(), PeerError> {
        crate::driver::check_module(PEER, "duckdb", INSTALL)
    }

    /// Loads `table` into `<cache>/duckdb/` unless done before. `table_bytes` is the
    /// benchmark table's size (the buffer is a percentage of it).
    pub fn prepare(setup: &PeerSetup<'_>) -> Result<DuckDbPeer, PeerError> {
        let PeerSetup {
            table,
            cache,
            ref sql,
            table_bytes,
            regime,
            use_cgroups,
        } = *setup;
        let sql = sql.clone();
        let dir = cache.join("duckdb");
        std::fs::create_dir_all(&dir).map_err(|e| PeerError::io(&dir, e))?;
        let db = dir.join(format!("{TABLE}.duckdb"));
        let done = dir.join(format!("{TABLE}.done"));
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
        let key = format!("{} rows {}\n", table.dir().display(), table.rows());
        let version = if std::fs::read_to_string(&done).ok().as_deref() == Some(key.as_str()) {
            start_driver(&db, true, 0, 1, None)?.version().to_string()
        } else {
            load(table, &dir, &db, threads)?;
            std::fs::write(&done, &key).map_err(|e| PeerError::io(&done, e))?;
            start_driver(&db, true, 0, 1, None)?.version().to_string()
        };
        Ok(DuckDbPeer {
            db,
            sql,
            table_bytes,
            regime,
            use_cgroups,
            threads,
            version,
        })
    }

    pub fn version(&self) -> &str {
        &self.version
    }

    /// The database file (what a full scan may read).
    pub fn files(&self) -> &Path {
        &self.db
    }

    /// A fresh driver (cold DuckDB buffer), confined per the regime.
    pub fn start(&self, setup: PolicySetup<'_>) -> Result<Box<dyn PolicyRun>, PeerError> {
        let buffer = run::buffer_bytes(&setup, self.table_bytes).max(DUCKDB_MIN_MEMORY_BYTES);
        let cgroup = run::confine(
            "duckdb",
            self.regime,
            self.use_cgroups,
            setup.bandwidth_mb_s,
            &self.db,
            buffer + DUCKDB_SLACK_BYTES,
        )?;
        // Confined, DuckDB's data memory is its `memory_limit` alone, as coopscan's is
        // its buffer: no page cache (`page_cache`), and the cgroup's slack serves only
        // the process itself.
        let no_page_cache = match &cgroup {
            Some(group) => Some(NoPageCache::start(&self.db, group.disk())?),
            None => None,
        };
        let driver = start_driver(&self.db, true, buffer, self.threads, cgroup.as_deref())?;
        let counters = Counters::new(driver.pid());
        Ok(Box::new(PeerRun {
            engine: DuckDbEngine {
                driver,
                sql: Arc::clone(&self.sql),
            },
            counters,
            cgroup,
            no_page_cache,
        }))
    }
}

fn load(table: &Table, dir: &Path, db: &Path, threads: usize) -> Result<(), PeerError> {
    for stale in [db.to_path_buf(), db.with_extension("duckdb.wal")] {
        if stale.exists() {
            std::fs::remove_file(&stale).map_err(|e| PeerError::io(&stale, e))?;
        }
    }
    let text = dir.join(format!("{TABLE}.tbl"));
    {
        let file = std::fs::File::create(&text).map_err(|e| PeerError::io(&text, e))?;
        let mut out = std::io::BufWriter::with_capacity(1 << 20, file);
        export::write_text(table, &mut out, RowNumber::Appended)?;
    }
    let result = (|| {
        let driver = start_driver(db, false, 0, threads, None)?;
        driver.query(&export::create_table_sql(
            table,
            TABLE,
            Dialect::DuckDb,
            RowNumber::Appended,
        ))?;
        driver.query(&format!(
            "COPY {TABLE} FROM '{}' (DELIMITER '|', HEADER false, QUOTE '', ESCAPE '')",
            text.display()
        ))?;
        driver.query("CHECKPOINT")?;
        let rows = driver.query(&format!(
            "SELECT count(*), min({ROWID_COLUMN}), max({ROWID_COLUMN}) FROM {TABLE}"
        ))?;
        let want = [
            table.rows().to_string(),
            "0".to_string(),
            table.rows().saturating_sub(1).to_string(),
        ];
        let got: Vec<String> = rows
            .first()
            .map(|r| r.iter().map(|c| c.clone().unwrap_or_default()).collect())
            .unwrap_or_default();
        if got != want {
            return Err(PeerError::engine(
                PEER,
                format!("loaded table has count/min/max rowid {got:?}, wanted {want:?}"),
            ));
        }
        Ok(())
    })();
    let _ = std::fs::remove_file(&text);
    result
}

/// Runs the benchmark's queries on a driver.
pub struct DuckDbEngine {
    driver: Driver,
    sql: SqlFor,
}

impl QueryEngine for DuckDbEngine {
    fn run(&self, q: &QueryInstance) -> anyhow::Result<QueryOutput> {
        let sql = peer_sql(&(self.sql)(q), &q.rows, "")?;
        let raw = self.driver.query(&sql)?;
        Ok(QueryOutput {
            rows: canonical(q, &raw)?,
        })
    }
}
