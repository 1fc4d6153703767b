//! A chunk delivered to a scan: its bytes, and its decoded tuples restricted to the
//! scan's own ranges. Dropping the guard releases the chunk (unpins its piece).

use std::ops::Range;
use std::sync::Arc;

use arrow_array::RecordBatch;
use coopscan_buffer::{ChunkId, HolderId, RowRanges};
use coopscan_storage::filter::RowFilter;
use coopscan_storage::{
    decode_part_filtered, decode_part_values, decode_part_with, ChunkBytes, ChunkMeta, Extent,
    PageChecks, Selected, SelectedValues, StorageError, Table, ValueColumns,
};

use crate::error::{Result, RuntimeError};

/// What a guard needs of the scan that handed it out (`scan::CScan`): what to decode,
/// and whom to tell when the chunk is released.
pub(crate) trait GuardedScan {
    fn table(&self) -> &Table;
    fn row_ranges(&self) -> &RowRanges;
    fn projection(&self) -> &[usize];
    /// Releases the chunk `holder` holds (unpins its pieces).
    fn release(&mut self, holder: HolderId);
}

/// One chunk being processed by one scan. Holds the scan mutably, so the scan asks for
/// its next chunk only after this one is released.
pub struct ChunkGuard<'a> {
    scan: &'a mut dyn GuardedScan,
    holder: HolderId,
    chunk: ChunkId,
    /// The chunk's pieces this scan reads (one for NSM/PAX, its columns for DSM),
    /// shared with the pool's copy; kept alive here even if they are evicted.
    bytes: Vec<Arc<ChunkBytes>>,
    /// A scattered load's parts (some pages of an NSM/PAX chunk, read for index
    /// selections: `Table::loaded_parts`); `None`: the whole chunk.
    parts: Option<Vec<ChunkMeta>>,
}

impl<'a> ChunkGuard<'a> {
    /// The guard of `chunk`, its parts found if its bytes are a scattered load's; an
    /// error (the guard dropped, the chunk released) if they are not its pages.
    pub(crate) fn new(
        scan: &'a mut dyn GuardedScan,
        holder: HolderId,
        chunk: ChunkId,
        bytes: Vec<Arc<ChunkBytes>>,
    ) -> Result<Self> {
        let mut guard = ChunkGuard {
            scan,
            holder,
            chunk,
            bytes,
            parts: None,
        };
        let views = guard.views();
        let parts = guard.scan.table().loaded_parts(chunk.0 as usize, &views)?;
        guard.parts = parts;
        Ok(guard)
    }

    pub fn chunk(&self) -> ChunkId {
        self.chunk
    }

    /// All tuples of the chunk.
    pub fn chunk_rows(&self) -> Range<u64> {
        self.scan.table().chunk(self.chunk.0 as usize).rows()
    }

    /// The scan's tuples in this chunk that its bytes hold: sorted, disjoint, non-empty
    /// ranges (of a scattered load, those in its parts only).
    pub fn rows(&self) -> Vec<Range<u64>> {
        self.parts().flat_map(|part| self.rows_in(part)).collect()
    }

    /// The raw bytes this scan reads, as loaded (and verified) by the loader: the
    /// chunk (NSM/PAX; of a scattered load, some of its pages) or the pieces of its
    /// columns (DSM).
    pub fn bytes(&self) -> impl Iterator<Item = &ChunkBytes> {
        self.bytes.iter().map(|b| b.as_ref())
    }

    /// The scan's tuples of this chunk for its projection, in row order. Decodes the
    /// span covering all of the scan's ranges once (per part), then keeps only their
    /// slices.
    pub fn batch(&self) -> Result<RecordBatch> {
        let mut batches = Vec::new();
        for part in self.parts() {
            let rows = self.rows_in(part);
            let (Some(first), Some(last)) = (rows.first(), rows.last()) else {
                continue;
            };
            let span = first.start..last.end;
            let decoded = self.decode(part, Some(span.clone()))?;
            batches.extend(rows.iter().map(|r| {
                decoded.slice((r.start - span.start) as usize, (r.end - r.start) as usize)
            }));
        }
        match batches.len() {
            0 => self.decode(self.first_part(), None).map(|b| b.slice(0, 0)),
            1 => Ok(batches.remove(0)),
            _ => concat_batches(&batches),
        }
    }

    /// The scan's tuples of this chunk that pass `filter`, with their rows, for
    /// `projection` (the filter's columns must be among those the scan loads). Decodes
    /// the span covering the scan's ranges once (per part), then keeps only their
    /// tuples.
    pub fn select(&self, projection: &[usize], filter: &RowFilter) -> Result<Selected> {
        let mut all = self.per_part(|table, part, span, views| {
            let checks = PageChecks::SkipChecksum;
            decode_part_filtered(table, part, projection, span, views, checks, filter)
        })?;
        for (selected, rows) in &mut all {
            if rows.len() > 1 {
                keep_inside(selected, rows)?;
            }
        }
        if all.len() == 1 {
            return Ok(all.remove(0).0);
        }
        let batches: Vec<RecordBatch> = all.iter().map(|(s, _)| s.batch.clone()).collect();
        let batch = concat_batches(&batches)?;
        let rows = all.into_iter().flat_map(|(s, _)| s.rows).collect();
        Ok(Selected { batch, rows })
    }

