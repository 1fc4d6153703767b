//! The writer's lock: one writer per table directory at a time.
//!
//! An exclusive `flock` on `PARENT/.NAME.lock`, a file beside the table (not inside it:
//! the table directory itself is replaced on commit). `flock` locks die with their
//! process, so a killed writer never leaves a stale lock. The lock file is removed on
//! release; a writer that opened it just before that removal would hold a lock on an
//! unlinked file, so after locking we check that the path still names our file and
//! start over if not.

use std::fs::{File, OpenOptions};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use crate::error::{Result, StorageError};

/// Times to retry when the lock file was replaced between open and lock (each retry
/// means another writer finished meanwhile; more than a few means something odd).
const LOCK_ATTEMPTS: usize = 8;

pub(crate) struct TableLock {
    path: PathBuf,
    /// Holds the lock; closing it releases the lock.
    _file: File,
}

/// `PARENT/.NAME` + `suffix` for the table directory `target`: the lock file and the
/// writer's work directory live beside the table.
pub(crate) fn beside(target: &Path, suffix: &str) -> Result<PathBuf> {
    let name = target.file_name().ok_or_else(|| {
        StorageError::Invalid(format!("{} does not name a directory", target.display()))
    })?;
    let parent = match target.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let mut n = std::ffi::OsString::from(".");
    n.push(name);
    n.push(suffix);
    Ok(parent.join(n))
}

impl TableLock {
    /// The writer's lock of the table directory `target`, without waiting: what a
    /// table writer holds, and what anything else that writes into the table takes.
    pub fn of_table(target: &Path) -> Result<TableLock> {
        TableLock::acquire(beside(target, ".lock")?)
    }

    /// Takes the lock at `path` without waiting; [`StorageError::Locked`] if another
    /// writer holds it.
    pub fn acquire(path: PathBuf) -> Result<TableLock> {
        for _ in 0..LOCK_ATTEMPTS {
            let file = OpenOptions::new()
                .create(true)
                .truncate(false)
                .read(true)
                .write(true)
                .open(&path)
                .map_err(|e| StorageError::io(&path, e))?;
            let locked =
                rustix::fs::flock(&file, rustix::fs::FlockOperation::NonBlockingLockExclusive);
            if let Err(errno) = locked {
                let err = std::io::Error::from(errno);
                if err.kind() == std::io::ErrorKind::WouldBlock {
                    return Err(StorageError::Locked { path });
                }
                return Err(StorageError::io(&path, err));
            }
            let ours = file.metadata().map_err(|e| StorageError::io(&path, e))?;
            let named = std::fs::metadata(&path).ok();
            if named.is_some_and(|m| m.dev() == ours.dev() && m.ino() == ours.ino()) {
                return Ok(TableLock { path, _file: file });
            }
        }
        Err(StorageError::Locked { path })
    }
}

impl Drop for TableLock {
    fn drop(&mut self) {
        // Unlink while still holding the lock (see the module comment); a failure
        // leaves a harmless empty file.
        let _ = std::fs::remove_file(&self.path);
    }
}
