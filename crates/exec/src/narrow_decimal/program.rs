//! A decimal expression compiled for 64-bit evaluation: the tree of `+`, `-`, `*`,
//! widening casts, columns and literals that DataFusion would evaluate on `i128`, with
//! every result's precision and scale worked out as arrow's kernels work them out, so
//! that the 64-bit values are the same scaled integers arrow would produce.

use std::sync::Arc;

use super::leaf::{self, Leaf};

use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::datatypes::{DataType, Schema, DECIMAL128_MAX_PRECISION};
use datafusion::common::ScalarValue;
use datafusion::logical_expr::Operator;
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_plan::expressions::{BinaryExpr, CastExpr, Column, Literal};

/// Arrow's largest decimal scale (`DECIMAL128_MAX_SCALE`); a product beyond it is an
/// error in arrow, so such a tree is left to arrow.
const MAX_SCALE: i8 = 38;

/// A decimal's precision and scale.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DecimalShape {
    pub precision: u8,
    pub scale: i8,
}

impl DecimalShape {
    fn of(data_type: &DataType) -> Option<DecimalShape> {
        match *data_type {
            DataType::Decimal128(precision, scale) => Some(DecimalShape { precision, scale }),
            _ => None,
        }
    }

    /// Digits left of the point.
    fn integer_digits(self) -> i16 {
        i16::from(self.precision) - i16::from(self.scale)
    }

    pub fn data_type(self) -> DataType {
        DataType::Decimal128(self.precision, self.scale)
    }
}

/// One node of a compiled tree: the aggregating scan's value trees
/// (`coopscan_storage::aggregate::ValueExpr`), here over the columns of the input batch
/// (each a `Decimal128` column), literals as scaled values, a widening cast as a
/// rescale by 10^k, and factors that align the scales of a sum.
pub use coopscan_storage::aggregate::{ArithOp, ValueExpr as Node};

/// A compiled tree and the shape of its result.
#[derive(Debug)]
pub struct Program {
    pub root: Node,
    pub shape: DecimalShape,
    /// The columns the tree reads, each once.
    columns: Vec<usize>,
}

impl Program {
    /// Compiles `expr` over `schema` when it is an arithmetic tree worth narrowing (its
    /// root an operator, at least one column) whose result type is the one DataFusion
    /// declared for it; `None` otherwise.
    pub fn compile(expr: &Arc<dyn PhysicalExpr>, schema: &Schema) -> Option<Program> {
        if !expr.is::<BinaryExpr>() {
            return None;
        }
        let (root, shape) = compile_node(expr, schema)?;
        let mut columns = Vec::new();
        root.columns(&mut columns);
        if columns.is_empty() {
            return None;
        }
        let declared = expr.data_type(schema).ok()?;
        columns.sort_unstable();
        columns.dedup();
        (declared == shape.data_type()).then_some(Program {
            root,
            shape,
            columns,
        })
    }
}

/// Any decimal tree of columns, literals, widening casts, `+`, `-` and `*` (a lone
/// column too), with the shape arrow gives its result: what an aggregating scan sums
/// (`crate::scan_aggregate`).
pub(crate) fn compile_value(
    expr: &Arc<dyn PhysicalExpr>,
    schema: &Schema,
) -> Option<(Node, DecimalShape)> {
    let (node, shape) = compile_node(expr, schema)?;
    let declared = expr.data_type(schema).ok()?;
    (declared == shape.data_type()).then_some((node, shape))
}

fn compile_node(expr: &Arc<dyn PhysicalExpr>, schema: &Schema) -> Option<(Node, DecimalShape)> {
    let any = expr;
    if let Some(column) = any.downcast_ref::<Column>() {
        let field = schema.fields().get(column.index())?;
        let shape = DecimalShape::of(field.data_type())?;
        return Some((Node::Column(column.index()), shape));
    }
    if let Some(literal) = any.downcast_ref::<Literal>() {
        return match *literal.value() {
            ScalarValue::Decimal128(Some(v), precision, scale) => {
                let shape = DecimalShape { precision, scale };
                Some((Node::Literal(i64::try_from(v).ok()?), shape))
            }
            _ => None,
        };
    }
    if let Some(cast) = any.downcast_ref::<CastExpr>() {
        return compile_cast(cast, schema);
    }
    if let Some(binary) = any.downcast_ref::<BinaryExpr>() {
        return compile_binary(binary, schema);
    }
    None
}

