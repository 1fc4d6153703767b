//! A table's changes in a SQL session: the committed [`Pdt`] of each table, the snapshot
//! each scan takes of it, and the statements that change it (`dml`).
//!
//! Readers never wait for writers: a scan clones the committed tree when it is planned
//! (O(1), the tree is copy-on-write) and merges that snapshot into every chunk it gets.
//! Writers of one table take turns (`TableDelta::writer`); a statement builds its
//! changes on a clone, appends them to the table's delta log as one synced record
//! (`coopscan_delta::log`) and only then publishes the clone, so a failing statement
//! changes nothing and a reported one survives a crash. Opening a table replays its log.

pub mod append;
pub(crate) mod bulk_insert;
pub mod checkpoint;
pub(crate) mod checkpoint_statement;
mod codec;
pub mod dml;
mod merge;
mod pins;
mod several;
pub mod transaction;

use std::collections::{BTreeMap, VecDeque};
use std::ops::Range;
use std::path::PathBuf;
use std::sync::{Mutex, PoisonError, RwLock};

use coopscan_buffer::RowRanges;
use coopscan_delta::log::{replay, settle, DeltaLog, LogIdentity, Op};
use coopscan_delta::translate::RidLedger;
use coopscan_delta::Pdt;
use coopscan_storage::Table;
use datafusion::arrow::array::RecordBatch;
use datafusion::common::ScalarValue;

use crate::error::ExecError;
use crate::shape::OutputShape;
use codec::ScalarCodec;

pub use bulk_insert::BulkInserts;
pub use merge::merge_chunk;
pub use pins::Pinned;

/// The delta log's file in a table's directory: it belongs to that stable image and goes
/// with it when the table is generated anew.
pub const LOG_FILE: &str = "delta.log";

/// The committed changes of one table, shared by every provider of it in a session, and
/// where they are kept: the table's delta log, or memory only.
#[derive(Debug)]
pub struct TableDelta {
    committed: RwLock<Committed>,
    /// Held by a statement from reading the rows it changes until it publishes them;
    /// holds the log once the first statement opened it.
    writer: tokio::sync::Mutex<Writer>,
    log: Option<LogSpec>,
    /// How errors name the table.
    name: String,
    /// Why the table's log could not be replayed: every scan fails with it rather than
    /// return rows without their committed changes.
    damaged: Option<String>,
}

#[derive(Debug)]
struct Committed {
    pdt: Pdt<ScalarValue>,
    /// Commits the log holds for this state.
    records: u64,
    /// Open transactions' snapshots, by their `records`: how many pin each.
    pins: BTreeMap<u64, usize>,
    /// While any snapshot is pinned, each later commit's own layer (over the state
    /// before it) with the `records` it made: what a transaction committing after them
    /// is serialized past (`pins.rs`).
    recent: VecDeque<(u64, Pdt<ScalarValue>)>,
}

impl Committed {
    fn new(pdt: Pdt<ScalarValue>, records: u64) -> Committed {
        Committed {
            pdt,
            records,
            pins: BTreeMap::new(),
            recent: VecDeque::new(),
        }
    }
}

/// What a statement holds while it changes a table.
#[derive(Debug, Default)]
pub struct Writer {
    log: Option<DeltaLog>,
}

impl Writer {
    /// Closes the log this table's commits keep open (and locked) between statements,
    /// so that a bulk append may take it (`bulk_insert`); the next commit opens it again.
    pub(crate) fn close_log(&mut self) {
        self.log = None;
    }
}

/// Where a table's log is and what it belongs to.
#[derive(Debug)]
pub struct LogSpec {
    path: PathBuf,
    identity: LogIdentity,
    codec: ScalarCodec,
}

impl LogSpec {
    /// Whether the log file exists (a table never changed has none).
    pub fn exists(&self) -> bool {
        self.path.exists()
    }

    pub fn path(&self) -> &std::path::Path {
        &self.path
    }

