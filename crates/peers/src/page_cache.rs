//! Keeping a peer's files out of the page cache while it runs, so that its memory for
//! data is its own buffer and nothing else (issue 11 item 2: "no engine gets a page
//! cache larger than the budget").
//!
//! coopscan reads with `O_DIRECT`; DuckDB 2.0 has no such setting (its Python build
//! rejects `use_direct_io`). A memory cgroup cannot cap the page cache alone: it charges
//! the peer's anonymous memory too, so its limit needs slack for the process (Python,
//! DuckDB's code and threads), and whatever slack the process leaves unused became page
//! cache (up to 112 MiB beyond the buffer). Instead, an [`Evictor`] drops the peer's
//! files from the page cache every [`EVICT_PERIOD`] (`POSIX_FADV_DONTNEED`), and the
//! disk's readahead is off meanwhile ([`ReadaheadOff`]): a page read ahead and dropped
//! before it was used would be read twice. Measured on a 202 MB DuckDB file, three scans
//! at a 100 MB/s throttle with a 30 MB `memory_limit`: with readahead off the disk read
//! exactly the bytes DuckDB asked for (638.4 MB for 638.7 MB of `read` calls); at the
//! kernel's default 128 KB window 6.6 % more, at this disk's 8 MiB 2×.

use crate::error::PeerError;
use crate::leftovers::{self, Change, Record};
use std::fs::File;
use std::num::NonZeroU64;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

/// How often the peer's files are dropped from the page cache. At the benchmark's
/// bandwidths (≤ 2 GB/s) at most a few MB arrive between two passes, and a pass over a
/// file with nothing cached costs microseconds.
pub const EVICT_PERIOD: Duration = Duration::from_millis(10);

/// A thread that drops `files` from the page cache every [`EVICT_PERIOD`] until it is
/// dropped.
pub struct Evictor {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Evictor {
    /// Starts evicting every regular file under `path` (a file or a directory tree).
    pub fn start(path: &Path) -> Result<Evictor, PeerError> {
        let files = crate::sys::files_under(path)?
            .into_iter()
            .map(|f| File::open(&f).map_err(|e| PeerError::io(&f, e)))
            .collect::<Result<Vec<File>, PeerError>>()?;
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let thread = std::thread::Builder::new()
            .name("page-cache-evictor".into())
            .spawn(move || {
                while !flag.load(Ordering::Relaxed) {
                    for f in &files {
                        // Best effort: a failed pass leaves pages cached for one more
                        // period, which the device check's bytes would show.
                        let _ = rustix::fs::fadvise(
                            f,
                            0,
                            None::<NonZeroU64>,
                            rustix::fs::Advice::DontNeed,
                        );
                    }
                    std::thread::sleep(EVICT_PERIOD);
                }
            })
            .map_err(|e| PeerError::io(path, e))?;
        Ok(Evictor {
            stop,
            thread: Some(thread),
        })
    }
}

impl Drop for Evictor {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// A disk's readahead set to 0 KB, restored to what it was on drop. It is the whole
/// disk's setting (`/sys/dev/block/M:m/queue/read_ahead_kb`): coopscan reads with
/// `O_DIRECT` and is unaffected, other processes on the machine read without readahead
/// while a peer runs. The change is recorded first (`leftovers`): a bench killed
/// meanwhile is undone by the next one, a bench stopped by a signal undoes it itself.
pub struct ReadaheadOff {
    control: PathBuf,
    original: String,
    /// Removed once the setting is restored; kept for the next run if it is not.
    record: Option<Record>,
}

impl ReadaheadOff {
    /// Readahead off for the disk `major:minor` (as [`crate::sys::disk_of`] names it).
    pub fn for_disk(disk: &str) -> Result<ReadaheadOff, PeerError> {
        ReadaheadOff::at(PathBuf::from(format!(
            "/sys/dev/block/{disk}/queue/read_ahead_kb"
        )))
    }

