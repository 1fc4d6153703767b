//! Which filters the provider understands, and what it does with them.
//!
//! DataFusion hands `TableProvider::scan` the WHERE clause split on AND and
//! constant-folded (`BETWEEN` is already `>=`/`<=`, `DATE '…' + INTERVAL …` a `Date32`
//! literal). Two kinds of conjunct are used here:
//!
//! * `_rowid <op> literal` (`op` one of `= < <= > >=`) narrows the scan's tuple range.
//!   The scan then delivers exactly the tuples that satisfy it, so it is **Exact**:
//!   DataFusion drops its own copy of the filter.
//! * `column <op> literal` on an integer, date or decimal column prunes whole chunks
//!   whose zonemap proves that no tuple can match, and the scan evaluates it on the
//!   surviving chunks' stored integers while decoding (`coopscan_storage::filter`;
//!   for a changed table on the merged tuples), so it is **Exact** too: DataFusion's
//!   filter above the scan, which decoded every tuple into Arrow arrays first, goes —
//!   unless the zonemaps say it passes nearly every tuple (`Pushed::evaluated`): then
//!   it only prunes (**Inexact**) and DataFusion keeps its filter.
//! * `column = 'text'`, `column IN ('a', 'b', …)` and ORs of such equalities on one
//!   string column prune chunks whose string zonemap excludes every value, and the scan
//!   evaluates them on the decoded bytes before building any other column (**Exact**).
//!
//! Anything else (other ORs, functions, `<>` and ranges of strings, casts other than
//! integer widening, literal types we would have to round) is **Unsupported** and never
//! affects the scan.

use coopscan_buffer::RowRanges;
use std::ops::Range;

use coopscan_storage::filter::{Comparison, RowFilter, StringIn};
use coopscan_storage::manifest::ChunkMeta;
use coopscan_storage::zonemap::Zonemap;
use coopscan_storage::{ColumnType, Table};
use datafusion::arrow::datatypes::DataType;
use datafusion::logical_expr::expr::InList;
use datafusion::logical_expr::{BinaryExpr, Cast, Expr, Operator, TableProviderFilterPushDown};
use datafusion::scalar::ScalarValue;

/// Name of the virtual column holding a tuple's position in the table (0-based).
pub const ROWID_COLUMN: &str = "_rowid";

pub use coopscan_storage::filter::CmpOp;

/// A conjunct the provider can use.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Pushed {
    /// `_rowid <op> value`: narrows the tuple range (Exact).
    RowId { op: CmpOp, value: i128 },
    /// `column <op> value` in the column's stored units (days, scaled integers):
    /// prunes chunks by zonemap and is evaluated by the scan (Exact).
    Value {
        column: usize,
        op: CmpOp,
        value: i64,
    },
    /// `column IN (values)` on a string column: prunes chunks by string zonemap and is
    /// evaluated by the scan (Exact).
    Strings { column: usize, values: Vec<String> },
}

impl Pushed {
    /// Exact for `_rowid` bounds and for the comparisons the scan evaluates
    /// ([`Pushed::evaluated`]); Inexact (pruning only) for the others.
    pub fn pushdown(&self, table: &Table) -> TableProviderFilterPushDown {
        if self.evaluated(table) {
            TableProviderFilterPushDown::Exact
        } else {
            TableProviderFilterPushDown::Inexact
        }
    }

    /// Whether the scan evaluates this conjunct: `_rowid` bounds always; a comparison
    /// unless the table's zonemaps say it passes at least [`DENSE_SHARE`] of the tuples
    /// — late materialization then saves nothing, and DataFusion's filter runs beside
    /// the scan's one feeder thread instead of in it (TPC-H Q1's date, 96 %, took 5-12 %
    /// longer filtered in the scan). Decided by the conjunct and the table alone, so
    /// `supports_filters_pushdown` and `scan` agree whatever filters come with it.
    pub fn evaluated(&self, table: &Table) -> bool {
        match *self {
            // A string list passes what its values' frequencies say, which no zonemap
            // tells; TPC-H's lists pass 2-29 % of the tuples.
            Pushed::RowId { .. } | Pushed::Strings { .. } => true,
            Pushed::Value { column, op, value } => {
                let chunks: Vec<&ChunkMeta> =
                    (0..table.chunk_count()).map(|k| table.chunk(k)).collect();
                comparison_share(&chunks, &Comparison { column, op, value }) < DENSE_SHARE
            }
        }
    }
}

