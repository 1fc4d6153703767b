//! Where each tuple's page is: the page directory an index fetch needs to read one page
//! instead of a chunk (the 2004 report's §4.2 index selections; Clotho's SI-scan,
//! §6.1). DSM has it in the manifest (`DataFile::page_row_starts`); for NSM, PAX and
//! CSM the first row of every page is learnt from the pages' headers once, when an
//! index is built, and kept with the index.

use std::ops::Range;

use serde::{Deserialize, Serialize};

use crate::device::Device;
use crate::error::{Result, StorageError};
use crate::manifest::{Extent, Layout};
use crate::read::{Table, TableFiles};

/// First row of every page, per chunk: NSM/PAX one list (the chunk's pages, shared by
/// all columns), CSM one per column (its run); empty for DSM (the manifest has it).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PageMap {
    chunks: Vec<Vec<Vec<u64>>>,
}

/// One page of a column and the tuples it holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PageAt {
    pub page: Extent,
    pub rows: (u64, u64),
}

impl PageAt {
    pub fn rows(&self) -> Range<u64> {
        self.rows.0..self.rows.1
    }
}

impl PageMap {
    /// Reads every chunk's page headers (the whole table, once) and keeps their first
    /// rows; checked as [`PageMap::check`] would.
    pub fn read(table: &Table, device: &Device, files: &TableFiles) -> Result<PageMap> {
        if table.layout() == Layout::Dsm {
            return Ok(PageMap::default());
        }
        let all: Vec<usize> = match table.layout() {
            Layout::Csm => (0..table.schema().len()).collect(),
            _ => vec![0],
        };
        let mut chunks = Vec::with_capacity(table.chunk_count());
        for k in 0..table.chunk_count() {
            let columns = table.page_rows(device, files, k, &all)?;
            chunks.push(
                columns
                    .into_iter()
                    .map(|pages| pages.into_iter().map(|p| p.rows.start).collect())
                    .collect(),
            );
        }
        let map = PageMap { chunks };
        map.check(table)?;
        Ok(map)
    }

    /// Refuses a map that does not fit `table` (another table's, or damaged): per chunk
    /// and run, one first row per page, ascending, the first at the chunk's first row.
    pub fn check(&self, table: &Table) -> Result<()> {
        let bad = |k: usize, why: &str| {
            Err(StorageError::Invalid(format!(
                "page map: chunk {k}: {why} (rebuild the index)"
            )))
        };
        if table.layout() == Layout::Dsm {
            return match self.chunks.is_empty() {
                true => Ok(()),
                false => bad(0, "a DSM table's map must be empty"),
            };
        }
        if self.chunks.len() != table.chunk_count() {
            return bad(self.chunks.len(), "not the table's chunk count");
        }
        let page = u64::from(table.manifest().page_bytes);
        for (k, groups) in self.chunks.iter().enumerate() {
            let chunk = table.chunk(k);
            let expected_groups = match table.layout() {
                Layout::Csm => chunk.columns.len(),
                _ => 1,
            };
            if groups.len() != expected_groups {
                return bad(k, "wrong number of page lists");
            }
            for (g, starts) in groups.iter().enumerate() {
                let pages = chunk.columns[g].extent.len / page;
                let rows = chunk.rows();
                let ascending = starts.windows(2).all(|w| w[0] < w[1]);
                if starts.len() as u64 != pages
                    || starts.first() != Some(&rows.start)
                    || !ascending
                    || starts.last().is_some_and(|&s| s >= rows.end)
                {
                    return bad(k, "its pages' first rows do not fit the chunk");
                }
            }
        }
        Ok(())
    }

    /// The page of `column` holding tuple `row` of chunk `k`, with the rows it holds.
    pub fn page_of(&self, table: &Table, k: usize, column: usize, row: u64) -> Result<PageAt> {
        let page_bytes = u64::from(table.manifest().page_bytes);
        let (base, starts, end) = match table.layout() {
            Layout::Dsm => {
                let starts = &table.manifest().files[column].page_row_starts;
                let base = Extent {
                    file: column as u32,
                    offset: 0,
                    len: 0,
                };
                (base, starts.as_slice(), table.rows())
            }
            layout => {
                let group = if layout == Layout::Csm { column } else { 0 };
                let starts = self
                    .chunks
                    .get(k)
                    .and_then(|g| g.get(group))
                    .ok_or_else(|| StorageError::Invalid(format!("page map: no chunk {k}")))?;
                let chunk = table.chunk(k);
                (
                    chunk.columns[column].extent,
                    starts.as_slice(),
                    chunk.rows().end,
                )
            }
        };
        let i = starts.partition_point(|&s| s <= row);
        let Some(i) = i.checked_sub(1).filter(|_| row < end) else {
            return Err(StorageError::Invalid(format!(
                "row {row} is on no page of column {column}"
            )));
        };
        let last = starts.get(i + 1).copied().unwrap_or(end);
        Ok(PageAt {
            page: Extent {
                file: base.file,
                offset: base.offset + i as u64 * page_bytes,
                len: page_bytes,
            },
            rows: (starts[i], last),
        })
    }
}
