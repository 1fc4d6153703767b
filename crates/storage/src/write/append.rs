//! Bulk appends (2012 paper §2.1, "Bulk Appends"): new rows written as new pages after a
//! table's pages, and a new manifest that names them. A table on disk is a snapshot:
//! its manifest, the per-column page references of the paper, lists the pages of
//! every chunk. An append writes its rows as new chunks, each starting a new page (the
//! table's last page is never rewritten, so the old chunks stay as they are), and its
//! commit publishes a manifest of the old chunks plus the new ones.
//!
//! ```text
//!   begin     the manifest read is the base snapshot; pages are staged beside the
//!             table (PARENT/.NAME.append-ID/), numbered as they will stand after
//!             the base's pages
//!   commit    under the table's writer lock: the manifest must still be the base
//!             (else another append committed first: this one is refused, as the
//!             paper allows only one of two concurrent appenders to a snapshot to
//!             commit); the staged pages are copied to the ends of the table's
//!             files, synced, and the new manifest is renamed over the old one
//!   drop      the staged pages are removed (an append not committed leaves nothing)
//! ```
//!
//! A crash before the rename leaves the old manifest and, at most, pages past the
//! lengths it names: no reader reads them, and the next commit cuts them off. After the
//! rename the new snapshot is whole. Either way: the old version or the new one, never
//! a mix. A process that opened the table before a commit keeps reading its snapshot:
//! the pages it knows are never rewritten.

use std::fs::{File, OpenOptions};
use std::io::{Seek, SeekFrom};
use std::path::{Path, PathBuf};

use arrow_array::RecordBatch;

use crate::error::{Result, StorageError};
use crate::manifest::{DataFile, Layout, Manifest};
use crate::write::lock::{beside, TableLock};
use crate::write::{batch_columns, LayoutWriter, Origin, WriteOptions};

/// Where a test makes the process die during a commit (`TableAppender::crash_at`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AppendCrash {
    /// The pages are staged and synced; nothing of the table is touched.
    Staged,
    /// Half of the table's files have their new pages.
    MidCopy,
    /// Every file has its new pages, synced; the old manifest is in place.
    BeforeManifest,
    /// The new manifest is in place; the staged pages are not yet removed.
    AfterManifest,
}

/// One bulk append to the table in a directory (see the module docs).
pub struct TableAppender {
    dir: PathBuf,
    base: Manifest,
    staging: PathBuf,
    /// Held while the appender lives: tells a later appender this staging directory
    /// is not a dead one's.
    _staging_lock: TableLock,
    inner: Option<LayoutWriter>,
    rows: u64,
    crash: Option<AppendCrash>,
}

impl TableAppender {
    /// Starts an append to the table in `dir` as it is now (its base snapshot).
    /// Staged pages of appenders that died are removed first.
    pub fn begin(dir: &Path) -> Result<TableAppender> {
        let base = Manifest::load(dir)?;
        remove_dead_stagings(dir)?;
        let id = super::new_table_id(dir);
        let staging = beside(dir, &format!(".append-{id:016x}"))?;
        let staging_lock = TableLock::acquire(lock_of(&staging))?;
        std::fs::create_dir(&staging).map_err(|e| StorageError::io(&staging, e))?;
        let opts = WriteOptions {
            layout: base.layout,
            chunk_bytes: base.chunk_bytes,
            page_bytes: base.page_bytes,
            overwrite: false,
            source: None,
            threads: 1,
        };
        let origin = Origin {
            table_id: base.table_id,
            first_row: base.rows,
            first_pages: base.files.iter().map(|f| f.pages).collect(),
            rows_per_chunk: rows_per_chunk(&base),
        };
        let inner = LayoutWriter::create(&staging, &base.schema, &opts, &origin)?;
        Ok(TableAppender {
            dir: dir.to_path_buf(),
            base,
            staging,
            _staging_lock: staging_lock,
            inner: Some(inner),
            rows: 0,
            crash: None,
        })
    }

    /// The snapshot this append adds to.
    pub fn base(&self) -> &Manifest {
        &self.base
    }

    pub fn rows_written(&self) -> u64 {
        self.rows
    }

    /// Test hook: abort the process at `stage` of the commit, as `kill -9` would.
    #[doc(hidden)]
    pub fn crash_at(&mut self, stage: AppendCrash) {
        self.crash = Some(stage);
    }

    /// Adds rows (the table's columns, in order) after those written so far.
    pub fn write_batch(&mut self, batch: &RecordBatch) -> Result<()> {
        let columns = batch_columns(&self.base.schema, batch)?;
        let inner = self.inner.as_mut().ok_or_else(finished)?;
        inner.append(columns)?;
        self.rows += batch.num_rows() as u64;
        Ok(())
    }

    /// Publishes the appended rows as the table's new snapshot and returns its
    /// manifest. [`StorageError::AppendConflict`] if another append (or a new table)
    /// committed since [`TableAppender::begin`]; [`StorageError::Locked`] while another
    /// writer holds the table. On any error the table is as it was.
    pub fn commit(self) -> Result<Manifest> {
        self.commit_with(|_| Ok(()))
    }

