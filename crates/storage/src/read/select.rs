//! Decoding a loaded chunk keeping only the tuples that pass a [`RowFilter`]: the
//! filtered columns are decoded first and compared on their stored integers, then the
//! projected columns are built for the selected tuples only (a DSM page holding none
//! is not decoded at all).

use std::ops::Range;

use arrow_array::RecordBatch;

use crate::column::ColumnValues;
use crate::error::{Result, StorageError};
use crate::filter::{gather_into, positions, Needed, RowFilter, Selection, StringIn};
use crate::manifest::{ChunkMeta, Extent, Layout};
use crate::page::PageChecks;
use crate::read::decode::{presized, wanted_rows, Decoder};
use crate::read::page_bounds;
use crate::read::Table;
use crate::types::Physical;
use crate::zonemap::Zonemap;

/// The tuples of a chunk that passed a filter.
#[derive(Debug)]
pub struct Selected {
    /// The projected columns of the selected tuples, in row order.
    pub batch: RecordBatch,
    /// The table row of each tuple of `batch`, ascending.
    pub rows: Vec<u64>,
}

/// The tuples of a chunk that passed a filter, as decoded values (no Arrow arrays):
/// what a scan that aggregates them itself consumes (`crate::aggregate`).
#[derive(Debug)]
pub struct SelectedValues {
    /// The projected columns of the tuples `tuples` says, in projection order, row
    /// order.
    pub columns: Vec<ColumnValues>,
    pub tuples: Tuples,
}

/// Which tuples [`SelectedValues`] holds.
#[derive(Debug)]
pub enum Tuples {
    /// The selected tuples only, at these table rows (ascending).
    Selected(Vec<u64>),
    /// Every wanted tuple, from table row `first` on; `keep` marks the selected ones.
    /// Where most tuples pass, marking them costs less than gathering every column.
    Marked { first: u64, keep: Vec<bool> },
}

