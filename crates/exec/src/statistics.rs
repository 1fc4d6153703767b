//! What a scan tells DataFusion's planner (join order, build side, filter selectivity):
//! the exact number of tuples it delivers; per column the union of the zonemaps of the
//! chunks it reads (bounds, so `Inexact`), no nulls (the writer rejects them), and the
//! column's output bytes estimated from the chunks' encoded sizes; for `_rowid` its exact
//! bounds and distinct count.
//!
//! Exactness matters: DataFusion answers `count(*)` from an `Exact` row count without
//! scanning, so the count is exact only when every tuple of the scan's ranges is
//! delivered; a scan that evaluates comparisons itself reports an estimate
//! ([`selectivity`]), as DataFusion's filter above it would have.

use coopscan_buffer::RowRanges;
use coopscan_storage::filter::RowFilter;
use coopscan_storage::manifest::ChunkMeta;
use coopscan_storage::zonemap::Zonemap;
use coopscan_storage::{ColumnType, Table};
use datafusion::arrow::datatypes::{DataType, Field};
use datafusion::common::stats::Precision;
use datafusion::common::{ColumnStatistics, ScalarValue, Statistics};

use crate::pushdown::{comparison_share, ROWID_COLUMN, UNKNOWN_SELECTIVITY};
use crate::shape::OutputShape;

/// The statistics of a scan of `table` delivering `shape`'s columns of `ranges`.
pub fn scan_statistics(table: &Table, shape: &OutputShape, ranges: &RowRanges) -> Statistics {
    let rows = ranges.rows();
    let chunks = touched_chunks(table, ranges);
    let chunk_rows: u64 = chunks.iter().map(|c| c.row_count).sum();
    let mut total_bytes = Some(0usize);
    let column_statistics = shape
        .schema
        .fields()
        .iter()
        .map(|field| {
            let (stats, bytes) = column_statistics(table, field, ranges, &chunks, rows, chunk_rows);
            total_bytes = total_bytes.zip(bytes).and_then(|(t, b)| t.checked_add(b));
            stats
        })
        .collect();
    let stats = Statistics {
        num_rows: Precision::Exact(to_usize(rows)),
        total_byte_size: total_bytes.map_or(Precision::Absent, Precision::Inexact),
        column_statistics,
    };
    match shape.filter() {
        Some(filter) => filtered(&stats, selectivity(&chunks, filter)),
        None => stats,
    }
}

/// The share of tuples that pass `filter`, estimated as DataFusion estimates a filter:
/// each comparison's share of its column's range over `chunks` (values spread evenly,
/// `pushdown::comparison_share`), the comparisons independent; string lists, which
/// DataFusion's own filter would have estimated, all together, at its default
/// selectivity, count that once, so plans stay what they were with its filter.
pub fn selectivity(chunks: &[&ChunkMeta], filter: &RowFilter) -> f64 {
    let strings = if filter.strings().is_empty() {
        1.0
    } else {
        UNKNOWN_SELECTIVITY
    };
    filter
        .conjuncts()
        .iter()
        .map(|c| comparison_share(chunks, c))
        .product::<f64>()
        * strings
}

/// `stats` of a scan that delivers only a `share` of its tuples: an estimate now.
fn filtered(stats: &Statistics, share: f64) -> Statistics {
    scaled(stats, |v| (v as f64 * share).ceil() as usize)
}

/// The statistics of one of `partitions` output partitions: the whole scan's divided
/// evenly (which worker gets which chunk is decided while it runs).
pub fn partition_share(whole: &Statistics, partitions: usize) -> Statistics {
    if partitions <= 1 {
        return whole.clone();
    }
    scaled(whole, |v| v.div_ceil(partitions))
}

/// `stats` with every count and size mapped by `scale`, all of them estimates then,
/// bounds kept as estimates, no sums.
fn scaled(stats: &Statistics, scale: impl Fn(usize) -> usize) -> Statistics {
    let scale = |p: &Precision<usize>| match p.get_value() {
        Some(&v) => Precision::Inexact(scale(v)),
        None => Precision::Absent,
    };
    Statistics {
        num_rows: scale(&stats.num_rows),
        total_byte_size: scale(&stats.total_byte_size),
        column_statistics: stats
            .column_statistics
            .iter()
            .map(|c| ColumnStatistics {
                null_count: scale(&c.null_count),
                max_value: c.max_value.clone().to_inexact(),
                min_value: c.min_value.clone().to_inexact(),
                sum_value: Precision::Absent,
                distinct_count: c.distinct_count.to_inexact(),
                byte_size: scale(&c.byte_size),
            })
            .collect(),
    }
}

/// The statistics of a scan of a changed table that wants `wanted_rows` tuples: zonemap
/// pruning may drop some (so the count is a bound), and inserted or modified values lie
/// outside what the zonemaps know, so no column has bounds. Nulls stay 0: changes with
/// nulls are refused (`crate::delta::dml`).
pub fn changed_table_statistics(stable: &Statistics, wanted_rows: u64) -> Statistics {
    Statistics {
        num_rows: Precision::Inexact(to_usize(wanted_rows)),
        total_byte_size: stable.total_byte_size.to_inexact(),
        column_statistics: stable
            .column_statistics
            .iter()
            .map(|c| ColumnStatistics {
                null_count: c.null_count,
                max_value: Precision::Absent,
                min_value: Precision::Absent,
                sum_value: Precision::Absent,
                distinct_count: Precision::Absent,
                byte_size: c.byte_size.to_inexact(),
            })
            .collect(),
    }
}

