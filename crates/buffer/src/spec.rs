//! What a scan asks for: tuple ranges, columns and order, and the chunk set they map to.

use crate::pool::TableId;
use crate::{ChunkId, ScanPages};
use serde::{Deserialize, Serialize};
use std::ops::Range;

/// A set of a table's columns, one bit per column (the first 64 columns of a table; a
/// scan of a wider column asks for [`ColumnMask::ALL`]): the columns a scan reads, and
/// the columns a piece holds (NSM/PAX: all of them; DSM: one; Clotho's C-pages: any
/// set).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct ColumnMask(pub u64);

impl ColumnMask {
    pub const ALL: ColumnMask = ColumnMask(u64::MAX);
    /// Columns a mask can name individually.
    pub const BITS: usize = 64;

    /// The one column of a single-column set (a DSM piece), else `None`.
    pub fn single(self) -> Option<u16> {
        (self.0.count_ones() == 1).then(|| self.0.trailing_zeros() as u16)
    }

    /// The set holding just `column` (`ALL` for a column past [`ColumnMask::BITS`]).
    pub fn column(column: u16) -> ColumnMask {
        1u64.checked_shl(u32::from(column))
            .map_or(ColumnMask::ALL, ColumnMask)
    }

    /// The mask of a projection (column indexes); any index ≥ 64 gives `ALL`.
    pub fn of(projection: &[usize]) -> ColumnMask {
        if projection.iter().any(|&c| c >= Self::BITS) {
            return ColumnMask::ALL;
        }
        ColumnMask(projection.iter().fold(0, |m, &c| m | 1u64 << c))
    }
}

/// Whether a scan accepts its chunks in any order (a CScan) or only ascending (a Scan
/// under the same buffer manager, e.g. for a plan that needs table order).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ScanOrder {
    #[default]
    Any,
    InOrder,
}

/// A sorted set of disjoint, non-adjacent, non-empty tuple ranges: the one range type
/// from the SQL provider down to the ABM. Built only through [`RowRanges::new`], which
/// normalizes, so every holder can rely on the shape.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(from = "Vec<Range<u64>>", into = "Vec<Range<u64>>")]
pub struct RowRanges(Vec<Range<u64>>);

impl RowRanges {
    /// Normalizes arbitrary (overlapping, unsorted, empty, adjacent) ranges.
    pub fn new(ranges: impl IntoIterator<Item = Range<u64>>) -> RowRanges {
        RowRanges(merge(ranges.into_iter().collect()))
    }

    /// All of `0..rows`.
    pub fn all(rows: u64) -> RowRanges {
        RowRanges::new(std::iter::once(0..rows))
    }

    pub fn ranges(&self) -> &[Range<u64>] {
        &self.0
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Number of tuples covered.
    pub fn rows(&self) -> u64 {
        self.0.iter().map(|r| r.end - r.start).sum()
    }

    /// Last row + 1, or 0 when empty.
    pub fn end(&self) -> u64 {
        self.0.last().map_or(0, |r| r.end)
    }

    /// The first `n` tuples (all of them if there are fewer): a scan with a `LIMIT`
    /// and no filter left above it needs no more.
    pub fn first_rows(&self, n: u64) -> RowRanges {
        let mut left = n;
        let mut out = Vec::new();
        for r in &self.0 {
            if left == 0 {
                break;
            }
            let take = (r.end - r.start).min(left);
            out.push(r.start..r.start + take);
            left -= take;
        }
        RowRanges(out)
    }

    /// The parts inside `window`, still sorted and disjoint.
    pub fn within(&self, window: &Range<u64>) -> Vec<Range<u64>> {
        let first = self.0.partition_point(|r| r.end <= window.start);
        self.0[first..]
            .iter()
            .take_while(|r| r.start < window.end)
            .map(|r| r.start.max(window.start)..r.end.min(window.end))
            .filter(|r| r.start < r.end)
            .collect()
    }
}

impl From<Vec<Range<u64>>> for RowRanges {
    fn from(ranges: Vec<Range<u64>>) -> Self {
        RowRanges::new(ranges)
    }
}

impl From<Range<u64>> for RowRanges {
    fn from(range: Range<u64>) -> Self {
        RowRanges::new([range])
    }
}

impl FromIterator<Range<u64>> for RowRanges {
    fn from_iter<I: IntoIterator<Item = Range<u64>>>(iter: I) -> Self {
        RowRanges::new(iter)
    }
}

impl From<RowRanges> for Vec<Range<u64>> {
    fn from(ranges: RowRanges) -> Self {
        ranges.0
    }
}

/// A scan's request to the buffer manager.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScanSpec {
    pub table: TableId,
    /// Possibly several ranges (e.g. after zonemap pruning).
    pub ranges: RowRanges,
    pub columns: ColumnMask,
    pub order: ScanOrder,
    /// Workers that process its chunks at once, each holding one (1..=`MAX_WORKERS`).
    #[serde(default = "one_worker")]
    pub workers: u16,
    /// The table version it reads, as chunks in order (2012 §2.1, "Bulk Appends"):
    /// `ranges` are rows of this snapshot. `None`: the chunks the table was opened
    /// with.
    #[serde(default)]
    pub snapshot: Option<Snapshot>,
    /// An index selection's pages (2004 report §4.2): per chunk, the pages holding the
    /// tuples it wants. `None`: an ordinary scan, which needs every page.
    #[serde(default)]
    pub pages: Option<ScanPages>,
}

