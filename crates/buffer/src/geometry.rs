//! Table geometry: where each chunk starts, in tuples (rows).
//!
//! The buffer crate knows nothing about the storage format; the storage layer hands it
//! the first row of every chunk. A scan's tuple ranges then map to chunk ranges.

use crate::{BufferError, ChunkId, ChunkRanges, ColumnMask, RowRanges, Snapshot};
use std::ops::Range;

/// A chunk a bulk append adds (2012 §2.1): its rows, and its bytes — one size for an
/// NSM/PAX chunk, one per column for a columnar one. Its pages are new, so it shares
/// none with its neighbours.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AppendedChunk {
    pub rows: u64,
    pub bytes: Vec<u64>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TableGeometry {
    /// `chunk_starts[i]` is the first row of chunk `i`; strictly increasing, starts at 0.
    chunk_starts: Vec<u64>,
    row_count: u64,
    /// Bytes a load of each chunk reads and keeps (NSM/PAX: all its pages); by default
    /// [`UNIT_CHUNK_BYTES`], which makes a byte budget count chunks.
    chunk_bytes: Vec<u64>,
    /// DSM: bytes of each (chunk, column) piece, `columns` per chunk; empty for NSM/PAX,
    /// whose chunk is one piece.
    column_bytes: Vec<u64>,
    columns: u32,
    /// Largest piece of each column (DSM), for admission.
    max_column_bytes: Vec<u64>,
    /// DSM: per piece (as `column_bytes`), the bytes of its first page when that page
    /// also belongs to the previous chunk's piece of the column, and of its last page
    /// when it also belongs to the next one's (0: not shared); empty: nothing shared.
    shared_pages: Vec<SharedPages>,
    /// CSM: a chunk's pieces are adjacent runs of one tile, so a load of several
    /// columns costs one request, and loads follow the table's page schemas
    /// (`page_schema.rs`).
    tiles: bool,
    /// NSM/PAX: bytes of a page of a chunk's piece (the last page of a chunk may be
    /// shorter), for index selections that need only some pages (`scatter.rs`);
    /// `None`: pages unknown, every load reads whole pieces.
    page_bytes: Option<u64>,
}

/// Bytes of a piece's first and last page that its neighbouring pieces of the same
/// column also hold (a DSM page on a chunk boundary; docs/abm.md, "Pages straddling
/// two chunks"). 0: that page is the piece's own.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SharedPages {
    pub head: u64,
    pub tail: u64,
}

/// Most columns a columnar geometry can have: the bits of a [`crate::ColumnMask`].
pub const MAX_COLUMNS: usize = crate::ColumnMask::BITS;

/// Size of every chunk unless [`TableGeometry::with_chunk_bytes`] says otherwise.
pub const UNIT_CHUNK_BYTES: u64 = 1;

impl TableGeometry {
    /// Chunks with the given first rows; the last chunk ends at `row_count`.
    pub fn from_chunk_starts(chunk_starts: Vec<u64>, row_count: u64) -> Result<Self, BufferError> {
        let invalid = |why: &str| Err(BufferError::InvalidGeometry(why.to_string()));
        if chunk_starts.is_empty() && row_count > 0 {
            return invalid("a table with rows needs at least one chunk");
        }
        if chunk_starts.len() > u32::MAX as usize {
            return invalid("too many chunks for a u32 ChunkId");
        }
        if chunk_starts.first().is_some_and(|&first| first != 0) {
            return invalid("the first chunk must start at row 0");
        }
        if chunk_starts.windows(2).any(|w| w[0] >= w[1]) {
            return invalid("chunk starts must be strictly increasing");
        }
        if chunk_starts.last().is_some_and(|&last| last >= row_count) {
            return invalid("every chunk must hold at least one row");
        }
        let chunk_bytes = vec![UNIT_CHUNK_BYTES; chunk_starts.len()];
        Ok(TableGeometry {
            chunk_starts,
            row_count,
            chunk_bytes,
            column_bytes: Vec::new(),
            columns: 0,
            max_column_bytes: Vec::new(),
            shared_pages: Vec::new(),
            tiles: false,
            page_bytes: None,
        })
    }

