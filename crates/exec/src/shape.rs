//! The shape of a scan's output: which stored columns to decode, whether to add the
//! virtual `_rowid` column, and how to assemble a decoded chunk into an output batch.

use std::ops::Range;
use std::sync::Arc;

use coopscan_storage::filter::RowFilter;
use datafusion::arrow::array::{ArrayRef, Int64Array, RecordBatch, RecordBatchOptions};
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::arrow::error::ArrowError;

/// A stored column decoded only for its row count when the query needs none (e.g.
/// `SELECT count(*)`).
const ROW_COUNT_COLUMN: usize = 0;

#[derive(Clone, Debug)]
pub struct OutputShape {
    /// Output schema (projected provider schema, `_rowid` last if present).
    pub schema: SchemaRef,
    /// Stored columns to decode, the output's in output order first.
    pub storage_projection: Vec<usize>,
    /// Append the `_rowid` column.
    pub with_rowid: bool,
    /// How many of `storage_projection` the output has (the rest are decoded only for
    /// the row count, or for a filter evaluated on merged tuples).
    output_columns: usize,
    /// The comparisons the scan evaluates itself (pushed down Exact).
    filter: Option<ScanFilter>,
}

/// A scan's own filter, where it is evaluated, and how `EXPLAIN` shows it.
#[derive(Clone, Debug)]
struct ScanFilter {
    filter: Arc<RowFilter>,
    at: FilterAt,
    text: String,
}

/// Where a scan evaluates its [`RowFilter`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FilterAt {
    /// On the stored values while decoding (`coopscan_storage::decode_chunk_filtered`).
    Decoding,
    /// On merged tuples, whose changed values storage does not know
    /// (`crate::delta::merge_chunk`): its columns are then decoded with the output's.
    Merged,
}

impl OutputShape {
    /// `projection` indexes the provider schema: stored columns `0..stored`, then
    /// `_rowid` at index `stored`.
    pub fn new(schema: SchemaRef, projection: &[usize], stored: usize) -> OutputShape {
        let storage_projection: Vec<usize> =
            projection.iter().copied().filter(|&i| i < stored).collect();
        let output_columns = storage_projection.len();
        let with_rowid = projection.contains(&stored);
        let mut shape = OutputShape {
            schema,
            storage_projection,
            with_rowid,
            output_columns,
            filter: None,
        };
        shape.pad_for_row_count();
        shape
    }

    /// This shape with `filter` evaluated `at`; `text` says it in `EXPLAIN`.
    pub fn with_filter(mut self, filter: RowFilter, at: FilterAt, text: String) -> OutputShape {
        self.storage_projection.truncate(self.output_columns);
        if at == FilterAt::Merged {
            for column in filter.columns() {
                if !self.storage_projection.contains(&column) {
                    self.storage_projection.push(column);
                }
            }
        }
        self.filter = Some(ScanFilter {
            filter: Arc::new(filter),
            at,
            text,
        });
        self.pad_for_row_count();
        self
    }

    /// The storage layer decodes at least one column: a query that needs none (e.g.
    /// `SELECT count(*)`) decodes one only for its row count.
    fn pad_for_row_count(&mut self) {
        if self.storage_projection.is_empty() {
            self.storage_projection.push(ROW_COUNT_COLUMN);
        }
    }

    /// The filter the scan evaluates `at`, if any.
    fn filter_at(&self, at: FilterAt) -> Option<&RowFilter> {
        let f = self.filter.as_ref().filter(|f| f.at == at)?;
        Some(&f.filter)
    }

    /// The filter the scan evaluates while decoding, if any.
    pub fn decoding_filter(&self) -> Option<&RowFilter> {
        self.filter_at(FilterAt::Decoding)
    }

    /// The filter the scan evaluates on merged tuples, if any.
    pub fn merged_filter(&self) -> Option<&RowFilter> {
        self.filter_at(FilterAt::Merged)
    }

    /// The filter as `EXPLAIN` shows it (empty without one).
    pub fn filter_text(&self) -> &str {
        self.filter.as_ref().map_or("", |f| f.text.as_str())
    }

    /// The filter the scan evaluates, wherever it does.
    pub fn filter(&self) -> Option<&RowFilter> {
        self.filter.as_ref().map(|f| f.filter.as_ref())
    }

    /// The stored columns the scan reads: those it decodes, in that order (an
    /// unfiltered chunk is decoded for these), then a decoding filter's others.
    pub fn load_columns(&self) -> Vec<usize> {
        let mut columns = self.storage_projection.clone();
        for column in self
            .decoding_filter()
            .map(RowFilter::columns)
            .unwrap_or_default()
        {
            if !columns.contains(&column) {
                columns.push(column);
            }
        }
        columns
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

    /// The output batch of `tuples` (decoded for `storage_projection`), whose
    /// `_rowid`s are `ids` (read only when the output has that column).
    pub fn assemble_ids(
        &self,
        tuples: &RecordBatch,
        ids: impl Iterator<Item = u64>,
    ) -> Result<RecordBatch, ArrowError> {
        let mut columns: Vec<ArrayRef> = tuples.columns()[..self.output_columns].to_vec();
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
