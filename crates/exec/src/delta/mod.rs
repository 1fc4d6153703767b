//! A table's changes in a SQL session: the committed [`Pdt`] of each table, the snapshot
//! each scan takes of it, and the statements that change it (`dml`).
//!
//! Readers never wait for writers: a scan clones the committed tree when it is planned
//! (O(1), the tree is copy-on-write) and merges that snapshot into every chunk it gets.
//! Writers of one table take turns (`TableDelta::writer`); a statement builds its
//! changes on a clone and publishes it whole, so a failing statement changes nothing.
//! Changes live in memory only: they are lost when the session ends.

pub mod dml;
mod merge;

use std::ops::Range;
use std::sync::{Arc, Mutex, PoisonError, RwLock};

use coopscan_buffer::RowRanges;
use coopscan_delta::translate::RidLedger;
use coopscan_delta::{Change, Pdt, Sid};
use datafusion::common::ScalarValue;

pub use merge::merge_chunk;

/// The committed changes of one table, shared by every provider of it in a session.
#[derive(Debug)]
pub struct TableDelta {
    committed: RwLock<Pdt<ScalarValue>>,
    /// Held by a statement from reading the rows it changes until it publishes them.
    writer: tokio::sync::Mutex<()>,
}

impl TableDelta {
    /// No changes yet over a stable table of `stable_rows` tuples of `columns` columns.
    pub fn new(stable_rows: u64, columns: usize) -> TableDelta {
        TableDelta {
            committed: RwLock::new(Pdt::new(stable_rows, columns)),
            writer: tokio::sync::Mutex::new(()),
        }
    }

    /// The committed state now: what a scan planned now sees.
    pub fn snapshot(&self) -> Pdt<ScalarValue> {
        self.committed
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Makes `next` the committed state (built from `snapshot()` under the writer lock).
    fn publish(&self, next: Pdt<ScalarValue>) {
        *self
            .committed
            .write()
            .unwrap_or_else(PoisonError::into_inner) = next;
    }

    /// Rows a query sees now.
    pub fn rows(&self) -> u64 {
        self.committed
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .rows()
    }
}

/// One scan's view of a changed table: its snapshot, the RIDs it must produce, and the
/// RIDs produced so far (shared by all the scan's workers).
#[derive(Debug)]
pub struct DeltaScan {
    pub pdt: Pdt<ScalarValue>,
    pub wanted: RowRanges,
    ledger: Mutex<RidLedger>,
}

impl DeltaScan {
    pub fn new(pdt: Pdt<ScalarValue>, wanted: RowRanges) -> DeltaScan {
        DeltaScan {
            pdt,
            wanted,
            ledger: Mutex::new(RidLedger::new()),
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
        let tail = sids.end == self.pdt.stable_rows();
        let mut found = false;
        self.pdt.visit_from_sid(Sid(sids.start), |entry| {
            if entry.sid.0 > sids.end || (entry.sid.0 == sids.end && !tail) {
                return false;
            }
            found = !matches!(entry.change, Change::Delete);
            !found
        });
        found
    }
}

/// Shared handle type providers keep.
pub type SharedDelta = Arc<TableDelta>;
