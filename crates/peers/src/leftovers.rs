//! What a benchmark changes on the machine beyond its own files — a disk's readahead,
//! cgroups, a PostgreSQL server, a DuckDB driver confined in a cgroup — written down before it is made, so that nothing
//! outlives the run that made it. Cleanup used to live only in `Drop`: Ctrl-C, SIGTERM
//! (what `timeout` and CI send) or SIGKILL left the disk's `read_ahead_kb` at 0 (every
//! process on the machine slowed), `coopscan-*` cgroups, and an orphaned PostgreSQL
//! server that the next run then measured in place of its own.
//!
//! Each change is one small file, `DIR/PID-START-N.change` (a [`Change`] in JSON; START
//! is the process's start time, so a pid the kernel reuses is another process), written
//! before the change and removed once it is undone ([`Record`]). A run that starts
//! undoes the records of processes that no longer run ([`init`]); a run told to stop by
//! SIGINT or SIGTERM undoes its own before it exits ([`undo_own`], called from the
//! signal thread the benchmark installs; no record is written after that). Without
//! [`init`] (a library caller, the unit tests) nothing is written and `Drop` alone
//! cleans up, as before.
//!
//! A record is trusted only as far as its kind allows: a setting must be a disk's
//! `read_ahead_kb` under `/sys` set back to a number, a cgroup a `coopscan-*` directory
//! under `/sys/fs/cgroup`, a server a process with the recorded start time running the
//! recorded PostgreSQL program, a driver such a process running the recorded Python
//! inside a `coopscan-*` cgroup; anything else is reported and left alone.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::error::PeerError;
use crate::proc_stat;

/// One change to the machine, as its undo needs it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Change {
    /// A control file (a disk's `read_ahead_kb`) changed from `original`.
    Setting { control: PathBuf, original: String },
    /// A cgroup directory created.
    Cgroup { dir: PathBuf },
    /// A server started: its pid, start time and program (a reused pid is another
    /// process, left alone).
    Process {
        pid: u32,
        started: u64,
        program: PathBuf,
    },
    /// A DuckDB driver (Python) started inside a `coopscan-*` cgroup: a driver still
    /// running keeps its cgroup from being removed.
    Driver {
        pid: u32,
        started: u64,
        program: PathBuf,
    },
}

/// How long an undone server gets to shut down before it is killed.
const STOP_GRACE: Duration = Duration::from_secs(20);
/// How long a cgroup whose processes were stopped may take to empty.
const CGROUP_EMPTY_WAIT: Duration = Duration::from_secs(5);
const RECORD_SUFFIX: &str = "change";
/// How long a recorded server may take to exec from its starting shell into `postgres`.
const EXEC_WAIT: Duration = Duration::from_secs(10);
/// The programs between a spawned server's pid and `postgres` (`postgres::server_command`).
const EXEC_CHAIN: [&str; 4] = ["sh", "dash", "bash", "setpriv"];

static JOURNAL: OnceLock<PathBuf> = OnceLock::new();
static NEXT: AtomicU64 = AtomicU64::new(0);
/// Largest record read: a bench writes a few hundred bytes.
const MAX_RECORD_BYTES: u64 = 64 << 10;
/// Held while a record is written or this run's records are undone; `true` once the
/// run is stopping, after which nothing more may be recorded (a change made then would
/// escape the undo).
static STOPPING: Mutex<bool> = Mutex::new(false);

/// Starts keeping records in `dir` and undoes those left by processes that no longer
/// run; returns a line per change undone (or that could not be). Later calls keep the
/// first directory.
pub fn init(dir: &Path) -> Result<Vec<String>, PeerError> {
    std::fs::create_dir_all(dir).map_err(|e| PeerError::io(dir, e))?;
    let dir = JOURNAL.get_or_init(|| dir.to_path_buf());
    // Before this run records anything, every record is another process's: stale
    // unless that process (same pid and start time) still runs.
    let stale: Vec<PathBuf> = records(dir)?
        .into_iter()
        .filter(|(id, _)| !id.runs())
        .map(|(_, path)| path)
        .collect();
    Ok(undo_files(&stale))
}

