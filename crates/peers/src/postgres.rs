//! PostgreSQL as a peer: a real server the benchmark starts itself — a private data
//! directory and unix socket under the cache, JIT off, `shared_buffers` = the
//! benchmark's buffer — and tears down after every run (a fresh server = a cold
//! buffer). One connection per stream (the sync `postgres` crate; the server runs a
//! backend per connection, so 16 streams are 16 concurrent backends).
//!
//! Setup (cached): `initdb`, then `CREATE TABLE` + `COPY` in one transaction (the heap
//! stays in load order), `VACUUM (FREEZE, ANALYZE)` (hint bits set now, so the timed
//! runs never write), `CHECKPOINT`, and the page map: the first and last `l_rowid` of
//! every heap page. A row range `a..b` then runs as a TID range scan over the pages
//! that hold it (`ctid >= '(p0,0)' AND ctid < '(p1,0)'`) filtered exactly by
//! `l_rowid` — PostgreSQL's way to scan a range by position.
//!
//! Run as root, the server runs as the `postgres` user (PostgreSQL refuses root); if
//! that user cannot reach the cache directory (e.g. under a 0700 `/root`), the server's
//! files go to `/var/cache/coopscan-peers/` instead (printed).

use crate::canonical::{canonical, peer_sql, RawRow};
use crate::error::PeerError;
use crate::export::{self, Dialect, RowNumber, ROWID_COLUMN};
use crate::leftovers::{self, Change, Record};
use crate::proc_stat;
use crate::run::{self, Counters, PeerRun, PeerSetup, Regime, SqlFor};
use crate::sys::{self, Cgroup};
use coopscan_bench::{PolicyRun, PolicySetup, QueryEngine, QueryInstance, QueryOutput};
use coopscan_storage::Table;
use postgres::{Client, NoTls, SimpleQueryMessage};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const PEER: &str = "PostgreSQL";
const INSTALL: &str =
    "apt-get install -y postgresql   (Debian/Ubuntu; the server binaries, initdb and postgres)";
const TABLE: &str = "lineitem";
const USER: &str = "postgres";
/// Memory a server needs beyond `shared_buffers` when the cgroup also charges its page
/// cache: the postmaster and auxiliary processes, plus per backend (JIT off).
pub const PG_SLACK_BYTES: u64 = 128 << 20;
pub const PG_SLACK_PER_BACKEND_BYTES: u64 = 12 << 20;
/// How long a server may take to accept connections, and to shut down.
const START_TIMEOUT: Duration = Duration::from_secs(60);
const STOP_TIMEOUT: Duration = Duration::from_secs(20);
/// Connections beyond the streams' (setup, a spare).
const EXTRA_CONNECTIONS: usize = 4;

/// The server binaries.
#[derive(Clone, Debug)]
struct Binaries {
    initdb: PathBuf,
    postgres: PathBuf,
}

fn find_binaries() -> Result<Binaries, PeerError> {
    let mut dirs: Vec<PathBuf> = Vec::new();
    if let Ok(out) = Command::new("pg_config").arg("--bindir").output() {
        if out.status.success() {
            dirs.push(PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()));
        }
    }
    if let Ok(entries) = std::fs::read_dir("/usr/lib/postgresql") {
        let mut versions: Vec<PathBuf> = entries
            .filter_map(|e| e.ok())
            .map(|e| e.path().join("bin"))
            .collect();
        versions.sort();
        dirs.extend(versions.into_iter().rev());
    }
    if let Some(path) = std::env::var_os("PATH") {
        dirs.extend(std::env::split_paths(&path));
    }
    let find = |name: &str| dirs.iter().map(|d| d.join(name)).find(|p| p.is_file());
    match (find("initdb"), find("postgres")) {
        (Some(initdb), Some(postgres)) => Ok(Binaries { initdb, postgres }),
        _ => Err(PeerError::Missing {
            peer: PEER,
            why: "no initdb/postgres binaries (looked in pg_config --bindir, /usr/lib/postgresql/*/bin, PATH)".to_string(),
            install: INSTALL,
        }),
    }
}