    /// [`Self::select`] without Arrow arrays: the decoded values of the scan's tuples
    /// of this chunk that pass `filter` (all of them for an empty one), for an
    /// aggregating scan (`coopscan_storage::aggregate`); one set per part of a
    /// scattered load, one for a whole chunk.
    pub fn values(
        &self,
        wanted: ValueColumns<'_>,
        filter: &RowFilter,
    ) -> Result<Vec<SelectedValues>> {
        let all = self.per_part(|table, part, span, views| {
            let checks = PageChecks::SkipChecksum;
            decode_part_values(table, part, wanted, span, views, checks, filter)
        })?;
        all.into_iter()
            .map(|(mut selected, rows)| {
                if rows.len() > 1 {
                    selected.retain(|row| rows.iter().any(|r| r.contains(&row)))?;
                }
                Ok(selected)
            })
            .collect()
    }

    /// `decode` of each part over the span of the scan's ranges in it, with those
    /// ranges (the tuples to keep when there are several).
    fn per_part<T>(
        &self,
        decode: impl Fn(
            &Table,
            (usize, &ChunkMeta),
            Option<Range<u64>>,
            &[(Extent, &[u8])],
        ) -> coopscan_storage::Result<T>,
    ) -> Result<Vec<(T, Vec<Range<u64>>)>> {
        let views = self.views();
        let (table, k) = (self.scan.table(), self.chunk.0 as usize);
        self.parts()
            .map(|part| {
                let (rows, span) = self.span(part);
                Ok((decode(table, (k, part), Some(span), &views)?, rows))
            })
            .collect()
    }

    /// The chunk, or a scattered load's parts: what the bytes hold, described like a
    /// chunk each.
    fn parts(&self) -> impl Iterator<Item = &ChunkMeta> + '_ {
        let whole = self.parts.is_none().then(|| self.first_part());
        whole.into_iter().chain(self.parts.iter().flatten())
    }

    fn first_part(&self) -> &ChunkMeta {
        match self.parts.as_ref().and_then(|p| p.first()) {
            Some(part) => part,
            None => self.scan.table().chunk(self.chunk.0 as usize),
        }
    }

    /// The scan's tuples in `part`.
    fn rows_in(&self, part: &ChunkMeta) -> Vec<Range<u64>> {
        self.scan.row_ranges().within(&part.rows())
    }

    /// The scan's ranges in `part` and the span covering them (empty at the part's
    /// start when there are none).
    fn span(&self, part: &ChunkMeta) -> (Vec<Range<u64>>, Range<u64>) {
        let rows = self.rows_in(part);
        let span = match (rows.first(), rows.last()) {
            (Some(first), Some(last)) => first.start..last.end,
            _ => part.rows().start..part.rows().start,
        };
        (rows, span)
    }

    fn views(&self) -> Vec<(Extent, &[u8])> {
        self.bytes.iter().flat_map(|b| b.views()).collect()
    }

    fn decode(&self, part: &ChunkMeta, rows: Option<Range<u64>>) -> Result<RecordBatch> {
        let table = self.scan.table();
        let k = self.chunk.0 as usize;
        // The pool holds only pieces the loader verified (checksums included), which
        // never change while resident, so decoding checks positions and lengths but does
        // not recompute the checksum of every page for every scan.
        let projection = self.scan.projection();
        let checks = PageChecks::SkipChecksum;
        Ok(decode_part_with(
            table,
            (k, part),
            projection,
            rows,
            &self.views(),
            checks,
        )?)
    }
}

/// Keeps the tuples of `selected` inside `rows`.
fn keep_inside(selected: &mut Selected, rows: &[Range<u64>]) -> Result<()> {
    let inside: Vec<bool> = (selected.rows.iter())
        .map(|row| rows.iter().any(|r| r.contains(row)))
        .collect();
    let mask = arrow_array::BooleanArray::from(inside.clone());
    selected.batch = arrow_select::filter::filter_record_batch(&selected.batch, &mask)
        .map_err(|e| RuntimeError::from(StorageError::Arrow(e)))?;
    let mut keep = inside.into_iter();
    selected.rows.retain(|_| keep.next().unwrap_or(false));
    Ok(())
}

fn concat_batches(batches: &[RecordBatch]) -> Result<RecordBatch> {
    let schema = batches.first().map(|b| b.schema()).ok_or_else(|| {
        RuntimeError::from(StorageError::Invalid("no batch to concatenate".into()))
    })?;
    arrow_select::concat::concat_batches(&schema, batches)
        .map_err(|e| RuntimeError::from(StorageError::Arrow(e)))
}

impl Drop for ChunkGuard<'_> {
    fn drop(&mut self) {
        self.scan.release(self.holder);
    }
}
