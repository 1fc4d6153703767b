//! DSM writer: one file per column of fixed-size pages, each holding as many tuples as
//! fit after compression with the page's best codec ([`crate::codec`]: PFOR,
//! PFOR-DELTA, PDICT or LZ4) — so tuples per page differ between columns and between
//! pages of one column. Chunks are tuple ranges of a fixed count, chosen so that a
//! chunk holds about `chunk_bytes` of uncompressed data, like a PAX chunk.

use std::path::Path;

use crate::chunk_map::dsm_page_range;
use crate::column::ColumnValues;
use crate::encoding::minipage_len;
use crate::error::{Result, StorageError};
use crate::manifest::{ChunkMeta, ColumnChunk, DataFile, Extent, Layout};
use crate::page::PageHeader;
use crate::types::{Physical, TableSchema};
use crate::write::pack::{rows_per_chunk, PagePacker, DSM_MAX_PAGE_ROWS};
use crate::write::{rows_u32, Origin, PageFile, WriteOptions};
use crate::zonemap::ZonemapBuilder;

/// Most threads packing one table's columns at once.
const MAX_PACK_THREADS: usize = 64;

pub(crate) struct DsmWriter {
    streams: Vec<ColumnStream>,
    chunk_bytes: u64,
    page_bytes: u64,
    rows_per_chunk: Option<u64>,
    /// The first row and, per column file, the pages before this writer's (both 0 but
    /// for a bulk append, `Origin`).
    first_row: u64,
    first_pages: Vec<u64>,
    /// Rows received, counted from `first_row`.
    next_row: u64,
    chunks: Vec<ChunkStats>,
    /// Threads packing columns at once ([`WriteOptions::threads`]).
    threads: usize,
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
    /// Integer columns: each written page's `[min, max]` (`DataFile::page_bounds`).
    page_bounds: Vec<[i64; 2]>,
    packer: PagePacker,
}

