//! Writing a table beside its destination and swapping it in.
//!
//! ```text
//!  PARENT/.NAME.lock   flock: one writer at a time (lock.rs)
//!  PARENT/.NAME.tmp/   the new table, written and fsynced here
//!  PARENT/NAME/        the table readers see: the old one until the swap
//! ```
//! Commit fsyncs the new directory, then exchanges it with the destination in one
//! `renameat2(RENAME_EXCHANGE)` (or, where the file system lacks it, two renames),
//! fsyncs the parent and deletes the old table. Killed at any moment, the destination
//! holds the old table or the new one, complete — never a mix, never nothing (with
//! the two-rename fallback, a window between the renames leaves the old table at
//! `.NAME.tmp`). A writer that fails or is dropped removes its `.NAME.tmp`; one that
//! was killed leaves it for the next writer, which removes it under the lock.

use std::path::{Path, PathBuf};

use super::lock::{beside, TableLock};
use crate::error::{Result, StorageError};
use crate::manifest::{sync_dir, Manifest};

pub(crate) struct Staging {
    target: PathBuf,
    work: PathBuf,
    parent: PathBuf,
    /// Held until the staging is committed or dropped.
    _lock: TableLock,
    committed: bool,
}

impl Staging {
    /// Locks `target`, checks that it may be written (absent, empty, or a table and
    /// `overwrite`) and creates a fresh work directory beside it.
    pub fn begin(target: &Path, overwrite: bool) -> Result<Staging> {
        let lock_path = beside(target, ".lock")?;
        let parent = lock_path
            .parent()
            .map_or_else(|| PathBuf::from("."), Path::to_path_buf);
        std::fs::create_dir_all(&parent).map_err(|e| StorageError::io(&parent, e))?;
        let lock = TableLock::acquire(lock_path)?;
        check_target(target, overwrite)?;
        let work = beside(target, ".tmp")?;
        if work.exists() {
            // Left by a writer that was killed; we hold the lock, so it is no one's.
            std::fs::remove_dir_all(&work).map_err(|e| StorageError::io(&work, e))?;
        }
        std::fs::create_dir(&work).map_err(|e| StorageError::io(&work, e))?;
        Ok(Staging {
            target: target.to_path_buf(),
            work,
            parent,
            _lock: lock,
            committed: false,
        })
    }

    /// Where the new table's files go.
    pub fn dir(&self) -> &Path {
        &self.work
    }

    /// Makes the new table the destination's content, durably; deletes the old one.
    pub fn commit(mut self) -> Result<()> {
        sync_dir(&self.work)?;
        if self.target.exists() {
            swap(&self.work, &self.target)?;
            sync_dir(&self.parent)?;
            // `work` now holds the old table (or the empty directory it replaced).
            std::fs::remove_dir_all(&self.work).map_err(|e| StorageError::io(&self.work, e))?;
        } else {
            std::fs::rename(&self.work, &self.target)
                .map_err(|e| StorageError::io(&self.target, e))?;
        }
        sync_dir(&self.parent)?;
        self.committed = true;
        Ok(())
    }
}

impl Drop for Staging {
    fn drop(&mut self) {
        if !self.committed {
            let _ = std::fs::remove_dir_all(&self.work);
        }
    }
}

/// The destination must be absent, an empty directory, or (with `overwrite`) a table.
/// Anything else is someone's files, which a swap would delete.
fn check_target(target: &Path, overwrite: bool) -> Result<()> {
    let meta = match std::fs::symlink_metadata(target) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(StorageError::io(target, e)),
        Ok(m) => m,
    };
    if Manifest::path(target).exists() {
        if overwrite {
            return Ok(());
        }
        return Err(StorageError::Invalid(format!(
            "{} already holds a table (use overwrite)",
            target.display()
        )));
    }
    let empty = meta.is_dir()
        && std::fs::read_dir(target)
            .map_err(|e| StorageError::io(target, e))?
            .next()
            .is_none();
    if empty {
        Ok(())
    } else {
        Err(StorageError::Invalid(format!(
            "{} exists and is not a coopscan table; refusing to replace it",
            target.display()
        )))
    }
}

/// Exchanges two directories atomically where the file system can.
fn swap(a: &Path, b: &Path) -> Result<()> {
    use rustix::fs::{renameat_with, RenameFlags, CWD};
    let err = match renameat_with(CWD, a, CWD, b, RenameFlags::EXCHANGE) {
        Ok(()) => return Ok(()),
        Err(errno) => std::io::Error::from(errno),
    };
    if !matches!(err.raw_os_error(), Some(libc::EINVAL | libc::ENOSYS)) {
        return Err(StorageError::io(b, err));
    }
    // No RENAME_EXCHANGE here: move the old table aside into `a`'s place, then the new
    // one in. `a` is renamed first to a name of its own so neither rename overwrites.
    let new = a.with_extension("new");
    std::fs::rename(a, &new).map_err(|e| StorageError::io(a, e))?;
    std::fs::rename(b, a).map_err(|e| StorageError::io(b, e))?;
    std::fs::rename(&new, b).map_err(|e| StorageError::io(b, e))
}
