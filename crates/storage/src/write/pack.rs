//! Packing a column's values into compressed pages: how many tuples the next page holds
//! so that, with the page's best codec ([`crate::codec`]), it fills the page. Shared by
//! the DSM writer (a run of pages per column file) and the CSM writer (a run per column
//! of each chunk's tile).

use crate::codec::{Codec, Encoder};
use crate::column::ColumnValues;
use crate::encoding::minipage_len;
use crate::error::{Result, StorageError};
use crate::types::Physical;

/// Upper bound on tuples in one DSM page, bounding the decoding buffers. Large enough
/// that a 64 KiB page of 1-bit codes (a two-valued flag) is full.
pub const DSM_MAX_PAGE_ROWS: usize = 1 << 19;
/// Upper bound on a string page's plain minipage (offsets and bytes): what the reader
/// allocates for one page at most. The writer keeps every page within it, so a table
/// it writes is always one it can read (long values compress so well that a page of
/// `DSM_MAX_PAGE_ROWS` of them used to exceed it).
pub const MAX_VARCHAR_PAGE_RAW: usize = 64 << 20;
/// Attempts to size a page's tuple count before settling for the best fit found.
const FILL_ATTEMPTS: usize = 8;
/// A page filled to this fraction of its capacity is good enough. Bit-packed sizes
/// grow almost linearly with the tuples, so the search gets this close in a few tries.
const FILL_TARGET: f64 = 0.97;

/// Tuples per chunk of a DSM or CSM table: as many as hold about `chunk_bytes` of plain
/// data at the average row width of the first batch (`columns`, `physicals`), like a
/// PAX chunk of that size.
pub(crate) fn rows_per_chunk(
    chunk_bytes: u64,
    columns: &[ColumnValues],
    physicals: impl Iterator<Item = Physical>,
) -> u64 {
    let n = columns.first().map_or(0, ColumnValues::len);
    let row_bytes: usize = columns
        .iter()
        .zip(physicals)
        .map(|(c, physical)| minipage_len(c, physical, 0..n))
        .sum();
    (chunk_bytes * n as u64 / row_bytes.max(1) as u64).max(1)
}

/// Chooses each page's tuples and keeps the encoded page it chose.
pub(crate) struct PagePacker {
    physical: Physical,
    /// Payload bytes a page holds.
    capacity: usize,
    /// What the column is called in errors (its file, or file and column).
    name: String,
    /// Tuples the previous page held: the first guess for the next one.
    rows_per_page_guess: usize,
    encoder: Encoder,
    /// The encoded page `fill_page` chose, and its codec.
    compressed: Vec<u8>,
    codec: Codec,
}

impl PagePacker {
    pub fn new(physical: Physical, capacity: usize, name: String) -> Self {
        PagePacker {
            physical,
            capacity,
            name,
            rows_per_page_guess: 0,
            encoder: Encoder::default(),
            compressed: Vec::new(),
            codec: Codec::Lz4,
        }
    }

    /// Tuples the previous page held (0 before the first page).
    pub fn guess(&self) -> usize {
        self.rows_per_page_guess
    }

    /// The page `fill_page` chose last: its payload and codec.
    pub fn page(&self) -> (&[u8], Codec) {
        (&self.compressed, self.codec)
    }

    /// Chooses how many tuples of `pending` from `start` (at most `available`) go into
    /// the next page and keeps their compressed bytes for [`PagePacker::page`].
    pub fn fill_page(
        &mut self,
        pending: &ColumnValues,
        start: usize,
        available: usize,
    ) -> Result<usize> {
        let capacity = self.capacity;
        let limit = self.rows_within_raw_limit(pending, start, available.min(DSM_MAX_PAGE_ROWS))?;
        let mut rows = match self.rows_per_page_guess {
            0 => limit.min(capacity), // at least 1 byte per tuple before compression
            g => g.min(limit),
        }
        .max(1);
        let mut best: Option<(usize, Vec<u8>, Codec)> = None;
        for _ in 0..FILL_ATTEMPTS {
            let size = self.compress(pending, start, rows);
            let ratio = capacity as f64 / size.max(1) as f64;
            if size <= capacity {
                let done = rows == limit || size as f64 >= FILL_TARGET * capacity as f64;
                if best.as_ref().is_none_or(|(r, _, _)| rows > *r) {
                    best = Some((rows, std::mem::take(&mut self.encoder.out), self.codec));
                }
                if done {
                    break;
                }
                rows = ((rows as f64 * ratio * FILL_TARGET) as usize).clamp(rows + 1, limit);
            } else if rows == 1 {
                // One value alone does not fit: the loop below reports it.
                break;
            } else {
                rows = ((rows as f64 * ratio * FILL_TARGET) as usize).clamp(1, rows - 1);
            }
        }
        // Never settle without a fit: halve until one tuple.
        while best.is_none() {
            if self.compress(pending, start, rows) <= capacity {
                best = Some((rows, std::mem::take(&mut self.encoder.out), self.codec));
            } else if rows == 1 {
                return Err(StorageError::Invalid(format!(
                    "a single value of {} does not fit a page of {capacity} bytes",
                    self.name
                )));
            } else {
                rows /= 2;
            }
        }
        let Some((rows, bytes, codec)) = best else {
            return Err(StorageError::Invalid("no page size fits".into()));
        };
        self.compressed = bytes;
        self.codec = codec;
        self.rows_per_page_guess = rows;
        Ok(rows)
    }

    /// The most tuples from `start`, up to `limit`, whose plain minipage stays within
    /// [`MAX_VARCHAR_PAGE_RAW`] (fixed-width pages stay within it by their row bound);
    /// an error when one value alone exceeds it.
    fn rows_within_raw_limit(
        &self,
        pending: &ColumnValues,
        start: usize,
        limit: usize,
    ) -> Result<usize> {
        let raw = |n: usize| minipage_len(pending, self.physical, start..start + n);
        if self.physical != Physical::VarBytes || raw(limit) <= MAX_VARCHAR_PAGE_RAW {
            return Ok(limit);
        }
        if raw(1) > MAX_VARCHAR_PAGE_RAW {
            return Err(StorageError::Invalid(format!(
                "a value of {} is {} bytes; a string page holds at most {MAX_VARCHAR_PAGE_RAW}",
                self.name,
                raw(1)
            )));
        }
        // raw(lo) fits, raw(hi) does not: the plain length grows with the rows.
        let (mut lo, mut hi) = (1, limit);
        while hi - lo > 1 {
            let mid = lo + (hi - lo) / 2;
            if raw(mid) <= MAX_VARCHAR_PAGE_RAW {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        Ok(lo)
    }

    /// Encodes `rows` tuples from `start` with their best codec into `self.encoder.out`.
    fn compress(&mut self, pending: &ColumnValues, start: usize, rows: usize) -> usize {
        self.codec = self
            .encoder
            .encode(pending, self.physical, start..start + rows);
        self.encoder.out.len()
    }
}