impl DsmWriter {
    pub fn create(
        dir: &Path,
        schema: &TableSchema,
        opts: &WriteOptions,
        origin: &Origin,
    ) -> Result<Self> {
        let streams = schema
            .columns
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let name = format!("c{i:03}_{}.dsm", sanitize(&c.name));
                let first_page = origin.first_page(i);
                let file = PageFile::create(dir, name.clone(), opts.page_bytes, first_page)?;
                let packer = PagePacker::new(c.ty.physical(), file.payload_capacity(), name);
                Ok(ColumnStream {
                    table_id: origin.table_id,
                    // The schema has at most MAX_COLUMNS columns.
                    column: u32::try_from(i).unwrap_or(u32::MAX),
                    physical: c.ty.physical(),
                    file,
                    pending: ColumnValues::empty(c.ty.physical()),
                    pending_row_start: origin.first_row,
                    page_row_starts: Vec::new(),
                    page_bounds: Vec::new(),
                    packer,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(DsmWriter {
            streams,
            chunk_bytes: opts.chunk_bytes,
            page_bytes: u64::from(opts.page_bytes),
            rows_per_chunk: origin.rows_per_chunk,
            first_row: origin.first_row,
            first_pages: (0..schema.columns.len())
                .map(|i| origin.first_page(i))
                .collect(),
            next_row: 0,
            chunks: Vec::new(),
            threads: opts.threads.clamp(1, MAX_PACK_THREADS),
        })
    }

    pub fn append(&mut self, columns: Vec<ColumnValues>) -> Result<()> {
        let n = columns.first().map_or(0, ColumnValues::len);
        if n == 0 {
            return Ok(());
        }
        let per_chunk = *self.rows_per_chunk.get_or_insert_with(|| {
            let physicals = self.streams.iter().map(|s| s.physical);
            rows_per_chunk(self.chunk_bytes, &columns, physicals)
        });
        self.account_chunks(&columns, per_chunk);
        self.next_row += n as u64;
        let append = |stream: &mut ColumnStream, column: &ColumnValues| -> Result<()> {
            stream.pending.extend_from(column, 0..n)?;
            stream.flush(false)
        };
        if self.threads == 1 {
            for (stream, column) in self.streams.iter_mut().zip(&columns) {
                append(stream, column)?;
            }
            return Ok(());
        }
        // Each thread packs a run of adjacent columns; packing is most of a writer's
        // work, and the columns' files are independent.
        let per_thread = self.streams.len().div_ceil(self.threads).max(1);
        std::thread::scope(|scope| {
            let packers: Vec<_> = (self.streams.chunks_mut(per_thread))
                .zip(columns.chunks(per_thread))
                .map(|(streams, columns)| {
                    scope.spawn(move || -> Result<()> {
                        for (stream, column) in streams.iter_mut().zip(columns) {
                            append(stream, column)?;
                        }
                        Ok(())
                    })
                })
                .collect();
            packers.into_iter().try_for_each(|p| {
                p.join().unwrap_or_else(|_| {
                    Err(StorageError::Invalid(
                        "a column's page packer panicked".into(),
                    ))
                })
            })
        })
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
                let row_count = per_chunk.min(total - k as u64 * per_chunk);
                let row_start = self.first_row + k as u64 * per_chunk;
                let columns = stats
                    .bytes
                    .into_iter()
                    .zip(stats.zonemaps)
                    .enumerate()
                    .map(|(c, (bytes, z))| {
                        // Indexes into this writer's pages, which follow the file's
                        // `first_pages[c]` pages.
                        let pages = dsm_page_range(
                            &self.streams[c].page_row_starts,
                            self.first_row + total,
                            row_start..row_start + row_count,
                        );
                        let first = pages.start + self.first_pages[c];
                        let extent = Extent {
                            file: c as u32,
                            offset: first * self.page_bytes,
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
            let bounds = stream.page_bounds;
            let mut file = stream.file.finish()?;
            // Every page or none: a page without values (none is written) has no bounds.
            if bounds.len() == starts.len() {
                file.page_bounds = bounds;
            }
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
            let guess = self.packer.guess();
            if !last && remaining < 2 * guess.max(1) {
                break;
            }
            if !last && guess == 0 && remaining < DSM_MAX_PAGE_ROWS {
                break;
            }
            let rows = self.packer.fill_page(&self.pending, start, remaining)?;
            let raw_len = minipage_len(&self.pending, self.physical, start..start + rows);
            self.write_page(rows, raw_len, self.pending_row_start + start as u64)?;
            if let Some(bounds) = int_bounds(&self.pending, start..start + rows) {
                self.page_bounds.push(bounds);
            }
            start += rows;
        }
        self.pending.drain_front(start);
        self.pending_row_start += start as u64;
        Ok(())
    }

    fn write_page(&mut self, rows: usize, raw_len: usize, row_start: u64) -> Result<()> {
        let (payload, codec) = self.packer.page();
        let header = PageHeader {
            layout: Layout::Dsm,
            flags: codec.flag(),
            page_no: u32::try_from(self.file.pages)
                .map_err(|_| StorageError::Invalid("more than 2^32 pages".into()))?,
            row_count: rows_u32(rows),
            row_start,
            stored_len: rows_u32(payload.len()),
            raw_len: rows_u32(raw_len),
            table_id: self.table_id,
            column: self.column,
        };
        self.file.write_page(&header, payload)?;
        self.page_row_starts.push(row_start);
        Ok(())
    }
}

/// The smallest and largest of `values[rows]` for an integer column (`None` for
/// strings, which keep no page bounds, and for no rows).
fn int_bounds(values: &ColumnValues, rows: std::ops::Range<usize>) -> Option<[i64; 2]> {
    match values {
        ColumnValues::I32(v) => {
            let v = v.get(rows)?;
            Some([(*v.iter().min()?).into(), (*v.iter().max()?).into()])
        }
        ColumnValues::I64(v) => {
            let v = v.get(rows)?;
            Some([*v.iter().min()?, *v.iter().max()?])
        }
        ColumnValues::Bytes { .. } => None,
    }
}

/// File-name-safe version of a column name.
pub(crate) fn sanitize(name: &str) -> String {
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
