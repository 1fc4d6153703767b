//! PDT merging in a scan (2012 paper §2.1): the stable tuples of a delivered chunk,
//! decoded, patched with the scan's snapshot of the table's changes, numbered with their
//! RIDs, and trimmed to the RIDs the scan wants and has not produced yet.

use std::ops::Range;
use std::sync::Arc;

use coopscan_delta::Step;
use datafusion::arrow::array::{ArrayRef, BooleanArray, RecordBatch, UInt32Array};
use datafusion::arrow::compute::{cast, filter_record_batch, interleave, take};
use datafusion::common::ScalarValue;
use datafusion::error::{DataFusionError, Result};

use super::DeltaScan;
use crate::error::external;
use crate::shape::OutputShape;

/// The merged tuples of a delivered batch, in output order, by where their values come
/// from: built once per batch from the tree's steps, then used for every column.
struct Plan<'a> {
    /// Per tuple: `(0, decoded row)`, or `(1, i)` for the `i`th of `inserted`.
    base: Vec<(usize, usize)>,
    inserted: Vec<&'a [ScalarValue]>,
    /// A modified stable tuple's place in `base` and its new values.
    modified: Vec<(usize, &'a [(usize, ScalarValue)])>,
    rids: Vec<u64>,
}

/// The output batch of stable tuples `sids` (sorted; `decoded` holds them in order)
/// merged with `scan`'s changes.
pub fn merge_chunk(
    scan: &DeltaScan,
    shape: &OutputShape,
    decoded: &RecordBatch,
    sids: &[Range<u64>],
) -> Result<RecordBatch> {
    let plan = Plan::of(scan, sids)?;
    // Without inserted tuples, a column no tuple modified is one `take` of its stable
    // values (or the values themselves): one index vector for all such columns.
    let stable_rows = if plan.inserted.is_empty() {
        let rows = plan.base.iter().map(|&(_, i)| index(i));
        Some(UInt32Array::from(rows.collect::<Result<Vec<u32>>>()?))
    } else {
        None
    };
    let mut columns = Vec::with_capacity(decoded.num_columns());
    for (j, &column) in shape.storage_projection.iter().enumerate() {
        let stable = decoded.column(j);
        let own = plan.modifications_of(column);
        let merged = match &stable_rows {
            Some(rows) if own.is_empty() => taken(stable, rows)?,
            _ => plan.interleaved(stable, column, &own)?,
        };
        columns.push(merged);
    }
    let batch = RecordBatch::try_new(decoded.schema(), columns)?;
    let Some(filter) = shape.merged_filter() else {
        return Ok(shape.assemble_with_rowids(&batch, &plan.rids)?);
    };
    // The scan's pushed comparisons, on the merged values (changed ones included).
    let position = |c: usize| shape.storage_projection.iter().position(|&p| p == c);
    let keep = filter
        .select_arrays(batch.num_rows(), |c| {
            position(c).map(|i| batch.column(i).as_ref())
        })
        .map_err(external)?;
    let rids: Vec<u64> = plan
        .rids
        .iter()
        .zip(&keep)
        .filter(|(_, &k)| k)
        .map(|(&r, _)| r)
        .collect();
    let batch = filter_record_batch(&batch, &BooleanArray::from(keep))?;
    Ok(shape.assemble_with_rowids(&batch, &rids)?)
}