    /// `chunk_count` chunks of `rows_per_chunk` rows each.
    pub fn uniform(chunk_count: u32, rows_per_chunk: u64) -> Result<Self, BufferError> {
        if chunk_count == 0 || rows_per_chunk == 0 {
            return Err(BufferError::InvalidGeometry(
                "empty uniform geometry".into(),
            ));
        }
        let starts = (0..u64::from(chunk_count))
            .map(|i| i * rows_per_chunk)
            .collect();
        Self::from_chunk_starts(starts, u64::from(chunk_count) * rows_per_chunk)
    }

    /// Sets the byte size of every chunk (one entry per chunk, each at least 1).
    pub fn with_chunk_bytes(mut self, chunk_bytes: Vec<u64>) -> Result<Self, BufferError> {
        if chunk_bytes.len() != self.chunk_starts.len() {
            return Err(BufferError::InvalidGeometry(format!(
                "{} chunk sizes for {} chunks",
                chunk_bytes.len(),
                self.chunk_starts.len()
            )));
        }
        if chunk_bytes.contains(&0) {
            return Err(BufferError::InvalidGeometry("a chunk of 0 bytes".into()));
        }
        self.chunk_bytes = chunk_bytes;
        Ok(self)
    }

    /// Makes the table columnar (DSM): `column_bytes[chunk][column]` is the size of one
    /// piece. Every chunk has the same columns, at most [`MAX_COLUMNS`], none of 0 bytes.
    pub fn with_column_bytes(mut self, column_bytes: Vec<Vec<u64>>) -> Result<Self, BufferError> {
        let invalid = |why: String| Err(BufferError::InvalidGeometry(why));
        if column_bytes.len() != self.chunk_starts.len() {
            return invalid(format!(
                "{} chunks of column sizes for {} chunks",
                column_bytes.len(),
                self.chunk_starts.len()
            ));
        }
        let columns = column_bytes.first().map_or(0, Vec::len);
        if columns == 0 || columns > MAX_COLUMNS {
            return invalid(format!("{columns} columns (1 to {MAX_COLUMNS})"));
        }
        if column_bytes
            .iter()
            .any(|c| c.len() != columns || c.contains(&0))
        {
            return invalid("every chunk needs one non-zero size per column".into());
        }
        self.chunk_bytes = column_bytes.iter().map(|c| c.iter().sum()).collect();
        self.max_column_bytes = (0..columns)
            .map(|col| column_bytes.iter().map(|c| c[col]).max().unwrap_or(1))
            .collect();
        self.column_bytes = column_bytes.concat();
        self.columns = columns as u32;
        // Pages shared by the old pieces say nothing about the new ones.
        self.shared_pages = Vec::new();
        Ok(self)
    }

    /// Sets the shared boundary pages of every DSM piece (`shared[chunk][column]`, as
    /// [`with_column_bytes`](Self::with_column_bytes)). A page larger than its piece,
    /// a shared head on the first chunk or a shared tail on the last is an error.
    pub fn with_shared_pages(mut self, shared: Vec<Vec<SharedPages>>) -> Result<Self, BufferError> {
        let invalid = |why: &str| Err(BufferError::InvalidGeometry(why.to_string()));
        let columns = self.columns as usize;
        if columns == 0 {
            return invalid("shared pages need a columnar (DSM) geometry");
        }
        if shared.len() != self.chunk_starts.len() || shared.iter().any(|c| c.len() != columns) {
            return invalid("one shared-page entry per chunk and column");
        }
        let last = shared.len().saturating_sub(1);
        for (k, chunk) in shared.iter().enumerate() {
            for (c, s) in chunk.iter().enumerate() {
                let piece = self.column_bytes[k * columns + c];
                if s.head > piece || s.tail > piece {
                    return invalid("a shared page larger than its piece");
                }
                if (k == 0 && s.head > 0) || (k == last && s.tail > 0) {
                    return invalid("a page shared with a chunk that does not exist");
                }
            }
        }
        self.shared_pages = shared.concat();
        Ok(self)
    }