    /// Readahead off through the control file `control`.
    pub fn at(control: PathBuf) -> Result<ReadaheadOff, PeerError> {
        let original = std::fs::read_to_string(&control)
            .map_err(|e| PeerError::io(&control, e))?
            .trim()
            .to_string();
        let recording = leftovers::begin()?;
        let record = recording.record(&Change::Setting {
            control: control.clone(),
            original: original.clone(),
        })?;
        std::fs::write(&control, "0").map_err(|e| PeerError::io(&control, e))?;
        drop(recording);
        Ok(ReadaheadOff {
            control,
            original,
            record: Some(record),
        })
    }
}

impl Drop for ReadaheadOff {
    fn drop(&mut self) {
        if let Err(e) = std::fs::write(&self.control, &self.original) {
            eprintln!(
                "warning: could not restore {} to {}: {e}",
                self.control.display(),
                self.original
            );
            if let Some(record) = self.record.take() {
                record.keep();
            }
        }
    }
}

/// What keeps a confined peer's page cache at zero: the evictor, and readahead off.
pub struct NoPageCache {
    // Field order is drop order: stop evicting before readahead comes back.
    _evictor: Evictor,
    _readahead: ReadaheadOff,
}

impl NoPageCache {
    pub fn start(files: &Path, disk: &str) -> Result<NoPageCache, PeerError> {
        let readahead = ReadaheadOff::for_disk(disk)?;
        Ok(NoPageCache {
            _evictor: Evictor::start(files)?,
            _readahead: readahead,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::process::Command;

    /// Bytes of `path` in the page cache, by util-linux's `fincore` (mincore(2)).
    fn cached_bytes(path: &Path) -> Option<u64> {
        let out = Command::new("fincore")
            .args(["--bytes", "--noheadings", "--output", "RES"])
            .arg(path)
            .output()
            .ok()?;
        String::from_utf8(out.stdout).ok()?.trim().parse().ok()
    }

    fn read_all(path: &Path) {
        let mut buf = Vec::new();
        File::open(path).unwrap().read_to_end(&mut buf).unwrap();
    }

    fn settle() {
        std::thread::sleep(EVICT_PERIOD * 10);
    }

    #[test]
    fn files_read_while_the_evictor_runs_leave_the_page_cache() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("data");
        let mut f = File::create(&path).unwrap();
        f.write_all(&vec![7u8; 4 << 20]).unwrap();
        f.sync_all().unwrap();
        read_all(&path);
        let Some(before) = cached_bytes(&path) else {
            eprintln!("skipped: no fincore here");
            return;
        };
        if before == 0 {
            eprintln!("skipped: this file system does not cache reads (tmpfs pages stay)");
            return;
        }
        let evictor = Evictor::start(dir.path()).unwrap();
        settle();
        assert_eq!(cached_bytes(&path), Some(0), "dropped once running");
        read_all(&path);
        settle();
        assert_eq!(cached_bytes(&path), Some(0), "dropped again after a read");
        drop(evictor);
        read_all(&path);
        settle();
        assert!(
            cached_bytes(&path).unwrap() > 0,
            "cached again once stopped"
        );
    }

    #[test]
    fn readahead_is_zero_while_held_and_restored_after() {
        let dir = tempfile::tempdir().unwrap();
        let control = dir.path().join("read_ahead_kb");
        std::fs::write(&control, "8192\n").unwrap();
        let off = ReadaheadOff::at(control.clone()).unwrap();
        assert_eq!(std::fs::read_to_string(&control).unwrap(), "0");
        drop(off);
        assert_eq!(std::fs::read_to_string(&control).unwrap(), "8192");
    }

    #[test]
    fn a_missing_control_file_is_an_error_not_a_panic() {
        let dir = tempfile::tempdir().unwrap();
        assert!(ReadaheadOff::at(dir.path().join("absent")).is_err());
        assert!(Evictor::start(&dir.path().join("absent")).is_err());
    }
}