/// Runs `program args` as the server's user: itself, or `postgres` via `setpriv` when
/// root. `prefix` is a shell prefix run first (joining a cgroup).
fn server_command(prefix: &str, program: &Path) -> Command {
    let mut cmd = Command::new("sh");
    cmd.arg("-c").arg(format!("{prefix}exec \"$@\"")).arg("sh");
    if sys::is_root() {
        cmd.args(["setpriv", "--reuid", USER, "--regid", USER, "--init-groups"]);
    }
    cmd.arg(program);
    cmd
}

/// Makes `dir` (and its parents as needed) owned by the server's user.
fn own_dir(dir: &Path) -> Result<(), PeerError> {
    std::fs::create_dir_all(dir).map_err(|e| PeerError::io(dir, e))?;
    if sys::is_root() {
        let status = Command::new("chown")
            .args(["-R", &format!("{USER}:{USER}")])
            .arg(dir)
            .status()
            .map_err(|e| PeerError::io(dir, e))?;
        if !status.success() {
            return Err(PeerError::engine(
                PEER,
                format!(
                    "chown {USER} {} failed (is there a `{USER}` user?)",
                    dir.display()
                ),
            ));
        }
    }
    Ok(())
}

/// Whether the server's user can write `dir`.
fn server_can_use(dir: &Path) -> bool {
    let mut cmd = server_command("", Path::new("test"));
    cmd.arg("-w")
        .arg(dir)
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    cmd.status().is_ok_and(|s| s.success())
}

/// Where the server's files go: `<cache>/postgres`, else `/var/cache/coopscan-peers/<name>/postgres`.
fn server_base(cache: &Path) -> Result<PathBuf, PeerError> {
    let preferred = cache.join("postgres");
    own_dir(&preferred)?;
    if server_can_use(&preferred) {
        return Ok(preferred);
    }
    let name = cache
        .file_name()
        .map_or("default".into(), |n| n.to_string_lossy().into_owned());
    let fallback = Path::new("/var/cache/coopscan-peers")
        .join(name)
        .join("postgres");
    eprintln!(
        "note: the `{USER}` user cannot reach {}; PostgreSQL's files go to {}",
        preferred.display(),
        fallback.display()
    );
    own_dir(&fallback)?;
    Ok(fallback)
}

/// A running server; shut down (fast mode, then killed) on drop.
pub struct Server {
    child: Child,
    socket_dir: PathBuf,
    log: PathBuf,
    /// The server written down (`leftovers`) until it has stopped.
    record: Option<Record>,
}

impl Server {
    fn start(
        bins: &Binaries,
        base: &Path,
        settings: &[(&str, String)],
        cgroup: Option<&Cgroup>,
    ) -> Result<Server, PeerError> {
        let data = base.join("data");
        let socket_dir = base.join("sock");
        own_dir(&socket_dir)?;
        let log = base.join("server.log");
        let log_file = std::fs::File::create(&log).map_err(|e| PeerError::io(&log, e))?;
        let log_err = log_file.try_clone().map_err(|e| PeerError::io(&log, e))?;
        let prefix = cgroup.map(Cgroup::join_command).unwrap_or_default();
        let mut cmd = server_command(&prefix, &bins.postgres);
        cmd.arg("-D").arg(&data).arg("-k").arg(&socket_dir);
        cmd.args(["-c", "listen_addresses="]);
        for (name, value) in settings {
            cmd.arg("-c").arg(format!("{name}={value}"));
        }
        let recording = leftovers::begin()?;
        let child = cmd
            .stdin(Stdio::null())
            .stdout(log_file)
            .stderr(log_err)
            .spawn()
            .map_err(|e| PeerError::engine(PEER, format!("cannot start the server: {e}")))?;
        let record = recording.record(&Change::Process {
            pid: child.id(),
            // 0 when it already exited: a record of nothing, dropped as such.
            started: proc_stat::stat(child.id()).map_or(0, |s| s.start_time),
            program: bins.postgres.clone(),
        });
        drop(recording);
        let mut server = Server {
            child,
            socket_dir,
            log,
            record: None,
        };
        server.record = Some(record?);
        let deadline = Instant::now() + START_TIMEOUT;
        loop {
            if let Ok(Some(status)) = server.child.try_wait() {
                return Err(PeerError::engine(
                    PEER,
                    format!("the server exited ({status}): {}", server.log_tail()),
                ));
            }
            match server.connect() {
                Ok(mut client) => {
                    server.check_ours(&mut client)?;
                    return Ok(server);
                }
                Err(e) if Instant::now() > deadline => {
                    return Err(PeerError::engine(PEER, format!("the server did not accept connections within {START_TIMEOUT:?}: {e}; {}", server.log_tail())));
                }
                Err(_) => std::thread::sleep(Duration::from_millis(100)),
            }
        }
    }