/// Undoes every change this process recorded (the signal path: no `Drop` will run).
pub fn undo_own() -> Vec<String> {
    let mut stopping = STOPPING.lock().unwrap_or_else(|e| e.into_inner());
    *stopping = true;
    let Some(dir) = JOURNAL.get() else {
        return Vec::new();
    };
    let own = ProcessId::own();
    let mine: Vec<PathBuf> = records(dir)
        .unwrap_or_default()
        .into_iter()
        .filter(|(id, _)| Some(*id) == own)
        .map(|(_, path)| path)
        .collect();
    undo_files(&mine)
}

/// Never returns while this run is being stopped by a signal: the signal thread ends
/// the process once its undo is done. Called where the main thread would otherwise
/// finish: the undo itself stops servers the main thread is using, and the main thread
/// returning with that error first would exit and cut the undo short.
pub fn wait_while_stopping() {
    let stopping = STOPPING.lock().unwrap_or_else(|e| e.into_inner());
    if *stopping {
        drop(stopping);
        loop {
            std::thread::park();
        }
    }
}

/// A process as the kernel names it over time: pid and start time (clock ticks after
/// boot, `/proc/PID/stat` field 22).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct ProcessId {
    pid: u32,
    started: u64,
}

impl ProcessId {
    fn own() -> Option<ProcessId> {
        let pid = std::process::id();
        Some(ProcessId {
            pid,
            started: proc_stat::stat(pid)?.start_time,
        })
    }

    /// Whether this very process still runs (not a zombie, not a reused pid).
    fn runs(self) -> bool {
        proc_stat::stat(self.pid).is_some_and(|s| s.running() && s.start_time == self.started)
    }
}

/// A change written down; dropping it (once the change is undone) removes the record.
#[derive(Debug)]
pub struct Record {
    path: Option<PathBuf>,
}

impl Record {
    /// Leaves the record for the next run to undo (the undo did not succeed here).
    pub fn keep(mut self) {
        self.path = None;
    }
}

impl Drop for Record {
    fn drop(&mut self) {
        if let Some(path) = self.path.take() {
            let _ = std::fs::remove_file(path);
        }
    }
}

/// Holds the signal's undo off until dropped, so that a change and its record are made
/// as one: an undo run after a record but before its change (a cgroup) finds nothing
/// to undo and drops the record, and one run after a spawn but before its record
/// (a server) never hears of it; either change then outlived the run. Fails once the
/// run is stopping.
pub fn begin() -> Result<Recording, PeerError> {
    let stopping = STOPPING.lock().unwrap_or_else(|e| e.into_inner());
    if *stopping {
        return Err(PeerError::engine("journal", "the run is stopping"));
    }
    Ok(Recording { _held: stopping })
}

/// Changes being made and written down; see [`begin`].
pub struct Recording {
    _held: std::sync::MutexGuard<'static, bool>,
}

impl Recording {
    /// Writes `change` down before it is made (or, for a process, as soon as it has
    /// a pid); an empty record without a journal.
    pub fn record(&self, change: &Change) -> Result<Record, PeerError> {
        write_record(change)
    }
}

fn write_record(change: &Change) -> Result<Record, PeerError> {
    let Some(dir) = JOURNAL.get() else {
        return Ok(Record { path: None });
    };
    let own = ProcessId::own()
        .ok_or_else(|| PeerError::engine("journal", "no start time in /proc/self/stat"))?;
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let path = dir.join(format!("{}-{}-{n}.{RECORD_SUFFIX}", own.pid, own.started));
    let text = serde_json::to_string(change)
        .map_err(|e| PeerError::engine("journal", format!("{change:?}: {e}")))?;
    std::fs::write(&path, text).map_err(|e| PeerError::io(&path, e))?;
    Ok(Record { path: Some(path) })
}

