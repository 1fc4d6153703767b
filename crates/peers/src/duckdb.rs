//! DuckDB as a peer, through its Python package (`pip install duckdb`): one persistent
//! driver process speaks JSON lines over stdin/stdout; each request runs on its own
//! Python thread with its own cursor, so concurrent streams run concurrently (DuckDB
//! releases the GIL while it executes). The Rust `duckdb` crate would compile DuckDB's
//! C++ (`bundled`), far too slow a build for 2-core CI machines.
//!
//! Setup (cached): the coopscan table is exported as text (`export`), loaded into
//! `<cache>/duckdb/lineitem.duckdb` in row order with its row number `l_rowid`
//! (DuckDB's zonemaps then prune a row range to its row groups), checkpointed, checked
//! (row count, rowid bounds) and marked done.

use crate::canonical::{canonical, peer_sql, RawRow};
use crate::error::PeerError;
use crate::export::{self, Dialect, ROWID_COLUMN};
use crate::leftovers::{self, Change, Record};
use crate::page_cache::NoPageCache;
use crate::proc_stat;
use crate::run::{self, Counters, PeerRun, PeerSetup, Regime, SqlFor};
use crate::sys::Cgroup;
use coopscan_bench::{PolicyRun, PolicySetup, QueryEngine, QueryInstance, QueryOutput};
use coopscan_storage::Table;
use serde::Deserialize;
use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

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
/// How long a driver gets to exit after its stdin closes before it is killed.
const EXIT_GRACE: Duration = Duration::from_secs(5);

/// The driver: argv = db path, read-only (0/1), memory limit in bytes, threads.
const DRIVER: &str = r#"
import sys, json, threading, decimal
import duckdb
db, read_only, memory, threads = sys.argv[1], sys.argv[2] == "1", sys.argv[3], sys.argv[4]
config = {"memory_limit": memory + "B", "threads": int(threads)} if memory != "0" else {"threads": int(threads)}
con = duckdb.connect(db, read_only=read_only, config=config)
lock = threading.Lock()
def emit(obj):
    text = json.dumps(obj)
    with lock:
        sys.stdout.write(text + "\n")
        sys.stdout.flush()
def cell(v):
    if v is None:
        return None
    if isinstance(v, decimal.Decimal):
        return format(v, "f")
    return str(v)
def serve(req):
    try:
        cur = con.cursor()
        try:
            cur.execute(req["sql"])
            rows = cur.fetchall() if cur.description else []
        finally:
            cur.close()
        emit({"id": req["id"], "rows": [[cell(v) for v in r] for r in rows]})
    except Exception as e:
        emit({"id": req["id"], "error": type(e).__name__ + ": " + str(e)})
emit({"id": 0, "rows": [[duckdb.__version__]]})
for line in sys.stdin:
    if line.strip():
        threading.Thread(target=serve, args=(json.loads(line),), daemon=True).start()
"#;

#[derive(Deserialize)]
struct Response {
    id: u64,
    #[serde(default)]
    rows: Vec<RawRow>,
    error: Option<String>,
}

type Pending = Arc<Mutex<HashMap<u64, mpsc::Sender<Result<Vec<RawRow>, String>>>>>;

/// A running driver process; killed (after closing its stdin) on drop.
pub struct Driver {
    child: Child,
    stdin: Mutex<Option<ChildStdin>>,
    pending: Pending,
    next_id: AtomicU64,
    stderr: Arc<Mutex<String>>,
    version: String,
    /// The driver written down (`leftovers`) while it runs inside a cgroup: a driver
    /// outliving a stopped run keeps its cgroup from being removed.
    record: Option<Record>,
}

