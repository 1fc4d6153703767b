//! What a benchmark changes on the machine beyond its own files — a disk's readahead,
//! cgroups, a PostgreSQL server — written down before it is made, so that nothing
//! outlives the run that made it. Cleanup used to live only in `Drop`: Ctrl-C, SIGTERM
//! (what `timeout` and CI send) or SIGKILL left the disk's `read_ahead_kb` at 0 (every
//! process on the machine slowed), `coopscan-*` cgroups, and an orphaned PostgreSQL
//! server that the next run then measured in place of its own.
//!
//! Each change is one small file, `DIR/PID-N.change` (a [`Change`] in JSON), written
//! before the change and removed once it is undone ([`Record`]). A run that starts
//! undoes the records of processes that no longer run ([`init`]); a run told to stop by
//! SIGINT or SIGTERM undoes its own before it exits ([`undo_own`], called from the
//! signal thread the benchmark installs). Without [`init`] (a library caller, the unit
//! tests) nothing is written and `Drop` alone cleans up, as before.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::error::PeerError;

/// One change to the machine, as its undo needs it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Change {
    /// A control file (a disk's `read_ahead_kb`) changed from `original`.
    Setting { control: PathBuf, original: String },
    /// A cgroup directory created.
    Cgroup { dir: PathBuf },
    /// A server started: its pid, and the program it runs (so a reused pid is left
    /// alone).
    Process { pid: u32, program: PathBuf },
}

/// How long an undone server gets to shut down before it is killed.
const STOP_GRACE: Duration = Duration::from_secs(20);
const RECORD_SUFFIX: &str = "change";

static JOURNAL: OnceLock<PathBuf> = OnceLock::new();
static NEXT: AtomicU64 = AtomicU64::new(0);

/// Starts keeping records in `dir` and undoes those left by processes that no longer
/// run; returns a line per change undone (or that could not be). Later calls keep the
/// first directory.
pub fn init(dir: &Path) -> Result<Vec<String>, PeerError> {
    std::fs::create_dir_all(dir).map_err(|e| PeerError::io(dir, e))?;
    let dir = JOURNAL.get_or_init(|| dir.to_path_buf());
    let stale: Vec<PathBuf> = records(dir)?
        .into_iter()
        .filter(|(pid, _)| !alive(*pid))
        .map(|(_, path)| path)
        .collect();
    Ok(undo_files(&stale))
}

/// Undoes every change this process recorded (the signal path: no `Drop` will run).
pub fn undo_own() -> Vec<String> {
    let Some(dir) = JOURNAL.get() else {
        return Vec::new();
    };
    let own = std::process::id();
    let mine: Vec<PathBuf> = records(dir)
        .unwrap_or_default()
        .into_iter()
        .filter(|(pid, _)| *pid == own)
        .map(|(_, path)| path)
        .collect();
    undo_files(&mine)
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

/// Writes `change` down before it is made; an empty record without a journal.
pub fn record(change: &Change) -> Result<Record, PeerError> {
    let Some(dir) = JOURNAL.get() else {
        return Ok(Record { path: None });
    };
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let path = dir.join(format!("{}-{n}.{RECORD_SUFFIX}", std::process::id()));
    let text = serde_json::to_string(change)
        .map_err(|e| PeerError::engine("journal", format!("{change:?}: {e}")))?;
    std::fs::write(&path, text).map_err(|e| PeerError::io(&path, e))?;
    Ok(Record { path: Some(path) })
}

/// Every record in `dir`, with the pid that wrote it.
fn records(dir: &Path) -> Result<Vec<(u32, PathBuf)>, PeerError> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(|e| PeerError::io(dir, e))? {
        let path = entry.map_err(|e| PeerError::io(dir, e))?.path();
        let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
            continue;
        };
        let Some(stem) = name.strip_suffix(&format!(".{RECORD_SUFFIX}")) else {
            continue;
        };
        if let Some(pid) = stem.split('-').next().and_then(|p| p.parse().ok()) {
            out.push((pid, path));
        }
    }
    Ok(out)
}