    fn connect(&self) -> Result<Client, PeerError> {
        Ok(postgres::Config::new()
            .host_path(&self.socket_dir)
            .user(USER)
            .dbname(USER)
            .connect(NoTls)?)
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Fails unless `client` is served by this server: a server left running by an
    /// earlier, killed run holds the data directory's lock, so ours exits at once, but
    /// the old one still answers on the same socket and would be measured in its place.
    /// A backend's parent is its postmaster, and ours is `child` (`sh -c exec` keeps the
    /// pid through `setpriv`).
    fn check_ours(&self, client: &mut Client) -> Result<(), PeerError> {
        let backend: i32 = client.query_one("SELECT pg_backend_pid()", &[])?.get(0);
        let postmaster = u32::try_from(backend).ok().and_then(sys::parent_pid);
        if postmaster == Some(self.pid()) {
            return Ok(());
        }
        let theirs = postmaster.map_or_else(|| "unknown".to_string(), |p| p.to_string());
        Err(PeerError::engine(
            PEER,
            format!(
                "a server this run did not start answers on {} (its postmaster: pid {theirs}; \
                 ours: {}), probably left by a killed run: stop it, then run again; {}",
                self.socket_dir.display(),
                self.pid(),
                self.log_tail()
            ),
        ))
    }

    fn log_tail(&self) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let start = text.len().saturating_sub(2000);
        let start = (start..text.len())
            .find(|&i| text.is_char_boundary(i))
            .unwrap_or(text.len());
        format!("server log {}:\n{}", self.log.display(), &text[start..])
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        // SIGINT = fast shutdown: backends are told to exit, then the postmaster.
        if let Some(pid) = rustix::process::Pid::from_raw(self.child.id() as i32) {
            let _ = rustix::process::kill_process(pid, rustix::process::Signal::INT);
        }
        crate::sys::reap(&mut self.child, STOP_TIMEOUT);
        // Stopped (or killed by `reap`): nothing left to undo.
        drop(self.record.take());
    }
}

/// Heap pages in order with the first and last `l_rowid` each holds.
#[derive(Clone, Debug, Default)]
pub struct PageMap {
    pages: Vec<(u64, u64, u64)>,
}

impl PageMap {
    /// `ctid >= '(p0,0)' AND ctid < '(p1,0)'` covering the pages that hold rows `rows`.
    pub fn tid_range(&self, rows: &std::ops::Range<u64>) -> String {
        // First page whose last rowid reaches rows.start; first page starting at or after rows.end.
        let lo = self
            .pages
            .partition_point(|&(_, _, last)| last < rows.start);
        let hi = self
            .pages
            .partition_point(|&(_, first, _)| first < rows.end);
        let page = |i: usize| {
            self.pages
                .get(i)
                .map_or_else(|| self.pages.last().map_or(0, |p| p.0 + 1), |p| p.0)
        };
        format!(
            " AND ctid >= '({},0)'::tid AND ctid < '({},0)'::tid",
            page(lo),
            page(hi)
        )
    }

    fn parse(text: &str) -> Option<PageMap> {
        let pages = text
            .lines()
            .map(|l| {
                let mut f = l.split_whitespace().map(|v| v.parse::<u64>().ok());
                Some((f.next()??, f.next()??, f.next()??))
            })
            .collect::<Option<Vec<_>>>()?;
        Some(PageMap { pages })
    }