    /// The shared boundary pages of a piece of `columns` (DSM pages hold one column:
    /// none for NSM/PAX, a piece of several columns or an unshared piece).
    pub fn shared_pages(&self, chunk: ChunkId, columns: ColumnMask) -> SharedPages {
        let Some(col) = columns.single().filter(|c| u32::from(*c) < self.columns) else {
            return SharedPages::default();
        };
        let at = chunk.0 as usize * self.columns as usize + usize::from(col);
        self.shared_pages.get(at).copied().unwrap_or_default()
    }

    /// The largest piece of DSM column `column` (0 for NSM/PAX or an unknown column).
    pub fn max_column_bytes(&self, column: u32) -> u64 {
        self.max_column_bytes
            .get(column as usize)
            .copied()
            .unwrap_or(0)
    }

    /// Makes a columnar table's chunks tiles (CSM): its loads then read the columns of
    /// whole page schemas, Clotho's C-pages.
    pub fn with_tiles(mut self) -> Result<Self, BufferError> {
        if self.columns == 0 {
            return Err(BufferError::InvalidGeometry(
                "tiles need a columnar geometry".into(),
            ));
        }
        if self.shared_pages.iter().any(|s| s.head > 0 || s.tail > 0) {
            return Err(BufferError::InvalidGeometry(
                "a tile's runs share no page with the next chunk's".into(),
            ));
        }
        self.tiles = true;
        Ok(self)
    }

    /// NSM/PAX: a chunk's piece is pages of `page_bytes` (its last one possibly
    /// shorter), so a load for index selections alone may read only the pages they
    /// need (the 2004 report's scatter read, `scatter.rs`).
    pub fn with_page_bytes(mut self, page_bytes: u64) -> Result<Self, BufferError> {
        if self.columns > 0 {
            return Err(BufferError::InvalidGeometry(
                "page lists are for NSM/PAX chunks, one piece each".into(),
            ));
        }
        if page_bytes == 0 {
            return Err(BufferError::InvalidGeometry("pages of 0 bytes".into()));
        }
        self.page_bytes = Some(page_bytes);
        Ok(self)
    }

    /// Pages of `chunk`'s piece (NSM/PAX with a page size), else `None`.
    pub fn pages_of(&self, chunk: ChunkId) -> Option<u32> {
        let page = self.page_bytes.filter(|_| self.columns == 0)?;
        let bytes = *self.chunk_bytes.get(chunk.0 as usize)?;
        u32::try_from(bytes.div_ceil(page)).ok()
    }

    /// Bytes of `pages` (page numbers within `chunk`'s piece, each below
    /// [`pages_of`](Self::pages_of)) of `chunk`.
    pub fn bytes_of_pages(&self, chunk: ChunkId, pages: &[u32]) -> u64 {
        let (Some(page), Some(&chunk_bytes)) =
            (self.page_bytes, self.chunk_bytes.get(chunk.0 as usize))
        else {
            return 0;
        };
        pages
            .iter()
            .map(|&p| {
                let start = u64::from(p).saturating_mul(page);
                chunk_bytes.saturating_sub(start).min(page)
            })
            .fold(0, u64::saturating_add)
    }