/// A cast between decimals that can neither round nor overflow: the scale does not
/// shrink and neither do the integer digits. Arrow's cast then multiplies by 10^k.
fn compile_cast(cast: &CastExpr, schema: &Schema) -> Option<(Node, DecimalShape)> {
    let (child, from) = compile_node(cast.expr(), schema)?;
    let to = DecimalShape::of(cast.cast_type())?;
    if to.scale < from.scale || to.integer_digits() < from.integer_digits() {
        return None;
    }
    let factor = power_of_ten(to.scale - from.scale)?;
    if factor == 1 {
        // Only the declared precision grows (`CAST(l_quantity AS DECIMAL(36,2))`).
        return Some((child, to));
    }
    let child = Box::new(child);
    Some((Node::Rescale { child, factor }, to))
}

/// `+`, `-` and `*` with arrow's result types (`arrow_arith::numeric`, Hive's rules):
/// a sum has the larger scale and one more digit than the wider integer part; a product
/// adds scales and precisions (plus one), precision capped at 38.
fn compile_binary(binary: &BinaryExpr, schema: &Schema) -> Option<(Node, DecimalShape)> {
    let op = match binary.op() {
        Operator::Plus => ArithOp::Add,
        Operator::Minus => ArithOp::Sub,
        Operator::Multiply => ArithOp::Mul,
        _ => return None,
    };
    let (left, l) = compile_node(binary.left(), schema)?;
    let (right, r) = compile_node(binary.right(), schema)?;
    let (shape, left_factor, right_factor) = match op {
        ArithOp::Add | ArithOp::Sub => {
            let scale = l.scale.max(r.scale);
            let digits = l.integer_digits().max(r.integer_digits());
            let precision =
                (i16::from(scale) + digits + 1).min(i16::from(DECIMAL128_MAX_PRECISION));
            let shape = DecimalShape {
                precision: u8::try_from(precision).ok()?,
                scale,
            };
            (
                shape,
                power_of_ten(scale - l.scale)?,
                power_of_ten(scale - r.scale)?,
            )
        }
        ArithOp::Mul => {
            let scale = l.scale.checked_add(r.scale).filter(|s| *s <= MAX_SCALE)?;
            let precision = l
                .precision
                .saturating_add(r.precision.saturating_add(1))
                .min(DECIMAL128_MAX_PRECISION);
            (DecimalShape { precision, scale }, 1, 1)
        }
    };
    let node = Node::Binary {
        op,
        left: Box::new(left),
        right: Box::new(right),
        left_factor,
        right_factor,
    };
    Some((node, shape))
}

/// 10^k as an `i64`, for 0 ≤ k ≤ 18.
fn power_of_ten(k: i8) -> Option<i64> {
    10i64.checked_pow(u32::try_from(k).ok()?)
}

impl Program {
    /// Evaluates the tree on `batch` in `i64`; `None` when a column has nulls, a value
    /// does not fit in 64 bits, or any step overflows: then arrow's `i128` evaluation
    /// of the original expression decides (and gives the same answer or the same error).
    ///
    /// When the columns' largest magnitudes in this batch prove that no step can
    /// overflow (bounds carried up the tree), the arithmetic runs unchecked; otherwise
    /// every step is checked.
    pub fn run(&self, batch: &RecordBatch) -> Option<Vec<i64>> {
        let leaves = self
            .columns
            .iter()
            .map(|&i| leaf::narrowed(batch, i).map(|l| (i, l)))
            .collect::<Option<Vec<_>>>()?;
        let value = match bound(&self.root, &leaves) {
            Some(_) => eval::<Proven>(&self.root, &leaves)?,
            None => eval::<Checked>(&self.root, &leaves)?,
        };
        Some(match value {
            Value::Owned(values) => values,
            Value::Borrowed(values) => values.to_vec(),
            Value::Scalar(v) => vec![v; batch.num_rows()],
        })
    }
}

