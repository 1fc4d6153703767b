//! A chunk delivered to a scan: its bytes, and its decoded tuples restricted to the
//! scan's own ranges. Dropping the guard releases the chunk (unpins its piece).

use std::ops::Range;
use std::sync::Arc;

use arrow_array::RecordBatch;
use coopscan_buffer::{ChunkId, HolderId, RowRanges};
use coopscan_storage::filter::RowFilter;
use coopscan_storage::{
    decode_chunk_filtered, decode_chunk_values, decode_chunk_with, ChunkBytes, PageChecks,
    Selected, SelectedValues, Table, ValueColumns,
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
}

impl<'a> ChunkGuard<'a> {
    pub(crate) fn new(
        scan: &'a mut dyn GuardedScan,
        holder: HolderId,
        chunk: ChunkId,
        bytes: Vec<Arc<ChunkBytes>>,
    ) -> Self {
        ChunkGuard {
            scan,
            holder,
            chunk,
            bytes,
        }
    }

    pub fn chunk(&self) -> ChunkId {
        self.chunk
    }

    /// All tuples of the chunk.
    pub fn chunk_rows(&self) -> Range<u64> {
        self.scan.table().chunk(self.chunk.0 as usize).rows()
    }

    /// The scan's tuples in this chunk: sorted, disjoint, non-empty ranges.
    pub fn rows(&self) -> Vec<Range<u64>> {
        self.scan.row_ranges().within(&self.chunk_rows())
    }

    /// The raw bytes this scan reads, as loaded (and verified) by the loader: the
    /// chunk (NSM/PAX) or the pieces of its columns (DSM).
    pub fn bytes(&self) -> impl Iterator<Item = &ChunkBytes> {
        self.bytes.iter().map(|b| b.as_ref())
    }

    /// The scan's tuples of this chunk for its projection, in row order. Decodes the
    /// span covering all of the scan's ranges once, then keeps only their slices.
    pub fn batch(&self) -> Result<RecordBatch> {
        let rows = self.rows();
        let (Some(first), Some(last)) = (rows.first(), rows.last()) else {
            return self.decode(None).map(|b| b.slice(0, 0));
        };
        let span = first.start..last.end;
        let decoded = self.decode(Some(span.clone()))?;
        if rows.len() == 1 {
            return Ok(decoded);
        }
        let slices: Vec<RecordBatch> = rows
            .iter()
            .map(|r| decoded.slice((r.start - span.start) as usize, (r.end - r.start) as usize))
            .collect();
        arrow_select::concat::concat_batches(&decoded.schema(), &slices)
            .map_err(|e| RuntimeError::from(coopscan_storage::StorageError::Arrow(e)))
    }

    /// The scan's tuples of this chunk that pass `filter`, with their rows, for
    /// `projection` (the filter's columns must be among those the scan loads). Decodes
    /// the span covering the scan's ranges once, then keeps only their tuples.
    pub fn select(&self, projection: &[usize], filter: &RowFilter) -> Result<Selected> {
        let (rows, span) = self.span();
        let views: Vec<_> = self.bytes.iter().flat_map(|b| b.views()).collect();
        let table = self.scan.table();
        let k = self.chunk.0 as usize;
        let mut selected = decode_chunk_filtered(
            table,
            k,
            projection,
            Some(span),
            &views,
            PageChecks::SkipChecksum,
            filter,
        )?;
        if rows.len() > 1 {
            let inside: Vec<bool> = selected
                .rows
                .iter()
                .map(|row| rows.iter().any(|r| r.contains(row)))
                .collect();
            let mask = arrow_array::BooleanArray::from(inside.clone());
            selected.batch = arrow_select::filter::filter_record_batch(&selected.batch, &mask)
                .map_err(|e| RuntimeError::from(coopscan_storage::StorageError::Arrow(e)))?;
            let mut keep = inside.into_iter();
            selected.rows.retain(|_| keep.next().unwrap_or(false));
        }
        Ok(selected)
    }

    /// [`Self::select`] without Arrow arrays: the decoded values of the scan's tuples
    /// of this chunk that pass `filter` (all of them for an empty one), for an
    /// aggregating scan (`coopscan_storage::aggregate`).
    pub fn values(&self, wanted: ValueColumns<'_>, filter: &RowFilter) -> Result<SelectedValues> {
        let (rows, span) = self.span();
        let views: Vec<_> = self.bytes.iter().flat_map(|b| b.views()).collect();
        let table = self.scan.table();
        let k = self.chunk.0 as usize;
        let checks = PageChecks::SkipChecksum;
        let mut selected =
            decode_chunk_values(table, k, wanted, Some(span), &views, checks, filter)?;
        if rows.len() > 1 {
            selected.retain(|row| rows.iter().any(|r| r.contains(&row)))?;
        }
        Ok(selected)
    }

    /// The scan's ranges in this chunk and the span covering them (empty at the
    /// chunk's start when there are none).
    fn span(&self) -> (Vec<Range<u64>>, Range<u64>) {
        let rows = self.rows();
        let span = match (rows.first(), rows.last()) {
            (Some(first), Some(last)) => first.start..last.end,
            _ => self.chunk_rows().start..self.chunk_rows().start,
        };
        (rows, span)
    }

    fn decode(&self, rows: Option<Range<u64>>) -> Result<RecordBatch> {
        let table = self.scan.table();
        let k = self.chunk.0 as usize;
        // The pool holds only pieces the loader verified (checksums included), which
        // never change while resident, so decoding checks positions and lengths but does
        // not recompute the checksum of every page for every scan.
        Ok(decode_chunk_with(
            table,
            k,
            self.scan.projection(),
            rows,
            &self
                .bytes
                .iter()
                .flat_map(|b| b.views())
                .collect::<Vec<_>>(),
            PageChecks::SkipChecksum,
        )?)
    }
}

impl Drop for ChunkGuard<'_> {
    fn drop(&mut self) {
        self.scan.release(self.holder);
    }
}
