//! Snapshot isolation for transactions (2012 paper §2.1; Héman et al. 2010, §4): a
//! transaction pins each table's committed tree as its snapshot and keeps its own
//! changes as a layer over that snapshot (`coopscan_delta::layer`). While a snapshot is
//! pinned the table keeps every later commit's own layer, so a transaction committing
//! after others is serialized past their layers: its changes land where the newer
//! state has those tuples, or, when a tuple it changed was changed by a commit it did
//! not see, it is aborted naming that tuple. The layers go when the last pin does.

use std::sync::{Arc, PoisonError};

use coopscan_delta::layer::{entry_base, propagate, serialize, SerializeError};
use coopscan_delta::log::Op;
use coopscan_delta::Pdt;
use datafusion::common::ScalarValue;

use super::{Committed, TableDelta, Writer};
use crate::error::ExecError;

/// Changes (tree entries) a table keeps in commit layers for open transactions.
pub const MAX_KEPT_CHANGES: usize = 1 << 20;

/// A table's committed tree as a transaction first saw it; the table keeps the layers
/// of later commits until this is dropped.
#[derive(Debug)]
pub struct Pinned {
    table: Arc<TableDelta>,
    records: u64,
    pdt: Pdt<ScalarValue>,
}

impl Pinned {
    pub fn table(&self) -> &Arc<TableDelta> {
        &self.table
    }

    /// The snapshot.
    pub fn pdt(&self) -> &Pdt<ScalarValue> {
        &self.pdt
    }
}

impl Drop for Pinned {
    fn drop(&mut self) {
        let mut committed = self.table.committed_mut();
        if let Some(count) = committed.pins.get_mut(&self.records) {
            *count -= 1;
            if *count == 0 {
                committed.pins.remove(&self.records);
            }
        }
        committed.forget_unneeded_layers();
    }
}

impl Committed {
    /// Keeps the layer of the commit of `ops` (over the state now) that makes state
    /// `records`, while a snapshot older than it is pinned. The ops applied to a tree of
    /// as many tuples already, so they apply to the layer; if they did not, the layers
    /// stop there and a transaction that needed them is aborted (`layers_since`).
    ///
    /// At most [`MAX_KEPT_CHANGES`] changes are kept: past them the layers are dropped,
    /// and a transaction pinned before that aborts at `COMMIT` if another commit came
    /// first (a transaction left open while others commit would otherwise hold every
    /// change made meanwhile).
    pub(super) fn keep_layer(&mut self, ops: &[Op<ScalarValue>], records: u64) {
        if self.pins.is_empty() {
            return;
        }
        let mut layer = Pdt::new(self.pdt.rows(), self.pdt.columns());
        let applied = ops.iter().try_for_each(|op| op.apply(&mut layer));
        let kept: usize = self.recent.iter().map(|(_, l)| l.entry_count()).sum();
        if applied.is_ok() && kept.saturating_add(layer.entry_count()) <= MAX_KEPT_CHANGES {
            self.recent.push_back((records, layer));
        } else {
            self.recent.clear();
        }
    }

    /// Drops the layers no pinned snapshot needs: those made at or before the oldest.
    fn forget_unneeded_layers(&mut self) {
        let oldest = self.pins.keys().next().copied();
        while let Some((made, _)) = self.recent.front() {
            if oldest.is_some_and(|o| *made > o) {
                break;
            }
            self.recent.pop_front();
        }
    }

    /// The layers of the commits after state `records`, oldest first; `None` when one
    /// was not kept.
    fn layers_since(&self, records: u64) -> Option<Vec<Pdt<ScalarValue>>> {
        let after: Vec<_> = self
            .recent
            .iter()
            .filter(|(made, _)| *made > records)
            .collect();
        let contiguous = after
            .iter()
            .zip(records + 1..)
            .all(|((made, _), want)| *made == want);
        let complete = contiguous && records + after.len() as u64 == self.records;
        complete.then(|| after.into_iter().map(|(_, layer)| layer.clone()).collect())
    }
}

impl TableDelta {
    fn committed_mut(&self) -> std::sync::RwLockWriteGuard<'_, Committed> {
        self.committed
            .write()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Pins the committed tree as a transaction's snapshot of this table.
    pub fn pin(self: &Arc<Self>) -> Result<Pinned, ExecError> {
        self.readable()?;
        let mut committed = self.committed_mut();
        let (pdt, records) = (committed.pdt.clone(), committed.records);
        *committed.pins.entry(records).or_default() += 1;
        Ok(Pinned {
            table: Arc::clone(self),
            records,
            pdt,
        })
    }

