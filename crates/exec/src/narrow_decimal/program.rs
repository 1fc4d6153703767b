//! A decimal expression compiled for 64-bit evaluation: the tree of `+`, `-`, `*`,
//! widening casts, columns and literals that DataFusion would evaluate on `i128`, with
//! every result's precision and scale worked out as arrow's kernels work them out, so
//! that the 64-bit values are the same scaled integers arrow would produce.

use std::sync::Arc;

use datafusion::arrow::array::{Array, AsArray, RecordBatch};
use datafusion::arrow::datatypes::{DataType, Decimal128Type, Schema, DECIMAL128_MAX_PRECISION};
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

/// The three operators arrow evaluates on decimals with exact integer arithmetic.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ArithOp {
    Add,
    Sub,
    Mul,
}

/// One node of a compiled tree.
#[derive(Debug)]
pub enum Node {
    /// A `Decimal128` column of the input batch.
    Column(usize),
    /// A decimal literal's scaled value.
    Literal(i64),
    /// A widening cast: the value times 10^k.
    Rescale { child: Box<Node>, factor: i64 },
    /// `left × left_factor op right × right_factor` (factors align the scales of a sum;
    /// both are 1 for a product).
    Binary {
        op: ArithOp,
        left: Box<Node>,
        right: Box<Node>,
        left_factor: i64,
        right_factor: i64,
    },
}

/// A compiled tree and the shape of its result.
#[derive(Debug)]
pub struct Program {
    pub root: Node,
    pub shape: DecimalShape,
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
        if !reads_a_column(&root) {
            return None;
        }
        let declared = expr.data_type(schema).ok()?;
        (declared == shape.data_type()).then_some(Program { root, shape })
    }
}