impl Driver {
    /// Starts `python3` on `db` (inside `cgroup` if given) and waits for it to be ready.
    pub fn start(
        db: &Path,
        read_only: bool,
        memory_bytes: u64,
        threads: usize,
        cgroup: Option<&Cgroup>,
    ) -> Result<Driver, PeerError> {
        let join = cgroup.map(Cgroup::join_command).unwrap_or_default();
        // Spawned and written down as one (see `leftovers::begin`).
        let recording = leftovers::begin()?;
        let mut child = Command::new("sh")
            .arg("-c")
            .arg(format!("{join}exec \"$@\""))
            .arg("sh")
            .arg("python3")
            .arg("-c")
            .arg(DRIVER)
            .arg(db)
            .arg(if read_only { "1" } else { "0" })
            .arg(memory_bytes.to_string())
            .arg(threads.to_string())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| PeerError::Missing {
                peer: PEER,
                why: format!("cannot run sh (which starts python3): {e}"),
                install: INSTALL,
            })?;
        let stdout = child.stdout.take();
        let stderr_pipe = child.stderr.take();
        let stdin = child.stdin.take();
        let pending: Pending = Arc::default();
        let stderr = Arc::new(Mutex::new(String::new()));
        if let Some(pipe) = stderr_pipe {
            let stderr = Arc::clone(&stderr);
            std::thread::spawn(move || {
                for line in BufReader::new(pipe).lines().map_while(Result::ok) {
                    if let Ok(mut s) = stderr.lock() {
                        // Keep the tail: the last lines say why the driver died.
                        if s.len() > 8192 {
                            s.drain(..4096);
                        }
                        s.push_str(&line);
                        s.push('\n');
                    }
                }
            });
        }
        let (ready_tx, ready_rx) = mpsc::channel();
        if let Ok(mut p) = pending.lock() {
            p.insert(0, ready_tx);
        }
        if let Some(out) = stdout {
            let pending = Arc::clone(&pending);
            std::thread::spawn(move || read_responses(out, &pending));
        }
        let record = match (cgroup, crate::sys::find_program("python3")) {
            (Some(_), Some(program)) => Some(recording.record(&Change::Driver {
                pid: child.id(),
                // 0 when it already exited: a record of nothing, dropped as such.
                started: proc_stat::stat(child.id()).map_or(0, |s| s.start_time),
                program,
            })),
            _ => None,
        };
        drop(recording);
        let mut driver = Driver {
            child,
            stdin: Mutex::new(stdin),
            pending,
            next_id: AtomicU64::new(1),
            stderr,
            version: String::new(),
            record: None,
        };
        driver.record = record.transpose()?;
        let ready = ready_rx.recv().map_err(|_| driver.died());
        match ready {
            Ok(Ok(rows)) => {
                driver.version = rows
                    .first()
                    .and_then(|r| r.first().cloned().flatten())
                    .unwrap_or_default();
                Ok(driver)
            }
            Ok(Err(e)) => Err(PeerError::engine(PEER, e)),
            Err(e) => Err(e),
        }
    }

    pub fn version(&self) -> &str {
        &self.version
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Runs `sql` and returns its rows (each cell as text).
    pub fn query(&self, sql: &str) -> Result<Vec<RawRow>, PeerError> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = mpsc::channel();
        if let Ok(mut p) = self.pending.lock() {
            p.insert(id, tx);
        }
        let line = serde_json::json!({ "id": id, "sql": sql }).to_string();
        {
            let mut stdin = self
                .stdin
                .lock()
                .map_err(|_| PeerError::engine(PEER, "driver stdin lock poisoned"))?;
            let pipe = stdin.as_mut().ok_or_else(|| self.died())?;
            writeln!(pipe, "{line}")
                .and_then(|()| pipe.flush())
                .map_err(|_| self.died())?;
        }
        match rx.recv() {
            Ok(Ok(rows)) => Ok(rows),
            Ok(Err(e)) => Err(PeerError::engine(PEER, e)),
            Err(_) => Err(self.died()),
        }
    }

    fn died(&self) -> PeerError {
        let tail = self.stderr.lock().map(|s| s.clone()).unwrap_or_default();
        if tail.contains("No module named 'duckdb'") {
            return PeerError::Missing {
                peer: PEER,
                why: "the Python package duckdb is not installed".to_string(),
                install: INSTALL,
            };
        }
        PeerError::engine(
            PEER,
            format!("the driver process exited; its stderr:\n{tail}"),
        )
    }
}

fn read_responses(out: std::process::ChildStdout, pending: &Pending) {
    for line in BufReader::new(out).lines().map_while(Result::ok) {
        let Ok(resp) = serde_json::from_str::<Response>(&line) else {
            continue;
        };
        let tx = pending.lock().ok().and_then(|mut p| p.remove(&resp.id));
        if let Some(tx) = tx {
            let _ = tx.send(resp.error.map_or(Ok(resp.rows), Err));
        }
    }
    // EOF: the driver is gone; waiting callers get a closed channel.
    if let Ok(mut p) = pending.lock() {
        p.clear();
    }
}

impl Drop for Driver {
    fn drop(&mut self) {
        if let Ok(mut stdin) = self.stdin.lock() {
            stdin.take(); // EOF: the driver's loop ends
        }
        crate::sys::reap(&mut self.child, EXIT_GRACE);
        // Exited (or killed by `reap`): nothing left to undo.
        drop(self.record.take());
    }
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
        crate::sys::require_program(PEER, "sh")?;
        let python = crate::sys::require_program(PEER, "python3")?;
        let imported = Command::new(python)
            .args(["-c", "import duckdb"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if imported {
            Ok(())
        } else {
            Err(PeerError::Missing {
                peer: PEER,
                why: "the Python package duckdb is not installed (`python3 -c 'import duckdb'` \
                      failed)"
                    .to_string(),
                install: INSTALL,
            })
        }
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
            Driver::start(&db, true, 0, 1, None)?.version().to_string()
        } else {
            load(table, &dir, &db, threads)?;
            std::fs::write(&done, &key).map_err(|e| PeerError::io(&done, e))?;
            Driver::start(&db, true, 0, 1, None)?.version().to_string()
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
            &setup,
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
        let driver = Driver::start(&self.db, true, buffer, self.threads, cgroup.as_deref())?;
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
        export::write_text(table, &mut out)?;
    }
    let result = (|| {
        let driver = Driver::start(db, false, 0, threads, None)?;
        driver.query(&export::create_table_sql(table, TABLE, Dialect::DuckDb))?;
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