/// A comparison estimated to pass this share of the tuples or more is left to
/// DataFusion's filter (Inexact).
pub const DENSE_SHARE: f64 = 0.9;

/// What DataFusion assumes of a filter it cannot analyse (`default_filter_selectivity`).
pub const UNKNOWN_SELECTIVITY: f64 = 0.2;

/// The share of the tuples of `chunks` estimated to pass `c`: its share of the column's
/// zonemap range (values spread evenly, as DataFusion estimates a filter); a fifth
/// where a chunk has no integer zonemap.
pub fn comparison_share(chunks: &[&ChunkMeta], c: &Comparison) -> f64 {
    let mut bounds: Option<(i64, i64)> = None;
    for chunk in chunks {
        let Some(Zonemap::Int { min, max }) = chunk.columns[c.column].zonemap else {
            return UNKNOWN_SELECTIVITY;
        };
        bounds = Some(bounds.map_or((min, max), |(lo, hi)| (lo.min(min), hi.max(max))));
    }
    let Some((min, max)) = bounds else {
        return 0.0;
    };
    let (min, max, v) = (min as f64, max as f64, c.value as f64);
    let width = max - min + 1.0;
    let share = match c.op {
        CmpOp::Eq if (min..=max).contains(&v) => 1.0 / width,
        CmpOp::Eq => 0.0,
        CmpOp::Lt => (v - min) / width,
        CmpOp::LtEq => (v - min + 1.0) / width,
        CmpOp::Gt => (max - v) / width,
        CmpOp::GtEq => (max - v + 1.0) / width,
    };
    share.clamp(0.0, 1.0)
}

/// The comparisons among `pushed` the scan evaluates ([`Pushed::evaluated`]), as one
/// filter; `None` if there are none.
pub fn row_filter(table: &Table, pushed: &[Pushed]) -> Option<RowFilter> {
    let evaluated = || pushed.iter().filter(|p| p.evaluated(table));
    let conjuncts: Vec<Comparison> = evaluated()
        .filter_map(|p| match *p {
            Pushed::Value { column, op, value } => Some(Comparison { column, op, value }),
            Pushed::RowId { .. } | Pushed::Strings { .. } => None,
        })
        .collect();
    let strings: Vec<StringIn> = evaluated()
        .filter_map(|p| match p {
            Pushed::Strings { column, values } => Some(StringIn {
                column: *column,
                values: values.clone(),
            }),
            Pushed::RowId { .. } | Pushed::Value { .. } => None,
        })
        .collect();
    if conjuncts.is_empty() && strings.is_empty() {
        return None;
    }
    // `classify` admits integer-valued columns for comparisons and string columns for
    // lists, which is all `RowFilter` needs.
    RowFilter::new(table.schema(), conjuncts)
        .and_then(|filter| filter.with_strings(table.schema(), strings))
        .ok()
}

/// Classifies one conjunct; `None` means Unsupported.
pub fn classify(table: &Table, filter: &Expr) -> Option<Pushed> {
    match filter {
        Expr::InList(InList {
            expr,
            list,
            negated: false,
        }) => {
            let column = string_column(table, expr)?;
            let values = list.iter().map(text).collect::<Option<Vec<String>>>()?;
            (!values.is_empty()).then_some(Pushed::Strings { column, values })
        }
        Expr::BinaryExpr(BinaryExpr {
            left,
            op: Operator::Or,
            right,
        }) => match (classify(table, left)?, classify(table, right)?) {
            (
                Pushed::Strings { column, mut values },
                Pushed::Strings {
                    column: other,
                    values: more,
                },
            ) if column == other => {
                values.extend(more);
                Some(Pushed::Strings { column, values })
            }
            _ => None,
        },
        Expr::BinaryExpr(BinaryExpr { left, op, right }) => {
            let op = cmp_op(*op)?;
            if let (Some(col), Some(lit)) = (column_name(left), literal(right)) {
                return pushed(table, col, op, lit);
            }
            if let (Some(lit), Some(col)) = (literal(left), column_name(right)) {
                return pushed(table, col, op.flip(), lit);
            }
            None
        }
        _ => None,
    }
}