    fn render(&self) -> String {
        self.pages
            .iter()
            .map(|(p, a, b)| format!("{p} {a} {b}\n"))
            .collect()
    }
}

/// PostgreSQL set up for a table.
pub struct PgPeer {
    bins: Binaries,
    base: PathBuf,
    pages: Arc<PageMap>,
    sql: SqlFor,
    table_bytes: u64,
    regime: Regime,
    use_cgroups: bool,
    version: String,
}

impl PgPeer {
    /// Fails unless PostgreSQL can run here: the server binaries (`initdb`,
    /// `postgres`), `sh` and `test` (every server command goes through `sh -c exec`),
    /// and as root `chown` and `setpriv` (the server runs as the `postgres` user). Cheap;
    /// meant for before the dataset and the calibration.
    pub fn check_installed() -> Result<(), PeerError> {
        for program in ["sh", "test"] {
            sys::require_program(PEER, program)?;
        }
        if sys::is_root() {
            for program in ["chown", "setpriv"] {
                sys::require_program(PEER, program)?;
            }
        }
        find_binaries().map(|_| ())
    }

    /// Loads `table` into a server's heap under the cache unless done before.
    pub fn prepare(setup: &PeerSetup<'_>) -> Result<PgPeer, PeerError> {
        let PeerSetup {
            table,
            cache,
            ref sql,
            table_bytes,
            regime,
            use_cgroups,
        } = *setup;
        let sql = sql.clone();
        let bins = find_binaries()?;
        let base = server_base(cache)?;
        let done = base.join("lineitem.done");
        let pages_file = base.join("pages.txt");
        let key = format!("{} rows {}\n", table.dir().display(), table.rows());
        let cached = std::fs::read_to_string(&done).ok().as_deref() == Some(key.as_str());
        let pages = match cached
            .then(|| std::fs::read_to_string(&pages_file).ok())
            .flatten()
            .and_then(|t| PageMap::parse(&t))
        {
            Some(p) => p,
            None => {
                let p = load(&bins, &base, table)?;
                std::fs::write(&pages_file, p.render())
                    .map_err(|e| PeerError::io(&pages_file, e))?;
                std::fs::write(&done, &key).map_err(|e| PeerError::io(&done, e))?;
                p
            }
        };
        let version = Command::new(&bins.postgres)
            .arg("--version")
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
            .unwrap_or_default();
        Ok(PgPeer {
            bins,
            base,
            pages: Arc::new(pages),
            sql,
            table_bytes,
            regime,
            use_cgroups,
            version,
        })
    }

    pub fn version(&self) -> &str {
        &self.version
    }

    /// The server's data directory (what a full scan may read).
    pub fn files(&self) -> PathBuf {
        self.base.join("data").join("base")
    }

    /// A fresh server (cold shared buffers) with one connection per stream.
    pub fn start(&self, setup: PolicySetup<'_>) -> Result<Box<dyn PolicyRun>, PeerError> {
        let buffer = run::buffer_bytes(&setup, self.table_bytes);
        let streams = setup.params.streams;
        let memory = buffer + PG_SLACK_BYTES + PG_SLACK_PER_BACKEND_BYTES * streams as u64;
        let cgroup = run::confine(
            "postgres",
            self.regime,
            self.use_cgroups,
            setup.bandwidth_mb_s,
            &self.files(),
            memory,
        )?;
        let settings = vec![
            ("shared_buffers", format!("{}kB", (buffer / 1024).max(128))),
            ("max_connections", (streams + EXTRA_CONNECTIONS).to_string()),
            ("jit", "off".to_string()),
            ("autovacuum", "off".to_string()),
            ("huge_pages", "off".to_string()),
        ];
        let server = Server::start(&self.bins, &self.base, &settings, cgroup.as_deref())?;
        let clients = (0..streams)
            .map(|_| server.connect())
            .collect::<Result<Vec<_>, _>>()?;
        let counters = Counters::new(server.pid());
        Ok(Box::new(PeerRun {
            engine: PgEngine {
                clients: Mutex::new(clients),
                server,
                pages: Arc::clone(&self.pages),
                sql: Arc::clone(&self.sql),
            },
            counters,
            cgroup,
            // PostgreSQL reads 8 KB pages and relies on the kernel's readahead for
            // sequential scans; without it every read waits for the disk. Its page
            // cache stays capped by its cgroup's slack instead (docs/performance.md).
            no_page_cache: None,
        }))
    }
}