fn one_worker() -> u16 {
    1
}

impl ScanSpec {
    /// A CScan (any order) of table 0.
    pub fn new(ranges: impl Into<RowRanges>, columns: ColumnMask) -> Self {
        ScanSpec {
            table: TableId::default(),
            ranges: ranges.into(),
            columns,
            order: ScanOrder::Any,
            workers: 1,
            snapshot: None,
            pages: None,
        }
    }

    /// All rows of a table with `row_count` rows, all columns.
    pub fn full(row_count: u64) -> Self {
        ScanSpec::new(RowRanges::all(row_count), ColumnMask::ALL)
    }

    pub fn in_order(mut self) -> Self {
        self.order = ScanOrder::InOrder;
        self
    }

    /// A scan processed by `workers` workers at once (a parallel CScan).
    pub fn with_workers(mut self, workers: u16) -> Self {
        self.workers = workers;
        self
    }

    /// An index selection that needs only `pages` of its chunks (see
    /// [`ScanSpec::pages`]).
    pub fn with_pages(mut self, pages: ScanPages) -> Self {
        self.pages = Some(pages);
        self
    }

    /// A scan of `snapshot`'s rows (see [`ScanSpec::snapshot`]).
    pub fn on_snapshot(mut self, snapshot: Snapshot) -> Self {
        self.snapshot = Some(snapshot);
        self
    }
}

/// A storage-level snapshot of a table (2012 §2.1, "Bulk Appends"): the chunks of one
/// table version, in order. A bulk append writes new pages into new chunks and adds
/// them to a copy of the snapshot it appends to, so snapshots of one table share a
/// prefix of chunks. Chunk ids are never reused and an append's are above every id
/// before it, so ascending ids are the snapshot's row order.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(from = "Vec<Range<u32>>", into = "Vec<Range<u32>>")]
pub struct Snapshot(ChunkRanges);

impl Snapshot {
    /// The snapshot of the chunks `ranges` (normalized).
    pub fn new(ranges: impl IntoIterator<Item = Range<u32>>) -> Snapshot {
        Snapshot(ChunkRanges::from_ranges(ranges.into_iter().collect()))
    }

    /// The snapshot of chunks `0..count`: a table as written, before any append.
    pub fn first(count: u32) -> Snapshot {
        Snapshot::new(std::iter::once(0..count))
    }

    /// Its chunks, ascending.
    pub fn chunks(&self) -> &ChunkRanges {
        &self.0
    }

    /// This snapshot with `appended` after its chunks: what a bulk append to it sees.
    pub fn appended(&self, appended: Range<u32>) -> Snapshot {
        let mut ranges = self.0.ranges().to_vec();
        ranges.push(appended);
        Snapshot::new(ranges)
    }
}

impl From<Vec<Range<u32>>> for Snapshot {
    fn from(ranges: Vec<Range<u32>>) -> Self {
        Snapshot::new(ranges)
    }
}

impl From<Snapshot> for Vec<Range<u32>> {
    fn from(snapshot: Snapshot) -> Self {
        snapshot.0.ranges().to_vec()
    }
}