/// Undoes the changes in `files`, servers first (a cgroup empties when its server is
/// gone), then cgroups, then settings; removes each record whose undo succeeded.
fn undo_files(files: &[PathBuf]) -> Vec<String> {
    let mut changes: Vec<(Change, &PathBuf)> = files
        .iter()
        .filter_map(|path| {
            let text = std::fs::read_to_string(path).ok()?;
            Some((serde_json::from_str(&text).ok()?, path))
        })
        .collect();
    changes.sort_by_key(|(change, _)| match change {
        Change::Process { .. } => 0,
        Change::Cgroup { .. } => 1,
        Change::Setting { .. } => 2,
    });
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
        })
        .collect()
}

/// Undoes one change; what was done, or why it could not be.
pub fn undo(change: &Change) -> Result<String, String> {
    match change {
        Change::Setting { control, original } => {
            std::fs::write(control, original).map_err(|e| e.to_string())?;
            Ok(format!("restored {} to {original}", control.display()))
        }
        Change::Cgroup { dir } => {
            if dir.exists() {
                std::fs::remove_dir(dir).map_err(|e| e.to_string())?;
                return Ok(format!("removed the cgroup {}", dir.display()));
            }
            Ok(format!("the cgroup {} was already gone", dir.display()))
        }
        Change::Process { pid, program } => stop_process(*pid, program),
    }
}

/// Stops `pid` if it still runs `program`: SIGINT (PostgreSQL's fast shutdown), then
/// SIGKILL after [`STOP_GRACE`].
fn stop_process(pid: u32, program: &Path) -> Result<String, String> {
    if !alive(pid) || !runs(pid, program) {
        return Ok(format!("the server {pid} was already gone"));
    }
    let raw = i32::try_from(pid).map_err(|e| e.to_string())?;
    let target = rustix::process::Pid::from_raw(raw).ok_or("pid 0")?;
    let _ = rustix::process::kill_process(target, rustix::process::Signal::INT);
    let deadline = Instant::now() + STOP_GRACE;
    while alive(pid) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    if alive(pid) {
        let _ = rustix::process::kill_process(target, rustix::process::Signal::KILL);
        return Ok(format!("killed the server {pid} ({})", program.display()));
    }
    Ok(format!("stopped the server {pid} ({})", program.display()))
}

/// Whether `pid` runs and is not a zombie.
pub(crate) fn alive(pid: u32) -> bool {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return false;
    };
    let state = stat
        .rfind(')')
        .and_then(|i| stat[i + 1..].split_whitespace().next());
    !matches!(state, Some("Z" | "X"))
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

    #[test]
    fn a_change_round_trips_and_undoes() {
        let dir = tempfile::tempdir().unwrap();
        let control = dir.path().join("read_ahead_kb");
        std::fs::write(&control, "0").unwrap();
        let change = Change::Setting {
            control: control.clone(),
            original: "8192".into(),
        };
        let text = serde_json::to_string(&change).unwrap();
        assert_eq!(serde_json::from_str::<Change>(&text).unwrap(), change);
        let path = dir.path().join("1-0.change");
        std::fs::write(&path, text).unwrap();
        let group = dir.path().join("coopscan-test-group");
        std::fs::create_dir(&group).unwrap();
        let cgroup = dir.path().join("1-1.change");
        let text = serde_json::to_string(&Change::Cgroup { dir: group.clone() }).unwrap();
        std::fs::write(&cgroup, text).unwrap();
        let lines = undo_files(&[path.clone(), cgroup.clone()]);
        assert_eq!(std::fs::read_to_string(&control).unwrap(), "8192");
        assert!(
            !group.exists() && !path.exists() && !cgroup.exists(),
            "{lines:?}"
        );
    }

    #[test]
    fn a_process_that_runs_another_program_is_left_alone() {
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let pid = child.id();
        assert!(alive(pid));
        // Recorded as a server, but it runs `sleep`: a reused pid, not ours to stop.
        let line = stop_process(pid, Path::new("/usr/lib/postgresql/bin/postgres")).unwrap();
        assert!(alive(pid), "{line}");
        let sleep = std::fs::read_link(format!("/proc/{pid}/exe")).unwrap();
        let line = stop_process(pid, &sleep).unwrap();
        assert!(line.starts_with("stopped"), "{line}");
        let _ = child.wait();
        assert!(!alive(pid));
    }
}
