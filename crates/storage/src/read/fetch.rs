//! Fetching chosen tuples by position: read only the pages that hold them, for only the
//! columns asked for (Clotho's SI-scan, §6.1; the 2004 report's index selection,
//! §4.2), and decode those pages alone. NSM and PAX pages hold every column, so their
//! pages are read once for all; a DSM or CSM column's pages are read column by column.
//! Pages a run of wanted tuples needs one after another are read with one request.

use arrow_array::{ArrayRef, RecordBatch, RecordBatchOptions, UInt32Array};

use crate::device::Device;
use crate::error::{Result, StorageError};
use crate::manifest::{ChunkMeta, Extent, Layout, MAX_EXTENT_BYTES};
use crate::read::decode::decode_part;
use crate::read::page_map::{PageAt, PageMap};
use crate::read::{Table, TableFiles};

/// Pages read with one request, and the wanted tuples they hold.
struct Span {
    /// The chunk holding the first page's first wanted tuple (names it in errors).
    chunk: usize,
    extent: Extent,
    rows: (u64, u64),
    /// The wanted tuples these pages hold, ascending.
    wanted: Vec<u64>,
}

impl Table {
    /// The tuples `rows` (strictly ascending positions) for `projection`, in that order:
    /// only the pages holding them are read (`map`: the table's page directory).
    pub fn fetch_rows(
        &self,
        device: &Device,
        files: &TableFiles,
        map: &PageMap,
        rows: &[u64],
        projection: &[usize],
    ) -> Result<RecordBatch> {
        self.check_projection(projection)?;
        if let Some(bad) = rows.windows(2).find(|w| w[0] >= w[1]) {
            return Err(StorageError::Invalid(format!(
                "rows to fetch must ascend: {} then {}",
                bad[0], bad[1]
            )));
        }
        if let Some(&last) = rows.last().filter(|&&r| r >= self.rows()) {
            return Err(StorageError::Invalid(format!(
                "row {last} out of range: table has {} rows",
                self.rows()
            )));
        }
        let mut arrays: Vec<Option<ArrayRef>> = vec![None; projection.len()];
        for group in &self.page_groups(projection) {
            let fetched = self.fetch_group(device, files, map, rows, group)?;
            for (i, array) in fetched.into_iter().enumerate() {
                // A column the projection names twice is fetched twice (DSM/CSM) or
                // once per name (NSM/PAX): each name gets an array.
                if let Some(slot) = arrays
                    .iter_mut()
                    .zip(projection)
                    .find_map(|(slot, &c)| (slot.is_none() && c == group[i]).then_some(slot))
                {
                    *slot = Some(array);
                }
            }
        }
        let arrays = arrays.into_iter().flatten().collect();
        let options = RecordBatchOptions::new().with_row_count(Some(rows.len()));
        Ok(RecordBatch::try_new_with_options(
            self.schema().arrow_projection(projection),
            arrays,
            &options,
        )?)
    }

    /// What [`Table::fetch_rows`] would read for `rows` and `projection`: its requests
    /// and their bytes (the page directory alone is consulted; nothing is read).
    pub fn fetch_cost_of(
        &self,
        map: &PageMap,
        rows: &[u64],
        projection: &[usize],
    ) -> Result<(u64, u64)> {
        self.check_projection(projection)?;
        let (mut requests, mut bytes) = (0u64, 0u64);
        for group in self.page_groups(projection) {
            for span in self.spans(map, rows, group[0])? {
                requests = requests.saturating_add(1);
                bytes = bytes.saturating_add(span.extent.len);
            }
        }
        Ok((requests, bytes))
    }

    /// The columns of `projection` grouped by the pages that hold them: NSM/PAX pages
    /// hold every column (one group), a DSM or CSM page one (a group per column).
    fn page_groups(&self, projection: &[usize]) -> Vec<Vec<usize>> {
        match self.layout() {
            Layout::Nsm | Layout::Pax if !projection.is_empty() => vec![projection.to_vec()],
            Layout::Nsm | Layout::Pax => Vec::new(),
            Layout::Dsm | Layout::Csm => projection.iter().map(|&c| vec![c]).collect(),
        }
    }