/// A sorted set of disjoint, non-adjacent, non-empty chunk ranges.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ChunkRanges {
    ranges: Vec<Range<u32>>,
    /// `offsets[i]`: chunks in `ranges[..i]`, for `nth` by binary search.
    offsets: Vec<u32>,
    len: u32,
}

impl ChunkRanges {
    /// Normalizes arbitrary (overlapping, unsorted, empty) ranges.
    pub fn from_ranges(ranges: Vec<Range<u32>>) -> Self {
        let merged = merge(ranges);
        let mut offsets = Vec::with_capacity(merged.len());
        let mut len = 0;
        for r in &merged {
            offsets.push(len);
            len += r.end - r.start;
        }
        ChunkRanges {
            ranges: merged,
            offsets,
            len,
        }
    }

    pub fn ranges(&self) -> &[Range<u32>] {
        &self.ranges
    }

    /// Number of chunks in the set.
    pub fn len(&self) -> u32 {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn contains(&self, chunk: ChunkId) -> bool {
        let i = self.ranges.partition_point(|r| r.end <= chunk.0);
        self.ranges.get(i).is_some_and(|r| r.start <= chunk.0)
    }

    /// The `pos`-th chunk in ascending order.
    pub fn nth(&self, pos: u32) -> Option<ChunkId> {
        if pos >= self.len {
            return None;
        }
        let i = self.offsets.partition_point(|&o| o <= pos) - 1;
        Some(ChunkId(self.ranges[i].start + (pos - self.offsets[i])))
    }

    /// Rank of `chunk` in ascending order (the inverse of [`ChunkRanges::nth`]), or
    /// `None` when it is not in the set.
    pub fn position(&self, chunk: ChunkId) -> Option<u32> {
        let i = self.ranges.partition_point(|r| r.end <= chunk.0);
        let r = self.ranges.get(i).filter(|r| r.start <= chunk.0)?;
        Some(self.offsets[i] + (chunk.0 - r.start))
    }

    /// Chunks in ascending order.
    pub fn iter(&self) -> impl Iterator<Item = ChunkId> + '_ {
        self.ranges.iter().flat_map(|r| r.clone().map(ChunkId))
    }
}

/// Sorted, disjoint, non-adjacent, non-empty: drops empty ranges, merges the rest.
fn merge<T: Ord + Copy>(mut ranges: Vec<Range<T>>) -> Vec<Range<T>> {
    ranges.retain(|r| r.start < r.end);
    ranges.sort_by_key(|r| r.start);
    let mut merged: Vec<Range<T>> = Vec::with_capacity(ranges.len());
    for r in ranges {
        match merged.last_mut() {
            Some(last) if r.start <= last.end => last.end = last.end.max(r.end),
            _ => merged.push(r),
        }
    }
    merged
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn row_ranges_normalize_and_clip() {
        let r = RowRanges::new(vec![10..20, 0..0, 5..12, 20..25, 40..50]);
        assert_eq!(r.ranges(), &[5..25, 40..50]);
        assert_eq!(r.rows(), 30);
        assert_eq!(r.within(&(20..45)), vec![20..25, 40..45]);
        assert!(r.within(&(25..40)).is_empty());
        assert_eq!(r.first_rows(0), RowRanges::default());
        assert_eq!(r.first_rows(7), RowRanges::from(5..12));
        assert_eq!(r.first_rows(25).ranges(), &[5..25, 40..45]);
        assert_eq!(r.first_rows(1000), r);
    }

    #[test]
    fn chunk_ranges_index_by_position() {
        let c = ChunkRanges::from_ranges(vec![8..10, 2..5]);
        let all: Vec<u32> = (0..c.len()).filter_map(|i| c.nth(i)).map(|c| c.0).collect();
        assert_eq!(all, vec![2, 3, 4, 8, 9]);
        assert_eq!(c.nth(5), None);
        for (pos, chunk) in c.iter().enumerate() {
            assert_eq!(c.position(chunk), Some(pos as u32), "{chunk}");
        }
        for absent in [0, 1, 5, 7, 10, 99] {
            assert_eq!(c.position(ChunkId(absent)), None, "{absent}");
        }
    }
}