    /// The bytes of `chunk`'s piece from the first page of `runs` (ascending page
    /// numbers) to the end of its last: what one request reading them all covers.
    pub fn span_of_runs(&self, chunk: ChunkId, runs: &[Range<u32>]) -> Range<u64> {
        let (Some(page), Some(&bytes)) = (self.page_bytes, self.chunk_bytes.get(chunk.0 as usize))
        else {
            return 0..0;
        };
        let at = |p: u32| u64::from(p).saturating_mul(page).min(bytes);
        match (runs.first(), runs.last()) {
            (Some(first), Some(last)) => at(first.start)..at(last.end),
            _ => 0..0,
        }
    }

    /// Whether chunks are tiles (see [`with_tiles`](Self::with_tiles)).
    pub fn tiled(&self) -> bool {
        self.tiles
    }

    /// DSM columns per chunk, or 0 for NSM/PAX (one piece per chunk).
    pub fn columns(&self) -> u32 {
        self.columns
    }

    /// Bytes of the piece of `chunk` holding `columns`: the sum of their pieces for
    /// DSM, the whole chunk for NSM/PAX (whose pages hold every column).
    pub fn piece_bytes(&self, chunk: ChunkId, columns: ColumnMask) -> u64 {
        if self.columns == 0 {
            return self.chunk_bytes[chunk.0 as usize];
        }
        let first = chunk.0 as usize * self.columns as usize;
        let row = &self.column_bytes[first..first + self.columns as usize];
        row.iter()
            .enumerate()
            .filter(|(c, _)| columns.0 >> c & 1 == 1)
            .map(|(_, b)| *b)
            .sum()
    }

    /// Bytes of every chunk, by chunk number.
    pub fn chunk_bytes(&self) -> &[u64] {
        &self.chunk_bytes
    }

    /// The largest chunk: the unit in which budgets given as a chunk count are sized.
    /// For DSM, the sum of each column's largest piece (no chunk is larger, and a scan
    /// of every column reserves room for two of these).
    pub fn max_chunk_bytes(&self) -> u64 {
        if self.columns > 0 {
            return self.max_column_bytes.iter().sum();
        }
        self.chunk_bytes
            .iter()
            .copied()
            .max()
            .unwrap_or(UNIT_CHUNK_BYTES)
    }

    pub fn chunk_count(&self) -> u32 {
        self.chunk_starts.len() as u32
    }

    pub fn row_count(&self) -> u64 {
        self.row_count
    }

    /// Rows of one chunk.
    pub fn chunk_rows(&self, chunk: ChunkId) -> Range<u64> {
        let i = chunk.0 as usize;
        let end = self
            .chunk_starts
            .get(i + 1)
            .copied()
            .unwrap_or(self.row_count);
        self.chunk_starts[i]..end
    }

    /// Rows covered by the chunk range `chunks` (e.g. to build a spec from chunk numbers).
    pub fn rows_of_chunks(&self, chunks: Range<u32>) -> Range<u64> {
        if chunks.is_empty() {
            return 0..0;
        }
        let start = self.chunk_rows(ChunkId(chunks.start)).start;
        let end = self.chunk_rows(ChunkId(chunks.end - 1)).end;
        start..end
    }

