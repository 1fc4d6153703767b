//! Reading tables: open a table directory, find the byte extents of a chunk (or of any
//! tuple range of a column), read them through the [`Device`], and decode them into
//! Arrow record batches.
//!
//! I/O and decoding are separate steps on purpose: the Active Buffer Manager loads a
//! chunk's extents into buffer frames (I/O, one loader), and each scan decodes only
//! the columns and tuples it needs (CPU, many scans).

mod budget;
mod check;
mod codecs;
mod cost;
mod decode;
mod fetch;
mod page_bounds;
mod page_map;
mod piece;
mod scattered;
mod select;

use std::ops::Range;
use std::path::{Path, PathBuf};

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;

pub use budget::DecodeBudget;
pub use codecs::page_codecs;
pub use cost::{pages_for_rows, PageRows, ReadCost};
pub use decode::{decode_chunk, decode_chunk_with, decode_part_with, verify_chunk};
pub use page_map::{PageAt, PageMap};
pub use piece::{ColumnPages, PageCopies, PieceRead};
pub use select::{
    decode_chunk_filtered, decode_chunk_values, decode_part_filtered, decode_part_values, Selected,
    SelectedValues, Tuples, ValueColumns,
};

use crate::chunk_map::{chunk_range, dsm_page_range};
use crate::device::{AlignedBuf, Completion, Device, DeviceFile};
use crate::error::{Result, StorageError};
use crate::filter::RowFilter;
use crate::manifest::{require_regular_file, ChunkMeta, Extent, Layout, Manifest};
use crate::page::PageChecks;
use crate::types::TableSchema;

/// An open table: its directory and validated manifest.
#[derive(Debug, Clone)]
pub struct Table {
    dir: PathBuf,
    manifest: Manifest,
    chunk_row_starts: Vec<u64>,
    decode_budget: DecodeBudget,
}

impl Table {
    /// Opens `dir`, validates the manifest and checks that every data file exists and
    /// has the size the manifest expects (a shorter file is reported as truncated).
    pub fn open(dir: &Path) -> Result<Table> {
        let manifest = Manifest::load(dir)?;
        for (i, f) in manifest.files.iter().enumerate() {
            let path = dir.join(&f.name);
            let len = require_regular_file(&path)?.len();
            let expected = manifest.file_len(i);
            if len < expected {
                return Err(StorageError::Truncated {
                    path,
                    offset: len,
                    expected,
                    found: len,
                });
            }
        }
        let chunk_row_starts = manifest.chunks.iter().map(|c| c.row_start).collect();
        Ok(Table {
            dir: dir.to_path_buf(),
            manifest,
            chunk_row_starts,
            decode_budget: DecodeBudget::default(),
        })
    }

    /// This table with every batch decoded within `budget` (default
    /// [`DecodeBudget::default`]): a batch that would decode to more is an error.
    pub fn with_decode_budget(mut self, budget: DecodeBudget) -> Table {
        self.decode_budget = budget;
        self
    }