/// Every record in `dir`, with the process that wrote it.
fn records(dir: &Path) -> Result<Vec<(ProcessId, PathBuf)>, PeerError> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(|e| PeerError::io(dir, e))? {
        let path = entry.map_err(|e| PeerError::io(dir, e))?.path();
        let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
            continue;
        };
        let Some(stem) = name.strip_suffix(&format!(".{RECORD_SUFFIX}")) else {
            continue;
        };
        let mut parts = stem.split('-').map(str::parse::<u64>);
        if let (Some(Ok(pid)), Some(Ok(started))) = (parts.next(), parts.next()) {
            if let Ok(pid) = u32::try_from(pid) {
                out.push((ProcessId { pid, started }, path));
            }
        }
    }
    Ok(out)
}

/// Undoes the changes in `files`, servers first (a cgroup empties when its server is
/// gone), then cgroups, then settings; removes each record whose undo succeeded.
fn undo_files(files: &[PathBuf]) -> Vec<String> {
    let mut lines = Vec::new();
    let mut changes: Vec<(Change, &PathBuf)> = Vec::new();
    for path in files {
        let parsed = coopscan_storage::read_regular_file(path, MAX_RECORD_BYTES)
            .map_err(|e| e.to_string())
            .and_then(|bytes| serde_json::from_slice(&bytes).map_err(|e| e.to_string()));
        match parsed {
            Ok(change) => changes.push((change, path)),
            Err(why) => lines.push(format!(
                "ignored the unreadable record {} ({why})",
                path.display()
            )),
        }
    }
    changes.sort_by_key(|(change, _)| match change {
        Change::Process { .. } | Change::Driver { .. } => 0,
        Change::Cgroup { .. } => 1,
        Change::Setting { .. } => 2,
    });
    lines.extend(
        changes
            .into_iter()
            .map(|(change, path)| match undo(&change) {
                Ok(line) => {
                    let _ = std::fs::remove_file(path);
                    line
                }
                Err(why) => format!(
                    "could not undo {change:?} ({why}); kept in {}",
                    path.display()
                ),
            }),
    );
    lines
}

/// Undoes one change; what was done, or why it could not be.
pub fn undo(change: &Change) -> Result<String, String> {
    plausible(change)?;
    match change {
        Change::Setting { control, original } => {
            std::fs::write(control, original).map_err(|e| e.to_string())?;
            Ok(format!("restored {} to {original}", control.display()))
        }
        Change::Cgroup { dir } => {
            if dir.exists() {
                remove_cgroup(dir).map_err(|e| e.to_string())?;
                return Ok(format!("removed the cgroup {}", dir.display()));
            }
            Ok(format!("the cgroup {} was already gone", dir.display()))
        }
        Change::Process {
            pid,
            started,
            program,
        } => {
            let id = ProcessId {
                pid: *pid,
                started: *started,
            };
            stop_process(id, program, Stop::Server)
        }
        Change::Driver {
            pid,
            started,
            program,
        } => {
            let id = ProcessId {
                pid: *pid,
                started: *started,
            };
            stop_process(id, program, Stop::ConfinedDriver)
        }
    }
}

/// Removes the cgroup directory `dir`, retrying for up to [`CGROUP_EMPTY_WAIT`] while
/// the kernel refuses it as busy: a stopped multi-threaded peer (DuckDB) reads as gone
/// once its leader thread has exited, while its other threads still leave the group.
pub(crate) fn remove_cgroup(dir: &Path) -> std::io::Result<()> {
    let deadline = Instant::now() + CGROUP_EMPTY_WAIT;
    loop {
        match std::fs::remove_dir(dir) {
            Ok(()) => return Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            // Only "busy" passes: the group still empties; anything else stays.
            Err(e) if e.kind() != std::io::ErrorKind::ResourceBusy => return Err(e),
            Err(e) if Instant::now() >= deadline => return Err(e),
            Err(_) => std::thread::sleep(Duration::from_millis(50)),
        }
    }
}

