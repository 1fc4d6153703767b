//! The shape of a scan's output: which stored columns to decode, whether to add the
//! virtual `_rowid` column, and how to assemble a decoded chunk into an output batch.

use std::ops::Range;
use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, Int64Array, RecordBatch, RecordBatchOptions};
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::arrow::error::ArrowError;

/// A stored column decoded only for its row count when the query needs none (e.g.
/// `SELECT count(*)`): the storage layer decodes at least one column.
const ROW_COUNT_COLUMN: usize = 0;

#[derive(Clone, Debug)]
pub struct OutputShape {
    /// Output schema (projected provider schema, `_rowid` last if present).
    pub schema: SchemaRef,
    /// Stored columns to decode, ascending.
    pub storage_projection: Vec<usize>,
    /// Append the `_rowid` column.
    pub with_rowid: bool,
    /// `storage_projection` is only there for the row count; drop its column.
    row_count_only: bool,
}

impl OutputShape {
    /// `projection` indexes the provider schema: stored columns `0..stored`, then
    /// `_rowid` at index `stored`.
    pub fn new(schema: SchemaRef, projection: &[usize], stored: usize) -> OutputShape {
        let mut storage_projection: Vec<usize> =
            projection.iter().copied().filter(|&i| i < stored).collect();
        let with_rowid = projection.contains(&stored);
        let row_count_only = storage_projection.is_empty();
        if row_count_only {
            storage_projection.push(ROW_COUNT_COLUMN);
        }
        OutputShape {
            schema,
            storage_projection,
            with_rowid,
            row_count_only,
        }
    }

    /// Builds the output batch from a decoded batch holding the tuples of `rows` (sorted
    /// ranges, in that order).
    pub fn assemble(
        &self,
        decoded: &RecordBatch,
        rows: &[Range<u64>],
    ) -> Result<RecordBatch, ArrowError> {
        self.assemble_ids(decoded, rows.iter().flat_map(|r| r.clone()))
    }

    /// Builds the output batch from merged tuples and their RIDs (`_rowid`), one each.
    pub fn assemble_with_rowids(
        &self,
        merged: &RecordBatch,
        rids: &[u64],
    ) -> Result<RecordBatch, ArrowError> {
        self.assemble_ids(merged, rids.iter().copied())
    }

    /// The output batch of `tuples`, whose `_rowid`s are `ids` (read only when the
    /// output has that column).
    fn assemble_ids(
        &self,
        tuples: &RecordBatch,
        ids: impl Iterator<Item = u64>,
    ) -> Result<RecordBatch, ArrowError> {
        let mut columns: Vec<ArrayRef> = if self.row_count_only {
            Vec::new()
        } else {
            tuples.columns().to_vec()
        };
        if self.with_rowid {
            columns.push(rowid_list(ids)?);
        }
        let options = RecordBatchOptions::new().with_row_count(Some(tuples.num_rows()));
        RecordBatch::try_new_with_options(Arc::clone(&self.schema), columns, &options)
    }
}

fn rowid_list(ids: impl Iterator<Item = u64>) -> Result<ArrayRef, ArrowError> {
    let ids = ids
        .map(|id| {
            i64::try_from(id)
                .map_err(|_| ArrowError::ComputeError(format!("row id {id} exceeds i64")))
        })
        .collect::<Result<Vec<i64>, ArrowError>>()?;
    Ok(Arc::new(Int64Array::from(ids)))
}
