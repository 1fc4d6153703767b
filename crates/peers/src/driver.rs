//! A peer engine behind a Python driver process that speaks JSON lines over stdin and
//! stdout: a request `{"id", "sql"}` per line, a response `{"id", "rows"}` or
//! `{"id", "error"}` per line, in any order. The driver serves each request on its own
//! thread, so concurrent streams run concurrently (DuckDB and DataFusion's bindings
//! release Python's lock while a query runs). Its first line (id 0) is the engine's
//! version. The Rust `duckdb` crate would compile DuckDB's C++ (`bundled`), far too slow
//! a build for 2-core CI machines; DataFusion's Python package is the one a DataFusion
//! user over Parquet files has.

use crate::canonical::RawRow;
use crate::error::PeerError;
use crate::leftovers::{self, Change, Record};
use crate::proc_stat;
use crate::sys::Cgroup;
use serde::Deserialize;
use std::collections::HashMap;
use std::ffi::OsString;
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How long a driver gets to exit after its stdin closes before it is killed.
const EXIT_GRACE: Duration = Duration::from_secs(5);
/// Bytes of a driver's stderr kept: the last lines say why it died.
const STDERR_TAIL_BYTES: usize = 8192;

/// The Python side every driver shares: `emit`, `cell` and the request loop. A
/// driver's script defines `run(sql) -> rows` (each row a sequence of Python values)
/// and `VERSION` before this text.
pub const SERVE_LOOP: &str = r#"
import sys, json, threading, decimal
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
        rows = run(req["sql"])
        emit({"id": req["id"], "rows": [[cell(v) for v in r] for r in rows]})
    except Exception as e:
        emit({"id": req["id"], "error": type(e).__name__ + ": " + str(e)})
emit({"id": 0, "rows": [[VERSION]]})
for line in sys.stdin:
    if line.strip():
        threading.Thread(target=serve, args=(json.loads(line),), daemon=True).start()
"#;

/// What a driver runs and how to say that its engine is missing.
pub struct DriverSpec {
    /// The engine's name in errors (`DuckDB`).
    pub peer: &'static str,
    /// How to install it.
    pub install: &'static str,
    /// The Python module whose absence means the engine is not installed.
    pub module: &'static str,
    /// The Python script (ending with [`SERVE_LOOP`]).
    pub script: String,
    /// Its arguments (`sys.argv[1:]`).
    pub args: Vec<OsString>,
}

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
    peer: &'static str,
    install: &'static str,
    module: &'static str,
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
    /// Starts `python3` on `spec` (inside `cgroup` if given) and waits for it to be
    /// ready.
    pub fn start(spec: &DriverSpec, cgroup: Option<&Cgroup>) -> Result<Driver, PeerError> {
        let join = cgroup.map(Cgroup::join_command).unwrap_or_default();
        // Spawned and written down as one (see `leftovers::begin`).
        let recording = leftovers::begin()?;
        let mut child = Command::new("sh")
            .arg("-c")
            .arg(format!("{join}exec \"$@\""))
            .arg("sh")
            .arg("python3")
            .arg("-c")
            .arg(&spec.script)
            .args(&spec.args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| PeerError::Missing {
                peer: spec.peer,
                why: format!("cannot run sh (which starts python3): {e}"),
                install: spec.install,
            })?;
        let stdout = child.stdout.take();
        let stderr_pipe = child.stderr.take();
        let stdin = child.stdin.take();
        let pending: Pending = Arc::default();
        let stderr = Arc::new(Mutex::new(String::new()));
        if let Some(pipe) = stderr_pipe {
            let stderr = Arc::clone(&stderr);
            std::thread::spawn(move || keep_tail(pipe, &stderr));
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
            peer: spec.peer,
            install: spec.install,
            module: spec.module,
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
            Ok(Err(e)) => Err(PeerError::engine(driver.peer, e)),
            Err(e) => Err(e),
        }
    }

    pub fn version(&self) -> &str {
        &self.version
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Runs `sql` and returns its rows (each cell as text). Callable from several
    /// threads at once: each request runs on its own driver thread.
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
                .map_err(|_| PeerError::engine(self.peer, "driver stdin lock poisoned"))?;
            let pipe = stdin.as_mut().ok_or_else(|| self.died())?;
            writeln!(pipe, "{line}")
                .and_then(|()| pipe.flush())
                .map_err(|_| self.died())?;
        }
        match rx.recv() {
            Ok(Ok(rows)) => Ok(rows),
            Ok(Err(e)) => Err(PeerError::engine(self.peer, e)),
            Err(_) => Err(self.died()),
        }
    }

    fn died(&self) -> PeerError {
        let tail = self.stderr.lock().map(|s| s.clone()).unwrap_or_default();
        if tail.contains(&format!("No module named '{}'", self.module)) {
            return PeerError::Missing {
                peer: self.peer,
                why: format!("the Python package {} is not installed", self.module),
                install: self.install,
            };
        }
        PeerError::engine(
            self.peer,
            format!("the driver process exited; its stderr:\n{tail}"),
        )
    }
}

/// Keeps the last [`STDERR_TAIL_BYTES`] of `pipe` in `tail`.
fn keep_tail(pipe: std::process::ChildStderr, tail: &Mutex<String>) {
    for line in BufReader::new(pipe).lines().map_while(Result::ok) {
        if let Ok(mut s) = tail.lock() {
            if s.len() > STDERR_TAIL_BYTES {
                let cut = s.len() - STDERR_TAIL_BYTES / 2;
                let cut = (cut..s.len()).find(|&i| s.is_char_boundary(i)).unwrap_or(0);
                s.drain(..cut);
            }
            s.push_str(&line);
            s.push('\n');
        }
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

/// Fails unless `python3` can import `module` (and `sh` is there to start it): cheap,
/// meant for before any setup.
pub fn check_module(
    peer: &'static str,
    module: &'static str,
    install: &'static str,
) -> Result<(), PeerError> {
    crate::sys::require_program(peer, "sh")?;
    let python = crate::sys::require_program(peer, "python3")?;
    let imported = Command::new(python)
        .args(["-c", &format!("import {module}")])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if imported {
        Ok(())
    } else {
        Err(PeerError::Missing {
            peer,
            why: format!(
                "the Python package {module} is not installed (`python3 -c 'import {module}'` \
                 failed)"
            ),
            install,
        })
    }
}