/// The index of the string column `e` names, uncast.
fn string_column(table: &Table, e: &Expr) -> Option<usize> {
    let column = column_name(e).filter(|c| c.cast.is_none())?;
    let index = table.schema().index_of(column.name)?;
    matches!(
        table.schema().columns[index].ty,
        ColumnType::Char { .. } | ColumnType::Utf8
    )
    .then_some(index)
}

/// A non-null string literal's text.
fn text(e: &Expr) -> Option<String> {
    literal(e).and_then(string_value)
}

/// A non-null string value's text.
pub(crate) fn string_value(v: &ScalarValue) -> Option<String> {
    match v {
        ScalarValue::Utf8(Some(s))
        | ScalarValue::LargeUtf8(Some(s))
        | ScalarValue::Utf8View(Some(s)) => Some(s.clone()),
        _ => None,
    }
}

fn pushed(table: &Table, column: ColumnRef, op: CmpOp, lit: &ScalarValue) -> Option<Pushed> {
    if column.name == ROWID_COLUMN {
        // Only the exact column: a cast (to a float, say) changes what `=` means.
        return (column.cast.is_none())
            .then(|| integer(lit).map(|value| Pushed::RowId { op, value }))
            .flatten();
    }
    let index = table.schema().index_of(column.name)?;
    let ty = table.schema().columns[index].ty;
    if matches!(ty, ColumnType::Char { .. } | ColumnType::Utf8) {
        // Equality with an uncast column only: `<>` and ranges stay DataFusion's.
        let value = (op == CmpOp::Eq && column.cast.is_none())
            .then(|| string_value(lit))
            .flatten()?;
        return Some(Pushed::Strings {
            column: index,
            values: vec![value],
        });
    }
    if let Some(cast) = column.cast {
        // Widening an integer column to another integer type keeps the order and values.
        let widening = matches!(ty, ColumnType::Int32 | ColumnType::Int64)
            && matches!(cast, DataType::Int32 | DataType::Int64);
        if !widening {
            return None;
        }
    }
    let value = zonemap_value(ty, lit)?;
    Some(Pushed::Value {
        column: index,
        op,
        value,
    })
}

/// A column reference, possibly under a cast.
struct ColumnRef<'a> {
    name: &'a str,
    cast: Option<&'a DataType>,
}

fn column_name(e: &Expr) -> Option<ColumnRef<'_>> {
    match e {
        Expr::Column(c) => Some(ColumnRef {
            name: &c.name,
            cast: None,
        }),
        Expr::Cast(Cast { expr, field }) => match expr.as_ref() {
            Expr::Column(c) => Some(ColumnRef {
                name: &c.name,
                cast: Some(field.data_type()),
            }),
            _ => None,
        },
        _ => None,
    }
}

fn literal(e: &Expr) -> Option<&ScalarValue> {
    match e {
        Expr::Literal(v, _) if !v.is_null() => Some(v),
        _ => None,
    }
}

pub(crate) fn cmp_op(op: Operator) -> Option<CmpOp> {
    Some(match op {
        Operator::Eq => CmpOp::Eq,
        Operator::Lt => CmpOp::Lt,
        Operator::LtEq => CmpOp::LtEq,
        Operator::Gt => CmpOp::Gt,
        Operator::GtEq => CmpOp::GtEq,
        _ => return None,
    })
}