/// The narrowed leaves of one evaluation, by column index.
type Leaves = [(usize, Arc<Leaf>)];

fn leaf_of(leaves: &Leaves, index: usize) -> Option<&Leaf> {
    leaves
        .iter()
        .find(|(i, _)| *i == index)
        .map(|(_, l)| l.as_ref())
}

/// The largest magnitude `node` can take on these leaves, if every step of it stays
/// within `i64`.
fn bound(node: &Node, leaves: &Leaves) -> Option<u128> {
    let b = match node {
        Node::Column(i) => u128::from(leaf_of(leaves, *i)?.max_abs),
        Node::Literal(v) => u128::from(v.unsigned_abs()),
        Node::Rescale { child, factor } => {
            bound(child, leaves)?.checked_mul(factor.unsigned_abs().into())?
        }
        Node::Binary {
            op,
            left,
            right,
            left_factor,
            right_factor,
        } => {
            let l = bound(left, leaves)?.checked_mul(left_factor.unsigned_abs().into())?;
            let r = bound(right, leaves)?.checked_mul(right_factor.unsigned_abs().into())?;
            let within = |v: u128| (v <= I64_MAX).then_some(v);
            within(l)?;
            within(r)?;
            match op {
                ArithOp::Mul => l.checked_mul(r)?,
                ArithOp::Add | ArithOp::Sub => l.checked_add(r)?,
            }
        }
    };
    (b <= I64_MAX).then_some(b)
}

const I64_MAX: u128 = i64::MAX as u128;

/// How the steps handle overflow: each returns the value and whether it overflowed.
trait Arith {
    fn mul(a: i64, b: i64) -> (i64, bool);
    fn add(a: i64, b: i64) -> (i64, bool);
    fn sub(a: i64, b: i64) -> (i64, bool);
}

/// Every step checked.
struct Checked;

impl Arith for Checked {
    #[inline]
    fn mul(a: i64, b: i64) -> (i64, bool) {
        a.overflowing_mul(b)
    }
    #[inline]
    fn add(a: i64, b: i64) -> (i64, bool) {
        a.overflowing_add(b)
    }
    #[inline]
    fn sub(a: i64, b: i64) -> (i64, bool) {
        a.overflowing_sub(b)
    }
}

/// No step can overflow ([`bound`] proved it): plain arithmetic, which vectorizes.
struct Proven;

impl Arith for Proven {
    #[inline]
    fn mul(a: i64, b: i64) -> (i64, bool) {
        (a.wrapping_mul(b), false)
    }
    #[inline]
    fn add(a: i64, b: i64) -> (i64, bool) {
        (a.wrapping_add(b), false)
    }
    #[inline]
    fn sub(a: i64, b: i64) -> (i64, bool) {
        (a.wrapping_sub(b), false)
    }
}

/// A value during evaluation: a computed column, a leaf column, or one scalar.
enum Value<'a> {
    Owned(Vec<i64>),
    Borrowed(&'a [i64]),
    Scalar(i64),
}

fn eval<'a, A: Arith>(node: &Node, leaves: &'a Leaves) -> Option<Value<'a>> {
    match node {
        Node::Column(i) => leaf_of(leaves, *i).map(|l| Value::Borrowed(&l.values)),
        Node::Literal(v) => Some(Value::Scalar(*v)),
        Node::Rescale { child, factor } => {
            let f = *factor;
            map(eval::<A>(child, leaves)?, |a| A::mul(a, f))
        }
        Node::Binary {
            op,
            left,
            right,
            left_factor,
            right_factor,
        } => {
            let (l, lf) = prescale(eval::<A>(left, leaves)?, *left_factor)?;
            let (r, rf) = prescale(eval::<A>(right, leaves)?, *right_factor)?;
            match op {
                ArithOp::Mul => zip(l, r, A::mul),
                ArithOp::Add => sum::<A>(l, lf, r, rf, A::add),
                ArithOp::Sub => sum::<A>(l, lf, r, rf, A::sub),
            }
        }
    }
}