    /// One array per column of `group` (columns that share their pages) holding `rows`.
    fn fetch_group(
        &self,
        device: &Device,
        files: &TableFiles,
        map: &PageMap,
        rows: &[u64],
        group: &[usize],
    ) -> Result<Vec<ArrayRef>> {
        let mut parts: Vec<Vec<ArrayRef>> = vec![Vec::new(); group.len()];
        for span in self.spans(map, rows, group[0])? {
            let len = usize::try_from(span.extent.len).unwrap_or(usize::MAX);
            let bytes = device.read(files.file(span.extent.file), span.extent.offset, len)?;
            let part = self.part(&span, group);
            let batch = decode_part(self, &part, span.chunk, group, &[(span.extent, &bytes)])?;
            let take = UInt32Array::from_iter_values(
                span.wanted
                    .iter()
                    .map(|&r| u32::try_from(r - span.rows.0).unwrap_or(u32::MAX)),
            );
            for (out, column) in parts.iter_mut().zip(batch.columns()) {
                out.push(arrow_select::take::take(column, &take, None)?);
            }
        }
        parts
            .into_iter()
            .zip(group)
            .map(|(arrays, &c)| match arrays.is_empty() {
                true => Ok(arrow_array::new_empty_array(
                    &self.schema().columns[c].ty.arrow_type(),
                )),
                false => {
                    let refs: Vec<&dyn arrow_array::Array> =
                        arrays.iter().map(|a| a.as_ref()).collect();
                    Ok(arrow_select::concat::concat(&refs)?)
                }
            })
            .collect()
    }

    /// The requests that read `column`'s pages holding `rows`: pages one after another
    /// in the same file (and, but for DSM, the same chunk) share a request, up to
    /// [`MAX_EXTENT_BYTES`].
    fn spans(&self, map: &PageMap, rows: &[u64], column: usize) -> Result<Vec<Span>> {
        let starts = self.chunk_row_starts();
        let mut spans: Vec<Span> = Vec::new();
        let mut k = 0usize;
        for &row in rows {
            while k + 1 < starts.len() && starts[k + 1] <= row {
                k += 1;
            }
            let at = map.page_of(self, k, column, row)?;
            if let Some(span) = spans.last_mut().filter(|s| self.extends(s, k, &at)) {
                if at.rows.0 >= span.rows.1 {
                    span.extent.len += at.page.len;
                    span.rows.1 = at.rows.1;
                }
                span.wanted.push(row);
                continue;
            }
            spans.push(Span {
                chunk: k,
                extent: at.page,
                rows: at.rows,
                wanted: vec![row],
            });
        }
        Ok(spans)
    }

    /// Whether page `at` (of chunk `k`) is in `span` or the page right after it.
    fn extends(&self, span: &Span, k: usize, at: &PageAt) -> bool {
        let end = span.extent.offset + span.extent.len;
        let same_page = at.page.offset + at.page.len == end;
        let next_page = at.page.offset == end && span.extent.len + at.page.len <= MAX_EXTENT_BYTES;
        // A CSM run or a chunk's NSM/PAX pages end with the chunk; DSM pages run on.
        let same_run = self.layout() == Layout::Dsm || span.chunk == k;
        at.page.file == span.extent.file && same_run && (same_page || next_page)
    }

    /// `span`'s pages described as a chunk of their rows, for the decoder.
    fn part(&self, span: &Span, group: &[usize]) -> ChunkMeta {
        let mut part = self.chunk(span.chunk).clone();
        part.row_start = span.rows.0;
        part.row_count = span.rows.1 - span.rows.0;
        part.pages = None;
        let every = matches!(self.layout(), Layout::Nsm | Layout::Pax);
        for (c, column) in part.columns.iter_mut().enumerate() {
            if every || group.contains(&c) {
                column.extent = span.extent;
            }
        }
        part
    }
}