fn reads_a_column(node: &Node) -> bool {
    match node {
        Node::Column(_) => true,
        Node::Literal(_) => false,
        Node::Rescale { child, .. } => reads_a_column(child),
        Node::Binary { left, right, .. } => reads_a_column(left) || reads_a_column(right),
    }
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

/// A value during evaluation: a whole column or one scalar.
enum Value {
    Array(Vec<i64>),
    Scalar(i64),
}

impl Program {
    /// Evaluates the tree on `batch` in `i64`; `None` when a column has nulls, a value
    /// does not fit in 64 bits, or any step overflows: then arrow's `i128` evaluation
    /// of the original expression decides (and gives the same answer or the same error).
    pub fn run(&self, batch: &RecordBatch) -> Option<Vec<i64>> {
        match eval(&self.root, batch)? {
            Value::Array(values) => Some(values),
            Value::Scalar(v) => Some(vec![v; batch.num_rows()]),
        }
    }
}

fn eval(node: &Node, batch: &RecordBatch) -> Option<Value> {
    match node {
        Node::Column(i) => column_values(batch, *i).map(Value::Array),
        Node::Literal(v) => Some(Value::Scalar(*v)),
        Node::Rescale { child, factor } => {
            let value = eval(child, batch)?;
            let f = *factor;
            map(value, |a| a.overflowing_mul(f))
        }
        Node::Binary {
            op,
            left,
            right,
            left_factor,
            right_factor,
        } => {
            let (l, lf) = prescale(eval(left, batch)?, *left_factor)?;
            let (r, rf) = prescale(eval(right, batch)?, *right_factor)?;
            match (op, lf, rf) {
                (ArithOp::Mul, ..) => zip(l, r, |a, b| a.overflowing_mul(b)),
                (ArithOp::Add, 1, 1) => zip(l, r, |a, b| a.overflowing_add(b)),
                (ArithOp::Sub, 1, 1) => zip(l, r, |a, b| a.overflowing_sub(b)),
                (ArithOp::Add, 1, _) => {
                    zip(l, r, |a, b| right_scaled(a, b, rf, i64::overflowing_add))
                }
                (ArithOp::Sub, 1, _) => {
                    zip(l, r, |a, b| right_scaled(a, b, rf, i64::overflowing_sub))
                }
                (ArithOp::Add, _, 1) => {
                    zip(l, r, |a, b| left_scaled(a, lf, b, i64::overflowing_add))
                }
                (ArithOp::Sub, _, 1) => {
                    zip(l, r, |a, b| left_scaled(a, lf, b, i64::overflowing_sub))
                }
                (ArithOp::Add, ..) => zip(l, r, |a, b| scaled(a, lf, b, rf, i64::overflowing_add)),
                (ArithOp::Sub, ..) => zip(l, r, |a, b| scaled(a, lf, b, rf, i64::overflowing_sub)),
            }
        }
    }
}

/// A scalar operand scaled once here rather than per element: the value and the
/// factor left to apply.
fn prescale(value: Value, factor: i64) -> Option<(Value, i64)> {
    match value {
        Value::Scalar(v) => Some((Value::Scalar(v.checked_mul(factor)?), 1)),
        array => Some((array, factor)),
    }
}

#[inline]
fn left_scaled(a: i64, fa: i64, b: i64, op: fn(i64, i64) -> (i64, bool)) -> (i64, bool) {
    let (a, o1) = a.overflowing_mul(fa);
    let (v, o2) = op(a, b);
    (v, o1 | o2)
}

#[inline]
fn right_scaled(a: i64, b: i64, fb: i64, op: fn(i64, i64) -> (i64, bool)) -> (i64, bool) {
    let (b, o1) = b.overflowing_mul(fb);
    let (v, o2) = op(a, b);
    (v, o1 | o2)
}

/// `a × fa op b × fb`, with whether any step overflowed.
#[inline]
fn scaled(a: i64, fa: i64, b: i64, fb: i64, op: fn(i64, i64) -> (i64, bool)) -> (i64, bool) {
    let (a, o1) = a.overflowing_mul(fa);
    let (b, o2) = b.overflowing_mul(fb);
    let (v, o3) = op(a, b);
    (v, o1 | o2 | o3)
}

/// A non-null `Decimal128` column's values as `i64`, if they all fit.
fn column_values(batch: &RecordBatch, index: usize) -> Option<Vec<i64>> {
    let array = batch.columns().get(index)?;
    if array.null_count() != 0 {
        return None;
    }
    let values = array.as_primitive_opt::<Decimal128Type>()?.values();
    let mut fits = true;
    let out = values
        .iter()
        .map(|&v| {
            let narrow = v as i64;
            fits &= i128::from(narrow) == v;
            narrow
        })
        .collect();
    fits.then_some(out)
}

fn map(value: Value, f: impl Fn(i64) -> (i64, bool)) -> Option<Value> {
    match value {
        Value::Scalar(a) => {
            let (v, overflow) = f(a);
            (!overflow).then_some(Value::Scalar(v))
        }
        Value::Array(mut values) => {
            let mut overflow = false;
            for a in &mut values {
                let (v, o) = f(*a);
                overflow |= o;
                *a = v;
            }
            (!overflow).then_some(Value::Array(values))
        }
    }
}

/// Applies `f` element-wise, reusing the left (or right) column's vector.
fn zip(l: Value, r: Value, f: impl Fn(i64, i64) -> (i64, bool)) -> Option<Value> {
    match (l, r) {
        (Value::Scalar(a), Value::Scalar(b)) => {
            let (v, overflow) = f(a, b);
            (!overflow).then_some(Value::Scalar(v))
        }
        (Value::Array(l), Value::Scalar(b)) => map(Value::Array(l), |a| f(a, b)),
        (Value::Scalar(a), Value::Array(r)) => map(Value::Array(r), |b| f(a, b)),
        (Value::Array(mut l), Value::Array(r)) => {
            if l.len() != r.len() {
                return None;
            }
            let mut overflow = false;
            for (a, &b) in l.iter_mut().zip(&r) {
                let (v, o) = f(*a, b);
                overflow |= o;
                *a = v;
            }
            (!overflow).then_some(Value::Array(l))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::Decimal128Array;
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
}
