//! CSM writer: Clotho's A-pages (2004 paper §3.1) placed for a device that is read in
//! large direct requests. Each chunk is written as one tile of pages:
//!
//! ```text
//!   tile of chunk k:  [ column 0's run | column 1's run | … | column n-1's run ]
//!                       pages holding exactly the chunk's tuples of that column
//! ```
//!
//! A run is compressed like a DSM column (each page its best codec, tuples per page
//! varying), but starts and ends with the chunk, so no page is shared with a
//! neighbouring chunk (DSM's boundary pages, the 2007 paper's §6.1 "data waste").
//! Atropos's semi-sequential placement (Clotho §5.2) gave an A-page's minipages a
//! second efficient access direction on a disk; on a device without tracks the runs
//! adjacent in one file do the same: any set of a chunk's columns is read with at most
//! one request per column (adjacent columns merge), every column with one request of
//! the whole tile, like a PAX chunk. Variable-size attributes are runs like any other
//! (Clotho §6.2 kept them in separate pages; its future work put them in the A-page).

use std::path::Path;

use crate::column::ColumnValues;
use crate::encoding::minipage_len;
use crate::error::{Result, StorageError};
use crate::manifest::{ChunkMeta, ColumnChunk, DataFile, Extent, Layout};
use crate::page::PageHeader;
use crate::types::{Physical, TableSchema};
use crate::write::dsm::sanitize;
use crate::write::pack::{rows_per_chunk, PagePacker};
use crate::write::{rows_u32, Origin, PageFile, WriteOptions};
use crate::zonemap::ZonemapBuilder;

/// The single data file of a CSM table.
pub const CSM_FILE: &str = "data.csm";

pub(crate) struct CsmWriter {
    table_id: u64,
    file: PageFile,
    columns: Vec<TileColumn>,
    chunk_bytes: u64,
    rows_per_chunk: Option<u64>,
    /// First row not yet in a tile.
    next_row: u64,
    chunks: Vec<ChunkMeta>,
}

/// One column's tuples waiting for their tile, and its page packer.
struct TileColumn {
    physical: Physical,
    pending: ColumnValues,
    packer: PagePacker,
}

impl CsmWriter {
    pub fn create(
        dir: &Path,
        schema: &TableSchema,
        opts: &WriteOptions,
        origin: &Origin,
    ) -> Result<Self> {
        let first_page = origin.first_page(0);
        let file = PageFile::create(dir, CSM_FILE.to_string(), opts.page_bytes, first_page)?;
        let capacity = file.payload_capacity();
        let columns = schema
            .columns
            .iter()
            .map(|c| TileColumn {
                physical: c.ty.physical(),
                pending: ColumnValues::empty(c.ty.physical()),
                packer: PagePacker::new(
                    c.ty.physical(),
                    capacity,
                    format!("{CSM_FILE} column {}", sanitize(&c.name)),
                ),
            })
            .collect();
        Ok(CsmWriter {
            table_id: origin.table_id,
            file,
            columns,
            chunk_bytes: opts.chunk_bytes,
            rows_per_chunk: origin.rows_per_chunk,
            next_row: origin.first_row,
            chunks: Vec::new(),
        })
    }

    pub fn append(&mut self, columns: Vec<ColumnValues>) -> Result<()> {
        let n = columns.first().map_or(0, ColumnValues::len);
        if n == 0 {
            return Ok(());
        }
        let per_chunk = *self.rows_per_chunk.get_or_insert_with(|| {
            let physicals = self.columns.iter().map(|t| t.physical);
            rows_per_chunk(self.chunk_bytes, &columns, physicals)
        });
        for (tile, column) in self.columns.iter_mut().zip(&columns) {
            tile.pending.extend_from(column, 0..n)?;
        }
        let per_chunk = usize::try_from(per_chunk).unwrap_or(usize::MAX);
        let mut at = 0;
        while self.pending() - at >= per_chunk {
            self.write_tile(at, per_chunk)?;
            at += per_chunk;
        }
        for tile in &mut self.columns {
            tile.pending.drain_front(at);
        }
        Ok(())
    }

    /// Tuples waiting for a tile.
    fn pending(&self) -> usize {
        self.columns.first().map_or(0, |t| t.pending.len())
    }

    /// Writes the tile of pending tuples `at..at + n` (the next chunk), column by column.
    fn write_tile(&mut self, at: usize, n: usize) -> Result<()> {
        let page_bytes = self.file.page_bytes();
        let first_page = self.file.pages;
        let mut columns = Vec::with_capacity(self.columns.len());
        for c in 0..self.columns.len() {
            let run_start = self.file.pages;
            self.write_run(c, at, n)?;
            let tile = &self.columns[c];
            let mut zonemap = ZonemapBuilder::default();
            zonemap.add(&tile.pending, at..at + n);
            columns.push(ColumnChunk {
                extent: Extent {
                    file: 0,
                    offset: run_start * page_bytes,
                    len: (self.file.pages - run_start) * page_bytes,
                },
                bytes: minipage_len(&tile.pending, tile.physical, at..at + n) as u64,
                zonemap: zonemap.finish(),
            });
        }
        self.chunks.push(ChunkMeta {
            row_start: self.next_row,
            row_count: n as u64,
            pages: Some((first_page, self.file.pages - first_page)),
            columns,
        });
        self.next_row += n as u64;
        Ok(())
    }

    /// Column `c`'s run: pages of pending tuples `at..at + n`, the last one cut at the
    /// chunk's end.
    fn write_run(&mut self, c: usize, at: usize, n: usize) -> Result<()> {
        let column = u32::try_from(c).unwrap_or(u32::MAX);
        let mut start = at;
        while start < at + n {
            let tile = &mut self.columns[c];
            let rows = tile
                .packer
                .fill_page(&tile.pending, start, at + n - start)?;
            let raw_len = minipage_len(&tile.pending, tile.physical, start..start + rows);
            let (payload, codec) = tile.packer.page();
            let header = PageHeader {
                layout: Layout::Csm,
                flags: codec.flag(),
                page_no: u32::try_from(self.file.pages)
                    .map_err(|_| StorageError::Invalid("more than 2^32 pages".into()))?,
                row_count: rows_u32(rows),
                row_start: self.next_row + (start - at) as u64,
                stored_len: rows_u32(payload.len()),
                raw_len: rows_u32(raw_len),
                table_id: self.table_id,
                column,
            };
            self.file.write_page(&header, payload)?;
            start += rows;
        }
        Ok(())
    }

    pub fn finish(mut self) -> Result<(Vec<DataFile>, Vec<ChunkMeta>)> {
        let rest = self.pending();
        if rest > 0 {
            self.write_tile(0, rest)?;
        }
        Ok((vec![self.file.finish()?], self.chunks))
    }
}
