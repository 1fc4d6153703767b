//! PDT merging in a scan (2012 paper §2.1): the stable tuples of a delivered chunk,
//! decoded, patched with the scan's snapshot of the table's changes, numbered with their
//! RIDs, and trimmed to the RIDs the scan wants and has not produced yet.

use std::ops::Range;
use std::sync::Arc;

use coopscan_delta::Step;
use datafusion::arrow::array::{ArrayRef, RecordBatch, UInt32Array};
use datafusion::arrow::compute::{cast, interleave, take};
use datafusion::common::ScalarValue;
use datafusion::error::{DataFusionError, Result};

use super::DeltaScan;
use crate::error::external;
use crate::shape::OutputShape;

/// Where one merged tuple's values come from.
enum Origin<'a> {
    /// Row `i` of the decoded stable batch.
    Stable(usize),
    /// An inserted tuple's values, by table column.
    Inserted(&'a [ScalarValue]),
    /// Row `i` of the decoded batch with these table columns replaced.
    Modified(usize, &'a [(usize, ScalarValue)]),
}

/// The output batch of stable tuples `sids` (sorted; `decoded` holds them in order)
/// merged with `scan`'s changes.
pub fn merge_chunk(
    scan: &DeltaScan,
    shape: &OutputShape,
    decoded: &RecordBatch,
    sids: &[Range<u64>],
) -> Result<RecordBatch> {
    let (origins, rids) = merged_origins(scan, sids)?;
    // Columns no merged tuple has a value of its own in are the stable values taken:
    // one index vector for all of them, no per-tuple choice.
    let plain = plain_rows(&origins);
    let mut columns = Vec::with_capacity(decoded.num_columns());
    for (j, &column) in shape.storage_projection.iter().enumerate() {
        let stable = decoded.column(j);
        let column = match &plain {
            Some(rows) if !modifies(&origins, column) => taken(stable, rows)?,
            _ => merged_column(stable, column, &origins)?,
        };
        columns.push(column);
    }
    let batch = RecordBatch::try_new(decoded.schema(), columns)?;
    Ok(shape.assemble_with_rowids(&batch, &rids)?)
}

/// Every tuple the ranges produce that the scan still wants, with its RID.
fn merged_origins<'a>(
    scan: &'a DeltaScan,
    sids: &[Range<u64>],
) -> Result<(Vec<Origin<'a>>, Vec<u64>)> {
    let (mut origins, mut rids) = (Vec::new(), Vec::new());
    let mut stable_at = 0usize;
    for range in sids {
        let merged = scan.pdt.merge_steps(range.clone()).map_err(external)?;
        let span = merged.first_rid.0..merged.first_rid.0 + merged.rows();
        let claimed = scan.claim(span);
        let mut rid = merged.first_rid.0;
        let base = stable_at;
        for step in merged.steps {
            for origin in origins_of(step, range.start, base) {
                if claimed.iter().any(|c| c.contains(&rid)) {
                    origins.push(origin);
                    rids.push(rid);
                }
                rid += 1;
            }
        }
        stable_at += usize::try_from(range.end - range.start).map_err(too_large)?;
    }
    Ok((origins, rids))
}

/// The origins of one step's tuples: stable SIDs map to decoded rows from `base`, the
/// decoded row of `first_sid`.
fn origins_of<'a>(step: Step<'a, ScalarValue>, first_sid: u64, base: usize) -> Vec<Origin<'a>> {
    let row = |sid: u64| base + (sid - first_sid) as usize;
    match step {
        Step::Stable(sids) => sids.map(|sid| Origin::Stable(row(sid))).collect(),
        Step::Insert(values) => vec![Origin::Inserted(values)],
        Step::Modified { sid, values } => vec![Origin::Modified(row(sid), values)],
    }
}

/// The decoded row of every merged tuple, when none was inserted.
fn plain_rows(origins: &[Origin<'_>]) -> Option<Vec<u32>> {
    origins
        .iter()
        .map(|origin| match origin {
            Origin::Stable(i) | Origin::Modified(i, _) => u32::try_from(*i).ok(),
            Origin::Inserted(_) => None,
        })
        .collect()
}

/// Whether a merged tuple has its own value in table column `column`.
fn modifies(origins: &[Origin<'_>], column: usize) -> bool {
    origins.iter().any(|origin| match origin {
        Origin::Modified(_, values) => values.iter().any(|(c, _)| *c == column),
        Origin::Stable(_) | Origin::Inserted(_) => false,
    })
}

/// The stable values at `rows`: the column itself when that is all of it, in order.
fn taken(stable: &ArrayRef, rows: &[u32]) -> Result<ArrayRef> {
    let identity =
        rows.len() == stable.len() && rows.iter().enumerate().all(|(k, &i)| i as usize == k);
    if identity {
        return Ok(Arc::clone(stable));
    }
    Ok(take(
        stable.as_ref(),
        &UInt32Array::from(rows.to_vec()),
        None,
    )?)
}

/// A merged tuple's value in one column: a decoded stable row, or a value of its own.
enum Pick {
    Stable(usize),
    Own(ScalarValue),
}

fn pick(origin: &Origin<'_>, column: usize) -> Result<Pick> {
    Ok(match origin {
        Origin::Stable(i) => Pick::Stable(*i),
        Origin::Inserted(values) => match values.get(column) {
            Some(value) => Pick::Own(value.clone()),
            None => {
                return Err(DataFusionError::Internal(format!(
                    "an inserted row lacks column {column}"
                )))
            }
        },
        Origin::Modified(i, values) => match values.binary_search_by_key(&column, |(c, _)| *c) {
            Ok(at) => Pick::Own(values[at].1.clone()),
            Err(_) => Pick::Stable(*i),
        },
    })
}

/// Table column `column` of the merged tuples: the stable values taken, the tuples' own
/// values interleaved where one was inserted or had this column modified.
fn merged_column(stable: &ArrayRef, column: usize, origins: &[Origin<'_>]) -> Result<ArrayRef> {
    let mut own: Vec<ScalarValue> = Vec::new();
    let mut picks: Vec<(usize, usize)> = Vec::with_capacity(origins.len());
    for origin in origins {
        match pick(origin, column)? {
            Pick::Stable(i) => picks.push((0, i)),
            Pick::Own(value) => {
                picks.push((1, own.len()));
                own.push(value);
            }
        }
    }
    let identity =
        picks.len() == stable.len() && picks.iter().enumerate().all(|(k, &p)| p == (0, k));
    if identity {
        return Ok(Arc::clone(stable));
    }
    if own.is_empty() {
        let indices = picks
            .iter()
            .map(|&(_, i)| u32::try_from(i).map_err(too_large));
        let indices = UInt32Array::from(indices.collect::<Result<Vec<u32>>>()?);
        return Ok(take(stable.as_ref(), &indices, None)?);
    }
    let own = cast(&ScalarValue::iter_to_array(own)?, stable.data_type())?;
    Ok(interleave(&[stable.as_ref(), own.as_ref()], &picks)?)
}

fn too_large(_: std::num::TryFromIntError) -> DataFusionError {
    DataFusionError::Internal("a chunk of more than 2^32 tuples".into())
}
