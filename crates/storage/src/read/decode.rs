//! Decoding a loaded chunk into an Arrow record batch, verifying every page, and
//! verifying a loaded chunk without decoding it.

use std::ops::Range;

use arrow_array::{RecordBatch, RecordBatchOptions};

use crate::codec::{decode_page, decode_page_at, test_page, Codec, Scratch, StoredPage};
use crate::column::ColumnValues;
use crate::encoding::{decode_minipage, decode_nsm_rows, DecodeError};
use crate::error::{Result, StorageError};
use crate::filter::{gather_into, Needed};
use crate::manifest::{ChunkMeta, Extent, Layout};
use crate::page::{check_identity, read_page_with, PageChecks, PageHeader, ALL_COLUMNS};
use crate::read::Table;
use crate::types::Physical;
use crate::write::{DSM_MAX_PAGE_ROWS, MAX_VARCHAR_PAGE_RAW};

/// One page of a DSM column (or CSM run) holding wanted rows.
struct DsmPage<'b> {
    stored: StoredPage<'b>,
    /// The page's wanted rows, as positions in the page.
    local: Range<usize>,
    /// Position of the page's first wanted row among all wanted rows.
    first: usize,
    /// The page's offset in its file (for errors).
    offset: u64,
}

/// Decodes chunk `k` from its loaded extents (as returned by
/// [`Table::chunk_extents`]): the tuples of `rows ∩ chunk` for `projection`.
/// Every page touched is verified (magic, version, checksum, position).
pub fn decode_chunk(
    table: &Table,
    k: usize,
    projection: &[usize],
    rows: Option<Range<u64>>,
    data: &[(Extent, &[u8])],
) -> Result<RecordBatch> {
    decode_chunk_with(table, k, projection, rows, data, PageChecks::Full)
}

/// [`decode_chunk`] with a choice of page checks: `SkipChecksum` only for bytes that
/// passed [`verify_chunk`] when they were loaded and have not changed since.
pub fn decode_chunk_with(
    table: &Table,
    k: usize,
    projection: &[usize],
    rows: Option<Range<u64>>,
    data: &[(Extent, &[u8])],
    checks: PageChecks,
) -> Result<RecordBatch> {
    decode_part_with(table, (k, table.chunk(k)), projection, rows, data, checks)
}

/// [`decode_chunk_with`] of `part`, some of chunk `k`'s pages described like a chunk
/// ([`Table::loaded_parts`]): what a scattered load holds.
pub fn decode_part_with(
    table: &Table,
    (k, part): (usize, &ChunkMeta),
    projection: &[usize],
    rows: Option<Range<u64>>,
    data: &[(Extent, &[u8])],
    checks: PageChecks,
) -> Result<RecordBatch> {
    table.check_projection(projection)?;
    decode_rows(table, part, k, projection, rows, data, checks)
}

/// Decodes `part`, a run of whole pages described like a chunk (its rows and, for
/// the columns of `projection`, the extents of those pages), from its loaded extents:
/// what an index fetch reads instead of a chunk. `k` names the chunk holding the part's
/// first row in errors.
pub(crate) fn decode_part(
    table: &Table,
    part: &ChunkMeta,
    k: usize,
    projection: &[usize],
    data: &[(Extent, &[u8])],
) -> Result<RecordBatch> {
    table.check_projection(projection)?;
    decode_rows(table, part, k, projection, None, data, PageChecks::Full)
}

