//! What reading some columns of a whole table costs on a device: the requests its
//! layout needs, the bytes they read and the time they take. Clotho's projectivity
//! question (2004 paper §7.2.1, Figure 7a) asked of the storage alone: NSM and PAX read
//! every column whatever the query needs, DSM one request per column and chunk (its
//! boundary pages twice), CSM one request per run of adjacent columns of a chunk. And
//! the 2004 report's question (§4.2, Figure 7): what fetching only the pages that hold
//! some selected tuples costs, page by page, against reading the chunks whole.

use std::ops::Range;
use std::time::{Duration, Instant};

use crate::device::Device;
use crate::error::{Result, StorageError};
use crate::manifest::Extent;
use crate::page::read_page;
use crate::read::decode::loaded;
use crate::read::{Table, TableFiles};

/// The cost of one pass over a table's chunks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ReadCost {
    pub requests: u64,
    pub bytes: u64,
    pub elapsed: Duration,
}

impl Table {
    /// Reads every chunk's extents for `projection`, chunk after chunk as a scan's loads
    /// would (nothing decoded), and returns what that took.
    pub fn read_cost(
        &self,
        device: &Device,
        files: &TableFiles,
        projection: &[usize],
    ) -> Result<ReadCost> {
        self.check_projection(projection)?;
        let start = Instant::now();
        let mut cost = ReadCost::default();
        for k in 0..self.chunk_count() {
            let bytes = self.read_chunk(device, files, k, projection)?;
            cost.requests = cost.requests.saturating_add(bytes.extents.len() as u64);
            cost.bytes = cost.bytes.saturating_add(bytes.bytes());
        }
        cost.elapsed = start.elapsed();
        Ok(cost)
    }
}

/// One page of a column and the tuples it holds: what an index fetch of a tuple of that
/// column reads.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PageRows {
    /// The page: one `page_bytes` extent.
    pub page: Extent,
    pub rows: Range<u64>,
}

impl Table {
    /// Chunk `k`'s pages of each column of `projection` with the tuples they hold, read
    /// from the page headers (one pass over the chunk's extents; each page's magic,
    /// layout, lengths and checksum checked, not its place: this maps pages for a
    /// measurement, it does not decode them). NSM/PAX pages hold every column, so each
    /// column lists the chunk's pages; a DSM column lists its pages holding any of the
    /// chunk's tuples, a CSM column its run.
    pub fn page_rows(
        &self,
        device: &Device,
        files: &TableFiles,
        k: usize,
        projection: &[usize],
    ) -> Result<Vec<Vec<PageRows>>> {
        let bytes = self.read_chunk(device, files, k, projection)?;
        let views = bytes.views();
        let page = u64::from(self.manifest().page_bytes);
        projection
            .iter()
            .map(|&c| {
                let extent = self.chunk(k).columns[c].extent;
                let data = loaded(extent, &views)?;
                let path = self.file_path(extent.file);
                data.chunks(page as usize)
                    .enumerate()
                    .map(|(i, bytes)| {
                        let offset = extent.offset + i as u64 * page;
                        let (h, _) = read_page(bytes, &path, offset, self.layout())?;
                        let start = h.row_start;
                        Ok(PageRows {
                            page: Extent {
                                file: extent.file,
                                offset,
                                len: page,
                            },
                            rows: start..start.saturating_add(u64::from(h.row_count)),
                        })
                    })
                    .collect::<Result<Vec<_>>>()
            })
            .collect()
    }

    /// Fetches `pages` one synchronous request each, in the order given (an index
    /// fetch: seek, read a page, seek forward, …; the 2004 report's Figure 7).
    pub fn fetch_cost(
        &self,
        device: &Device,
        files: &TableFiles,
        pages: &[Extent],
    ) -> Result<ReadCost> {
        let start = Instant::now();
        let mut cost = ReadCost::default();
        for p in pages {
            let len = usize::try_from(p.len)
                .map_err(|_| StorageError::Invalid(format!("a page of {} bytes", p.len)))?;
            device.read(files.file(p.file), p.offset, len)?;
            cost.requests = cost.requests.saturating_add(1);
            cost.bytes = cost.bytes.saturating_add(p.len);
        }
        cost.elapsed = start.elapsed();
        Ok(cost)
    }
}

/// The pages an index fetch of the ascending tuples `rows` reads, in tuple order: per
/// tuple, the page of each column holding it, each page once per run of tuples that
/// need it (`columns`: per column, its pages ascending, as [`Table::page_rows`]).
pub fn pages_for_rows(columns: &[Vec<PageRows>], rows: &[u64]) -> Vec<Extent> {
    let mut at = vec![0usize; columns.len()];
    let mut seen = std::collections::HashSet::new();
    let mut out = Vec::new();
    for &row in rows {
        for (c, pages) in columns.iter().enumerate() {
            while at[c] < pages.len() && pages[at[c]].rows.end <= row {
                at[c] += 1;
            }
            let Some(p) = pages.get(at[c]).filter(|p| p.rows.contains(&row)) else {
                continue;
            };
            // Once: for the next tuples it needs (a page is left behind for good, as
            // the tuples ascend) and for the other columns (NSM/PAX share pages).
            if seen.insert((p.page.file, p.page.offset)) {
                out.push(p.page);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn page(file: u32, n: u64, rows: Range<u64>) -> PageRows {
        PageRows {
            page: Extent {
                file,
                offset: n * 4096,
                len: 4096,
            },
            rows,
        }
    }

    #[test]
    fn a_fetch_reads_each_needed_page_once_in_tuple_order() {
        // Column 0: pages of 10 tuples; column 1 (another file): 0..25, 25..40.
        let a: Vec<PageRows> = (0..4).map(|p| page(0, p, p * 10..p * 10 + 10)).collect();
        let b = vec![page(1, 0, 0..25), page(1, 1, 25..40)];
        let got = pages_for_rows(&[a.clone(), b.clone()], &[3, 7, 12, 31, 33]);
        let want = [&a[0], &b[0], &a[1], &a[3], &b[1]].map(|p| p.page);
        assert_eq!(got, want);
        assert!(pages_for_rows(&[a.clone(), b], &[]).is_empty());
        // Pages shared by the columns (NSM/PAX) are read once for all of them.
        assert_eq!(
            pages_for_rows(&[a.clone(), a.clone()], &[5, 15]),
            [a[0].page, a[1].page]
        );
        // A tuple no page holds (outside the chunk) reads nothing.
        assert!(pages_for_rows(&[a], &[99]).is_empty());
    }
}
