//! NSM and PAX writers: pages of consecutive rows; a chunk is a run of consecutive
//! pages (`chunk_bytes / page_bytes` of them), so chunk and I/O extent coincide.
//!
//! PAX page payload: a directory of `(offset, len)` `u32` pairs, one per column, then
//! the minipages. NSM page payload: the rows, one after another.

use std::ops::Range;
use std::path::Path;

use crate::column::ColumnValues;
use crate::encoding::{encode_minipage, encode_nsm_row, minipage_len, nsm_row_len};
use crate::error::{Result, StorageError};
use crate::manifest::{ChunkMeta, ColumnChunk, DataFile, Extent, Layout};
use crate::page::{PageHeader, ALL_COLUMNS};
use crate::types::{Physical, TableSchema};
use crate::write::{rows_u32, Origin, PageFile, WriteOptions};
use crate::zonemap::ZonemapBuilder;

/// Bytes of one PAX directory entry: `u32` offset and `u32` length.
pub const PAX_DIR_ENTRY_BYTES: usize = 8;

pub(crate) struct RowPagesWriter {
    layout: Layout,
    table_id: u64,
    physicals: Vec<Physical>,
    file: PageFile,
    pages_per_chunk: u64,
    /// Rows received but not yet written (fewer than a page's worth, between batches).
    pending: Vec<ColumnValues>,
    next_row: u64,
    chunk: Option<OpenChunk>,
    chunks: Vec<ChunkMeta>,
    payload: Vec<u8>,
}

struct OpenChunk {
    first_page: u64,
    row_start: u64,
    rows: u64,
    bytes: Vec<u64>,
    zonemaps: Vec<ZonemapBuilder>,
}

impl RowPagesWriter {
    pub fn create(
        dir: &Path,
        schema: &TableSchema,
        opts: &WriteOptions,
        origin: &Origin,
    ) -> Result<Self> {
        let physicals: Vec<Physical> = schema.columns.iter().map(|c| c.ty.physical()).collect();
        let name = format!("data.{}", opts.layout);
        let file = PageFile::create(dir, name, opts.page_bytes, origin.first_page(0))?;
        Ok(RowPagesWriter {
            layout: opts.layout,
            table_id: origin.table_id,
            pending: physicals.iter().map(|&p| ColumnValues::empty(p)).collect(),
            physicals,
            file,
            pages_per_chunk: (opts.chunk_bytes / u64::from(opts.page_bytes)).max(1),
            next_row: origin.first_row,
            chunk: None,
            chunks: Vec::new(),
            payload: Vec::new(),
        })
    }

    pub fn append(&mut self, columns: Vec<ColumnValues>) -> Result<()> {
        let n = columns.first().map_or(0, ColumnValues::len);
        for (p, c) in self.pending.iter_mut().zip(&columns) {
            p.extend_from(c, 0..n)?;
        }
        self.flush_full_pages(false)
    }

    /// Writes pages while the pending rows overflow a page (or all of them at the end).
    fn flush_full_pages(&mut self, last: bool) -> Result<()> {
        let available = self.pending.first().map_or(0, ColumnValues::len);
        let mut start = 0;
        while start < available {
            let end = self.page_end(start)?;
            if end == available && !last {
                break; // the page may take more rows from the next batch
            }
            self.write_page(start..end)?;
            start = end;
        }
        // Drained once per batch, not per page: pending can hold a whole batch.
        for p in &mut self.pending {
            p.drain_front(start);
        }
        Ok(())
    }

    /// The end of the longest run of pending rows from `start` that fits one page.
    fn page_end(&self, start: usize) -> Result<usize> {
        let capacity = self.file.payload_capacity();
        let available = self.pending[0].len();
        let cols: Vec<(Physical, &ColumnValues)> =
            self.physicals.iter().copied().zip(&self.pending).collect();
        let mut used = match self.layout {
            // Directory plus the leading zero offset of every VARCHAR minipage.
            Layout::Pax => {
                cols.len() * PAX_DIR_ENTRY_BYTES
                    + 4 * cols
                        .iter()
                        .filter(|(p, _)| *p == Physical::VarBytes)
                        .count()
            }
            _ => 0,
        };
        for row in start..available {
            let len = nsm_row_len(&cols, row);
            if used + len > capacity {
                if row == start {
                    return Err(StorageError::Invalid(format!(
                        "row {} needs {len} bytes, more than a page holds ({capacity}); use larger pages",
                        self.next_row
                    )));
                }
                return Ok(row);
            }
            used += len;
        }
        Ok(available)
    }