fn decode_rows(
    table: &Table,
    chunk: &ChunkMeta,
    k: usize,
    projection: &[usize],
    rows: Option<Range<u64>>,
    data: &[(Extent, &[u8])],
    checks: PageChecks,
) -> Result<RecordBatch> {
    let wanted = wanted_rows(chunk, rows);
    let mut outs = presized(table, projection, &wanted);
    let ctx = Decoder {
        table,
        chunk: chunk.rows(),
        wanted: wanted.clone(),
        checks,
    };
    if !wanted.is_empty() {
        match table.layout() {
            Layout::Nsm | Layout::Pax => ctx.row_pages(chunk, data, projection, &mut outs)?,
            Layout::Dsm | Layout::Csm => {
                let mut spent = 0u64;
                for (out, &c) in outs.iter_mut().zip(projection) {
                    ctx.dsm_column(chunk.columns[c].extent, data, c, out, spent, None)?;
                    spent = spent.saturating_add(out.decoded_bytes());
                }
            }
        }
    }
    let n = wanted.end - wanted.start;
    for (values, &c) in outs.iter().zip(projection) {
        if values.len() as u64 != n {
            return Err(StorageError::Invalid(format!(
                "chunk {k} column {c}: decoded {} of {n} tuples (pages do not cover the chunk)",
                values.len()
            )));
        }
    }
    let start = wanted.start;
    ctx.batch(chunk, data, projection, outs, |value| {
        start.saturating_add(value as u64)
    })
}

/// The rows of `rows ∩ chunk` (all of the chunk's without `rows`); an empty range at
/// the chunk's start when they do not meet.
pub(super) fn wanted_rows(chunk: &ChunkMeta, rows: Option<Range<u64>>) -> Range<u64> {
    let chunk_rows = chunk.rows();
    let wanted = match rows {
        Some(r) => r.start.max(chunk_rows.start)..r.end.min(chunk_rows.end),
        None => chunk_rows.clone(),
    };
    if wanted.is_empty() {
        chunk_rows.start..chunk_rows.start
    } else {
        wanted
    }
}

/// Empty values for `columns`, with room for the tuples of `wanted`.
pub(super) fn presized(table: &Table, columns: &[usize], wanted: &Range<u64>) -> Vec<ColumnValues> {
    let presize = usize::try_from(wanted.end - wanted.start).unwrap_or(usize::MAX);
    columns
        .iter()
        .map(|&c| ColumnValues::with_capacity(table.schema().columns[c].ty.physical(), presize))
        .collect()
}

/// Verifies every page of loaded extents — magic, version, layout, checksum and
/// position — without decoding: what a buffer manager checks before it shares a chunk.
/// Returns the first error, naming file and byte offset.
pub fn verify_chunk(table: &Table, data: &[(Extent, &[u8])]) -> Result<()> {
    for (extent, bytes) in data {
        let bytes = bytes.get(..extent.len as usize).unwrap_or(bytes);
        let owner = match table.layout() {
            Layout::Nsm | Layout::Pax => PageOwner::Rows,
            Layout::Dsm => PageOwner::Column(extent.file),
            Layout::Csm => PageOwner::TileAt,
        };
        for page in pages(table, *extent, bytes, PageChecks::Full, owner) {
            page?;
        }
    }
    Ok(())
}

/// The bytes of `extent` among loaded extents `data` (one of which holds it).
pub(super) fn loaded<'b>(extent: Extent, data: &[(Extent, &'b [u8])]) -> Result<&'b [u8]> {
    data.iter()
        .find(|(e, _)| {
            e.file == extent.file
                && e.offset <= extent.offset
                && extent.offset + extent.len <= e.offset + e.len
        })
        .map(|(e, b)| {
            &b[(extent.offset - e.offset) as usize
                ..(extent.offset - e.offset + extent.len) as usize]
        })
        .ok_or_else(|| {
            StorageError::Invalid(format!(
                "extent {}+{} of file {} was not loaded",
                extent.offset, extent.len, extent.file
            ))
        })
}

/// One checked page and where it came from.
struct Page<'b> {
    header: PageHeader,
    payload: &'b [u8],
    offset: u64,
}

/// Which column the pages of an extent must name.
#[derive(Clone, Copy)]
enum PageOwner {
    /// NSM/PAX pages: every column ([`ALL_COLUMNS`]).
    Rows,
    /// A DSM column's pages or a CSM column's run.
    Column(u32),
    /// CSM bytes of any runs: each page the column whose run holds its offset.
    TileAt,
}