    /// Adds chunks after every chunk there is (a bulk append's new pages); returns
    /// their ids. The geometry's rows run on through them, so rows of the table as
    /// opened keep their numbers; a snapshot's rows are its chunks' rows in order
    /// ([`TableGeometry::snapshot_chunks`]).
    pub fn append(&mut self, chunks: &[AppendedChunk]) -> Result<Range<u32>, BufferError> {
        let invalid = |why: &str| Err(BufferError::InvalidGeometry(why.to_string()));
        let per_chunk = if self.columns == 0 {
            1
        } else {
            self.columns as usize
        };
        if chunks.iter().any(|c| c.rows == 0) {
            return invalid("an appended chunk needs at least one row");
        }
        if chunks
            .iter()
            .any(|c| c.bytes.len() != per_chunk || c.bytes.contains(&0))
        {
            return invalid("an appended chunk needs one non-zero size per piece");
        }
        let first = self.chunk_count();
        let count = u32::try_from(chunks.len()).ok();
        let Some(end) = count.and_then(|n| first.checked_add(n)) else {
            return invalid("too many chunks for a u32 ChunkId");
        };
        let rows = chunks
            .iter()
            .try_fold(self.row_count, |r, c| r.checked_add(c.rows));
        let Some(row_count) = rows else {
            return invalid("more rows than a u64 counts");
        };
        for chunk in chunks {
            self.chunk_starts.push(self.row_count);
            self.row_count += chunk.rows;
            self.chunk_bytes.push(chunk.bytes.iter().sum());
            if self.columns > 0 {
                for (max, b) in self.max_column_bytes.iter_mut().zip(&chunk.bytes) {
                    *max = (*max).max(*b);
                }
                self.column_bytes.extend_from_slice(&chunk.bytes);
                if !self.shared_pages.is_empty() {
                    let none = SharedPages::default();
                    self.shared_pages
                        .extend(std::iter::repeat_n(none, per_chunk));
                }
            }
        }
        debug_assert_eq!(self.row_count, row_count);
        Ok(first..end)
    }

    /// Rows of a snapshot: its chunks' rows.
    pub fn snapshot_rows(&self, snapshot: &Snapshot) -> Result<u64, BufferError> {
        let mut rows = 0u64;
        for r in snapshot.chunks().ranges() {
            let geo = self.segment_rows(r)?;
            rows = rows.saturating_add(geo.end - geo.start);
        }
        Ok(rows)
    }

    /// Geometry rows of the chunk range `chunks`, an error past the last chunk.
    fn segment_rows(&self, chunks: &Range<u32>) -> Result<Range<u64>, BufferError> {
        if chunks.end > self.chunk_count() {
            return Err(BufferError::InvalidGeometry(format!(
                "a snapshot names chunk {} of a table of {} chunks",
                chunks.end - 1,
                self.chunk_count()
            )));
        }
        Ok(self.rows_of_chunks(chunks.clone()))
    }

    /// The chunks a scan of `rows` of `snapshot` touches (row `r` of a snapshot is
    /// the `r`-th row of its chunks in order).
    pub fn snapshot_chunks(
        &self,
        snapshot: &Snapshot,
        rows: &RowRanges,
    ) -> Result<ChunkRanges, BufferError> {
        let total = self.snapshot_rows(snapshot)?;
        if rows.end() > total {
            let last = rows.ranges().last().cloned().unwrap_or_default();
            return Err(BufferError::RangeOutOfTable {
                start: last.start,
                end: last.end,
                row_count: total,
            });
        }
        let mut chunks = Vec::new();
        let mut offset = 0u64;
        for segment in snapshot.chunks().ranges() {
            let geo = self.segment_rows(segment)?;
            let len = geo.end - geo.start;
            for r in rows.within(&(offset..offset + len)) {
                let moved = r.start - offset + geo.start..r.end - offset + geo.start;
                chunks.push(self.chunks_of_rows(&moved)?);
            }
            offset += len;
        }
        Ok(ChunkRanges::from_ranges(chunks))
    }

    /// Chunks overlapping the row range `rows` (empty for an empty range).
    pub fn chunks_of_rows(&self, rows: &Range<u64>) -> Result<Range<u32>, BufferError> {
        if rows.end > self.row_count || rows.start > rows.end {
            return Err(BufferError::RangeOutOfTable {
                start: rows.start,
                end: rows.end,
                row_count: self.row_count,
            });
        }
        if rows.is_empty() {
            return Ok(0..0);
        }
        // partition_point gives the number of chunks starting at or before the row.
        let first = self.chunk_starts.partition_point(|&s| s <= rows.start) - 1;
        let last = self.chunk_starts.partition_point(|&s| s < rows.end);
        Ok(first as u32..last as u32)
    }

