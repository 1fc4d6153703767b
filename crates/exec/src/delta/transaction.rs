//! Explicit transactions (`BEGIN` … `COMMIT` | `ROLLBACK`) of one session, under snapshot
//! isolation: `BEGIN` pins every table of the session as the transaction's snapshot
//! (a table it meets later, when first used), which all its statements read; its changes
//! collect on a private copy of each changed table's tree and, beside it, as a layer
//! over its snapshot. `COMMIT` writes a table's changes as one log record; after other
//! commits to that table it serializes the layer past theirs (`pins.rs`), and aborts
//! when one of them changed a row it changed, naming the row. `ROLLBACK` drops them. A
//! transaction that changed several tables commits in all or in none of them
//! (`several.rs`).

use std::sync::{Arc, Mutex, PoisonError};

use coopscan_delta::log::Op;
use coopscan_delta::Pdt;
use datafusion::common::ScalarValue;

use super::several::{self, Changed};
use super::{Pinned, TableDelta};
use crate::error::ExecError;

/// A session extension: the session's open transaction, if any. Sessions made by
/// [`crate::query_session`] have one.
#[derive(Debug, Default)]
pub struct TransactionSlot(Mutex<Option<Transaction>>);

/// What a transaction read and changed.
#[derive(Debug)]
pub struct Transaction {
    /// Each table's snapshot.
    pinned: Vec<Pinned>,
    /// The tables it changed, in the order it first changed them.
    changed: Vec<Changed>,
}

impl Transaction {
    fn changed(&self, table: &Arc<TableDelta>) -> Option<&Changed> {
        self.changed.iter().find(|c| Arc::ptr_eq(&c.table, table))
    }

    fn pinned(&self, table: &Arc<TableDelta>) -> Option<&Pinned> {
        self.pinned.iter().find(|p| Arc::ptr_eq(p.table(), table))
    }

    /// The snapshot of `table`, pinned now if the transaction had not met it.
    fn snapshot(&mut self, table: &Arc<TableDelta>) -> Result<&Pinned, ExecError> {
        if self.pinned(table).is_none() {
            self.pinned.push(table.pin()?);
        }
        self.pinned(table)
            .ok_or_else(|| ExecError::Invalid("a snapshot went missing".into()))
    }
}

impl TransactionSlot {
    fn slot(&self) -> std::sync::MutexGuard<'_, Option<Transaction>> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Opens a transaction whose snapshot holds `tables` as they are now (a table whose
    /// changes cannot be read is left out: its scans report why).
    pub fn begin(&self, tables: &[Arc<TableDelta>]) -> Result<(), ExecError> {
        let mut slot = self.slot();
        if slot.is_some() {
            return Err(ExecError::Invalid("a transaction is already open".into()));
        }
        // No commit over several tables is half published while the snapshot is taken.
        let pinned =
            several::while_none_publishes(|| tables.iter().filter_map(|t| t.pin().ok()).collect());
        *slot = Some(Transaction {
            pinned,
            changed: Vec::new(),
        });
        Ok(())
    }

    /// Drops the open transaction's changes.
    pub fn rollback(&self) -> Result<(), ExecError> {
        self.slot().take().map(drop).ok_or_else(no_transaction)
    }

    /// Commits the open transaction's changes (it is closed either way).
    pub async fn commit(&self) -> Result<(), ExecError> {
        let transaction = self.slot().take().ok_or_else(no_transaction)?;
        let Transaction {
            pinned,
            mut changed,
        } = transaction;
        if changed.len() > 1 {
            return several::commit(&pinned, changed).await;
        }
        let Some(Changed {
            table,
            pdt,
            ops,
            layer,
        }) = changed.pop()
        else {
            return Ok(());
        };
        let snapshot = pinned
            .iter()
            .find(|p| Arc::ptr_eq(p.table(), &table))
            .ok_or_else(|| ExecError::Invalid("a snapshot went missing".into()))?;
        let mut writer = table.writer().await;
        table.commit_transaction(&mut writer, snapshot, &layer, (pdt, ops))
    }

    /// The tree the open transaction sees for `table`: its own once it changed it, else
    /// its snapshot (`None`: no transaction, or the table's changes cannot be read).
    pub fn snapshot_of(&self, table: &Arc<TableDelta>) -> Option<Pdt<ScalarValue>> {
        let mut slot = self.slot();
        let transaction = slot.as_mut()?;
        match transaction.changed(table) {
            Some(changed) => Some(changed.pdt.clone()),
            None => transaction.snapshot(table).ok().map(|p| p.pdt().clone()),
        }
    }

    /// Whether a transaction is open.
    pub fn is_open(&self) -> bool {
        self.slot().is_some()
    }

    /// Records a statement's changes of `table` (`next` built from `snapshot_of` by
    /// `ops`) in the open transaction.
    pub fn record(
        &self,
        table: &Arc<TableDelta>,
        next: Pdt<ScalarValue>,
        ops: Vec<Op<ScalarValue>>,
    ) -> Result<(), ExecError> {
        let mut slot = self.slot();
        let transaction = slot.as_mut().ok_or_else(no_transaction)?;
        if transaction.changed(table).is_none() {
            let base = transaction.snapshot(table)?.pdt();
            let first = Changed {
                table: Arc::clone(table),
                pdt: base.clone(),
                ops: Vec::new(),
                layer: Pdt::new(base.rows(), base.columns()),
            };
            transaction.changed.push(first);
        }
        let changed = (transaction.changed.iter_mut())
            .find(|c| Arc::ptr_eq(&c.table, table))
            .ok_or_else(no_transaction)?;
        // The layer first: if an op does not apply, the transaction keeps its state.
        let mut layer = changed.layer.clone();
        for op in &ops {
            op.apply(&mut layer)?;
        }
        changed.layer = layer;
        changed.pdt = next;
        changed.ops.extend(ops);
        Ok(())
    }
}

fn no_transaction() -> ExecError {
    ExecError::Invalid("no transaction is open".into())
}