/// The pages of `extent` (its loaded `bytes`), each checked per `checks` and for being
/// the page that belongs at its offset, of the column `owner` says.
fn pages<'b>(
    table: &'b Table,
    extent: Extent,
    bytes: &'b [u8],
    checks: PageChecks,
    owner: PageOwner,
) -> impl Iterator<Item = Result<Page<'b>>> + 'b {
    let page_bytes = table.manifest().page_bytes as usize;
    let table_id = table.manifest().table_id;
    let path = table.file_path(extent.file);
    let layout = table.layout();
    bytes.chunks(page_bytes).enumerate().map(move |(i, page)| {
        // Extents lie inside files whose sizes fit u64 (manifest validation).
        let offset = extent.offset.saturating_add((i * page_bytes) as u64);
        let (header, payload) = read_page_with(page, &path, offset, layout, checks)?;
        let corrupt = |reason: String| StorageError::Corrupt {
            path: path.clone(),
            offset,
            reason,
        };
        if u64::from(header.page_no) != offset / page_bytes as u64 {
            return Err(corrupt(format!(
                "page says it is page {}, found at page {}",
                header.page_no,
                offset / page_bytes as u64
            )));
        }
        let column = match owner {
            PageOwner::Rows => ALL_COLUMNS,
            PageOwner::Column(c) => c,
            PageOwner::TileAt => table
                .csm_column_at(offset)
                .ok_or_else(|| corrupt("the page lies in no column's run".into()))?,
        };
        check_identity(&header, table_id, column).map_err(corrupt)?;
        if header.row_count == 0 {
            return Err(corrupt("page holds no rows".into()));
        }
        Ok(Page {
            header,
            payload,
            offset,
        })
    })
}

pub(super) struct Decoder<'a> {
    pub(super) table: &'a Table,
    /// The chunk's rows: where a CSM column's run starts and ends.
    pub(super) chunk: Range<u64>,
    /// Absolute rows to decode.
    pub(super) wanted: Range<u64>,
    pub(super) checks: PageChecks,
}

impl<'a> Decoder<'a> {
    /// The record batch of decoded `outs` (one per column of `projection`, of equal
    /// length); `row_of(i)` is the table row of value `i`, for the error that names the
    /// page of a string that is not UTF-8.
    pub(super) fn batch(
        &self,
        chunk: &ChunkMeta,
        data: &[(Extent, &[u8])],
        projection: &[usize],
        outs: Vec<ColumnValues>,
        row_of: impl Fn(usize) -> u64,
    ) -> Result<RecordBatch> {
        let schema = self.table.schema();
        let n = outs.first().map_or(0, ColumnValues::len);
        let arrays = outs
            .into_iter()
            .zip(projection)
            .map(|(values, &c)| {
                values
                    .into_arrow(schema.columns[c].ty)
                    .map_err(|e| match e {
                        StorageError::NotUtf8 { value } => {
                            self.not_utf8(chunk, data, c, row_of(value))
                        }
                        e => e,
                    })
            })
            .collect::<Result<Vec<_>>>()?;
        let options = RecordBatchOptions::new().with_row_count(Some(n));
        Ok(RecordBatch::try_new_with_options(
            schema.arrow_projection(projection),
            arrays,
            &options,
        )?)
    }

