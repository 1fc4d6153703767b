//! What an aggregating scan (`crate::scan_aggregate`) emits: the partial states DataFusion's own partial
//! aggregation would have emitted for the same tuples, built from the scan's counts and
//! exact sums (`coopscan_storage::aggregate::GroupedSums`). The final aggregation above
//! merges and finishes them with DataFusion's accumulators, so every result (an
//! average's rounding, a sum's type) is DataFusion's.

use std::sync::Arc;

use coopscan_storage::aggregate::{AggregateSpec, GroupedSums};
use coopscan_storage::filter::RowFilter;
use coopscan_storage::TableSchema;
use datafusion::arrow::array::{ArrayRef, Decimal128Array, Int64Array, RecordBatch, UInt64Array};
use datafusion::arrow::datatypes::{DataType, SchemaRef};
use datafusion::error::{DataFusionError, Result};

use crate::error::external;

/// A worker holding more groups than this sends them and starts afresh, so an
/// aggregation whose groups nothing bounded at planning (string keys) holds bounded
/// memory; the final aggregation merges the rows of a group sent more than once.
pub const FLUSH_GROUPS: usize = 1 << 18;

/// One partial state column, in the order of the partial aggregation's schema.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StateColumn {
    /// The group's tuples, as `Int64` (`count`'s state).
    CountInt64,
    /// The group's tuples, as `UInt64` (`avg`'s count).
    CountUInt64,
    /// Value `value`'s sum as a `Decimal128` of the state's precision and scale (`sum`'s
    /// state, `avg`'s sum): NULL for a group of no tuples, as DataFusion's.
    Sum {
        value: usize,
        precision: u8,
        scale: i8,
    },
    /// Value `value`'s sum as an `Int64` (`sum`'s state over integers): an error if the
    /// worker's total does not fit, as coopscan's checked `sum` (`crate::checked_sum`)
    /// fails — on the total, where that checks every running sum, so a total that
    /// leaves 64 bits only on the way is accepted here; NULL for a group of no tuples.
    /// (A decimal sum past 128 bits is an error here where DataFusion's accumulator
    /// would wrap.)
    SumInt64 { value: usize },
}

/// An aggregating scan: what it computes and the batch it emits.
#[derive(Debug)]
pub struct ScanAggregation {
    pub spec: AggregateSpec,
    /// Every comparison the scan applies, its own and the absorbed filter's.
    pub filter: RowFilter,
    /// The stored columns it decodes for the spec (column 0 alone when the spec reads
    /// none, for the tuple count); the filter's are decoded by the selection.
    pub columns: Vec<usize>,
    /// The partial aggregation's schema: group columns, then the states.
    pub schema: SchemaRef,
    pub states: Vec<StateColumn>,
    /// The table's stored columns (the group columns' types).
    pub table: TableSchema,
    /// How `EXPLAIN` shows it.
    pub text: String,
    /// A worker holding more groups sends them and starts afresh.
    pub flush_groups: usize,
}

impl ScanAggregation {
    /// The batch of partial states for `sums` (one row a group).
    pub fn batch(&self, sums: &GroupedSums) -> Result<RecordBatch> {
        let groups = sums.groups();
        let mut arrays: Vec<ArrayRef> = Vec::with_capacity(self.schema.fields().len());
        for (i, &c) in self.spec.groups.iter().enumerate() {
            let keys = sums.keys(i).cloned().ok_or_else(|| {
                DataFusionError::Internal(format!("aggregating scan: no group column {i}"))
            })?;
            arrays.push(
                keys.into_arrow(self.table.columns[c].ty)
                    .map_err(external)?,
            );
        }
        let counts = sums.counts();
        for state in &self.states {
            arrays.push(match *state {
                StateColumn::CountInt64 => {
                    let counts = counts.iter().map(|&n| i64::try_from(n).map_err(overflow));
                    Arc::new(Int64Array::from(counts.collect::<Result<Vec<_>>>()?))
                }
                StateColumn::CountUInt64 => Arc::new(UInt64Array::from(counts.to_vec())),
                StateColumn::Sum {
                    value,
                    precision,
                    scale,
                } => {
                    let values = (sums.sums(value).zip(counts)).map(|(s, &n)| (n > 0).then_some(s));
                    let array = Decimal128Array::from_iter(values);
                    Arc::new(array.with_precision_and_scale(precision, scale)?)
                }
                StateColumn::SumInt64 { value } => {
                    let values = (sums.sums(value).zip(counts)).map(|(s, &n)| {
                        let fits = i64::try_from(s).map_err(|_| {
                            DataFusionError::Execution("Arithmetic overflow in sum".into())
                        });
                        (n > 0).then_some(fits).transpose()
                    });
                    Arc::new(Int64Array::from(values.collect::<Result<Vec<_>>>()?))
                }
            });
        }
        debug_assert!(arrays.iter().all(|a| a.len() == groups));
        Ok(RecordBatch::try_new(Arc::clone(&self.schema), arrays)?)
    }
}

fn overflow(_: std::num::TryFromIntError) -> DataFusionError {
    DataFusionError::Execution("Arithmetic overflow: a count exceeds Int64".into())
}

/// The data type a state column must have in the partial schema.
pub fn state_type(state: StateColumn) -> DataType {
    match state {
        StateColumn::CountInt64 | StateColumn::SumInt64 { .. } => DataType::Int64,
        StateColumn::CountUInt64 => DataType::UInt64,
        StateColumn::Sum {
            precision, scale, ..
        } => DataType::Decimal128(precision, scale),
    }
}