    pub fn decode_budget(&self) -> DecodeBudget {
        self.decode_budget
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn manifest(&self) -> &Manifest {
        &self.manifest
    }

    pub fn schema(&self) -> &TableSchema {
        &self.manifest.schema
    }

    pub fn arrow_schema(&self) -> SchemaRef {
        self.manifest.schema.arrow_schema()
    }

    pub fn layout(&self) -> Layout {
        self.manifest.layout
    }

    pub fn rows(&self) -> u64 {
        self.manifest.rows
    }

    pub fn chunk_count(&self) -> usize {
        self.manifest.chunks.len()
    }

    pub fn chunk(&self, k: usize) -> &ChunkMeta {
        &self.manifest.chunks[k]
    }

    /// First row of every chunk, ascending.
    pub fn chunk_row_starts(&self) -> &[u64] {
        &self.chunk_row_starts
    }

    /// Chunks whose tuples intersect `rows`.
    pub fn chunks_for_rows(&self, rows: Range<u64>) -> Range<usize> {
        chunk_range(&self.chunk_row_starts, self.rows(), rows)
    }

    pub fn file_path(&self, file: u32) -> PathBuf {
        self.dir.join(&self.manifest.files[file as usize].name)
    }

    /// Checks a projection (column indices) against the schema.
    pub fn check_projection(&self, projection: &[usize]) -> Result<()> {
        match projection.iter().find(|&&c| c >= self.schema().len()) {
            Some(c) => Err(StorageError::Invalid(format!(
                "column {c} out of range: table has {} columns",
                self.schema().len()
            ))),
            None => Ok(()),
        }
    }

    /// The I/O requests that load chunk `k` for `projection`: the chunk's pages in
    /// NSM/PAX (whatever the projection), one extent per projected column in DSM, the
    /// projected columns' runs in CSM with adjacent runs merged into one request (all
    /// columns: the whole tile).
    pub fn chunk_extents(&self, k: usize, projection: &[usize]) -> Vec<Extent> {
        let chunk = self.chunk(k);
        match self.layout() {
            Layout::Nsm | Layout::Pax => vec![chunk.columns[0].extent],
            Layout::Dsm | Layout::Csm => {
                let mut extents: Vec<Extent> = projection
                    .iter()
                    .map(|&c| chunk.columns[c].extent)
                    .collect();
                extents.sort_by_key(|e| (e.file, e.offset));
                extents.dedup();
                if self.layout() == Layout::Csm {
                    extents = merge_adjacent(extents);
                }
                extents
            }
        }
    }

    /// CSM: the column whose run in some chunk's tile holds byte `offset` of the data
    /// file; `None` when no run does (or the table is not CSM).
    pub fn csm_column_at(&self, offset: u64) -> Option<u32> {
        if self.layout() != Layout::Csm {
            return None;
        }
        let chunks = &self.manifest.chunks;
        // Tiles follow one another, so their runs' offsets ascend.
        let after = chunks.partition_point(|c| c.columns[0].extent.offset <= offset);
        let chunk = chunks.get(after.checked_sub(1)?)?;
        // The tile's runs follow one another too.
        let runs = &chunk.columns;
        let c = runs
            .partition_point(|c| c.extent.offset <= offset)
            .checked_sub(1)?;
        let run = runs[c].extent;
        (offset < run.offset + run.len).then_some(())?;
        u32::try_from(c).ok()
    }

    /// The byte extents of column `column` that hold tuples `rows`: for DSM the
    /// column's pages (found in its page directory), for NSM/PAX the pages of the
    /// chunks holding those tuples, for CSM the column's run in each of those chunks.
    pub fn column_extents_for_rows(&self, column: usize, rows: Range<u64>) -> Vec<Extent> {
        let page = u64::from(self.manifest.page_bytes);
        match self.layout() {
            Layout::Csm => self
                .chunks_for_rows(rows)
                .map(|k| self.chunk(k).columns[column].extent)
                .collect(),
            Layout::Dsm => {
                let file = &self.manifest.files[column];
                let pages = dsm_page_range(&file.page_row_starts, self.rows(), rows);
                if pages.is_empty() {
                    return Vec::new();
                }
                vec![Extent {
                    file: column as u32,
                    offset: pages.start * page,
                    len: (pages.end - pages.start) * page,
                }]
            }
            Layout::Nsm | Layout::Pax => {
                let chunks = self.chunks_for_rows(rows);
                if chunks.is_empty() {
                    return Vec::new();
                }
                let first = self.chunk(chunks.start).columns[0].extent;
                let last = self.chunk(chunks.end - 1).columns[0].extent;
                vec![Extent {
                    file: 0,
                    offset: first.offset,
                    len: last.offset + last.len - first.offset,
                }]
            }
        }
    }

    /// Opens the table's data files on `device`.
    pub fn open_files(&self, device: &Device) -> Result<TableFiles> {
        let files = (0..self.manifest.files.len() as u32)
            .map(|i| device.open(&self.file_path(i)).map_err(StorageError::from))
            .collect::<Result<Vec<_>>>()?;
        Ok(TableFiles { files })
    }

    /// Reads chunk `k`'s extents for `projection` (one device request per extent).
    pub fn read_chunk(
        &self,
        device: &Device,
        files: &TableFiles,
        k: usize,
        projection: &[usize],
    ) -> Result<ChunkBytes> {
        let (bytes, done) = self.read_chunk_early(device, files, k, projection)?;
        done.wait();
        Ok(bytes)
    }

    /// [`read_chunk`](Self::read_chunk) returning right after the real reads, with the
    /// emulated disk's completion of the last one ([`Device::read_early`]): the loader
    /// verifies the bytes while the emulated transfer runs, then waits.
    pub fn read_chunk_early(
        &self,
        device: &Device,
        files: &TableFiles,
        k: usize,
        projection: &[usize],
    ) -> Result<(ChunkBytes, Completion)> {
        if k >= self.chunk_count() {
            return Err(StorageError::Invalid(format!(
                "chunk {k} out of range: table has {} chunks",
                self.chunk_count()
            )));
        }
        self.check_projection(projection)?;
        let mut done = Completion::default();
        let mut extents = Vec::new();
        for e in self.chunk_extents(k, projection) {
            let read = device.read_early(&files.files[e.file as usize], e.offset, e.len as usize);
            match read {
                Ok((buf, due)) => {
                    done = done.and(due);
                    extents.push((e, buf));
                }
                Err(err) => {
                    // The extents already read still occupy the emulated disk.
                    done.wait();
                    return Err(err.into());
                }
            }
        }
        Ok((ChunkBytes { chunk: k, extents }, done))
    }

    /// Reads and decodes chunk `k`: the tuples of `rows` (all of the chunk's if `None`)
    /// for `projection`, as one record batch.
    pub fn read_chunk_batch(
        &self,
        device: &Device,
        files: &TableFiles,
        k: usize,
        projection: &[usize],
        rows: Option<Range<u64>>,
    ) -> Result<RecordBatch> {
        let bytes = self.read_chunk(device, files, k, projection)?;
        decode_chunk(self, k, projection, rows, &bytes.views())
    }

    /// [`Self::read_chunk_batch`] keeping only the tuples that pass `filter` (whose
    /// columns are read too, whether projected or not).
    pub fn read_chunk_selected(
        &self,
        device: &Device,
        files: &TableFiles,
        k: usize,
        projection: &[usize],
        rows: Option<Range<u64>>,
        filter: &RowFilter,
    ) -> Result<Selected> {
        let mut columns = projection.to_vec();
        columns.extend(filter.columns());
        columns.sort_unstable();
        columns.dedup();
        let bytes = self.read_chunk(device, files, k, &columns)?;
        let views = bytes.views();
        decode_chunk_filtered(self, k, projection, rows, &views, PageChecks::Full, filter)
    }
}

/// Extents sorted by file and offset, each run of touching ones merged into one.
fn merge_adjacent(extents: Vec<Extent>) -> Vec<Extent> {
    let mut merged: Vec<Extent> = Vec::with_capacity(extents.len());
    for e in extents {
        match merged.last_mut() {
            Some(last) if last.file == e.file && last.offset + last.len == e.offset => {
                last.len += e.len;
            }
            _ => merged.push(e),
        }
    }
    merged
}

/// A table's data files opened on a device (index = [`Extent::file`]).
pub struct TableFiles {
    files: Vec<DeviceFile>,
}

impl TableFiles {
    pub fn file(&self, i: u32) -> &DeviceFile {
        &self.files[i as usize]
    }
}

/// The loaded bytes of one chunk: one buffer per extent.
pub struct ChunkBytes {
    pub chunk: usize,
    pub extents: Vec<(Extent, AlignedBuf)>,
}

impl ChunkBytes {
    pub fn views(&self) -> Vec<(Extent, &[u8])> {
        self.extents.iter().map(|(e, b)| (*e, &b[..])).collect()
    }

    pub fn bytes(&self) -> u64 {
        self.extents.iter().map(|(e, _)| e.len).sum()
    }
}
