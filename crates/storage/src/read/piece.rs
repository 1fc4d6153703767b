//! One DSM piece (a column of a chunk) read with its boundary pages taken from memory.
//!
//! A DSM chunk is a tuple range, and a column's extent for it is the run of pages
//! holding any of its tuples, so the page on a chunk boundary is in both neighbours'
//! extents (the 2007 paper's §6.1 "data waste"). When the neighbouring piece of the same
//! column is already in memory, that page need not be read again: the piece is read
//! without it and assembled as
//!
//! ```text
//!   [head page: copied from chunk k-1] [pages read from the device] [tail page: copied from k+1]
//! ```
//!
//! The read stays page aligned (pages are multiples of `IO_ALIGN`), so O_DIRECT holds,
//! and the assembled bytes are exactly the extent's; the loader verifies every page
//! (header, position, checksum) as for a piece read whole, so a wrong copy is caught.

use crate::device::{Completion, Device};
use crate::error::{Result, StorageError};
use crate::manifest::{Extent, Layout};
use crate::read::{ChunkBytes, Table, TableFiles};

/// A DSM column's pages for one chunk, and whether its first page also holds tuples of
/// the previous chunk (`head_shared`) and its last page tuples of the next one
/// (`tail_shared`). Neither for NSM/PAX, whose chunks own their pages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ColumnPages {
    pub extent: Extent,
    pub head_shared: bool,
    pub tail_shared: bool,
}

/// The neighbouring pieces (same column, chunk k-1 and k+1) a read may copy its shared
/// head and tail page from; `None`: read that page.
#[derive(Clone, Copy, Default)]
pub struct PageCopies<'a> {
    pub head: Option<&'a ChunkBytes>,
    pub tail: Option<&'a ChunkBytes>,
}

/// A piece's bytes (exactly its extent), the emulated disk's completion of the read,
/// and how many of the bytes were read rather than copied.
pub struct PieceRead {
    pub bytes: ChunkBytes,
    pub done: Completion,
    pub read_bytes: u64,
}

impl Table {
    /// The pages of column `column` for chunk `k`, and which of them it shares.
    pub fn column_pages(&self, k: usize, column: usize) -> Result<ColumnPages> {
        let extent = self.piece_extent(k, column)?;
        let dsm = self.layout() == Layout::Dsm;
        let head_shared = dsm && self.head_shared(k, column)?;
        let tail_shared = dsm && k + 1 < self.chunk_count() && self.head_shared(k + 1, column)?;
        Ok(ColumnPages {
            extent,
            head_shared,
            tail_shared,
        })
    }

    /// Whether chunk `k`'s first page of `column` starts before the chunk's first row,
    /// i.e. holds the previous chunk's last tuples too (then it is that chunk's last page).
    fn head_shared(&self, k: usize, column: usize) -> Result<bool> {
        let extent = self.piece_extent(k, column)?;
        let page = u64::from(self.manifest().page_bytes);
        let starts = &self.manifest().files[column].page_row_starts;
        let first_page = usize::try_from(extent.offset / page).unwrap_or(usize::MAX);
        let first_row = starts.get(first_page).ok_or_else(|| {
            StorageError::Invalid(format!(
                "chunk {k} column {column}: page {first_page} unknown"
            ))
        })?;
        Ok(k > 0 && *first_row < self.chunk(k).row_start)
    }

    /// DSM column `column`'s extent for chunk `k`, checked against the table.
    fn piece_extent(&self, k: usize, column: usize) -> Result<Extent> {
        if k >= self.chunk_count() {
            return Err(StorageError::Invalid(format!(
                "chunk {k} out of range: table has {} chunks",
                self.chunk_count()
            )));
        }
        self.check_projection(&[column])?;
        Ok(self.chunk(k).columns[column].extent)
    }

    /// Reads DSM column `column` of chunk `k`, taking its shared head and tail page from
    /// `copies` where given (a page a copy does not hold is read instead). One device
    /// request for the pages in between, if any.
    pub fn read_piece_early(
        &self,
        device: &Device,
        files: &TableFiles,
        k: usize,
        column: usize,
        copies: PageCopies<'_>,
    ) -> Result<PieceRead> {
        let pages = self.column_pages(k, column)?;
        let page = u64::from(self.manifest().page_bytes);
        let e = pages.extent;
        // A validated manifest's extents are whole pages; anything else is read whole.
        let whole_pages = page > 0 && e.len >= page && e.len % page == 0;
        let head = copies
            .head
            .filter(|_| whole_pages && pages.head_shared)
            .and_then(|n| page_of(n, e.file, e.offset, page));
        // A one-page piece shares that page both ways: one copy is enough.
        let tail_at = e.offset + e.len.saturating_sub(page);
        let tail = copies
            .tail
            .filter(|_| whole_pages && pages.tail_shared && (head.is_none() || e.len > page))
            .and_then(|n| page_of(n, e.file, tail_at, page));
        let skip_head = if head.is_some() { page } else { 0 };
        let skip_tail = if tail.is_some() { page } else { 0 };
        let read = e.len.saturating_sub(skip_head + skip_tail);
        let mut buf = device.buffer(to_usize(e.len)?);
        let done = if read > 0 {
            let range = to_usize(skip_head)?..to_usize(skip_head + read)?;
            let file = files.file(e.file);
            device.read_into_early(file, e.offset + skip_head, &mut buf[range])?
        } else {
            Completion::default()
        };
        if let Some(bytes) = head {
            buf[..bytes.len()].copy_from_slice(bytes);
        }
        if let Some(bytes) = tail {
            let from = buf.len() - bytes.len();
            buf[from..].copy_from_slice(bytes);
        }
        Ok(PieceRead {
            bytes: ChunkBytes {
                chunk: k,
                extents: vec![(e, buf)],
            },
            done,
            read_bytes: read,
        })
    }
}