/// `l × lf op r × rf` element-wise, `op` being `+` or `-`; a loop per case of the
/// factors, so that each is a plain loop the compiler can vectorize.
fn sum<'a, A: Arith>(
    l: Value<'a>,
    lf: i64,
    r: Value<'a>,
    rf: i64,
    op: impl Fn(i64, i64) -> (i64, bool) + Copy,
) -> Option<Value<'a>> {
    match (lf, rf) {
        (1, 1) => zip(l, r, op),
        (1, _) => zip(l, r, |a, b| scaled::<A>(a, 1, b, rf, op)),
        (_, 1) => zip(l, r, |a, b| scaled::<A>(a, lf, b, 1, op)),
        _ => zip(l, r, |a, b| scaled::<A>(a, lf, b, rf, op)),
    }
}

/// A scalar operand scaled once here rather than per element: the value and the
/// factor left to apply.
fn prescale(value: Value<'_>, factor: i64) -> Option<(Value<'_>, i64)> {
    match value {
        Value::Scalar(v) => Some((Value::Scalar(v.checked_mul(factor)?), 1)),
        array => Some((array, factor)),
    }
}

/// `a × fa op b × fb`, with whether any step overflowed (a factor of 1 folds away).
#[inline(always)]
fn scaled<A: Arith>(
    a: i64,
    fa: i64,
    b: i64,
    fb: i64,
    op: impl Fn(i64, i64) -> (i64, bool),
) -> (i64, bool) {
    let (a, o1) = if fa == 1 { (a, false) } else { A::mul(a, fa) };
    let (b, o2) = if fb == 1 { (b, false) } else { A::mul(b, fb) };
    let (v, o3) = op(a, b);
    (v, o1 | o2 | o3)
}

fn map<'a>(value: Value<'a>, f: impl Fn(i64) -> (i64, bool)) -> Option<Value<'a>> {
    let mut overflow = false;
    let out = match value {
        Value::Scalar(a) => {
            let (v, o) = f(a);
            return (!o).then_some(Value::Scalar(v));
        }
        Value::Owned(mut values) => {
            for a in &mut values {
                let (v, o) = f(*a);
                overflow |= o;
                *a = v;
            }
            values
        }
        Value::Borrowed(values) => values
            .iter()
            .map(|&a| {
                let (v, o) = f(a);
                overflow |= o;
                v
            })
            .collect(),
    };
    (!overflow).then_some(Value::Owned(out))
}

/// Applies `f` element-wise, into a computed operand's vector when there is one.
fn zip<'a>(l: Value<'a>, r: Value<'a>, f: impl Fn(i64, i64) -> (i64, bool)) -> Option<Value<'a>> {
    let mut overflow = false;
    let out = match (l, r) {
        (Value::Scalar(a), Value::Scalar(b)) => {
            let (v, o) = f(a, b);
            return (!o).then_some(Value::Scalar(v));
        }
        (l, Value::Scalar(b)) => return map(l, |a| f(a, b)),
        (Value::Scalar(a), r) => return map(r, |b| f(a, b)),
        (Value::Owned(mut l), r) => {
            let r = r.as_slice()?;
            if l.len() != r.len() {
                return None;
            }
            for (a, &b) in l.iter_mut().zip(r) {
                let (v, o) = f(*a, b);
                overflow |= o;
                *a = v;
            }
            l
        }
        (Value::Borrowed(l), Value::Owned(mut r)) => {
            if l.len() != r.len() {
                return None;
            }
            for (&a, b) in l.iter().zip(r.iter_mut()) {
                let (v, o) = f(a, *b);
                overflow |= o;
                *b = v;
            }
            r
        }
        (Value::Borrowed(l), Value::Borrowed(r)) => {
            if l.len() != r.len() {
                return None;
            }
            l.iter()
                .zip(r)
                .map(|(&a, &b)| {
                    let (v, o) = f(a, b);
                    overflow |= o;
                    v
                })
                .collect()
        }
    };
    (!overflow).then_some(Value::Owned(out))
}