    /// The stable image the log's changes apply to.
    pub fn identity(&self) -> LogIdentity {
        self.identity
    }

    /// Opens (and locks) the log for appending after its first `records` records.
    pub fn open(&self, records: u64) -> Result<DeltaLog, ExecError> {
        Ok(DeltaLog::open(&self.path, self.identity, records)?)
    }
}

impl TableDelta {
    /// No changes over a stable table of `stable_rows` tuples of `columns` columns, and
    /// no log (what `logged` starts from).
    fn in_memory(stable_rows: u64, columns: usize) -> TableDelta {
        TableDelta {
            committed: RwLock::new(Committed::new(Pdt::new(stable_rows, columns), 0)),
            writer: Default::default(),
            log: None,
            name: "a table in memory".into(),
            damaged: None,
        }
    }

    /// The changes committed to `table` (its delta log replayed); later commits are
    /// appended to that log and synced before they are published.
    pub fn logged(table: &Table) -> TableDelta {
        TableDelta::logged_at(table, table.dir().join(LOG_FILE))
    }

    /// [`TableDelta::logged`] with the log at `path` instead of the table's directory:
    /// changes that must not outlive a run (a benchmark's refresh stream over a shared
    /// dataset) go to a log of their own.
    pub fn logged_at(table: &Table, path: PathBuf) -> TableDelta {
        let spec = LogSpec {
            path,
            identity: LogIdentity {
                stable_rows: table.rows(),
                columns: table.schema().len(),
                fingerprint: fingerprint(table),
            },
            codec: ScalarCodec {
                types: table.schema().columns.iter().map(|c| c.ty).collect(),
            },
        };
        let mut delta = TableDelta::in_memory(table.rows(), table.schema().len());
        // A bulk append that crashed left the log's successor beside it: it is this
        // image's log if the append committed, else nobody's (`log::settle`).
        let replayed = settle(&spec.path, spec.identity)
            .and_then(|()| replay(&spec.path, spec.identity, &spec.codec));
        match replayed {
            Ok(replayed) => {
                delta.committed = RwLock::new(Committed::new(replayed.pdt, replayed.records));
            }
            Err(e) => delta.damaged = Some(e.to_string()),
        }
        delta.log = Some(spec);
        delta.name = table.dir().display().to_string();
        delta
    }

    /// The committed state now: what a scan planned now sees.
    pub fn snapshot(&self) -> Result<Pdt<ScalarValue>, ExecError> {
        self.readable()?;
        Ok(self
            .committed
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .pdt
            .clone())
    }

    /// Whether the table's log replayed: a table whose did not is not read.
    fn readable(&self) -> Result<(), ExecError> {
        match &self.damaged {
            Some(why) => Err(ExecError::Invalid(format!(
                "the table's changes cannot be read: {why}"
            ))),
            None => Ok(()),
        }
    }