    fn find<'b>(&self, extent: Extent, data: &[(Extent, &'b [u8])]) -> Result<&'b [u8]> {
        loaded(extent, data)
    }

    fn pages<'b>(
        &self,
        extent: Extent,
        bytes: &'b [u8],
        owner: PageOwner,
    ) -> impl Iterator<Item = Result<Page<'b>>> + 'b
    where
        'a: 'b,
    {
        pages(self.table, extent, bytes, self.checks, owner)
    }

    /// Refuses a page whose decoded size `page_bound` (at most what its header
    /// declares) would take the batch's decoded bytes from `spent` past the table's
    /// budget: checked before the page is decoded, so a batch never holds more.
    /// `column` names the DSM column decoded (`None`: a row page).
    fn admit(
        &self,
        spent: u64,
        page_bound: u64,
        file: u32,
        offset: u64,
        column: Option<usize>,
    ) -> Result<()> {
        let needed = spent.saturating_add(page_bound);
        let budget = self.table.decode_budget().bytes();
        if needed <= budget {
            return Ok(());
        }
        Err(StorageError::OverBudget {
            path: self.table.file_path(file),
            offset,
            what: match column {
                Some(c) => format!(
                    "column {:?} of the chunk",
                    self.table.schema().columns[c].name
                ),
                None => "the chunk".to_string(),
            },
            needed,
            budget,
        })
    }

    fn corrupt(&self, file: u32, offset: u64, reason: String) -> StorageError {
        StorageError::Corrupt {
            path: self.table.file_path(file),
            offset,
            reason,
        }
    }

    /// The part of page `h` to decode, as rows local to the page.
    fn local(&self, h: &PageHeader) -> Range<usize> {
        let page = h.row_start..h.row_start + u64::from(h.row_count);
        let lo = self.wanted.start.max(page.start);
        let hi = self.wanted.end.min(page.end).max(lo);
        (lo - page.start) as usize..(hi - page.start) as usize
    }

    pub(super) fn row_pages(
        &self,
        chunk: &ChunkMeta,
        data: &[(Extent, &[u8])],
        projection: &[usize],
        outs: &mut [ColumnValues],
    ) -> Result<()> {
        let extent = chunk.columns[0].extent;
        let bytes = self.find(extent, data)?;
        let physicals: Vec<Physical> = self
            .table
            .schema()
            .columns
            .iter()
            .map(|c| c.ty.physical())
            .collect();
        let string_columns = projection
            .iter()
            .filter(|&&c| matches!(physicals[c], Physical::FixedBytes(_) | Physical::VarBytes))
            .count() as u64;
        let mut expected_row = Some(chunk.row_start);
        for page in self.pages(extent, bytes, PageOwner::Rows) {
            let page = page?;
            let h = page.header;
            if Some(h.row_start) != expected_row {
                return Err(self.corrupt(
                    extent.file,
                    page.offset,
                    format!(
                        "page starts at row {}, expected {}",
                        h.row_start,
                        row_text(expected_row)
                    ),
                ));
            }
            expected_row = h.row_start.checked_add(u64::from(h.row_count));
            let local = self.local(&h);
            if local.is_empty() {
                continue;
            }
            let rows = h.row_count as usize;
            // A row page's values take at most its bytes, plus an offset per string.
            let spent = outs.iter().map(ColumnValues::decoded_bytes).sum::<u64>();
            let offsets = 4 * u64::from(h.row_count) * string_columns;
            let bound = (page.payload.len() as u64).saturating_add(offsets);
            self.admit(spent, bound, extent.file, page.offset, None)?;
            let res = match self.table.layout() {
                Layout::Pax => decode_pax(page.payload, &physicals, rows, local, projection, outs),
                _ => {
                    let mut slots: Vec<Option<&mut ColumnValues>> =
                        (0..physicals.len()).map(|_| None).collect();
                    for (out, &c) in outs.iter_mut().zip(projection) {
                        slots[c] = Some(out);
                    }
                    decode_nsm_rows(page.payload, &physicals, rows, local, &mut slots)
                }
            };
            res.map_err(|DecodeError(reason)| self.corrupt(extent.file, page.offset, reason))?;
        }
        // The pages must end where the chunk ends: extra rows mean the manifest and the
        // data disagree (e.g. a trimmed row count), and decoding would drop them.
        if expected_row != Some(chunk.rows().end) {
            return Err(self.corrupt(
                extent.file,
                extent.offset,
                format!(
                    "the chunk's pages hold rows {}..{}, the manifest says {:?}",
                    chunk.row_start,
                    row_text(expected_row),
                    chunk.rows()
                ),
            ));
        }
        Ok(())
    }

    /// Decodes column `column`'s values of the wanted rows into `out`; with `selected`
    /// (ascending positions among the wanted rows) only those, and pages holding none
    /// are not decoded.
    pub(super) fn dsm_column(
        &self,
        extent: Extent,
        data: &[(Extent, &[u8])],
        column: usize,
        out: &mut ColumnValues,
        spent_before: u64,
        needed: Option<Needed<'_>>,
    ) -> Result<()> {
        let (selected, flags) = match needed {
            None => (None, None),
            Some(Needed::At(at)) => (Some(at), None),
            Some(Needed::All(keep)) => (None, Some(keep)),
        };
        let mut scratch = Scratch::default();
        // Of `out`'s kind: a `CHAR(n)` column may be asked for as packed words.
        let mut page_values = out.empty_like();
        // A page's kept rows as its own positions, for `decode_page_at`.
        let mut at: Vec<u32> = Vec::new();
        self.each_dsm_page(extent, data, column, |page| {
            let DsmPage {
                stored,
                local,
                first,
                offset,
            } = page;
            let corrupt = |reason: String| self.corrupt(extent.file, offset, reason);
            let kept = selected.map(|s| {
                let (lo, hi) = (first as u32, (first + local.len()) as u32);
                &s[s.partition_point(|&p| p < lo)..s.partition_point(|&p| p < hi)]
            });
            if kept.is_some_and(<[u32]>::is_empty) {
                return Ok(());
            }
            // Every tuple of the page already out (its bounds ruled it out): zeros.
            let flagged = flags.and_then(|keep| keep.get(first..first + local.len()));
            if flagged.is_some_and(|keep| !keep.contains(&true)) {
                out.push_zeros(local.len());
                return Ok(());
            }
            // The page's values take at most the plain minipage's bytes (`raw_len`):
            // fixed-width values exactly, strings as offsets and data.
            let spent = spent_before.saturating_add(out.decoded_bytes());
            self.admit(
                spent,
                stored.raw_len as u64,
                extent.file,
                offset,
                Some(column),
            )?;
            let Some(kept) = kept else {
                return decode_page(&stored, local, out, &mut scratch)
                    .map_err(|DecodeError(r)| corrupt(r));
            };
            if kept.len().saturating_mul(AT_DENOMINATOR) < local.len() {
                // Few kept: each decoded where it lies, where the codec allows.
                at.clear();
                at.extend(kept.iter().map(|&p| p - first as u32 + local.start as u32));
                if decode_page_at(&stored, &at, out).map_err(|DecodeError(r)| corrupt(r))? {
                    return Ok(());
                }
            }
            let wanted_here = local.len();
            page_values.clear();
            decode_page(&stored, local, &mut page_values, &mut scratch)
                .map_err(|DecodeError(r)| corrupt(r))?;
            // Checked before positions index the page's values.
            if page_values.len() != wanted_here {
                return Err(corrupt(format!(
                    "page decoded {} of its {wanted_here} wanted values",
                    page_values.len()
                )));
            }
            gather_into(out, &page_values, kept, first as u32)
        })
    }

    /// Appends to `out` whether each wanted row's value of string column `column`
    /// passes `test`, without building the column: PDICT pages answer on their codes
    /// ([`test_page`]). The page decoded for another codec is charged to the budget.
    pub(super) fn dsm_test(
        &self,
        extent: Extent,
        data: &[(Extent, &[u8])],
        column: usize,
        test: &dyn Fn(&[u8]) -> bool,
        out: &mut Vec<bool>,
        spent_before: u64,
    ) -> Result<()> {
        let physical = self.table.schema().columns[column].ty.physical();
        let mut scratch = Scratch::default();
        let mut page_values = ColumnValues::empty(physical);
        self.each_dsm_page(extent, data, column, |page| {
            let DsmPage {
                stored,
                local,
                offset,
                ..
            } = page;
            let spent = spent_before.saturating_add(out.len() as u64);
            self.admit(
                spent,
                stored.raw_len as u64,
                extent.file,
                offset,
                Some(column),
            )?;
            test_page(&stored, local, test, out, &mut page_values, &mut scratch)
                .map_err(|DecodeError(r)| self.corrupt(extent.file, offset, r))
        })
    }

    /// Calls `visit` with every page of column `column`'s extent that holds wanted
    /// rows, in row order, after checking the page's place and header (a CSM run must
    /// also cover its chunk exactly).
    fn each_dsm_page<'b>(
        &self,
        extent: Extent,
        data: &[(Extent, &'b [u8])],
        column: usize,
        mut visit: impl FnMut(DsmPage<'b>) -> Result<()>,
    ) -> Result<()>
    where
        'a: 'b,
    {
        let bytes = self.find(extent, data)?;
        let physical = self.table.schema().columns[column].ty.physical();
        let owner = PageOwner::Column(u32::try_from(column).unwrap_or(ALL_COLUMNS));
        // CSM: the run's pages follow one another from the chunk's first row.
        let mut run_row = Some(self.chunk.start);
        for page in self.pages(extent, bytes, owner) {
            let page = page?;
            let h = page.header;
            let corrupt = |reason: String| self.corrupt(extent.file, page.offset, reason);
            self.check_page_rows(&h, page.offset, column, &mut run_row)
                .map_err(corrupt)?;
            let local = self.local(&h);
            if local.is_empty() {
                continue;
            }
            let codec = Codec::from_flags(h.flags);
            let Some(codec) = codec.filter(|_| {
                h.row_count as usize <= DSM_MAX_PAGE_ROWS
                    && h.raw_len as usize <= raw_limit(physical)
            }) else {
                return Err(corrupt(format!(
                    "implausible DSM page: flags {:#x} (codec bits: 1 LZ4, 2 PFOR, 4 PFOR-DELTA, 8 PDICT, 16 zstd), {} rows, {} raw bytes",
                    h.flags, h.row_count, h.raw_len
                )));
            };
            visit(DsmPage {
                stored: StoredPage {
                    codec,
                    payload: page.payload,
                    physical,
                    rows: h.row_count as usize,
                    raw_len: h.raw_len as usize,
                },
                // The page's wanted rows as positions among all wanted rows.
                first: (h.row_start + local.start as u64 - self.wanted.start) as usize,
                local,
                offset: page.offset,
            })?;
        }
        if self.table.layout() == Layout::Csm && run_row != Some(self.chunk.end) {
            return Err(self.corrupt(
                extent.file,
                extent.offset,
                format!(
                    "column {column}'s run holds rows {}..{}, its chunk {:?}",
                    self.chunk.start,
                    row_text(run_row),
                    self.chunk
                ),
            ));
        }
        Ok(())
    }

    /// Checks that page `h` of a column holds the rows its place says: for DSM the
    /// column's page directory, for CSM the rows from `*run_row` (where the previous
    /// page of the run ended) inside the chunk, moving `*run_row` past them.
    fn check_page_rows(
        &self,
        h: &PageHeader,
        offset: u64,
        column: usize,
        run_row: &mut Option<u64>,
    ) -> std::result::Result<(), String> {
        let end = h.row_start.checked_add(u64::from(h.row_count));
        if self.table.layout() == Layout::Csm {
            if Some(h.row_start) != *run_row || end.is_none_or(|e| e > self.chunk.end) {
                return Err(format!(
                    "page holds rows {}+{}, its run expects rows from {} inside {:?}",
                    h.row_start,
                    h.row_count,
                    row_text(*run_row),
                    self.chunk
                ));
            }
            *run_row = end;
            return Ok(());
        }
        let starts = &self.table.manifest().files[column].page_row_starts;
        let page_bytes = u64::from(self.table.manifest().page_bytes);
        let p = usize::try_from(offset / page_bytes).unwrap_or(usize::MAX);
        let expected = starts.get(p).copied();
        // A page ends where the next begins, the last one at the table's end.
        let expected_end = starts
            .get(p.saturating_add(1))
            .copied()
            .unwrap_or(self.table.rows());
        if Some(h.row_start) != expected || end != Some(expected_end) {
            return Err(format!(
                "page holds rows {}+{}, the directory says {expected:?}..{expected_end}",
                h.row_start, h.row_count
            ));
        }
        Ok(())
    }

    /// The error for a string value Arrow refused (`value` of column `column`'s decoded
    /// values): the page holding its row, named like every other page error.
    fn not_utf8(
        &self,
        chunk: &ChunkMeta,
        data: &[(Extent, &[u8])],
        column: usize,
        row: u64,
    ) -> StorageError {
        let reason = format!(
            "column {:?}: the value of row {row} is not UTF-8",
            self.table.schema().columns[column].name
        );
        let (at, owner) = if self.table.layout().columnar() {
            (
                column,
                PageOwner::Column(u32::try_from(column).unwrap_or(ALL_COLUMNS)),
            )
        } else {
            (0, PageOwner::Rows)
        };
        let extent = chunk.columns[at].extent;
        let holds = |p: &Page<'_>| {
            let h = p.header;
            (h.row_start..h.row_start.saturating_add(u64::from(h.row_count))).contains(&row)
        };
        let page = self.find(extent, data).ok().and_then(|bytes| {
            self.pages(extent, bytes, owner)
                .filter_map(|p| p.ok())
                .find(holds)
        });
        let offset = page.map_or(extent.offset, |p| p.offset);
        self.corrupt(extent.file, offset, reason)
    }
}