fn integer(lit: &ScalarValue) -> Option<i128> {
    Some(match lit {
        ScalarValue::Int8(Some(v)) => i128::from(*v),
        ScalarValue::Int16(Some(v)) => i128::from(*v),
        ScalarValue::Int32(Some(v)) => i128::from(*v),
        ScalarValue::Int64(Some(v)) => i128::from(*v),
        ScalarValue::UInt8(Some(v)) => i128::from(*v),
        ScalarValue::UInt16(Some(v)) => i128::from(*v),
        ScalarValue::UInt32(Some(v)) => i128::from(*v),
        ScalarValue::UInt64(Some(v)) => i128::from(*v),
        _ => return None,
    })
}

/// The literal in the zonemap's units (days for dates, scaled integers for decimals),
/// or `None` if converting it would need rounding or does not fit.
fn zonemap_value(ty: ColumnType, lit: &ScalarValue) -> Option<i64> {
    match (ty, lit) {
        (ColumnType::Int32 | ColumnType::Int64, _) => i64::try_from(integer(lit)?).ok(),
        (ColumnType::Date32, ScalarValue::Date32(Some(days))) => Some(i64::from(*days)),
        (ColumnType::Decimal { scale, .. }, ScalarValue::Decimal128(Some(v), _, s)) => {
            rescale(*v, *s, scale)
        }
        (ColumnType::Decimal { scale, .. }, _) => rescale(integer(lit)?, 0, scale),
        _ => None,
    }
}

/// `v × 10^-from` expressed with scale `to`; only exact (non-rounding) conversions.
fn rescale(v: i128, from: i8, to: i8) -> Option<i64> {
    let up = u32::try_from(i32::from(to) - i32::from(from)).ok()?;
    let scaled = v.checked_mul(10i128.checked_pow(up)?)?;
    i64::try_from(scaled).ok()
}

/// Applies the `_rowid` conjuncts to the full range `0..rows`.
pub fn rowid_range(pushed: &[Pushed], rows: u64) -> Range<u64> {
    let on_rowid = pushed.iter().filter_map(|p| match *p {
        Pushed::RowId { op, value } => Some((op, value)),
        Pushed::Value { .. } | Pushed::Strings { .. } => None,
    });
    let bound = bounds(on_rowid, 0..i128::from(rows));
    let clamp = |v: i128| v.clamp(0, i128::from(rows)) as u64;
    let start = clamp(bound.start);
    start..clamp(bound.end).max(start)
}

/// The values inside `within` that satisfy every `value <op> literal` of `comparisons`,
/// as one half-open range (empty: `start >= end`). Integers, so `< v` ends at `v` and
/// `> v` starts at `v + 1`; in `i128`, where no `i64` or row bound overflows.
pub fn bounds(
    comparisons: impl Iterator<Item = (CmpOp, i128)>,
    within: Range<i128>,
) -> Range<i128> {
    let (mut start, mut end) = (within.start, within.end);
    for (op, value) in comparisons {
        match op {
            CmpOp::Eq => {
                start = start.max(value);
                end = end.min(value + 1);
            }
            CmpOp::Lt => end = end.min(value),
            CmpOp::LtEq => end = end.min(value + 1),
            CmpOp::Gt => start = start.max(value + 1),
            CmpOp::GtEq => start = start.max(value),
        }
    }
    start..end
}

/// Whether a chunk whose column has this zonemap may hold a tuple satisfying
/// `column <op> value`. No zonemap (or a string one) means "maybe".
pub fn may_match(zonemap: Option<&Zonemap>, op: CmpOp, value: i64) -> bool {
    let Some(Zonemap::Int { min, max }) = zonemap else {
        return true;
    };
    match op {
        CmpOp::Eq => *min <= value && value <= *max,
        CmpOp::Lt => *min < value,
        CmpOp::LtEq => *min <= value,
        CmpOp::Gt => *max > value,
        CmpOp::GtEq => *max >= value,
    }
}

