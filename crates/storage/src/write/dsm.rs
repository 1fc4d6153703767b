//! DSM writer: one file per column of fixed-size pages, each holding as many tuples as
//! fit after compression with the page's best codec ([`crate::codec`]: PFOR,
//! PFOR-DELTA, PDICT or LZ4) — so tuples per page differ between columns and between
//! pages of one column. Chunks are tuple ranges of a fixed count, chosen so that a
//! chunk holds about `chunk_bytes` of uncompressed data, like a PAX chunk.

use std::path::Path;

use crate::chunk_map::dsm_page_range;
use crate::codec::{Codec, Encoder};
use crate::column::ColumnValues;
use crate::encoding::minipage_len;
use crate::error::{Result, StorageError};
use crate::manifest::{ChunkMeta, ColumnChunk, DataFile, Extent, Layout};
use crate::page::PageHeader;
use crate::types::{Physical, TableSchema};
use crate::write::{rows_u32, PageFile, WriteOptions};
use crate::zonemap::ZonemapBuilder;

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

pub(crate) struct DsmWriter {
    streams: Vec<ColumnStream>,
    chunk_bytes: u64,
    page_bytes: u64,
    rows_per_chunk: Option<u64>,
    next_row: u64,
    chunks: Vec<ChunkStats>,
}

struct ChunkStats {
    bytes: Vec<u64>,
    zonemaps: Vec<ZonemapBuilder>,
}

struct ColumnStream {
    table_id: u64,
    column: u32,
    physical: Physical,
    file: PageFile,
    pending: ColumnValues,
    pending_row_start: u64,
    page_row_starts: Vec<u64>,
    /// Tuples the previous page held: the first guess for the next one.
    rows_per_page_guess: usize,
    encoder: Encoder,
    /// The encoded page `fill_page` chose, and its codec.
    compressed: Vec<u8>,
    codec: Codec,
}

