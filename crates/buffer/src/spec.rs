//! What a scan asks for: tuple ranges and columns, and the chunk set they map to.

use crate::ChunkId;
use serde::{Deserialize, Serialize};
use std::ops::Range;

/// Columns a scan reads, one bit per column. NSM policies ignore it; it is kept so that
/// DSM (column) scheduling can be added without changing the driver contract.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ColumnMask(pub u64);

impl ColumnMask {
    pub const ALL: ColumnMask = ColumnMask(u64::MAX);
}

/// A CScan's request: possibly several non-contiguous tuple ranges (e.g. after zonemap
/// pruning) plus the columns it reads.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScanSpec {
    pub ranges: Vec<Range<u64>>,
    pub columns: ColumnMask,
}

impl ScanSpec {
    pub fn new(ranges: Vec<Range<u64>>, columns: ColumnMask) -> Self {
        ScanSpec { ranges, columns }
    }

    /// All rows of a table with `row_count` rows, all columns.
    pub fn full(row_count: u64) -> Self {
        ScanSpec::new(std::iter::once(0..row_count).collect(), ColumnMask::ALL)
    }
}

/// A sorted set of disjoint, non-adjacent, non-empty chunk ranges.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ChunkRanges {
    ranges: Vec<Range<u32>>,
    len: u32,
}

impl ChunkRanges {
    /// Normalizes arbitrary (overlapping, unsorted, empty) ranges.
    pub fn from_ranges(mut ranges: Vec<Range<u32>>) -> Self {
        ranges.retain(|r| !r.is_empty());
        ranges.sort_by_key(|r| r.start);
        let mut merged: Vec<Range<u32>> = Vec::with_capacity(ranges.len());
        for r in ranges {
            match merged.last_mut() {
                Some(last) if r.start <= last.end => last.end = last.end.max(r.end),
                _ => merged.push(r),
            }
        }
        let len = merged.iter().map(|r| r.end - r.start).sum();
        ChunkRanges {
            ranges: merged,
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

    /// Chunks in ascending order.
    pub fn iter(&self) -> impl Iterator<Item = ChunkId> + '_ {
        self.ranges.iter().flat_map(|r| r.clone().map(ChunkId))
    }
}