/// Whether a chunk whose column has this zonemap may hold one of `values`. No zonemap
/// (or a numeric one) means "maybe".
pub fn may_match_strings(zonemap: Option<&Zonemap>, values: &[String]) -> bool {
    let Some(Zonemap::Str { min, max }) = zonemap else {
        return true;
    };
    values.iter().any(|v| min <= v && v <= max)
}

/// The tuple ranges a scan must read: the `_rowid` range minus every chunk that a
/// zonemap conjunct rules out; consecutive surviving chunks form one range.
pub fn scan_ranges(table: &Table, pushed: &[Pushed]) -> RowRanges {
    let bound = rowid_range(pushed, table.rows());
    prune_ranges(table, pushed, &[bound], |_| false)
}

/// The parts of `ranges` (sorted stable positions) in chunks whose zonemaps may match
/// every pushed comparison, or for which `keep_anyway(chunk rows)` holds (a chunk with
/// changed tuples, whose values its zonemap does not know).
pub fn prune_ranges(
    table: &Table,
    pushed: &[Pushed],
    ranges: &[Range<u64>],
    keep_anyway: impl Fn(Range<u64>) -> bool,
) -> RowRanges {
    let mut out: Vec<Range<u64>> = Vec::new();
    for range in ranges.iter().filter(|r| !r.is_empty()) {
        for k in table.chunks_for_rows(range.clone()) {
            let chunk = table.chunk(k);
            let keep = pushed.iter().all(|p| match p {
                Pushed::Value { column, op, value } => {
                    may_match(chunk.columns[*column].zonemap.as_ref(), *op, *value)
                }
                Pushed::Strings { column, values } => {
                    may_match_strings(chunk.columns[*column].zonemap.as_ref(), values)
                }
                Pushed::RowId { .. } => true,
            });
            if !keep && !keep_anyway(chunk.rows()) {
                continue;
            }
            let rows = chunk.rows();
            let piece = rows.start.max(range.start)..rows.end.min(range.end);
            match out.last_mut() {
                Some(last) if last.end == piece.start => last.end = piece.end,
                _ => out.push(piece),
            }
        }
    }
    RowRanges::new(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rowid_bounds_clamp_and_combine() {
        let p = |op, value| Pushed::RowId { op, value };
        assert_eq!(rowid_range(&[], 10), 0..10);
        assert_eq!(rowid_range(&[p(CmpOp::GtEq, 3), p(CmpOp::Lt, 7)], 10), 3..7);
        assert_eq!(rowid_range(&[p(CmpOp::Gt, 3), p(CmpOp::LtEq, 7)], 10), 4..8);
        assert_eq!(rowid_range(&[p(CmpOp::Eq, 5)], 10), 5..6);
        assert_eq!(
            rowid_range(&[p(CmpOp::GtEq, -5), p(CmpOp::Lt, 99)], 10),
            0..10
        );
        assert!(rowid_range(&[p(CmpOp::Gt, 8), p(CmpOp::Lt, 2)], 10).is_empty());
    }

    #[test]
    fn zonemap_checks_are_conservative() {
        let z = Zonemap::Int { min: 10, max: 20 };
        assert!(may_match(Some(&z), CmpOp::Eq, 10));
        assert!(!may_match(Some(&z), CmpOp::Eq, 21));
        assert!(!may_match(Some(&z), CmpOp::Lt, 10));
        assert!(may_match(Some(&z), CmpOp::LtEq, 10));
        assert!(!may_match(Some(&z), CmpOp::Gt, 20));
        assert!(may_match(Some(&z), CmpOp::GtEq, 20));
        assert!(may_match(None, CmpOp::Gt, 1_000));
    }

    #[test]
    fn decimals_rescale_only_exactly() {
        assert_eq!(rescale(5, 2, 2), Some(5));
        assert_eq!(rescale(5, 1, 2), Some(50));
        assert_eq!(rescale(5, 3, 2), None);
        assert_eq!(rescale(i128::MAX, 0, 2), None);
    }
}
