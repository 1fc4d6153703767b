//! A scattered load (the 2004 report's §4.2): only some pages of an NSM/PAX chunk, the
//! union of what the index selections waiting for it need, read as runs of adjacent
//! pages, one request each. Each run is then a part of the chunk of its own, described
//! like a chunk (its rows from its pages' headers) so the decoders read it as they read
//! a chunk.

use std::ops::Range;

use crate::device::{AlignedBuf, Completion, Device};
use crate::error::{Result, StorageError};
use crate::manifest::{ChunkMeta, Extent, Layout};
use crate::page::read_page_with;
use crate::page::PageChecks;
use crate::read::{ChunkBytes, Table, TableFiles};

impl Table {
    /// The extents of pages `runs` (page numbers within chunk `k`, each run ascending
    /// and inside the chunk) of an NSM/PAX chunk.
    pub fn page_run_extents(&self, k: usize, runs: &[Range<u32>]) -> Result<Vec<Extent>> {
        self.check_chunk(k)?;
        if !matches!(self.layout(), Layout::Nsm | Layout::Pax) {
            return Err(StorageError::Invalid(format!(
                "pages of chunk {k} read alone: only NSM/PAX chunks are read so"
            )));
        }
        let chunk = self.chunk(k).columns[0].extent;
        let page = u64::from(self.manifest().page_bytes);
        runs.iter()
            .map(|run| {
                let start = u64::from(run.start).saturating_mul(page);
                let end = u64::from(run.end).saturating_mul(page).min(chunk.len);
                if run.is_empty() || start >= end {
                    return Err(StorageError::Invalid(format!(
                        "pages {run:?} of chunk {k}: it has {} pages",
                        chunk.len.div_ceil(page)
                    )));
                }
                Ok(Extent {
                    file: chunk.file,
                    offset: chunk.offset + start,
                    len: end - start,
                })
            })
            .collect()
    }

    /// [`Table::read_chunk_early`] for only pages `runs` of chunk `k` (NSM/PAX): the
    /// report's scatter-readv. One request reads from the first run's first page to
    /// the last run's last page straight into a buffer per run, the pages between runs
    /// into a scratch buffer dropped at once (the report's "dummy page"): the disk
    /// streams as for one read, memory keeps only the runs. `ChunkBytes` holds the runs.
    pub fn read_chunk_pages_early(
        &self,
        device: &Device,
        files: &TableFiles,
        k: usize,
        runs: &[Range<u32>],
    ) -> Result<(ChunkBytes, Completion)> {
        let extents = self.page_run_extents(k, runs)?;
        let (Some(first), Some(last)) = (extents.first(), extents.last()) else {
            return Err(StorageError::Invalid(format!(
                "no pages of chunk {k} to read"
            )));
        };
        let start = first.offset;
        let mut gaps: Vec<usize> = Vec::with_capacity(extents.len());
        let mut at = start;
        for e in &extents {
            if e.offset < at {
                return Err(StorageError::Invalid(format!(
                    "pages of chunk {k} to read must ascend apart: {runs:?}"
                )));
            }
            gaps.push(usize::try_from(e.offset - at).unwrap_or(usize::MAX));
            at = e.offset + e.len;
        }
        let mut bufs: Vec<AlignedBuf> = extents
            .iter()
            .map(|e| device.buffer(e.len as usize))
            .collect();
        let mut scratch = device.buffer(gaps.iter().sum());
        let mut slices: Vec<&mut [u8]> = Vec::with_capacity(2 * extents.len());
        let mut rest: &mut [u8] = &mut scratch;
        for (gap, buf) in gaps.iter().zip(bufs.iter_mut()) {
            let (dummy, after) = rest.split_at_mut(*gap);
            rest = after;
            if !dummy.is_empty() {
                slices.push(dummy);
            }
            slices.push(buf);
        }
        let file = &files.files[last.file as usize];
        let done = device.read_vectored_early(file, start, &mut slices)?;
        let extents = extents.into_iter().zip(bufs).collect();
        Ok((ChunkBytes { chunk: k, extents }, done))
    }

    /// The parts of chunk `k` that loaded extents `data` hold, when they are some of
    /// its pages only (a scattered load): each extent described like a chunk, its rows
    /// read from its first and last page's headers. `None` when `data` holds the whole
    /// chunk (or the table is not NSM/PAX).
    pub fn loaded_parts(
        &self,
        k: usize,
        data: &[(Extent, &[u8])],
    ) -> Result<Option<Vec<ChunkMeta>>> {
        self.check_chunk(k)?;
        if !matches!(self.layout(), Layout::Nsm | Layout::Pax) {
            return Ok(None);
        }
        let whole = self.chunk(k).columns[0].extent;
        if data.iter().any(|(e, _)| *e == whole) {
            return Ok(None);
        }
        data.iter()
            .map(|(extent, bytes)| self.part_of(k, *extent, bytes))
            .collect::<Result<Vec<_>>>()
            .map(Some)
    }

    /// Loaded pages `bytes` at `extent` of chunk `k`, described like a chunk.
    fn part_of(&self, k: usize, extent: Extent, bytes: &[u8]) -> Result<ChunkMeta> {
        let page = self.manifest().page_bytes as usize;
        let whole = self.chunk(k).columns[0].extent;
        let inside = extent.file == whole.file
            && extent.offset >= whole.offset
            && extent.offset + extent.len <= whole.offset + whole.len;
        if !inside || extent.len == 0 || bytes.len() < extent.len as usize {
            return Err(StorageError::Invalid(format!(
                "chunk {k}: loaded bytes at {}+{} are not its pages",
                extent.offset, extent.len
            )));
        }
        let path = self.file_path(extent.file);
        let header = |at: usize| {
            let end = (at + page).min(extent.len as usize);
            let offset = extent.offset + at as u64;
            read_page_with(
                &bytes[at..end],
                &path,
                offset,
                self.layout(),
                PageChecks::SkipChecksum,
            )
            .map(|(h, _)| h)
        };
        let first = header(0)?;
        let last_at = (extent.len as usize - 1) / page * page;
        let last = header(last_at)?;
        let end = last.row_start.saturating_add(u64::from(last.row_count));
        let mut part = self.chunk(k).clone();
        part.row_start = first.row_start;
        part.row_count = end.saturating_sub(first.row_start);
        part.pages = None;
        for column in &mut part.columns {
            column.extent = extent;
        }
        Ok(part)
    }

    fn check_chunk(&self, k: usize) -> Result<()> {
        match k < self.chunk_count() {
            true => Ok(()),
            false => Err(StorageError::Invalid(format!(
                "chunk {k} out of range: table has {} chunks",
                self.chunk_count()
            ))),
        }
    }
}