impl Value<'_> {
    fn as_slice(&self) -> Option<&[i64]> {
        match self {
            Value::Owned(v) => Some(v),
            Value::Borrowed(v) => Some(v),
            Value::Scalar(_) => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::{ArrayRef, Decimal128Array};
    use datafusion::arrow::datatypes::Field;
    use datafusion::physical_plan::expressions::{binary, col, lit};

    fn batch(values: Vec<Option<i128>>) -> RecordBatch {
        let array = Decimal128Array::from(values)
            .with_precision_and_scale(18, 2)
            .unwrap();
        let schema = Schema::new(vec![Field::new("a", DataType::Decimal128(18, 2), true)]);
        RecordBatch::try_new(Arc::new(schema), vec![Arc::new(array)]).unwrap()
    }

    /// `a * a + 1.5` over `batch`'s schema.
    fn program(batch: &RecordBatch) -> Program {
        let schema = batch.schema();
        let a = col("a", &schema).unwrap();
        let square = binary(Arc::clone(&a), Operator::Multiply, a, &schema).unwrap();
        let one_and_a_half = lit(ScalarValue::Decimal128(Some(15), 2, 1));
        let expr = binary(square, Operator::Plus, one_and_a_half, &schema).unwrap();
        Program::compile(&expr, &schema).expect("narrowable")
    }

    #[test]
    fn computes_the_scaled_integers_arrow_computes() {
        // a = 1.25 and -3.00: a * a + 1.5 = 3.0625 and 10.5 at scale 4.
        let b = batch(vec![Some(125), Some(-300)]);
        let p = program(&b);
        assert_eq!(
            p.shape,
            DecimalShape {
                precision: 38,
                scale: 4
            }
        );
        assert_eq!(p.run(&b), Some(vec![30_625, 105_000]));
    }

    #[test]
    fn leaves_overflow_and_nulls_to_arrow() {
        let big = batch(vec![Some(10i128.pow(17))]);
        assert_eq!(
            program(&big).run(&big),
            None,
            "10^34 does not fit in 64 bits"
        );
        let nulls = batch(vec![Some(1), None]);
        assert_eq!(program(&nulls).run(&nulls), None);
    }

    #[test]
    fn narrowing_casts_are_not_compiled() {
        let b = batch(vec![Some(1)]);
        let schema = b.schema();
        let a = col("a", &schema).unwrap();
        let rounded: Arc<dyn PhysicalExpr> = Arc::new(CastExpr::new(
            Arc::clone(&a),
            DataType::Decimal128(18, 1),
            None,
        ));
        let expr = binary(rounded, Operator::Plus, a, &schema).unwrap();
        assert!(Program::compile(&expr, &schema).is_none());
    }

    #[test]
    fn checks_every_step_when_the_bounds_do_not_prove_it_safe() {
        // max |a| × max |b| = 1.6e19 is beyond i64, so no proof; but each row's product
        // is 4e9, which the checked evaluation computes.
        let big = 4_000_000_000i128;
        let ty = DataType::Decimal128(18, 0);
        let column = |v: Vec<i128>| -> ArrayRef {
            Arc::new(
                Decimal128Array::from(v)
                    .with_precision_and_scale(18, 0)
                    .unwrap(),
            )
        };
        let schema = Arc::new(Schema::new(vec![
            Field::new("a", ty.clone(), false),
            Field::new("b", ty, false),
        ]));
        let b = RecordBatch::try_new(
            Arc::clone(&schema),
            vec![column(vec![big, 1]), column(vec![1, big])],
        )
        .unwrap();
        let (a, bc) = (col("a", &schema).unwrap(), col("b", &schema).unwrap());
        let product = binary(a, Operator::Multiply, bc, &schema).unwrap();
        let p = Program::compile(&product, &schema).expect("narrowable");
        assert_eq!(p.run(&b), Some(vec![4_000_000_000, 4_000_000_000]));
    }
}