    /// The merged, sorted set of chunks a list of row ranges touches.
    pub fn chunk_ranges(&self, rows: &RowRanges) -> Result<ChunkRanges, BufferError> {
        let mut ranges = Vec::with_capacity(rows.ranges().len());
        for r in rows.ranges() {
            ranges.push(self.chunks_of_rows(r)?);
        }
        Ok(ChunkRanges::from_ranges(ranges))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_map_to_overlapping_chunks() {
        let g = TableGeometry::from_chunk_starts(vec![0, 10, 25, 40], 50).unwrap();
        assert_eq!(g.chunks_of_rows(&(0..10)).unwrap(), 0..1);
        assert_eq!(g.chunks_of_rows(&(9..11)).unwrap(), 0..2);
        assert_eq!(g.chunks_of_rows(&(25..50)).unwrap(), 2..4);
        assert_eq!(g.chunks_of_rows(&(30..30)).unwrap(), 0..0);
        assert!(g.chunks_of_rows(&(0..51)).is_err());
    }

    #[test]
    fn rejects_bad_geometry() {
        assert!(TableGeometry::from_chunk_starts(vec![], 10).is_err());
        let empty = TableGeometry::from_chunk_starts(vec![], 0).unwrap();
        assert_eq!(empty.chunk_count(), 0);
        assert_eq!(empty.chunks_of_rows(&(0..0)).unwrap(), 0..0);
        assert!(empty.chunks_of_rows(&(0..1)).is_err());
        assert!(TableGeometry::from_chunk_starts(vec![1, 5], 10).is_err());
        assert!(TableGeometry::from_chunk_starts(vec![0, 5, 5], 10).is_err());
        assert!(TableGeometry::from_chunk_starts(vec![0, 10], 10).is_err());
    }

    /// The paper's Figure 6 in chunks: a table of 4, T1 appends 2 (ids 4, 5), T2
    /// appends 2 more (6, 7) to the same master; T2's snapshot reads 0-3 then 6-7.
    #[test]
    fn appended_chunks_map_rows_of_their_snapshot() {
        let mut g = TableGeometry::uniform(4, 10).unwrap();
        let chunk = |rows| AppendedChunk {
            rows,
            bytes: vec![1],
        };
        assert_eq!(g.append(&[chunk(5), chunk(5)]).unwrap(), 4..6);
        assert_eq!(g.append(&[chunk(3), chunk(7)]).unwrap(), 6..8);
        let t2 = Snapshot::first(4).appended(6..8);
        assert_eq!(g.snapshot_rows(&t2).unwrap(), 50);
        // Rows 38..45 of T2's snapshot: the end of chunk 3, all of 6 (40..43), the
        // start of 7 (43..50).
        let r = g.snapshot_chunks(&t2, &RowRanges::from(38..45)).unwrap();
        assert_eq!(r.ranges(), &[3..4, 6..8]);
        let r = g.snapshot_chunks(&t2, &RowRanges::from(43..44)).unwrap();
        assert_eq!(r.iter().collect::<Vec<_>>(), vec![ChunkId(7)]);
        assert!(g.snapshot_chunks(&t2, &RowRanges::from(49..51)).is_err());
        let bad = Snapshot::first(9);
        assert!(g.snapshot_chunks(&bad, &RowRanges::from(0..1)).is_err());
        assert!(g.append(&[chunk(0)]).is_err());
        assert!(g
            .append(&[AppendedChunk {
                rows: 1,
                bytes: vec![1, 1]
            }])
            .is_err());
        assert_eq!(g.chunk_count(), 8, "a refused append adds nothing");
    }

    #[test]
    fn several_ranges_merge_into_chunk_ranges() {
        let g = TableGeometry::uniform(10, 100).unwrap();
        let r = g
            .chunk_ranges(&RowRanges::new(vec![850..1000, 0..150, 120..180]))
            .unwrap();
        assert_eq!(r.ranges(), &[0..2, 8..10]);
        assert_eq!(r.len(), 4);
    }
}