    /// [`TableAppender::commit`], running `before_publish` with the new manifest once
    /// the pages are in place and synced, under the table's writer lock, just before
    /// the manifest is renamed in: what must appear with the new image (the successor
    /// of the table's delta log, `coopscan_delta::log::write_successor`) is prepared
    /// there. Its error aborts the commit with the table as it was. Not called when
    /// nothing was appended.
    pub fn commit_with(
        mut self,
        before_publish: impl FnOnce(&Manifest) -> Result<()>,
    ) -> Result<Manifest> {
        let inner = self.inner.take().ok_or_else(finished)?;
        let (files, chunks) = inner.finish()?;
        if self.rows == 0 {
            return Ok(self.base.clone());
        }
        // The staged pages need not survive a crash: a commit copies them and syncs
        // the copies.
        self.die_at(AppendCrash::Staged);
        let _lock = lock_table(&self.dir)?;
        let current = Manifest::load(&self.dir)?;
        if current != self.base {
            return Err(StorageError::AppendConflict {
                path: self.dir.clone(),
            });
        }
        let mut manifest = self.base.clone();
        manifest.rows = self.base.rows + self.rows;
        manifest.chunks.extend(chunks);
        for (i, staged) in files.into_iter().enumerate() {
            self.copy_tail(i, &staged)?;
            let file = &mut manifest.files[i];
            // Page bounds stay only where the base's and the staged pages all have them.
            let bounded = file.page_bounds.len() == file.page_row_starts.len()
                && staged.page_bounds.len() == staged.page_row_starts.len();
            if bounded {
                file.page_bounds.extend(staged.page_bounds);
            } else {
                file.page_bounds.clear();
            }
            file.pages = staged.pages;
            file.page_row_starts.extend(staged.page_row_starts);
            if i + 1 == manifest.files.len().div_ceil(2) {
                self.die_at(AppendCrash::MidCopy);
            }
        }
        manifest.validate_for(&self.dir)?;
        before_publish(&manifest)?;
        self.die_at(AppendCrash::BeforeManifest);
        manifest.save(&self.dir)?;
        self.die_at(AppendCrash::AfterManifest);
        Ok(manifest)
    }

    /// Data file `i` of the table with the staged pages `staged` after the base's
    /// pages: anything past them (a crashed commit's) is cut first. Synced.
    fn copy_tail(&self, i: usize, staged: &DataFile) -> Result<()> {
        let name = &self.base.files[i].name;
        if &staged.name != name {
            return Err(StorageError::Invalid(format!(
                "an append staged {} for the table's {name}",
                staged.name
            )));
        }
        let target = self.dir.join(name);
        let io = |e| StorageError::io(&target, e);
        let mut out = OpenOptions::new().write(true).open(&target).map_err(io)?;
        let end = self.base.file_len(i);
        out.set_len(end).map_err(io)?;
        out.seek(SeekFrom::Start(end)).map_err(io)?;
        let source = self.staging.join(&staged.name);
        let mut from = File::open(&source).map_err(|e| StorageError::io(&source, e))?;
        std::io::copy(&mut from, &mut out).map_err(io)?;
        out.sync_all().map_err(io)
    }

    fn die_at(&self, stage: AppendCrash) {
        if self.crash == Some(stage) {
            std::process::abort();
        }
    }
}

impl Drop for TableAppender {
    fn drop(&mut self) {
        // Committed or not, the staged pages are no longer needed; a failure leaves a
        // directory the next appender removes.
        let _ = std::fs::remove_dir_all(&self.staging);
    }
}

/// Longest wait for the table's writer lock at commit: another append's commit holds
/// it while it copies its pages; a table writer (`gen`) holds it for much longer.
const COMMIT_LOCK_WAIT: std::time::Duration = std::time::Duration::from_secs(5);

/// The table's writer lock, waiting up to [`COMMIT_LOCK_WAIT`] for another commit.
fn lock_table(dir: &Path) -> Result<TableLock> {
    let start = std::time::Instant::now();
    loop {
        match TableLock::of_table(dir) {
            Err(StorageError::Locked { .. }) if start.elapsed() < COMMIT_LOCK_WAIT => {
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
            taken => return taken,
        }
    }
}

fn finished() -> StorageError {
    StorageError::Invalid("the append is already committed".into())
}

/// DSM and CSM chunks of the table's size: the first chunk's tuples (the writer sized
/// them all alike but the last).
fn rows_per_chunk(base: &Manifest) -> Option<u64> {
    match base.layout {
        Layout::Dsm | Layout::Csm => base.chunks.first().map(|c| c.row_count),
        Layout::Nsm | Layout::Pax => None,
    }
}

/// The lock file of a staging directory.
fn lock_of(staging: &Path) -> PathBuf {
    let mut name = staging.as_os_str().to_owned();
    name.push(".lock");
    PathBuf::from(name)
}

/// Removes what the table's appenders that died left: their staging directories and
/// lock files (a lock nobody holds; an appender killed between taking its lock and
/// making its directory leaves only the lock file). Live appenders' stay.
fn remove_dead_stagings(dir: &Path) -> Result<()> {
    let prefix = beside(dir, ".append-")?;
    let (Some(parent), Some(stem)) = (prefix.parent(), prefix.file_name()) else {
        return Ok(());
    };
    let stem = stem.to_string_lossy().into_owned();
    let entries = std::fs::read_dir(parent).map_err(|e| StorageError::io(parent, e))?;
    let mut stagings: Vec<PathBuf> = entries
        .flatten()
        .filter_map(|entry| {
            let name = entry.file_name().to_string_lossy().into_owned();
            let staging = name.strip_suffix(".lock").unwrap_or(&name).to_string();
            name.starts_with(&stem).then(|| parent.join(staging))
        })
        .collect();
    stagings.sort_unstable();
    stagings.dedup();
    for staging in stagings {
        // Taken: its appender is gone. Dropping the lock removes the lock file.
        if let Ok(_dead) = TableLock::acquire(lock_of(&staging)) {
            let _ = std::fs::remove_dir_all(&staging);
        }
    }
    Ok(())
}