/// Refuses a record a bench never writes: the journal's directory may be writable by
/// others, and its records are acted on as root.
fn plausible(change: &Change) -> Result<(), String> {
    let ok = match change {
        Change::Setting { control, original } => {
            control.starts_with("/sys/")
                && control.file_name().is_some_and(|n| n == "read_ahead_kb")
                && !original.is_empty()
                && original.bytes().all(|b| b.is_ascii_digit())
        }
        Change::Cgroup { dir } => {
            dir.starts_with("/sys/fs/cgroup/")
                && dir
                    .file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with("coopscan-"))
        }
        Change::Process { program, .. } => program
            .file_name()
            .is_some_and(|n| n == "postgres" || n == "postmaster"),
        Change::Driver { program, .. } => program
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.starts_with("python")),
    };
    if ok {
        Ok(())
    } else {
        Err("not a change a benchmark makes; left alone".into())
    }
}

/// How a recorded process is stopped.
#[derive(Clone, Copy, Debug)]
enum Stop {
    /// SIGINT: PostgreSQL's fast shutdown.
    Server,
    /// SIGTERM, and only inside a `coopscan-*` cgroup: a record naming any other
    /// Python process is not acted on, however it got there.
    ConfinedDriver,
}

/// Stops the process if it is still the one recorded (same pid and start time) and
/// runs `program`: `how`'s signal, then SIGKILL after [`STOP_GRACE`].
fn stop_process(id: ProcessId, program: &Path, how: Stop) -> Result<String, String> {
    let pid = id.pid;
    if !id.runs() || !becomes(id, program, how) {
        return Ok(format!("the process {pid} was already gone"));
    }
    // Checked once it runs `program`: its starting shell joins the cgroup first.
    let signal = match how {
        Stop::Server => rustix::process::Signal::INT,
        Stop::ConfinedDriver if in_coopscan_cgroup(pid) => rustix::process::Signal::TERM,
        Stop::ConfinedDriver => {
            return Err(format!(
                "process {pid} is in no coopscan-* cgroup; left alone"
            ))
        }
    };
    let raw = i32::try_from(pid).map_err(|e| e.to_string())?;
    let target = rustix::process::Pid::from_raw(raw).ok_or("pid 0")?;
    let _ = rustix::process::kill_process(target, signal);
    let deadline = Instant::now() + STOP_GRACE;
    while proc_stat::running(pid) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    if proc_stat::running(pid) {
        let _ = rustix::process::kill_process(target, rustix::process::Signal::KILL);
        // Its cgroup can be removed only once it is gone.
        let deadline = Instant::now() + CGROUP_EMPTY_WAIT;
        while proc_stat::running(pid) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(50));
        }
        return Ok(format!("killed the process {pid} ({})", program.display()));
    }
    Ok(format!("stopped the process {pid} ({})", program.display()))
}

/// Whether `pid` belongs to a `coopscan-*` cgroup of any hierarchy (v1 or v2).
fn in_coopscan_cgroup(pid: u32) -> bool {
    let groups = std::fs::read_to_string(format!("/proc/{pid}/cgroup")).unwrap_or_default();
    groups.lines().any(|line| {
        line.rsplit(':')
            .next()
            .and_then(|path| path.rsplit('/').next())
            .is_some_and(|leaf| leaf.starts_with("coopscan-"))
    })
}