/// Most buffers one vectored request fills (Linux's `IOV_MAX` is 1024): a tile of more
/// adjacent columns is read with several requests.
const MAX_RUNS_PER_REQUEST: usize = 512;

impl Table {
    /// CSM: the pieces of `columns` of chunk `k` (one column each, in the order given)
    /// read together: each run of adjacent columns of the tile with one vectored device
    /// request straight into one buffer per column, so each piece can be resident and
    /// evicted alone without a copy. Other layouts read each piece alone
    /// ([`Table::read_piece_early`]).
    pub fn read_tile_pieces_early(
        &self,
        device: &Device,
        files: &TableFiles,
        k: usize,
        columns: &[usize],
    ) -> Result<(Vec<ChunkBytes>, Completion)> {
        if self.layout() != Layout::Csm {
            return Err(StorageError::Invalid(format!(
                "a tile read needs a CSM table, this one is {}",
                self.layout()
            )));
        }
        if k >= self.chunk_count() {
            return Err(StorageError::Invalid(format!(
                "chunk {k} out of range: table has {} chunks",
                self.chunk_count()
            )));
        }
        self.check_projection(columns)?;
        let chunk = self.chunk(k);
        // (place asked, extent, buffer), in file order for the reads.
        let mut runs = columns
            .iter()
            .enumerate()
            .map(|(place, &c)| {
                let e = chunk.columns[c].extent;
                Ok((place, e, device.buffer(to_usize(e.len)?)))
            })
            .collect::<Result<Vec<_>>>()?;
        runs.sort_by_key(|(_, e, _)| e.offset);
        if runs.windows(2).any(|w| w[0].1 == w[1].1) {
            return Err(StorageError::Invalid(format!(
                "chunk {k}: a column asked for twice in {columns:?}"
            )));
        }
        let mut done = Completion::default();
        let mut first = 0;
        while first < runs.len() {
            let end = adjacent_end(&runs, first);
            let at = runs[first].1;
            let mut bufs: Vec<&mut [u8]> = runs[first..end]
                .iter_mut()
                .map(|(_, _, b)| &mut b[..])
                .collect();
            match device.read_vectored_early(files.file(at.file), at.offset, &mut bufs) {
                Ok(due) => done = done.and(due),
                Err(e) => {
                    done.wait();
                    return Err(e.into());
                }
            }
            first = end;
        }
        runs.sort_by_key(|(place, _, _)| *place);
        let pieces = runs
            .into_iter()
            .map(|(_, e, buf)| ChunkBytes {
                chunk: k,
                extents: vec![(e, buf)],
            })
            .collect();
        Ok((pieces, done))
    }
}

/// The end of the runs from `first` (sorted by offset) that follow one another in the
/// file, at most [`MAX_RUNS_PER_REQUEST`]: what one vectored request reads.
fn adjacent_end<B>(runs: &[(usize, Extent, B)], first: usize) -> usize {
    let mut end = first + 1;
    while end < runs.len()
        && end - first < MAX_RUNS_PER_REQUEST
        && runs[end - 1].1.offset + runs[end - 1].1.len == runs[end].1.offset
    {
        end += 1;
    }
    end
}

/// The `page` bytes at `offset` of `file` in a neighbour's loaded bytes, if it holds them.
fn page_of(neighbour: &ChunkBytes, file: u32, offset: u64, page: u64) -> Option<&[u8]> {
    neighbour.extents.iter().find_map(|(e, buf)| {
        let inside = e.file == file && e.offset <= offset && offset + page <= e.offset + e.len;
        let from = usize::try_from(offset.checked_sub(e.offset)?).ok()?;
        let to = from.checked_add(usize::try_from(page).ok()?)?;
        inside.then(|| buf.get(from..to)).flatten()
    })
}

fn to_usize(bytes: u64) -> Result<usize> {
    usize::try_from(bytes)
        .map_err(|_| StorageError::Invalid(format!("{bytes} bytes do not fit in memory")))
}
