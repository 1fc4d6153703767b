//! `COMMIT` of a transaction that changed several tables: in all of them or in none.
//!
//! Each table has its own log, so the commit is two-phase
//! (`coopscan_delta::log::commit_parts`): the changes of each table go to its log as a
//! part record, then one decision goes to the database's decision log; replay counts a
//! part only when its decision is there. Here the tables' writers are taken in one order
//! (their names), so two such commits never wait for each other crosswise; every table's
//! changes are serialized past the commits since the transaction's snapshot before
//! anything is written, so a conflict in any table aborts the whole transaction with
//! nothing written; the new states are published together, under a lock that `BEGIN`
//! takes while pinning its snapshot, so no transaction sees the commit in one table and
//! not in another.

use std::sync::{Arc, PoisonError, RwLock};

use coopscan_delta::log::{commit_parts, decisions_path, DecisionLog, Op, Part};
use coopscan_delta::Pdt;
use datafusion::common::ScalarValue;

use super::{Pinned, TableDelta};
use crate::error::ExecError;

/// A table a transaction changed: its tree as the transaction sees it, the statements'
/// changes, and the same changes as a layer over the snapshot.
#[derive(Debug)]
pub(super) struct Changed {
    pub(super) table: Arc<TableDelta>,
    pub(super) pdt: Pdt<ScalarValue>,
    pub(super) ops: Vec<Op<ScalarValue>>,
    pub(super) layer: Pdt<ScalarValue>,
}

/// Held for writing while a commit over several tables publishes its tables' states,
/// for reading while a transaction pins its snapshot of all tables.
static PUBLISHING: RwLock<()> = RwLock::new(());

/// Runs `pin` (which pins a transaction's snapshot) while no commit over several tables
/// is half published.
pub(super) fn while_none_publishes<T>(pin: impl FnOnce() -> T) -> T {
    let _published = PUBLISHING.read().unwrap_or_else(PoisonError::into_inner);
    pin()
}

/// Commits `changed` (each over its snapshot in `pinned`) in all its tables or in none.
pub(super) async fn commit(pinned: &[Pinned], mut changed: Vec<Changed>) -> Result<(), ExecError> {
    changed.sort_by(|a, b| a.table.name().cmp(b.table.name()));
    let tables: Vec<Arc<TableDelta>> = changed.iter().map(|c| Arc::clone(&c.table)).collect();
    let mut writers = Vec::with_capacity(tables.len());
    for table in &tables {
        writers.push(table.writer().await);
    }
    let mut prepared = Vec::with_capacity(changed.len());
    for c in changed {
        let snapshot = pinned
            .iter()
            .find(|p| Arc::ptr_eq(p.table(), &c.table))
            .ok_or_else(|| ExecError::Invalid("a snapshot went missing".into()))?;
        prepared.push(
            c.table
                .prepare_transaction(snapshot, &c.layer, (c.pdt, c.ops))?,
        );
    }
    let records: Vec<u64> = tables.iter().map(|t| t.records()).collect();
    let changing: Vec<usize> = (0..tables.len())
        .filter(|&i| !prepared[i].1.is_empty())
        .collect();
    let logged: Vec<usize> = (changing.iter().copied())
        .filter(|&i| tables[i].log_spec().is_some())
        .collect();
    if let [only] = logged[..] {
        // One logged table changes: its record alone decides.
        if let Some((log, spec)) = tables[only].log_of(&mut writers[only])? {
            log.append(&prepared[only].1, &spec.codec)?;
        }
    } else if !logged.is_empty() {
        write_parts(&tables, &mut writers, &prepared, &logged, &records)?;
    }
    let _publishing = PUBLISHING.write().unwrap_or_else(PoisonError::into_inner);
    for (i, (next, ops)) in prepared.into_iter().enumerate() {
        if !ops.is_empty() {
            tables[i].publish(Some(next), &ops, records[i]);
        }
    }
    Ok(())
}

/// Writes the parts of `logged` tables and the decision. On error, a table whose log
/// took its part (a record that never counts) moves one record on, unchanged.
fn write_parts(
    tables: &[Arc<TableDelta>],
    writers: &mut [tokio::sync::MutexGuard<'_, super::Writer>],
    prepared: &[(Pdt<ScalarValue>, Vec<Op<ScalarValue>>)],
    logged: &[usize],
    records: &[u64],
) -> Result<(), ExecError> {
    let mut decisions = None;
    let mut parts = Vec::with_capacity(logged.len());
    for (i, writer) in writers.iter_mut().enumerate() {
        if !logged.contains(&i) {
            continue;
        }
        let Some((log, spec)) = tables[i].log_of(writer)? else {
            continue;
        };
        if decisions.is_none() {
            decisions = Some(decisions_path(log.path()).ok_or_else(|| {
                ExecError::Invalid(format!(
                    "{}: a transaction over several tables needs its tables in one database directory",
                    tables[i].name()
                ))
            })?);
        }
        parts.push((
            i,
            Part {
                log,
                ops: &prepared[i].1,
                codec: &spec.codec,
            },
        ));
    }
    let decisions = decisions.ok_or_else(|| ExecError::Invalid("no table log".into()))?;
    let mut decision_log = DecisionLog::open(&decisions)?;
    let (at, mut parts): (Vec<usize>, Vec<Part<'_, ScalarValue>>) = parts.into_iter().unzip();
    let committed = commit_parts(&mut decision_log, &mut parts);
    if committed.is_err() {
        for (&i, part) in at.iter().zip(&parts) {
            if part.log.records() > records[i] {
                tables[i].publish(None, &[], records[i]);
            }
        }
    }
    committed?;
    Ok(())
}