    fn write_page(&mut self, range: Range<usize>) -> Result<()> {
        self.payload.clear();
        let rows = range.len();
        let cols: Vec<(Physical, &ColumnValues)> =
            self.physicals.iter().copied().zip(&self.pending).collect();
        match self.layout {
            Layout::Pax => encode_pax_payload(&cols, range.clone(), &mut self.payload),
            _ => range
                .clone()
                .for_each(|r| encode_nsm_row(&cols, r, &mut self.payload)),
        }
        let header = PageHeader {
            layout: self.layout,
            flags: 0,
            page_no: u32::try_from(self.file.pages)
                .map_err(|_| StorageError::Invalid("more than 2^32 pages".into()))?,
            row_count: rows_u32(rows),
            row_start: self.next_row,
            stored_len: rows_u32(self.payload.len()),
            raw_len: rows_u32(self.payload.len()),
            table_id: self.table_id,
            column: ALL_COLUMNS,
        };
        let page_no = self.file.write_page(&header, &self.payload)?;
        self.account_chunk(page_no, range);
        self.next_row += rows as u64;
        Ok(())
    }

    fn account_chunk(&mut self, page_no: u64, range: Range<usize>) {
        let ncols = self.physicals.len();
        let chunk = self.chunk.get_or_insert_with(|| OpenChunk {
            first_page: page_no,
            row_start: self.next_row,
            rows: 0,
            bytes: vec![0; ncols],
            zonemaps: vec![ZonemapBuilder::default(); ncols],
        });
        chunk.rows += range.len() as u64;
        for (c, values) in self.pending.iter().enumerate() {
            chunk.bytes[c] += minipage_len(values, self.physicals[c], range.clone()) as u64;
            chunk.zonemaps[c].add(values, range.clone());
        }
        if page_no + 1 - chunk.first_page == self.pages_per_chunk {
            self.close_chunk(page_no + 1);
        }
    }

    fn close_chunk(&mut self, end_page: u64) {
        let Some(chunk) = self.chunk.take() else {
            return;
        };
        let page_bytes = self.file.payload_capacity() as u64 + crate::page::PAGE_HEADER_LEN as u64;
        let extent = Extent {
            file: 0,
            offset: chunk.first_page * page_bytes,
            len: (end_page - chunk.first_page) * page_bytes,
        };
        let columns = chunk
            .bytes
            .iter()
            .zip(chunk.zonemaps)
            .map(|(&bytes, z)| ColumnChunk {
                extent,
                bytes,
                zonemap: z.finish(),
            })
            .collect();
        self.chunks.push(ChunkMeta {
            row_start: chunk.row_start,
            row_count: chunk.rows,
            pages: Some((chunk.first_page, end_page - chunk.first_page)),
            columns,
        });
    }

    pub fn finish(mut self) -> Result<(Vec<DataFile>, Vec<ChunkMeta>)> {
        self.flush_full_pages(true)?;
        self.close_chunk(self.file.pages);
        Ok((vec![self.file.finish()?], self.chunks))
    }
}

/// PAX payload of `rows`: directory, then one minipage per column.
fn encode_pax_payload(cols: &[(Physical, &ColumnValues)], rows: Range<usize>, out: &mut Vec<u8>) {
    let dir_len = cols.len() * PAX_DIR_ENTRY_BYTES;
    out.resize(dir_len, 0);
    for (c, (p, values)) in cols.iter().enumerate() {
        let start = out.len();
        encode_minipage(values, *p, rows.clone(), out);
        let len = out.len() - start;
        let at = c * PAX_DIR_ENTRY_BYTES;
        out[at..at + 4].copy_from_slice(&(start as u32).to_le_bytes());
        out[at + 4..at + 8].copy_from_slice(&(len as u32).to_le_bytes());
    }
}