impl DsmWriter {
    pub fn create(
        dir: &Path,
        schema: &TableSchema,
        opts: &WriteOptions,
        table_id: u64,
    ) -> Result<Self> {
        let streams = schema
            .columns
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let name = format!("c{i:03}_{}.dsm", sanitize(&c.name));
                Ok(ColumnStream {
                    table_id,
                    // The schema has at most MAX_COLUMNS columns.
                    column: u32::try_from(i).unwrap_or(u32::MAX),
                    physical: c.ty.physical(),
                    file: PageFile::create(dir, name, opts.page_bytes)?,
                    pending: ColumnValues::empty(c.ty.physical()),
                    pending_row_start: 0,
                    page_row_starts: Vec::new(),
                    rows_per_page_guess: 0,
                    encoder: Encoder::default(),
                    compressed: Vec::new(),
                    codec: Codec::Lz4,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(DsmWriter {
            streams,
            chunk_bytes: opts.chunk_bytes,
            page_bytes: u64::from(opts.page_bytes),
            rows_per_chunk: None,
            next_row: 0,
            chunks: Vec::new(),
        })
    }

    pub fn append(&mut self, columns: Vec<ColumnValues>) -> Result<()> {
        let n = columns.first().map_or(0, ColumnValues::len);
        if n == 0 {
            return Ok(());
        }
        let per_chunk = *self.rows_per_chunk.get_or_insert_with(|| {
            // Sized from the first batch's average encoded row width.
            let row_bytes: usize = columns
                .iter()
                .zip(&self.streams)
                .map(|(c, s)| minipage_len(c, s.physical, 0..n))
                .sum();
            (self.chunk_bytes * n as u64 / row_bytes.max(1) as u64).max(1)
        });
        self.account_chunks(&columns, per_chunk);
        self.next_row += n as u64;
        for (stream, column) in self.streams.iter_mut().zip(&columns) {
            stream.pending.extend_from(column, 0..n)?;
            stream.flush(false)?;
        }
        Ok(())
    }

    /// Adds the batch's zonemaps and sizes to the chunks its rows fall into.
    fn account_chunks(&mut self, columns: &[ColumnValues], per_chunk: u64) {
        let n = columns[0].len() as u64;
        let mut row = self.next_row;
        while row < self.next_row + n {
            let k = (row / per_chunk) as usize;
            let end = ((k as u64 + 1) * per_chunk).min(self.next_row + n);
            if self.chunks.len() <= k {
                self.chunks.push(ChunkStats {
                    bytes: vec![0; columns.len()],
                    zonemaps: vec![ZonemapBuilder::default(); columns.len()],
                });
            }
            let local = (row - self.next_row) as usize..(end - self.next_row) as usize;
            for (c, values) in columns.iter().enumerate() {
                self.chunks[k].bytes[c] +=
                    minipage_len(values, self.streams[c].physical, local.clone()) as u64;
                self.chunks[k].zonemaps[c].add(values, local.clone());
            }
            row = end;
        }
    }

    pub fn finish(mut self) -> Result<(Vec<DataFile>, Vec<ChunkMeta>)> {
        let total = self.next_row;
        let per_chunk = self.rows_per_chunk.unwrap_or(1);
        let mut files = Vec::with_capacity(self.streams.len());
        for stream in &mut self.streams {
            stream.flush(true)?;
        }
        let chunks = self
            .chunks
            .into_iter()
            .enumerate()
            .map(|(k, stats)| {
                let row_start = k as u64 * per_chunk;
                let row_count = per_chunk.min(total - row_start);
                let columns = stats
                    .bytes
                    .into_iter()
                    .zip(stats.zonemaps)
                    .enumerate()
                    .map(|(c, (bytes, z))| {
                        let pages = dsm_page_range(
                            &self.streams[c].page_row_starts,
                            total,
                            row_start..row_start + row_count,
                        );
                        let extent = Extent {
                            file: c as u32,
                            offset: pages.start * self.page_bytes,
                            len: (pages.end - pages.start) * self.page_bytes,
                        };
                        ColumnChunk {
                            extent,
                            bytes,
                            zonemap: z.finish(),
                        }
                    })
                    .collect();
                ChunkMeta {
                    row_start,
                    row_count,
                    pages: None,
                    columns,
                }
            })
            .collect();
        for stream in self.streams {
            let starts = stream.page_row_starts;
            let mut file = stream.file.finish()?;
            file.page_row_starts = starts;
            files.push(file);
        }
        Ok((files, chunks))
    }
}

impl ColumnStream {
    /// Writes pages while enough tuples are pending to fill one (all of them at the end).
    fn flush(&mut self, last: bool) -> Result<()> {
        let mut start = 0;
        let available = self.pending.len();
        while start < available {
            let remaining = available - start;
            // Keep a margin so a page is never cut short by the end of a batch.
            if !last && remaining < 2 * self.rows_per_page_guess.max(1) {
                break;
            }
            if !last && self.rows_per_page_guess == 0 && remaining < DSM_MAX_PAGE_ROWS {
                break;
            }
            let rows = self.fill_page(start, remaining)?;
            let raw_len = minipage_len(&self.pending, self.physical, start..start + rows);
            self.write_page(rows, raw_len, self.pending_row_start + start as u64)?;
            start += rows;
        }
        self.pending.drain_front(start);
        self.pending_row_start += start as u64;
        Ok(())
    }

    /// Chooses how many tuples from `start` go into the next page and leaves their
    /// compressed bytes in `self.compressed`.
    fn fill_page(&mut self, start: usize, available: usize) -> Result<usize> {
        let capacity = self.file.payload_capacity();
        let limit = self.rows_within_raw_limit(start, available.min(DSM_MAX_PAGE_ROWS))?;
        let mut rows = match self.rows_per_page_guess {
            0 => limit.min(capacity), // at least 1 byte per tuple before compression
            g => g.min(limit),
        }
        .max(1);
        let mut best: Option<(usize, Vec<u8>, Codec)> = None;
        for _ in 0..FILL_ATTEMPTS {
            let size = self.compress(start, rows);
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
            } else {
                rows = ((rows as f64 * ratio * FILL_TARGET) as usize).clamp(1, rows - 1);
            }
        }
        // Never settle without a fit: halve until one tuple.
        while best.is_none() {
            if self.compress(start, rows) <= capacity {
                best = Some((rows, std::mem::take(&mut self.encoder.out), self.codec));
            } else if rows == 1 {
                return Err(StorageError::Invalid(format!(
                    "a single value of {} does not fit a page of {capacity} bytes",
                    self.file.name
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
    fn rows_within_raw_limit(&self, start: usize, limit: usize) -> Result<usize> {
        let raw = |n: usize| minipage_len(&self.pending, self.physical, start..start + n);
        if self.physical != Physical::VarBytes || raw(limit) <= MAX_VARCHAR_PAGE_RAW {
            return Ok(limit);
        }
        if raw(1) > MAX_VARCHAR_PAGE_RAW {
            return Err(StorageError::Invalid(format!(
                "a value of {} is {} bytes; a string page holds at most {MAX_VARCHAR_PAGE_RAW}",
                self.file.name,
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
    fn compress(&mut self, start: usize, rows: usize) -> usize {
        self.codec = self
            .encoder
            .encode(&self.pending, self.physical, start..start + rows);
        self.encoder.out.len()
    }

    fn write_page(&mut self, rows: usize, raw_len: usize, row_start: u64) -> Result<()> {
        let header = PageHeader {
            layout: Layout::Dsm,
            flags: self.codec.flag(),
            page_no: u32::try_from(self.file.pages)
                .map_err(|_| StorageError::Invalid("more than 2^32 pages".into()))?,
            row_count: rows_u32(rows),
            row_start,
            stored_len: rows_u32(self.compressed.len()),
            raw_len: rows_u32(raw_len),
            table_id: self.table_id,
            column: self.column,
        };
        self.file.write_page(&header, &self.compressed)?;
        self.page_row_starts.push(row_start);
        Ok(())
    }
}

/// File-name-safe version of a column name.
fn sanitize(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect()
}
