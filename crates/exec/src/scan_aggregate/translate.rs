//! From DataFusion's aggregation over a scan to what the scan computes itself: group
//! keys as stored columns, arguments as exact integer trees over stored columns
//! ([`ValueExpr`]), a filter as the scan's comparisons, and each aggregate's partial
//! state as counts and sums ([`StateColumn`]). Anything not understood exactly makes
//! the translation fail, and the plan stays DataFusion's.

use std::sync::Arc;

use coopscan_storage::aggregate::ValueExpr;
use coopscan_storage::filter::{CmpOp, Comparison, StringIn};
use coopscan_storage::{ColumnType, TableSchema};
use datafusion::arrow::datatypes::{DataType, Schema};
use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::common::ScalarValue;
use datafusion::physical_expr::aggregate::AggregateFunctionExpr;
use datafusion::physical_expr::expressions::{BinaryExpr, CastExpr, Column, Literal};
use datafusion::physical_expr::{split_conjunction, PhysicalExpr};

use crate::narrow_decimal::compile_value;
use crate::partial_states::{state_type, StateColumn};
use crate::pushdown::{cmp_op, string_value};

/// The scan below the aggregation: its output schema and the stored column behind each
/// of its output columns (`None` for `_rowid`).
pub struct ScanColumns<'a> {
    pub schema: &'a Schema,
    pub stored: Vec<Option<usize>>,
    pub table: &'a TableSchema,
}

/// Replaces every column of `expr` (over some node's output) by what `column(i)` says it
/// is over that node's input; `None` if any column is not known.
pub fn substitute(
    expr: &Arc<dyn PhysicalExpr>,
    column: &dyn Fn(usize) -> Option<Arc<dyn PhysicalExpr>>,
) -> Option<Arc<dyn PhysicalExpr>> {
    let mut known = true;
    let out = Arc::clone(expr)
        .transform_up(|e| match e.downcast_ref::<Column>() {
            Some(c) => match column(c.index()) {
                Some(inner) => Ok(Transformed::yes(inner)),
                None => {
                    known = false;
                    Ok(Transformed::no(e))
                }
            },
            None => Ok(Transformed::no(e)),
        })
        .ok()?
        .data;
    known.then_some(out)
}

impl ScanColumns<'_> {
    /// The stored column a plain column reference over the scan's output reads.
    pub fn stored_column(&self, expr: &Arc<dyn PhysicalExpr>) -> Option<usize> {
        let column = expr.downcast_ref::<Column>()?;
        self.stored.get(column.index()).copied().flatten()
    }

    /// The stored integer column `expr` reads, alone or widened to `Int64` (how
    /// DataFusion sums a 32-bit column).
    pub fn integer_column(&self, expr: &Arc<dyn PhysicalExpr>) -> Option<usize> {
        let inner = match expr.downcast_ref::<CastExpr>() {
            Some(cast) if *cast.cast_type() == DataType::Int64 => cast.expr(),
            Some(_) => return None,
            None => expr,
        };
        let column = self.stored_column(inner)?;
        matches!(
            self.table.columns.get(column)?.ty,
            ColumnType::Int32 | ColumnType::Int64
        )
        .then_some(column)
    }

    /// `expr` (over the scan's output) as an exact integer tree over stored columns,
    /// with the decimal type DataFusion gives it.
    pub fn value(&self, expr: &Arc<dyn PhysicalExpr>) -> Option<(ValueExpr, u8, i8)> {
        let (node, shape) = compile_value(expr, self.schema)?;
        let stored = node.map_columns(&|i| self.stored.get(i).copied().flatten())?;
        Some((stored, shape.precision, shape.scale))
    }

    /// A filter's predicate (over the scan's output) as the scan's comparisons and
    /// string lists, every conjunct understood or `None`.
    pub fn filter(
        &self,
        predicate: &Arc<dyn PhysicalExpr>,
    ) -> Option<(Vec<Comparison>, Vec<StringIn>)> {
        let (mut comparisons, mut strings) = (Vec::new(), Vec::new());
        for conjunct in split_conjunction(predicate) {
            let binary = conjunct.downcast_ref::<BinaryExpr>()?;
            let op = cmp_op(*binary.op())?;
            let (column, op, literal) =
                match (self.stored_column(binary.left()), literal(binary.right())) {
                    (Some(c), Some(l)) => (c, op, l),
                    _ => (
                        self.stored_column(binary.right())?,
                        op.flip(),
                        literal(binary.left())?,
                    ),
                };
            match self.table.columns.get(column)?.ty {
                ColumnType::Char { .. } | ColumnType::Utf8 => {
                    let text = string_value(literal).filter(|_| op == CmpOp::Eq)?;
                    strings.push(StringIn {
                        column,
                        values: vec![text],
                    });
                }
                ty => comparisons.push(Comparison {
                    column,
                    op,
                    value: stored_integer(ty, literal)?,
                }),
            }
        }
        Some((comparisons, strings))
    }
}