/// Whether the recorded process runs its program, waiting up to [`EXEC_WAIT`] while it
/// is still in the chain that starts it: a server or driver is recorded the moment it
/// is spawned, as `sh -c '... exec "$@"'` (and `setpriv` as root, or a pyenv shim), so a
/// run stopped right then finds the pid not yet running it. Reading that as "already
/// gone" left the server running once its exec finished.
fn becomes(id: ProcessId, program: &Path, how: Stop) -> bool {
    let deadline = Instant::now() + EXEC_WAIT;
    loop {
        let target = match how {
            Stop::Server => runs(id.pid, program),
            // `python3` on the search path may be a shim (pyenv's is a shell script)
            // that execs another file: any Python will do, the cgroup check decides.
            Stop::ConfinedDriver => runs_python(id.pid),
        };
        if target {
            return true;
        }
        if !id.runs() || !in_exec_chain(id.pid) || Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Whether `pid` runs one of the programs a server is started through.
fn in_exec_chain(pid: u32) -> bool {
    std::fs::read_link(format!("/proc/{pid}/exe")).is_ok_and(|exe| {
        exe.file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| EXEC_CHAIN.contains(&n))
    })
}

/// Whether `pid`'s executable is a Python interpreter.
fn runs_python(pid: u32) -> bool {
    std::fs::read_link(format!("/proc/{pid}/exe")).is_ok_and(|exe| {
        exe.file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.starts_with("python"))
    })
}