fn load(bins: &Binaries, base: &Path, table: &Table) -> Result<PageMap, PeerError> {
    init_data_dir(bins, base)?;
    let settings = vec![
        ("shared_buffers", "256MB".to_string()),
        ("maintenance_work_mem", "256MB".to_string()),
        ("wal_level", "minimal".to_string()),
        ("max_wal_senders", "0".to_string()),
        ("fsync", "off".to_string()),
        ("jit", "off".to_string()),
        ("autovacuum", "off".to_string()),
    ];
    let server = Server::start(bins, base, &settings, None)?;
    fill(&server, table)
}

/// A fresh, empty cluster in `base/data`, replacing any there.
fn init_data_dir(bins: &Binaries, base: &Path) -> Result<(), PeerError> {
    let data = base.join("data");
    if data.exists() {
        std::fs::remove_dir_all(&data).map_err(|e| PeerError::io(&data, e))?;
    }
    own_dir(base)?;
    let out = server_command("", &bins.initdb)
        .arg("-D")
        .arg(&data)
        .args([
            "-U",
            USER,
            "-A",
            "trust",
            "-E",
            "UTF8",
            "--locale=C",
            "--no-sync",
        ])
        .output()
        .map_err(|e| PeerError::engine(PEER, format!("initdb: {e}")))?;
    if !out.status.success() {
        return Err(PeerError::engine(
            PEER,
            format!("initdb failed: {}", String::from_utf8_lossy(&out.stderr)),
        ));
    }
    Ok(())
}

/// Creates the table in `server` and copies `table`'s rows into it; its page map.
fn fill(server: &Server, table: &Table) -> Result<PageMap, PeerError> {
    let mut client = server.connect()?;
    // One transaction: created and filled together (no WAL with wal_level=minimal),
    // rows in load order.
    let mut tx = client.transaction()?;
    tx.batch_execute(&export::create_table_sql(
        table,
        TABLE,
        Dialect::Postgres,
        RowNumber::Appended,
    ))?;
    {
        let mut writer = tx.copy_in(&format!(
            "COPY {TABLE} FROM STDIN (FORMAT text, DELIMITER '|')"
        ))?;
        let mut buffered = std::io::BufWriter::with_capacity(1 << 20, &mut writer);
        export::write_text(table, &mut buffered, RowNumber::Appended)?;
        drop(buffered);
        writer.finish()?;
    }
    tx.commit()?;
    // Separate statements: VACUUM cannot run inside the implicit transaction of a
    // multi-statement string.
    client.batch_execute(&format!("VACUUM (FREEZE, ANALYZE) {TABLE}"))?;
    client.batch_execute("CHECKPOINT")?;
    let rows = simple_rows(
        &mut client,
        &format!(
        "SELECT (ctid::text::point)[0]::bigint AS page, min({ROWID_COLUMN}), max({ROWID_COLUMN}) \
         FROM {TABLE} GROUP BY 1 ORDER BY 1"
    ),
    )?;
    let mut pages = Vec::with_capacity(rows.len());
    let mut expected_first = 0u64;
    for row in &rows {
        let num = |i: usize| {
            row.get(i)
                .cloned()
                .flatten()
                .and_then(|v| v.parse::<u64>().ok())
        };
        let (Some(page), Some(first), Some(last)) = (num(0), num(1), num(2)) else {
            return Err(PeerError::engine(PEER, format!("bad page map row {row:?}")));
        };
        // The heap must hold the rows in load order: every page continues the last.
        if first != expected_first || last < first {
            return Err(PeerError::engine(PEER, format!(
                "the heap is not in row order: page {page} holds rows {first}..={last}, expected to start at {expected_first}"
            )));
        }
        expected_first = last + 1;
        pages.push((page, first, last));
    }
    if expected_first != table.rows() {
        return Err(PeerError::engine(
            PEER,
            format!("loaded {expected_first} rows of {}", table.rows()),
        ));
    }
    Ok(PageMap { pages })
}

