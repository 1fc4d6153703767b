//! Pages a scan's comparisons rule out by their bounds: a DSM integer column keeps each
//! page's smallest and largest value (`DataFile::page_bounds`), so a page whose bounds
//! miss a comparison's interval holds no passing tuple, and its tuples are out before
//! anything is decoded. Chunk zonemaps prune whole chunks before they are loaded; these
//! prune pages inside a loaded chunk (a 4 MB DSM chunk spans 4-23 pages of a TPC-H
//! lineitem column), which then are not decoded at all
//! (`Decoder::dsm_column` with `Needed`, and the selection narrowing to positions).

use std::ops::Range;

use crate::chunk_map::dsm_page_range;
use crate::filter::RowFilter;
use crate::manifest::Layout;
use crate::read::Table;

/// A flag for each `wanted` row: `false` where a page of a column `filter` compares
/// has bounds outside that column's interval; `None` when no page rules any row out
/// (or the table keeps no page bounds).
pub(crate) fn in_bounds(
    table: &Table,
    wanted: &Range<u64>,
    filter: &RowFilter,
) -> Option<Vec<bool>> {
    if table.layout() != Layout::Dsm || wanted.is_empty() {
        return None;
    }
    let n = (wanted.end - wanted.start) as usize;
    let mut keep: Option<Vec<bool>> = None;
    for (column, (lo, hi)) in filter.intervals() {
        let Some(file) = table.manifest().files.get(column) else {
            continue;
        };
        for (p, rows) in bounded_pages(
            &file.page_row_starts,
            &file.page_bounds,
            table.rows(),
            wanted,
        ) {
            let [min, max] = file.page_bounds[p];
            if max >= lo && min <= hi {
                continue;
            }
            let flags = keep.get_or_insert_with(|| vec![true; n]);
            let at = |row: u64| (row - wanted.start) as usize;
            if let Some(out) = flags.get_mut(at(rows.start)..at(rows.end)) {
                out.fill(false);
            }
        }
    }
    keep
}