    /// Waits for this table's other writers: the guard is the statement's turn.
    pub async fn writer(&self) -> tokio::sync::MutexGuard<'_, Writer> {
        self.writer.lock().await
    }

    /// Makes `next` (built from `snapshot()` by `ops`, under `writer`) the committed
    /// state: first in the log, synced, then visible to scans planned from now on.
    pub fn commit(
        &self,
        writer: &mut Writer,
        next: Pdt<ScalarValue>,
        ops: &[Op<ScalarValue>],
    ) -> Result<(), ExecError> {
        if ops.is_empty() {
            return Ok(());
        }
        let records = self.records();
        if let Some((log, spec)) = self.log_of(writer)? {
            log.append(ops, &spec.codec)?;
        }
        self.publish(Some(next), ops, records);
        Ok(())
    }

    /// The table's log, opened (and locked) by `writer` the first time, and its spec;
    /// `None` for a table kept in memory only.
    fn log_of<'w>(
        &'w self,
        writer: &'w mut Writer,
    ) -> Result<Option<(&'w mut DeltaLog, &'w LogSpec)>, ExecError> {
        let Some(spec) = &self.log else {
            return Ok(None);
        };
        if writer.log.is_none() {
            writer.log = Some(spec.open(self.records())?);
        }
        Ok(writer.log.as_mut().map(|log| (log, spec)))
    }

    /// Makes the commit of `ops` after state `records` the committed state: `next`, or,
    /// for a record that changed nothing (a part of a transaction that did not commit),
    /// the same tree one record further.
    fn publish(&self, next: Option<Pdt<ScalarValue>>, ops: &[Op<ScalarValue>], records: u64) {
        let mut committed = self
            .committed
            .write()
            .unwrap_or_else(PoisonError::into_inner);
        committed.keep_layer(ops, records + 1);
        if let Some(next) = next {
            committed.pdt = next;
        }
        committed.records = records + 1;
    }

    /// The table's directory, as errors name it.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Where the changes are logged (`None`: memory only).
    pub fn log_spec(&self) -> Option<&LogSpec> {
        self.log.as_ref()
    }

    /// Commits in the committed state.
    pub fn records(&self) -> u64 {
        self.committed
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .records
    }
}

/// What tells this stable image from another: its manifest's checksum.
fn fingerprint(table: &Table) -> u64 {
    fingerprint_of(table.manifest())
}

/// [`fingerprint`] of the image `manifest` describes.
fn fingerprint_of(manifest: &coopscan_storage::Manifest) -> u64 {
    let checksum = manifest.checksum().unwrap_or_default();
    let hex = checksum.rsplit(':').next().unwrap_or_default();
    u64::from_str_radix(hex, 16).unwrap_or(0)
}

/// One scan's view of a changed table: its snapshot, the RIDs it must produce, and the
/// RIDs produced so far (shared by all the scan's workers).
#[derive(Debug)]
pub struct DeltaScan {
    pub pdt: Pdt<ScalarValue>,
    pub wanted: RowRanges,
    ledger: Mutex<RidLedger>,
    /// Over an empty stable image (no chunk to merge inserted rows into): the decoded
    /// shape of no stable tuples, which the scan merges once at its end.
    empty_stable: Option<RecordBatch>,
}

impl DeltaScan {
    /// Over an empty stable image, the scan's inserted rows come from
    /// [`DeltaScan::tail`]: `empty` is the decoded shape of no stable tuples.
    pub fn with_empty_stable(mut self, empty: RecordBatch) -> DeltaScan {
        self.empty_stable = Some(empty);
        self
    }

    /// The rows of an empty stable image (all inserted), merged like a chunk's; `None`
    /// when the stable image has chunks.
    pub fn tail(&self, shape: &OutputShape) -> Option<datafusion::error::Result<RecordBatch>> {
        let empty = self.empty_stable.as_ref()?;
        // No stable tuples: the range ending the (empty) stable table carries its inserts.
        let nothing = std::iter::once(0..0).collect::<Vec<Range<u64>>>();
        Some(merge_chunk(self, shape, empty, &nothing))
    }

    pub fn new(pdt: Pdt<ScalarValue>, wanted: RowRanges) -> DeltaScan {
        DeltaScan {
            pdt,
            wanted,
            ledger: Mutex::new(RidLedger::new()),
            empty_stable: None,
        }
    }

    /// The RIDs of `span` (a delivered range's) this scan produces now.
    fn claim(&self, span: Range<u64>) -> Vec<Range<u64>> {
        let mut ledger = self.ledger.lock().unwrap_or_else(PoisonError::into_inner);
        ledger.claim(self.wanted.ranges(), span)
    }

    /// Whether an inserted or modified tuple is anchored in stable tuples `sids`: such a
    /// chunk may hold matches whatever its zonemap says.
    pub fn patches_in(&self, sids: Range<u64>) -> bool {
        self.pdt.has_new_values_in(sids)
    }
}