/// Whether `pid`'s executable is `program` (a pid the kernel reused runs another).
fn runs(pid: u32, program: &Path) -> bool {
    let exe = std::fs::read_link(format!("/proc/{pid}/exe"));
    let wanted = std::fs::canonicalize(program).unwrap_or_else(|_| program.to_path_buf());
    exe.is_ok_and(|exe| exe == wanted)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Records written under other paths than a bench's own are refused and kept, and
    /// an unreadable one is reported: the journal is acted on as root.
    #[test]
    fn only_what_a_bench_changes_is_undone() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("read_ahead_kb");
        std::fs::write(&target, "x").unwrap();
        let hostile = [
            Change::Setting {
                control: target.clone(),
                original: "8192".into(),
            },
            Change::Setting {
                control: "/sys/block/sda/queue/read_ahead_kb".into(),
                original: "root::0:0".into(),
            },
            Change::Cgroup {
                dir: dir.path().to_path_buf(),
            },
            Change::Process {
                pid: 1,
                started: 0,
                program: "/bin/sh".into(),
            },
        ];
        let mut files = Vec::new();
        for (n, change) in hostile.iter().enumerate() {
            let text = serde_json::to_string(change).unwrap();
            assert_eq!(&serde_json::from_str::<Change>(&text).unwrap(), change);
            let path = dir.path().join(format!("1-2-{n}.change"));
            std::fs::write(&path, text).unwrap();
            files.push(path);
        }
        let junk = dir.path().join("1-2-9.change");
        std::fs::write(&junk, "not json").unwrap();
        files.push(junk);
        let lines = undo_files(&files);
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "x", "{lines:?}");
        assert!(dir.path().exists());
        assert!(files.iter().all(|f| f.exists()), "refused records are kept");
        assert_eq!(lines.iter().filter(|l| l.contains("left alone")).count(), 4);
        assert!(lines.iter().any(|l| l.contains("unreadable")), "{lines:?}");
        // Names carry the writer's pid and start time.
        let found = records(dir.path()).unwrap();
        assert_eq!(found.len(), 5);
        assert!(found.iter().all(|(id, _)| id.pid == 1 && id.started == 2));
    }

    #[test]
    fn a_process_is_stopped_only_if_it_is_the_one_recorded() {
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let pid = child.id();
        let started = proc_stat::stat(pid).unwrap().start_time;
        let sleep = std::fs::read_link(format!("/proc/{pid}/exe")).unwrap();
        // Another start time: a reused pid, another process.
        let other = ProcessId {
            pid,
            started: started + 1,
        };
        stop_process(other, &sleep, Stop::Server).unwrap();
        assert!(proc_stat::running(pid));
        // The right process, but recorded as another program.
        let id = ProcessId { pid, started };
        stop_process(
            id,
            Path::new("/usr/lib/postgresql/bin/postgres"),
            Stop::Server,
        )
        .unwrap();
        assert!(proc_stat::running(pid));
        let line = stop_process(id, &sleep, Stop::Server).unwrap();
        assert_stopped(&line, &mut child);
    }

    /// A server is recorded as soon as it is spawned, while its pid still runs the
    /// shell that execs it: stopped then, it is stopped once it runs the program, not
    /// taken for gone (the shell waits here before its exec, as a cgroup join does).
    #[test]
    fn a_server_stopped_while_its_shell_still_starts_it_is_stopped() {
        let (_dir, program) = sleep_named("postgres");
        let mut child = std::process::Command::new("sh")
            .args(["-c", "sleep 0.3; exec \"$@\"", "sh"])
            .arg(&program)
            .arg("30")
            .spawn()
            .unwrap();
        let pid = child.id();
        let started = proc_stat::stat(pid).unwrap().start_time;
        let line = undo(&Change::Process {
            pid,
            started,
            program: program.clone(),
        })
        .unwrap();
        assert_stopped(&line, &mut child);
    }

    /// A driver record is acted on only while its process is inside a `coopscan-*`
    /// cgroup: a record naming another Python process is kept and the process left
    /// running; once the process is in such a group (where this test can make one), it
    /// is stopped.
    #[test]
    fn a_driver_is_stopped_only_inside_a_coopscan_cgroup() {
        let (_dir, program) = sleep_named("python3");
        let mut child = spawn_fresh(std::process::Command::new(&program).arg("30"));
        let pid = child.id();
        let change = Change::Driver {
            pid,
            started: proc_stat::stat(pid).unwrap().start_time,
            program: program.clone(),
        };
        let refused = undo(&change).unwrap_err();
        assert!(refused.contains("no coopscan-* cgroup"), "{refused}");
        assert!(proc_stat::running(pid));
        // The pids hierarchy (cgroup v1) or the unified one (v2), where writable.
        let parents = [
            "/sys/fs/cgroup/pids",
            "/sys/fs/cgroup/unified",
            "/sys/fs/cgroup",
        ];
        let group = parents.iter().find_map(|parent| {
            let group = Path::new(parent).join(format!("coopscan-test-{}", std::process::id()));
            std::fs::create_dir(&group).ok()?;
            if std::fs::write(group.join("cgroup.procs"), pid.to_string()).is_ok() {
                return Some(group);
            }
            let _ = std::fs::remove_dir(&group);
            None
        });
        if group.is_some() {
            assert_stopped(&undo(&change).unwrap(), &mut child);
        } else {
            eprintln!("no writable cgroup hierarchy here: the stop inside one is not tested");
            let _ = child.kill();
            let _ = child.wait();
        }
        if let Some(group) = group {
            std::fs::remove_dir(&group).unwrap();
        }
    }

    /// `line` says the process was stopped, and once reaped it no longer runs.
    fn assert_stopped(line: &str, child: &mut std::process::Child) {
        assert!(line.starts_with("stopped"), "{line}");
        let pid = child.id();
        let _ = child.wait();
        assert!(!proc_stat::running(pid));
    }

    /// Spawns a program this test process has just written. Another test thread's
    /// fork can still hold the copy's write descriptor until that child execs, and
    /// exec refuses a file open for writing ("Text file busy"): such a refusal is
    /// transient, so it is retried for a while.
    fn spawn_fresh(command: &mut std::process::Command) -> std::process::Child {
        const TRIES: u32 = 100;
        for _ in 1..TRIES {
            match command.spawn() {
                Err(e) if e.kind() == std::io::ErrorKind::ExecutableFileBusy => {
                    std::thread::sleep(std::time::Duration::from_millis(20));
                }
                spawned => return spawned.unwrap(),
            }
        }
        command.spawn().unwrap()
    }

    /// A copy of `sleep` named `name` (what the journal checks a process by), in a
    /// directory kept as long as the returned guard.
    fn sleep_named(name: &str) -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let program = dir.path().join(name);
        let sleep = crate::sys::find_program("sleep").expect("on the search path");
        std::fs::copy(sleep, &program).unwrap();
        (dir, program)
    }
}