/// What the scan computes for one aggregate function, or `None` if it does not
/// compute this one: its partial state columns, given its arguments over the scan's
/// output and the value index of each argument it sums (`value_of` adds a value to the spec, or finds it there).
pub fn states(
    aggregate: &AggregateFunctionExpr,
    args: &[Arc<dyn PhysicalExpr>],
    scan: &ScanColumns<'_>,
    value_of: &mut dyn FnMut(ValueExpr) -> usize,
) -> Option<Vec<StateColumn>> {
    if aggregate.is_distinct() || !aggregate.order_bys().is_empty() {
        return None;
    }
    let fields = aggregate.state_fields().ok()?;
    let types: Vec<&DataType> = fields.iter().map(|f| f.data_type()).collect();
    let states = match (aggregate.fun().name(), args) {
        // Stored columns are NOT NULL, so counting any of them counts tuples.
        ("count", [arg]) if counts_tuples(arg, scan) => vec![StateColumn::CountInt64],
        ("sum", [arg]) if types.first() == Some(&&DataType::Int64) => {
            let column = scan.integer_column(arg)?;
            vec![StateColumn::SumInt64 {
                value: value_of(ValueExpr::Column(column)),
            }]
        }
        ("sum", [arg]) => {
            let (value, _, scale) = scan.value(arg)?;
            let &DataType::Decimal128(precision, state_scale) = *types.first()? else {
                return None;
            };
            (state_scale == scale).then_some(())?;
            vec![StateColumn::Sum {
                value: value_of(value),
                precision,
                scale,
            }]
        }
        ("avg", [arg]) => {
            let (value, _, scale) = scan.value(arg)?;
            let &DataType::Decimal128(precision, state_scale) = *types.get(1)? else {
                return None;
            };
            (state_scale == scale).then_some(())?;
            vec![
                StateColumn::CountUInt64,
                StateColumn::Sum {
                    value: value_of(value),
                    precision,
                    scale,
                },
            ]
        }
        _ => return None,
    };
    // The layout DataFusion declares must be the one we fill, type for type.
    let ours: Vec<DataType> = states.iter().map(|&s| state_type(s)).collect();
    (ours.len() == types.len() && ours.iter().zip(&types).all(|(a, b)| a == *b)).then_some(states)
}

/// `count(*)` (a non-null literal) or `count(column)` of a stored column.
fn counts_tuples(arg: &Arc<dyn PhysicalExpr>, scan: &ScanColumns<'_>) -> bool {
    literal(arg).is_some() || scan.stored_column(arg).is_some()
}

fn literal(e: &Arc<dyn PhysicalExpr>) -> Option<&ScalarValue> {
    e.downcast_ref::<Literal>()
        .map(Literal::value)
        .filter(|v| !v.is_null())
}

/// A literal in a numeric column's stored units, when that is exact and the literal's
/// type is the column's own (so the comparison means what DataFusion's would).
fn stored_integer(ty: ColumnType, v: &ScalarValue) -> Option<i64> {
    match (ty, v) {
        (ColumnType::Int32, ScalarValue::Int32(Some(x))) => Some(i64::from(*x)),
        (ColumnType::Int64, ScalarValue::Int64(Some(x))) => Some(*x),
        (ColumnType::Date32, ScalarValue::Date32(Some(x))) => Some(i64::from(*x)),
        (ColumnType::Decimal { scale, .. }, ScalarValue::Decimal128(Some(x), _, s)) => {
            let up = u32::try_from(i32::from(scale) - i32::from(*s)).ok()?;
            i64::try_from(x.checked_mul(10i128.checked_pow(up)?)?).ok()
        }
        _ => None,
    }
}