/// The chunks holding any tuple of `ranges`, each once, in table order.
fn touched_chunks<'t>(table: &'t Table, ranges: &RowRanges) -> Vec<&'t ChunkMeta> {
    chunks_read(table, ranges)
        .into_iter()
        .map(|k| table.chunk(k))
        .collect()
}

/// The chunks a scan of `ranges` reads, ascending, each once.
pub(crate) fn chunks_read(table: &Table, ranges: &RowRanges) -> Vec<usize> {
    let mut out: Vec<usize> = Vec::new();
    for range in ranges.ranges() {
        for k in table.chunks_for_rows(range.clone()) {
            if out.last() != Some(&k) {
                out.push(k);
            }
        }
    }
    out
}

/// One output column's statistics and estimated output bytes.
fn column_statistics(
    table: &Table,
    field: &Field,
    ranges: &RowRanges,
    chunks: &[&ChunkMeta],
    rows: u64,
    chunk_rows: u64,
) -> (ColumnStatistics, Option<usize>) {
    let mut stats = ColumnStatistics::new_unknown();
    stats.null_count = Precision::Exact(0);
    if field.name() == ROWID_COLUMN {
        let bounds = ranges.ranges().first().zip(ranges.ranges().last());
        if let Some((first, last)) = bounds {
            stats.min_value = rowid_value(first.start);
            stats.max_value = rowid_value(last.end.saturating_sub(1));
        }
        stats.distinct_count = Precision::Exact(to_usize(rows));
        let bytes = to_usize(rows).checked_mul(std::mem::size_of::<i64>());
        stats.byte_size = bytes.map_or(Precision::Absent, Precision::Exact);
        return (stats, bytes);
    }
    let columns = &table.schema().columns;
    let Some(column) = columns.iter().position(|c| c.name == *field.name()) else {
        return (stats, None);
    };
    let ty = columns[column].ty;
    if let Some((min, max)) = zonemap_bounds(chunks, column, ty, field.data_type()) {
        stats.min_value = Precision::Inexact(min);
        stats.max_value = Precision::Inexact(max);
    }
    let encoded: u64 = chunks.iter().map(|c| c.columns[column].bytes).sum();
    // The chunks' bytes in proportion to the tuples of them the scan delivers.
    let bytes = if chunk_rows == 0 {
        Some(0)
    } else {
        let share = u128::from(encoded) * u128::from(rows) / u128::from(chunk_rows);
        usize::try_from(share).ok()
    };
    stats.byte_size = bytes.map_or(Precision::Absent, Precision::Inexact);
    (stats, bytes)
}

/// The union of the column's zonemaps over `chunks` as values of the output type, if
/// every chunk has one.
fn zonemap_bounds(
    chunks: &[&ChunkMeta],
    column: usize,
    ty: ColumnType,
    data_type: &DataType,
) -> Option<(ScalarValue, ScalarValue)> {
    let mut union: Option<Zonemap> = None;
    for chunk in chunks {
        let zonemap = chunk.columns[column].zonemap.as_ref()?;
        union = Some(match union {
            None => zonemap.clone(),
            Some(u) => u.union(zonemap)?,
        });
    }
    match union? {
        Zonemap::Int { min, max } => Some((int_value(ty, min)?, int_value(ty, max)?)),
        Zonemap::Str { min, max } => {
            Some((str_value(&min, data_type)?, str_value(&max, data_type)?))
        }
    }
}

/// A zonemap integer in the column's Arrow type.
fn int_value(ty: ColumnType, v: i64) -> Option<ScalarValue> {
    Some(match ty {
        ColumnType::Int32 => ScalarValue::Int32(Some(i32::try_from(v).ok()?)),
        ColumnType::Int64 => ScalarValue::Int64(Some(v)),
        ColumnType::Date32 => ScalarValue::Date32(Some(i32::try_from(v).ok()?)),
        ColumnType::Decimal { precision, scale } => {
            ScalarValue::Decimal128(Some(i128::from(v)), precision, scale)
        }
        ColumnType::Char { .. } | ColumnType::Utf8 => return None,
    })
}

/// A zonemap string in the column's Arrow string type.
fn str_value(s: &str, data_type: &DataType) -> Option<ScalarValue> {
    ScalarValue::Utf8(Some(s.to_string()))
        .cast_to(data_type)
        .ok()
}

fn rowid_value(v: u64) -> Precision<ScalarValue> {
    i64::try_from(v).map_or(Precision::Absent, |v| {
        Precision::Exact(ScalarValue::Int64(Some(v)))
    })
}

fn to_usize(v: u64) -> usize {
    usize::try_from(v).unwrap_or(usize::MAX)
}