/// Each page of a DSM column holding rows of `rows`, with those of its rows inside
/// `rows`; nothing when the column keeps no page bounds (`bounds` is not one per page).
/// What the scan prunes by and what `verify` checks.
pub(crate) fn bounded_pages<'a>(
    starts: &'a [u64],
    bounds: &[[i64; 2]],
    total_rows: u64,
    rows: &'a Range<u64>,
) -> impl Iterator<Item = (usize, Range<u64>)> + 'a {
    let pages = match bounds.len() == starts.len() {
        true => dsm_page_range(starts, total_rows, rows.clone()),
        false => 0..0,
    };
    pages.map(move |p| {
        let p = p as usize;
        let end = starts.get(p + 1).copied().unwrap_or(total_rows);
        (p, starts[p].max(rows.start)..end.min(rows.end))
    })
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow_array::{Int64Array, RecordBatch};
    use rand::{RngExt, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    use super::*;
    use crate::filter::{CmpOp, Comparison};
    use crate::types::{ColumnDef, ColumnType, TableSchema};
    use crate::write::{TableWriter, WriteOptions};

    const ROWS: i64 = 40_000;

    /// `k` ascending with gaps (clustered: its pages hold narrow ranges), `v`
    /// scattered over 0..1000.
    fn value(column: usize, row: i64) -> i64 {
        let mix = (row * 2_654_435_761) % 1000;
        match column {
            0 => row * 16 + mix % 16,
            _ => mix,
        }
    }

    fn table(dir: &std::path::Path) -> Table {
        let def = |name: &str| ColumnDef {
            name: name.into(),
            ty: ColumnType::Int64,
        };
        let schema = TableSchema::new(vec![def("k"), def("v")]).expect("schema");
        let mut opts = WriteOptions::new(Layout::Dsm);
        opts.page_bytes = 4096;
        opts.chunk_bytes = 4096 * 16;
        let mut w = TableWriter::create(dir, "t", schema.clone(), opts).expect("create");
        let column =
            |c: usize| Arc::new(Int64Array::from_iter_values((0..ROWS).map(|r| value(c, r))));
        let batch = RecordBatch::try_new(schema.arrow_schema(), vec![column(0), column(1)]);
        w.write_batch(&batch.expect("batch")).expect("write");
        w.finish().expect("finish");
        Table::open(dir).expect("open")
    }

    /// The rows of the page of column `c` that holds `row`.
    fn page_of(t: &Table, c: usize, row: u64) -> Range<u64> {
        let starts = &t.manifest().files[c].page_row_starts;
        let p = starts.partition_point(|&s| s <= row) - 1;
        starts[p]..starts.get(p + 1).copied().unwrap_or(t.rows())
    }

    /// The smallest and largest value of column `c` at `rows`, from the data written.
    fn span(c: usize, rows: Range<u64>) -> [i64; 2] {
        let vs = rows.map(|r| value(c, r as i64));
        [vs.clone().min().expect("rows"), vs.max().expect("rows")]
    }

    #[test]
    fn the_writer_keeps_each_pages_exact_bounds() {
        let dir = tempfile::tempdir().expect("tempdir");
        let t = table(dir.path());
        for c in 0..2 {
            let file = &t.manifest().files[c];
            assert!(file.pages >= 4, "column {c} spans pages");
            assert_eq!(file.page_bounds.len() as u64, file.pages);
            for (p, &bounds) in file.page_bounds.iter().enumerate() {
                let rows = page_of(&t, c, file.page_row_starts[p]);
                assert_eq!(bounds, span(c, rows), "column {c} page {p}");
            }
        }
    }

    /// Seeded random conjunctions and row ranges: a row is ruled out exactly when,
    /// for some compared column, its page's values (from the data written) all lie
    /// outside the column's interval; and no row any comparison passes is ruled out.
    #[test]
    fn rows_are_ruled_out_exactly_where_a_pages_values_miss_the_interval() {
        let dir = tempfile::tempdir().expect("tempdir");
        let t = table(dir.path());
        let mut rng = ChaCha8Rng::seed_from_u64(0xb0b5);
        let ops = [CmpOp::Eq, CmpOp::Lt, CmpOp::LtEq, CmpOp::Gt, CmpOp::GtEq];
        let mut ruled_out = 0usize;
        let spans: Vec<Vec<[i64; 2]>> = (0..2)
            .map(|c| {
                let starts = &t.manifest().files[c].page_row_starts;
                starts.iter().map(|&s| span(c, page_of(&t, c, s))).collect()
            })
            .collect();
        for _ in 0..200 {
            let conjuncts: Vec<Comparison> = (0..rng.random_range(1..4))
                .map(|_| {
                    let column = rng.random_range(0..2);
                    let op = ops[rng.random_range(0..ops.len())];
                    // Half of them at a page's bound, where an off-by-one would show.
                    let near = match rng.random_bool(0.5) {
                        true => {
                            let spans = &spans[column];
                            spans[rng.random_range(0..spans.len())][rng.random_range(0..2)]
                        }
                        false => value(column, rng.random_range(0..ROWS)),
                    };
                    let value = near + rng.random_range(-1..=1);
                    Comparison { column, op, value }
                })
                .collect();
            let filter = RowFilter::new(t.schema(), conjuncts.clone()).expect("filter");
            let from = rng.random_range(0..t.rows());
            let wanted = from..(from + rng.random_range(1..12_000)).min(t.rows());
            let flags = in_bounds(&t, &wanted, &filter);
            let intervals = filter.intervals();
            for row in wanted.clone() {
                let out = intervals.iter().any(|&(c, (lo, hi))| {
                    let starts = &t.manifest().files[c].page_row_starts;
                    let [min, max] = spans[c][starts.partition_point(|&s| s <= row) - 1];
                    max < lo || min > hi
                });
                let flag = flags
                    .as_ref()
                    .is_none_or(|f| f[(row - wanted.start) as usize]);
                assert_eq!(flag, !out, "row {row} under {conjuncts:?}");
                let passes =
                    (conjuncts.iter()).all(|t| t.op.holds(value(t.column, row as i64), t.value));
                assert!(flag || !passes, "row {row} passes {conjuncts:?}");
                ruled_out += usize::from(!flag);
            }
        }
        assert!(
            ruled_out > 100_000,
            "pages were ruled out: {ruled_out} rows"
        );
    }
}