/// A row number that may have overflowed (`None`), for messages.
fn row_text(row: Option<u64>) -> String {
    row.map_or_else(|| "beyond 2^64".into(), |r| r.to_string())
}

/// Largest raw size a valid DSM page of this kind can have (bounds allocation on
/// corrupt input).
/// A page's kept tuples are decoded one by one where they lie ([`decode_page_at`])
/// when fewer than one in this many of its wanted rows are kept; more, and the page is
/// decoded whole and gathered (unpacking in blocks costs less per value).
const AT_DENOMINATOR: usize = 4;

fn raw_limit(physical: Physical) -> usize {
    match physical {
        Physical::I32 => 4 * DSM_MAX_PAGE_ROWS,
        Physical::I64 => 8 * DSM_MAX_PAGE_ROWS,
        Physical::FixedBytes(w) => w * DSM_MAX_PAGE_ROWS,
        Physical::VarBytes => MAX_VARCHAR_PAGE_RAW,
    }
}

fn decode_pax(
    payload: &[u8],
    physicals: &[Physical],
    rows: usize,
    local: Range<usize>,
    projection: &[usize],
    outs: &mut [ColumnValues],
) -> std::result::Result<(), DecodeError> {
    use crate::write::PAX_DIR_ENTRY_BYTES;
    for (out, &c) in outs.iter_mut().zip(projection) {
        let at = c * PAX_DIR_ENTRY_BYTES;
        let entry = payload
            .get(at..at + PAX_DIR_ENTRY_BYTES)
            .ok_or_else(|| DecodeError("PAX directory runs past the page".into()))?;
        let off = u32::from_le_bytes([entry[0], entry[1], entry[2], entry[3]]) as usize;
        let len = u32::from_le_bytes([entry[4], entry[5], entry[6], entry[7]]) as usize;
        let mini = payload.get(off..off + len).ok_or_else(|| {
            DecodeError(format!(
                "minipage of column {c} at {off}+{len} runs past the page"
            ))
        })?;
        decode_minipage(mini, physicals[c], rows, local.clone(), out)?;
    }
    Ok(())
}