impl SelectedValues {
    /// The tuples held.
    pub fn len(&self) -> usize {
        match &self.tuples {
            Tuples::Selected(rows) => rows.len(),
            Tuples::Marked { keep, .. } => keep.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Which of the held tuples are selected (`None`: all).
    pub fn keep(&self) -> Option<&[bool]> {
        match &self.tuples {
            Tuples::Selected(_) => None,
            Tuples::Marked { keep, .. } => Some(keep),
        }
    }

    /// Keeps only the selected tuples whose row `wanted` says.
    pub fn retain(&mut self, wanted: impl Fn(u64) -> bool) -> Result<()> {
        match &mut self.tuples {
            Tuples::Marked { first, keep } => {
                let first = *first;
                for (i, k) in keep.iter_mut().enumerate() {
                    *k = *k && wanted(first + i as u64);
                }
                Ok(())
            }
            Tuples::Selected(rows) => {
                let kept: Vec<bool> = rows.iter().map(|&r| wanted(r)).collect();
                if kept.iter().all(|&k| k) {
                    return Ok(());
                }
                let at = positions(&kept);
                for column in &mut self.columns {
                    let mut out = column.clone();
                    out.clear();
                    gather_into(&mut out, column, &at, 0)?;
                    *column = out;
                }
                let mut flags = kept.into_iter();
                rows.retain(|_| flags.next().unwrap_or(false));
                Ok(())
            }
        }
    }
}

/// [`super::decode_chunk_with`] keeping only the tuples of `rows ∩ chunk` that pass
/// `filter`. Every page touched is verified as there.
pub fn decode_chunk_filtered(
    table: &Table,
    k: usize,
    projection: &[usize],
    rows: Option<Range<u64>>,
    data: &[(Extent, &[u8])],
    checks: PageChecks,
    filter: &RowFilter,
) -> Result<Selected> {
    decode_part_filtered(
        table,
        (k, table.chunk(k)),
        projection,
        rows,
        data,
        checks,
        filter,
    )
}

/// [`decode_chunk_filtered`] of `part`, some of chunk `k`'s pages described like a
/// chunk ([`Table::loaded_parts`]): what a scattered load holds.
pub fn decode_part_filtered(
    table: &Table,
    (k, chunk): (usize, &ChunkMeta),
    projection: &[usize],
    rows: Option<Range<u64>>,
    data: &[(Extent, &[u8])],
    checks: PageChecks,
    filter: &RowFilter,
) -> Result<Selected> {
    let how = (projection, &[][..]);
    let at = (k, chunk);
    let (columns, rows) = match select(table, at, how, rows, data, checks, filter, false)? {
        SelectedValues {
            columns,
            tuples: Tuples::Selected(rows),
        } => (columns, rows),
        SelectedValues { .. } => {
            return Err(StorageError::Invalid(
                "marked tuples where selected ones were asked for".into(),
            ))
        }
    };
    let first_wanted = wanted_rows(chunk, None).start;
    let ctx = Decoder {
        table,
        chunk: chunk.rows(),
        wanted: chunk.rows(),
        checks,
    };
    let batch = ctx.batch(chunk, data, projection, columns, |value| {
        rows.get(value).copied().unwrap_or(first_wanted)
    })?;
    Ok(Selected { batch, rows })
}

/// [`decode_chunk_filtered`] without building the Arrow arrays: the selected tuples'
/// decoded values, or, where at least half the tuples pass, every tuple's with the
/// selected ones marked.
pub fn decode_chunk_values(
    table: &Table,
    k: usize,
    wanted: ValueColumns<'_>,
    rows: Option<Range<u64>>,
    data: &[(Extent, &[u8])],
    checks: PageChecks,
    filter: &RowFilter,
) -> Result<SelectedValues> {
    decode_part_values(
        table,
        (k, table.chunk(k)),
        wanted,
        rows,
        data,
        checks,
        filter,
    )
}

/// [`decode_chunk_values`] of `part` (see [`decode_part_filtered`]).
pub fn decode_part_values(
    table: &Table,
    part: (usize, &ChunkMeta),
    wanted: ValueColumns<'_>,
    rows: Option<Range<u64>>,
    data: &[(Extent, &[u8])],
    checks: PageChecks,
    filter: &RowFilter,
) -> Result<SelectedValues> {
    let ValueColumns { columns, packed } = wanted;
    select(
        table,
        part,
        (columns, packed),
        rows,
        data,
        checks,
        filter,
        true,
    )
}

/// The columns [`decode_chunk_values`] returns, in this order, and which `CHAR(n)`
/// columns among them (n ≤ [`crate::packed_chars::PACKED_CHAR`]) come as packed words
/// in `ColumnValues::I64` rather than as strings: an aggregating scan's group keys, which
/// a PDICT page gives by looking its codes up in its dictionary packed once.
#[derive(Clone, Copy, Debug, Default)]
pub struct ValueColumns<'a> {
    pub columns: &'a [usize],
    pub packed: &'a [usize],
}

/// The selected tuples' values; with `mark`, a dense selection marked, not gathered.
#[allow(clippy::too_many_arguments)]
fn select(
    table: &Table,
    (k, chunk): (usize, &ChunkMeta),
    (projection, packed): (&[usize], &[usize]),
    rows: Option<Range<u64>>,
    data: &[(Extent, &[u8])],
    checks: PageChecks,
    filter: &RowFilter,
    mark: bool,
) -> Result<SelectedValues> {
    table.check_projection(projection)?;
    let packing = Packing::of(table, projection, packed)?;
    let filtered = filter.columns();
    table.check_projection(&filtered)?;
    let wanted = wanted_rows(chunk, rows);
    let n = usize::try_from(wanted.end - wanted.start)
        .map_err(|_| StorageError::Invalid(format!("chunk {k}: too many rows")))?;
    let ctx = Decoder {
        table,
        chunk: chunk.rows(),
        wanted: wanted.clone(),
        checks,
    };
    // String lists on DSM/CSM columns are tested on the pages (PDICT on its codes)
    // without building the column; one the query projects is built afterwards for the
    // selected tuples, as any other projected column.
    let column_pages = matches!(table.layout(), Layout::Dsm | Layout::Csm);
    let tested: Vec<&StringIn> = (filter.strings().iter()).filter(|_| column_pages).collect();
    let tested_columns: Vec<usize> = tested.iter().map(|s| s.column).collect();
    let rest = filter.without_strings_on(&tested_columns);
    let passed = test_strings(&ctx, (k, chunk), data, &tested, n)?;
    // On DSM/CSM every string list was tested on the pages: `rest` holds comparisons.
    let (first, decoded, selection) = if column_pages {
        // Each filtered column decoded as the selection narrows: whole while many
        // tuples pass, then only at the passing ones.
        let mut spent = 0u64;
        let zonemap = |c: usize| match chunk.columns.get(c)?.zonemap {
            Some(Zonemap::Int { min, max }) => Some((min, max)),
            _ => None,
        };
        let passed = and_flags(passed, page_bounds::in_bounds(table, &wanted, &rest));
        let (selection, whole) = rest.selection_narrowing(n, passed, zonemap, |c, needed| {
            let rows = match needed {
                Needed::All(_) => wanted.clone(),
                Needed::At(at) => 0..at.len() as u64,
            };
            let mut out = presized(table, &[c], &rows).pop().ok_or_else(|| {
                StorageError::Invalid(format!("chunk {k}: no column {c} to decode"))
            })?;
            let extent = chunk.columns[c].extent;
            ctx.dsm_column(extent, data, c, &mut out, spent, Some(needed))?;
            spent = spent.saturating_add(out.decoded_bytes());
            Ok(out)
        })?;
        let (first, decoded): (Vec<usize>, Vec<ColumnValues>) = whole.into_iter().unzip();
        (first, decoded, selection)
    } else {
        decode_row_pages_then_select(&ctx, (k, chunk), projection, data, &rest, n)?
    };
    let of = |column: usize| first.iter().position(|&c| c == column).map(|i| &decoded[i]);
    // Counted only where marking is possible: the gathering path counts its positions.
    let dense = |s: &Selection| s.count().saturating_mul(DENSE_DENOMINATOR) >= n * DENSE_NUMERATOR;
    if mark && n > 0 && dense(&selection) {
        let keep = selection.into_mask(n);
        let mut spent = decoded.iter().map(ColumnValues::decoded_bytes).sum::<u64>();
        let mut columns = Vec::with_capacity(projection.len());
        for &c in projection {
            let values = match of(c) {
                Some(values) => packing.converted(c, values)?,
                None => {
                    let mut whole = packing.presized(c, &wanted);
                    ctx.dsm_column(chunk.columns[c].extent, data, c, &mut whole, spent, None)?;
                    whole
                }
            };
            if values.len() != n {
                return Err(StorageError::Invalid(format!(
                    "chunk {k} column {c}: decoded {} of {n} tuples",
                    values.len()
                )));
            }
            spent = spent.saturating_add(values.decoded_bytes());
            columns.push(values);
        }
        let first = wanted.start;
        return Ok(SelectedValues {
            columns,
            tuples: Tuples::Marked { first, keep },
        });
    }
    let selected = selection.into_positions();
    let selected_rows: Vec<u64> = selected
        .iter()
        .map(|&i| wanted.start + u64::from(i))
        .collect();
    let selected_range = 0..selected_rows.len() as u64;
    let mut outs: Vec<ColumnValues> = (projection.iter())
        .map(|&c| packing.presized(c, &selected_range))
        .collect();
    let mut spent = decoded.iter().map(ColumnValues::decoded_bytes).sum::<u64>();
    // Most tuples selected: every page would be decoded anyway, so a column is decoded
    // whole and gathered once, not page by page through a scratch.
    let dense = selected.len().saturating_mul(DENSE_DENOMINATOR) >= n * DENSE_NUMERATOR;
    for (out, &c) in outs.iter_mut().zip(projection) {
        let extent = chunk.columns[c].extent;
        match of(c) {
            Some(values) if selected.len() == n => *out = packing.converted(c, values)?,
            Some(values) => gather_into(out, &packing.converted(c, values)?, &selected, 0)?,
            None if dense => {
                let mut whole = packing.presized(c, &wanted);
                ctx.dsm_column(extent, data, c, &mut whole, spent, None)?;
                if whole.len() != n {
                    return Err(StorageError::Invalid(format!(
                        "chunk {k} column {c}: decoded {} of {n} tuples",
                        whole.len()
                    )));
                }
                if selected.len() == n {
                    *out = whole;
                } else {
                    gather_into(out, &whole, &selected, 0)?;
                }
            }
            None => ctx.dsm_column(extent, data, c, out, spent, Some(Needed::At(&selected)))?,
        }
        spent = spent.saturating_add(out.decoded_bytes());
        if out.len() != selected_rows.len() {
            return Err(StorageError::Invalid(format!(
                "chunk {k} column {c}: {} values for {} selected tuples",
                out.len(),
                selected_rows.len()
            )));
        }
    }
    Ok(SelectedValues {
        columns: outs,
        tuples: Tuples::Selected(selected_rows),
    })
}

/// NSM/PAX: the filtered and projected columns (a row page is decoded whole anyway)
/// for all `n` wanted tuples, then `rest` evaluated on them: the columns, their values
/// and the selection.
fn decode_row_pages_then_select(
    ctx: &Decoder,
    (k, chunk): (usize, &ChunkMeta),
    projection: &[usize],
    data: &[(Extent, &[u8])],
    rest: &RowFilter,
    n: usize,
) -> Result<(Vec<usize>, Vec<ColumnValues>, Selection)> {
    let first = union(&rest.columns(), projection);
    let mut decoded = presized(ctx.table, &first, &ctx.wanted);
    if n > 0 {
        ctx.row_pages(chunk, data, &first, &mut decoded)?;
    }
    for (values, &c) in decoded.iter().zip(&first) {
        if values.len() != n {
            return Err(StorageError::Invalid(format!(
                "chunk {k} column {c}: decoded {} of {n} tuples (pages do not cover the chunk)",
                values.len()
            )));
        }
    }
    let of = |column: usize| first.iter().position(|&c| c == column).map(|i| &decoded[i]);
    let selection = rest.selection(n, of)?;
    Ok((first, decoded, selection))
}

/// Which of chunk `k`'s `n` wanted tuples pass every list of `tested`, each tested on
/// its column's pages (`Decoder::dsm_test`); `None` when there are no lists.
fn test_strings(
    ctx: &Decoder,
    (k, chunk): (usize, &ChunkMeta),
    data: &[(Extent, &[u8])],
    tested: &[&StringIn],
    n: usize,
) -> Result<Option<Vec<bool>>> {
    let mut passed: Option<Vec<bool>> = None;
    for s in tested {
        let mut answers = Vec::with_capacity(n);
        if n > 0 {
            let extent = chunk.columns[s.column].extent;
            let test = |v: &[u8]| s.holds(v);
            ctx.dsm_test(extent, data, s.column, &test, &mut answers, n as u64)?;
        }
        if answers.len() != n {
            return Err(StorageError::Invalid(format!(
                "chunk {k} column {}: tested {} of {n} tuples (pages do not cover the chunk)",
                s.column,
                answers.len()
            )));
        }
        passed = and_flags(passed, Some(answers));
    }
    Ok(passed)
}

/// Which projected columns a selection gives as packed words, and their `CHAR(n)`.
struct Packing<'t> {
    table: &'t Table,
    packed: Vec<(usize, usize)>,
}

