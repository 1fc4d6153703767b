//! Explicit transactions (`BEGIN` … `COMMIT` | `ROLLBACK`) of one session: its changes
//! collect on a private copy of the table's tree, which its own queries read; `COMMIT`
//! writes them as one log record, `ROLLBACK` drops them. The first committer wins: a
//! transaction whose table another statement changed since it began is aborted at
//! `COMMIT`, naming the table. One table per transaction (each table has its own log, so
//! changes to two could not commit atomically).

use std::sync::{Arc, Mutex, PoisonError};

use coopscan_delta::log::Op;
use coopscan_delta::Pdt;
use datafusion::common::ScalarValue;

use super::TableDelta;
use crate::error::ExecError;

/// A session extension: the session's open transaction, if any. Sessions made by
/// [`crate::query_session`] have one.
#[derive(Debug, Default)]
pub struct TransactionSlot(Mutex<Option<Transaction>>);

/// What a transaction changed: one table's tree as the transaction sees it.
#[derive(Debug)]
pub struct Transaction {
    changed: Option<Changed>,
}

#[derive(Debug)]
struct Changed {
    table: Arc<TableDelta>,
    /// Commits the table had when the transaction first changed it.
    base_records: u64,
    pdt: Pdt<ScalarValue>,
    ops: Vec<Op<ScalarValue>>,
}

impl TransactionSlot {
    fn slot(&self) -> std::sync::MutexGuard<'_, Option<Transaction>> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub fn begin(&self) -> Result<(), ExecError> {
        let mut slot = self.slot();
        if slot.is_some() {
            return Err(ExecError::Invalid("a transaction is already open".into()));
        }
        *slot = Some(Transaction { changed: None });
        Ok(())
    }

    /// Drops the open transaction's changes.
    pub fn rollback(&self) -> Result<(), ExecError> {
        self.slot().take().map(drop).ok_or_else(no_transaction)
    }

    /// Commits the open transaction's changes (it is closed either way).
    pub async fn commit(&self) -> Result<(), ExecError> {
        let transaction = self.slot().take().ok_or_else(no_transaction)?;
        let Some(changed) = transaction.changed else {
            return Ok(());
        };
        let table = Arc::clone(&changed.table);
        let mut writer = table.writer().await;
        if table.records() != changed.base_records {
            return Err(ExecError::Invalid(format!(
                "transaction aborted: {} was changed by another statement since this transaction changed it",
                table.name()
            )));
        }
        table.commit(&mut writer, changed.pdt, &changed.ops)
    }

    /// The tree the open transaction sees for `table`: its own, once it changed it.
    pub fn snapshot_of(&self, table: &Arc<TableDelta>) -> Option<Pdt<ScalarValue>> {
        let slot = self.slot();
        let changed = slot.as_ref()?.changed.as_ref()?;
        Arc::ptr_eq(&changed.table, table).then(|| changed.pdt.clone())
    }

    /// Whether a transaction is open.
    pub fn is_open(&self) -> bool {
        self.slot().is_some()
    }

    /// Records a statement's changes of `table` (`next` built from `snapshot_of`, or the
    /// committed tree) in the open transaction.
    pub fn record(
        &self,
        table: &Arc<TableDelta>,
        next: Pdt<ScalarValue>,
        ops: Vec<Op<ScalarValue>>,
    ) -> Result<(), ExecError> {
        let mut slot = self.slot();
        let transaction = slot.as_mut().ok_or_else(no_transaction)?;
        match &mut transaction.changed {
            Some(changed) if Arc::ptr_eq(&changed.table, table) => {
                changed.pdt = next;
                changed.ops.extend(ops);
            }
            Some(changed) => {
                return Err(ExecError::Invalid(format!(
                "a transaction changes one table: this one changed {} (each table has its own log)",
                changed.table.name()
            )))
            }
            None => {
                let base_records = table.records();
                transaction.changed = Some(Changed {
                    table: Arc::clone(table),
                    base_records,
                    pdt: next,
                    ops,
                });
            }
        }
        Ok(())
    }
}

fn no_transaction() -> ExecError {
    ExecError::Invalid("no transaction is open".into())
}