impl<'a> Plan<'a> {
    /// Every tuple the ranges produce that the scan still wants, with its RID.
    fn of(scan: &'a DeltaScan, sids: &[Range<u64>]) -> Result<Plan<'a>> {
        let mut plan = Plan {
            base: Vec::new(),
            inserted: Vec::new(),
            modified: Vec::new(),
            rids: Vec::new(),
        };
        let mut first_row = 0usize;
        for range in sids {
            let merged = scan.pdt.merge_steps(range.clone()).map_err(external)?;
            let claimed = scan.claim(merged.first_rid.0..merged.first_rid.0 + merged.rows());
            let mut rid = merged.first_rid.0;
            let row_of = |sid: u64| first_row + (sid - range.start) as usize;
            for step in merged.steps {
                let rows = step.rows();
                match step {
                    Step::Stable(sids) => plan.stable_run(row_of(sids.start), rid, rows, &claimed),
                    Step::Insert(values) if wanted(&claimed, rid) => {
                        plan.base.push((1, plan.inserted.len()));
                        plan.inserted.push(values);
                        plan.rids.push(rid);
                    }
                    Step::Modified { sid, values } if wanted(&claimed, rid) => {
                        plan.modified.push((plan.base.len(), values));
                        plan.base.push((0, row_of(sid)));
                        plan.rids.push(rid);
                    }
                    Step::Insert(_) | Step::Modified { .. } => {}
                }
                rid += rows;
            }
            first_row += usize::try_from(range.end - range.start).map_err(too_large)?;
        }
        Ok(plan)
    }

    /// Stable tuples from decoded row `row` on, at RIDs `rid..rid + len`: the claimed
    /// ones.
    fn stable_run(&mut self, row: usize, rid: u64, len: u64, claimed: &[Range<u64>]) {
        for c in claimed {
            let (start, end) = (c.start.max(rid), c.end.min(rid + len));
            if start < end {
                let first = row + (start - rid) as usize;
                self.base
                    .extend((first..first + (end - start) as usize).map(|i| (0, i)));
                self.rids.extend(start..end);
            }
        }
    }

    /// The modified tuples with a new value in table column `column`: their place, value.
    fn modifications_of(&self, column: usize) -> Vec<(usize, &'a ScalarValue)> {
        let value = |values: &'a [(usize, ScalarValue)]| {
            let at = values.binary_search_by_key(&column, |(c, _)| *c).ok()?;
            values.get(at).map(|(_, v)| v)
        };
        self.modified
            .iter()
            .filter_map(|&(pos, values)| Some((pos, value(values)?)))
            .collect()
    }

    /// Table column `column`: the stable values, the inserted tuples' and the new values
    /// `own` interleaved.
    fn interleaved(
        &self,
        stable: &ArrayRef,
        column: usize,
        own: &[(usize, &ScalarValue)],
    ) -> Result<ArrayRef> {
        let mut values = Vec::with_capacity(self.inserted.len() + own.len());
        for row in &self.inserted {
            let Some(value) = row.get(column) else {
                return Err(DataFusionError::Internal(format!(
                    "an inserted row lacks column {column}"
                )));
            };
            values.push(value.clone());
        }
        let mut picks = self.base.clone();
        for &(pos, value) in own {
            if let Some(pick) = picks.get_mut(pos) {
                *pick = (1, values.len());
            }
            values.push(value.clone());
        }
        let values = cast(&ScalarValue::iter_to_array(values)?, stable.data_type())?;
        Ok(interleave(&[stable.as_ref(), values.as_ref()], &picks)?)
    }
}

/// Whether RID `rid` lies in the claimed ranges.
fn wanted(claimed: &[Range<u64>], rid: u64) -> bool {
    claimed.iter().any(|c| c.contains(&rid))
}

fn index(i: usize) -> Result<u32> {
    u32::try_from(i).map_err(too_large)
}

/// The stable values at `rows`: the column itself when that is all of it, in order.
fn taken(stable: &ArrayRef, rows: &UInt32Array) -> Result<ArrayRef> {
    let values = rows.values();
    let identity =
        values.len() == stable.len() && values.iter().enumerate().all(|(k, &i)| i as usize == k);
    if identity {
        return Ok(Arc::clone(stable));
    }
    Ok(take(stable.as_ref(), rows, None)?)
}

fn too_large(_: std::num::TryFromIntError) -> DataFusionError {
    DataFusionError::Internal("a chunk of more than 2^32 tuples".into())
}