    /// Commits a transaction's changes of this table: `layer` over the snapshot `pinned`,
    /// `next` and `ops` the same changes applied to that snapshot
    /// ([`TableDelta::prepare_transaction`] says what is committed).
    pub fn commit_transaction(
        &self,
        writer: &mut Writer,
        pinned: &Pinned,
        layer: &Pdt<ScalarValue>,
        changes: (Pdt<ScalarValue>, Vec<Op<ScalarValue>>),
    ) -> Result<(), ExecError> {
        let (next, ops) = self.prepare_transaction(pinned, layer, changes)?;
        self.commit(writer, next, &ops)
    }

    /// The new state and the ops that make it when a transaction's changes of this
    /// table commit now (the caller holds the table's writer): with no commit since the
    /// snapshot, `next` and `ops` themselves; otherwise the layer serialized past every
    /// later commit's and propagated into the newest state, or the transaction is
    /// aborted when one of them changed a tuple it changed.
    pub(super) fn prepare_transaction(
        &self,
        pinned: &Pinned,
        layer: &Pdt<ScalarValue>,
        (next, ops): (Pdt<ScalarValue>, Vec<Op<ScalarValue>>),
    ) -> Result<(Pdt<ScalarValue>, Vec<Op<ScalarValue>>), ExecError> {
        let (newest, later) = {
            let committed = self.committed_mut();
            if committed.records == pinned.records {
                return Ok((next, ops));
            }
            (
                committed.pdt.clone(),
                committed.layers_since(pinned.records),
            )
        };
        let later = later.ok_or_else(|| {
            self.aborted("the commits since it began could not be followed; run it again")
        })?;
        let mut moved = layer.clone();
        for theirs in &later {
            moved = serialize(&moved, theirs).map_err(|e| match e {
                SerializeError::Conflict { entry } => self.conflict(layer, entry),
                SerializeError::Delta(e) => ExecError::Delta(e),
            })?;
        }
        let mut next = newest;
        let ops = propagate(&mut next, &moved)?;
        Ok((next, ops))
    }

    fn conflict(&self, layer: &Pdt<ScalarValue>, entry: usize) -> ExecError {
        let row = entry_base(layer, entry).map_or_else(|| "?".into(), |sid| sid.0.to_string());
        self.aborted(&format!(
            "the row with _rowid {row} in its snapshot was changed by a transaction that committed first"
        ))
    }

    fn aborted(&self, why: &str) -> ExecError {
        ExecError::Invalid(format!(
            "transaction aborted: {why} ({}); nothing of it was committed",
            self.name()
        ))
    }
}

#[cfg(test)]
mod tests {
    use coopscan_delta::Rid;

    use super::*;

    /// Commits a delete of the first row.
    fn delete_first(table: &TableDelta) {
        let mut next = table.snapshot().expect("snapshot");
        let ops = vec![Op::Delete { rid: Rid(0) }];
        ops[0].apply(&mut next).expect("delete");
        table
            .commit(&mut Writer::default(), next, &ops)
            .expect("commit");
    }

    fn kept(table: &TableDelta) -> Vec<u64> {
        table
            .committed_mut()
            .recent
            .iter()
            .map(|(r, _)| *r)
            .collect()
    }

    /// Layers are kept while, and only as far back as, a pinned snapshot needs them.
    #[test]
    fn commit_layers_live_as_long_as_the_snapshots_that_need_them() {
        let table = Arc::new(TableDelta::in_memory(10, 1));
        delete_first(&table);
        assert!(kept(&table).is_empty(), "nothing pinned, nothing kept");
        let older = table.pin().expect("pin");
        delete_first(&table);
        let newer = table.pin().expect("pin");
        delete_first(&table);
        assert_eq!(kept(&table), vec![2, 3]);
        assert_eq!(
            table.committed_mut().layers_since(1).map(|l| l.len()),
            Some(2)
        );
        drop(older);
        assert_eq!(kept(&table), vec![3], "the newer snapshot needs the last");
        drop(newer);
        assert!(kept(&table).is_empty());
        delete_first(&table);
        assert!(kept(&table).is_empty());
        assert_eq!(table.snapshot().expect("snapshot").rows(), 6);
    }
}