fn simple_rows(client: &mut Client, sql: &str) -> Result<Vec<RawRow>, PeerError> {
    let mut rows = Vec::new();
    for message in client.simple_query(sql)? {
        if let SimpleQueryMessage::Row(row) = message {
            rows.push(
                (0..row.len())
                    .map(|i| row.get(i).map(str::to_string))
                    .collect(),
            );
        }
    }
    Ok(rows)
}

/// Runs the benchmark's queries on a server, one connection per concurrent query.
pub struct PgEngine {
    clients: Mutex<Vec<Client>>,
    server: Server,
    pages: Arc<PageMap>,
    sql: SqlFor,
}

impl QueryEngine for PgEngine {
    fn run(&self, q: &QueryInstance) -> anyhow::Result<QueryOutput> {
        let sql = peer_sql(&(self.sql)(q), &q.rows, &self.pages.tid_range(&q.rows))?;
        let client = self.clients.lock().ok().and_then(|mut c| c.pop());
        let mut client = match client {
            Some(c) => c,
            None => self.server.connect()?,
        };
        let raw = simple_rows(&mut client, &sql)?;
        if let Ok(mut pool) = self.clients.lock() {
            pool.push(client);
        }
        Ok(QueryOutput {
            rows: canonical(q, &raw)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A server left running by a killed run holds the data directory and answers on
    /// the socket: a new run must refuse to use it rather than measure it.
    #[test]
    fn a_server_this_run_did_not_start_is_never_used() {
        let Ok(bins) = find_binaries() else {
            assert!(
                std::env::var_os("COOPSCAN_REQUIRE_PEERS").is_none(),
                "PostgreSQL is required (COOPSCAN_REQUIRE_PEERS)"
            );
            eprintln!("skipped: PostgreSQL is not installed");
            return;
        };
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().join("pg");
        init_data_dir(&bins, &base).unwrap();
        let settings = [("shared_buffers", "16MB".to_string())];
        let orphan = Server::start(&bins, &base, &settings, None).unwrap();
        let mut client = orphan.connect().unwrap();
        orphan.check_ours(&mut client).unwrap();
        // What a new run sees when its own postmaster has not (or no longer) taken the
        // socket: another process is its child, the old server answers.
        let ours = Server {
            child: Command::new("sleep").arg("30").spawn().unwrap(),
            socket_dir: orphan.socket_dir.clone(),
            log: orphan.log.clone(),
            record: None,
        };
        let mut client = ours.connect().unwrap();
        let err = ours.check_ours(&mut client).unwrap_err().to_string();
        assert!(err.contains("did not start"), "{err}");
        // A whole start on the orphan's files fails too, whichever comes first: its
        // postmaster exiting on the lock, or the check.
        let again = Server::start(&bins, &base, &settings, None);
        assert!(again.is_err(), "a second server on the same files was used");
    }

    #[test]
    fn a_row_range_maps_to_the_pages_holding_it() {
        // Pages 0..3 hold rows 0..=9, 10..=19, 20..=29.
        let map = PageMap::parse("0 0 9\n1 10 19\n2 20 29\n").unwrap();
        let tid = |a, b| map.tid_range(&(a..b));
        assert_eq!(
            tid(0, 30),
            " AND ctid >= '(0,0)'::tid AND ctid < '(3,0)'::tid"
        );
        assert_eq!(
            tid(10, 20),
            " AND ctid >= '(1,0)'::tid AND ctid < '(2,0)'::tid"
        );
        assert_eq!(
            tid(9, 11),
            " AND ctid >= '(0,0)'::tid AND ctid < '(2,0)'::tid"
        );
        assert_eq!(
            tid(25, 26),
            " AND ctid >= '(2,0)'::tid AND ctid < '(3,0)'::tid"
        );
        assert_eq!(PageMap::parse(&map.render()).unwrap().pages, map.pages);
        assert!(PageMap::parse("0 0\n").is_none());
    }
}
