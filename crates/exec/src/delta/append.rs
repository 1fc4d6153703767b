//! A bulk append (2012 paper §2.1, "Bulk Appends"): rows written as new pages after the
//! table's stable tuples (`coopscan_storage::TableAppender`) instead of as inserts into
//! its Positional Delta Tree, with the table's delta log carried to the new image in
//! the same commit (`coopscan_delta::log::write_successor`, then `settle`). Rows the
//! tree inserted at the end stay before the appended ones; every committed change
//! stays where it was. The log stays locked throughout, so no statement of another
//! process commits to the old image meanwhile; a process that opened the table before
//! keeps reading its snapshot, and its next commit is refused (the log names the new
//! image), as after a checkpoint.

use std::sync::Arc;
use std::time::{Duration, Instant};

use coopscan_delta::log::{settle, write_successor, LogIdentity};
use coopscan_storage::device::Device;
use coopscan_storage::{Manifest, StorageError, Table, TableAppender};
use datafusion::arrow::array::RecordBatch;
use futures::{Stream, StreamExt};

use super::checkpoint::rebuild_indexes;
use super::fingerprint_of;
use crate::error::{ExecError, Result};
use crate::provider::{CoopTable, ScanMode};

/// What a bulk append did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Appended {
    pub rows_before: u64,
    pub rows_after: u64,
    /// Chunks the new rows fill.
    pub chunks_added: usize,
    pub elapsed: Duration,
    /// Indexes that could not be built again over the new image, each with why (an
    /// index covers every stable row, so the old ones no longer fit).
    pub lost_indexes: Vec<String>,
}

/// Appends the rows of `batches` (the table's stored columns in order; a last
/// `_rowid` column, as `SELECT *` of a coopscan table gives, is left out) to the table
/// at `table.dir()`. Nothing is appended if a batch is refused (its shape, a NULL), if
/// another append committed first, or if the table's log cannot be carried.
pub async fn bulk_append(
    table: Table,
    device: Arc<Device>,
    mut batches: impl Stream<Item = datafusion::error::Result<RecordBatch>> + Unpin,
) -> Result<Appended> {
    let start = Instant::now();
    let rows_before = table.rows();
    let provider = CoopTable::new(table.clone(), device, ScanMode::Scan)?;
    let delta = Arc::clone(provider.delta());
    let _writer = delta.writer().await;
    // Held until the new image is in place: no other process commits to the old one.
    // Opened (made, if the table has none yet) even when empty: a commit another
    // process made meanwhile to a log this append did not carry would name the old
    // image and be refused when the table is read.
    let spec = delta.log_spec();
    let _log = spec.map(|spec| spec.open(delta.records())).transpose()?;
    let stored = table.schema().len();
    let mut appender = TableAppender::begin(table.dir())?;
    while let Some(batch) = batches.next().await {
        let batch = batch?;
        let rowid_last = batch.num_columns() == stored + 1
            && batch.schema().field(stored).name() == crate::pushdown::ROWID_COLUMN;
        let batch = match rowid_last {
            true => batch
                .project(&(0..stored).collect::<Vec<_>>())
                .map_err(|e| ExecError::Invalid(e.to_string()))?,
            false => batch,
        };
        appender.write_batch(&cast_to(&batch, &table)?)?;
    }
    let carried = spec.map(|spec| (spec.path().to_path_buf(), spec.identity()));
    let manifest = appender.commit_with(|new| match &carried {
        Some((path, old)) => write_successor(path, *old, identity_of(new, stored))
            .map(|_| ())
            .map_err(|e| StorageError::Invalid(format!("carrying the delta log: {e}"))),
        None => Ok(()),
    })?;
    if let Some((path, _)) = &carried {
        settle(path, identity_of(&manifest, stored))?;
    }
    let indexed = provider.indexed_columns();
    let (dir, device) = (table.dir().to_path_buf(), provider.device());
    let rebuilt = tokio::task::spawn_blocking(move || rebuild_indexes(&dir, &device, &indexed));
    let lost_indexes = rebuilt
        .await
        .unwrap_or_else(|e| vec![format!("building the indexes again: {e}")]);
    Ok(Appended {
        rows_before,
        rows_after: manifest.rows,
        chunks_added: manifest.chunks.len() - table.chunk_count(),
        elapsed: start.elapsed(),
        lost_indexes,
    })
}

/// `batch` with each column cast to the table's type where it differs (a query's
/// `Int64` literal for an `Int32` column); a value the type cannot hold is an error.
fn cast_to(batch: &RecordBatch, table: &Table) -> Result<RecordBatch> {
    use datafusion::arrow::compute::{cast_with_options, CastOptions};
    let schema = table.arrow_schema();
    if batch.num_columns() != schema.fields().len() {
        let names = |fields: &datafusion::arrow::datatypes::Fields| {
            let names: Vec<&str> = fields.iter().map(|f| f.name().as_str()).collect();
            names.join(", ")
        };
        let count = |n: usize| match n {
            1 => "1 column".to_string(),
            n => format!("{n} columns"),
        };
        return Err(ExecError::Invalid(format!(
            "the query gives {} ({}), the table has {} ({}): select the table's columns, in its order",
            count(batch.num_columns()),
            names(batch.schema().fields()),
            count(schema.fields().len()),
            names(schema.fields())
        )));
    }
    let strict = CastOptions {
        safe: false,
        ..Default::default()
    };
    let columns = (batch.columns().iter().zip(schema.fields()))
        .map(
            |(column, field)| match column.data_type() == field.data_type() {
                true => Ok(Arc::clone(column)),
                false => cast_with_options(column, field.data_type(), &strict),
            },
        )
        .collect::<std::result::Result<Vec<_>, _>>()
        .map_err(|e| ExecError::Invalid(format!("an appended value: {e}")))?;
    RecordBatch::try_new(schema, columns).map_err(|e| ExecError::Invalid(e.to_string()))
}

/// The log identity of the image `manifest` describes.
fn identity_of(manifest: &Manifest, columns: usize) -> LogIdentity {
    LogIdentity {
        stable_rows: manifest.rows,
        columns,
        fingerprint: fingerprint_of(manifest),
    }
}