impl<'t> Packing<'t> {
    /// `packed` checked: projected `CHAR(n)` columns that pack.
    fn of(table: &'t Table, projection: &[usize], packed: &[usize]) -> Result<Packing<'t>> {
        let packed = packed
            .iter()
            .map(
                |&c| match table.schema().columns.get(c).map(|d| d.ty.physical()) {
                    Some(Physical::FixedBytes(n))
                        if n <= crate::packed_chars::PACKED_CHAR && projection.contains(&c) =>
                    {
                        Ok((c, n))
                    }
                    _ => Err(StorageError::Invalid(format!(
                        "column {c} is no projected CHAR(n) that packs into a word"
                    ))),
                },
            )
            .collect::<Result<Vec<_>>>()?;
        Ok(Packing { table, packed })
    }

    fn chars(&self, c: usize) -> Option<usize> {
        self.packed.iter().find(|(p, _)| *p == c).map(|(_, n)| *n)
    }

    /// Room for `rows`' values of column `c`, of the kind it is delivered as.
    fn presized(&self, c: usize, rows: &Range<u64>) -> ColumnValues {
        let rows_n = usize::try_from(rows.end - rows.start).unwrap_or(usize::MAX);
        match self.chars(c) {
            Some(_) => ColumnValues::with_capacity(Physical::I64, rows_n),
            None => {
                let physical = self.table.schema().columns[c].ty.physical();
                ColumnValues::with_capacity(physical, rows_n)
            }
        }
    }

    /// Column `c`'s decoded `values` as delivered: strings of a packed column packed.
    fn converted(&self, c: usize, values: &ColumnValues) -> Result<ColumnValues> {
        let Some(n) = self.chars(c).filter(|_| values.strings().is_some()) else {
            return Ok(values.clone());
        };
        let words = (0..values.len())
            .map(|i| crate::packed_chars::pack(values.str_at(i), n).map(|w| w as i64))
            .collect::<Option<Vec<i64>>>()
            .ok_or_else(|| {
                StorageError::Invalid(format!("column {c}: a value longer than CHAR({n})"))
            })?;
        Ok(ColumnValues::I64(words))
    }
}

/// A selection of at least this share of a chunk's tuples (numerator / denominator)
/// decodes its other columns whole.
const DENSE_NUMERATOR: usize = 1;
const DENSE_DENOMINATOR: usize = 2;

/// Tuples both flag lists pass (`None`: every tuple).
fn and_flags(a: Option<Vec<bool>>, b: Option<Vec<bool>>) -> Option<Vec<bool>> {
    match (a, b) {
        (Some(mut a), Some(b)) => {
            a.iter_mut().zip(b).for_each(|(a, b)| *a &= b);
            Some(a)
        }
        (a, b) => a.or(b),
    }
}

/// `a ∪ b`, ascending.
fn union(a: &[usize], b: &[usize]) -> Vec<usize> {
    let mut all: Vec<usize> = a.iter().chain(b).copied().collect();
    all.sort_unstable();
    all.dedup();
    all
}
