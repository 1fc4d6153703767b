//! The values an aggregating scan sums: trees of `+`, `-`, `*`, rescales, stored
//! columns and literals, evaluated on stored integers (decimals as scaled integers,
//! dates as days) in blocks, exactly.
//!
//! A block is evaluated in `i64` first (all trees at once, `program.rs`), every step's
//! overflow noted; a block where any step overflowed is evaluated again here, tree by
//! tree in `i128` with checked steps, and only an `i128` overflow is an error. So the results are the exact integers DataFusion's `Decimal128`
//! kernels compute (they compute in `i128` and fail on its overflow), at 64-bit speed
//! where the values allow, which is nearly always (TPC-H's money columns hold at most
//! eight digits).

use crate::column::ColumnValues;
use crate::error::{Result, StorageError};

/// The three operators evaluated with exact integer arithmetic.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ArithOp {
    Add,
    Sub,
    Mul,
}

/// A value computed from one tuple's stored columns.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum ValueExpr {
    /// A stored integer, date or decimal column (its stored integers).
    Column(usize),
    /// A constant, in the units of the tree around it.
    Literal(i64),
    /// `child × factor` (a decimal widened to a larger scale: factor 10^k).
    Rescale { child: Box<ValueExpr>, factor: i64 },
    /// `left × left_factor op right × right_factor` (the factors align the scales of
    /// a sum; both 1 for a product).
    Binary {
        op: ArithOp,
        left: Box<ValueExpr>,
        right: Box<ValueExpr>,
        left_factor: i64,
        right_factor: i64,
    },
}

impl ValueExpr {
    /// The same tree over other columns: `to(c)` for each column `c`; `None` if `to`
    /// has none for one of them.
    pub fn map_columns(&self, to: &impl Fn(usize) -> Option<usize>) -> Option<ValueExpr> {
        Some(match self {
            ValueExpr::Column(c) => ValueExpr::Column(to(*c)?),
            ValueExpr::Literal(v) => ValueExpr::Literal(*v),
            ValueExpr::Rescale { child, factor } => ValueExpr::Rescale {
                child: Box::new(child.map_columns(to)?),
                factor: *factor,
            },
            ValueExpr::Binary {
                op,
                left,
                right,
                left_factor,
                right_factor,
            } => ValueExpr::Binary {
                op: *op,
                left: Box::new(left.map_columns(to)?),
                right: Box::new(right.map_columns(to)?),
                left_factor: *left_factor,
                right_factor: *right_factor,
            },
        })
    }

    /// The stored columns the tree reads (with repeats).
    pub fn columns(&self, out: &mut Vec<usize>) {
        match self {
            ValueExpr::Column(c) => out.push(*c),
            ValueExpr::Literal(_) => {}
            ValueExpr::Rescale { child, .. } => child.columns(out),
            ValueExpr::Binary { left, right, .. } => {
                left.columns(out);
                right.columns(out);
            }
        }
    }
}

/// Tuples evaluated together: small enough that a tree's intermediate blocks stay in
/// the first-level cache.
pub const BLOCK: usize = 1024;

/// Where a tree's columns come from: the decoded values of one chunk's selected tuples.
pub type Columns<'a> = dyn Fn(usize) -> Option<&'a ColumnValues> + 'a;

/// Scratch for a block evaluated in 128 bits.
#[derive(Debug, Default)]
pub struct Wide {
    pub values: Vec<i128>,
    /// `bad[i]` says value `i` left 128 bits (it is then meaningless: an error only if
    /// the tuple is one the scan wants, since DataFusion computes only the tuples its
    /// filter passed).
    pub bad: Vec<bool>,
}

/// Evaluates `expr` for tuples `start..start + len` (at most [`BLOCK`]) in `i128` into
/// `wide`, every step checked: what a block whose 64-bit pass (`program.rs`) overflowed
/// is computed with.
pub fn eval_wide(
    expr: &ValueExpr,
    columns: &Columns<'_>,
    start: usize,
    len: usize,
    wide: &mut Wide,
) -> Result<()> {
    wide.bad.clear();
    wide.bad.resize(len, false);
    eval_i128(expr, columns, start, len, &mut wide.values, &mut wide.bad)
}

/// Evaluates in `i128`, marking in `bad` every tuple where a step overflowed.
fn eval_i128(
    expr: &ValueExpr,
    columns: &Columns<'_>,
    start: usize,
    len: usize,
    out: &mut Vec<i128>,
    bad: &mut [bool],
) -> Result<()> {
    out.clear();
    match expr {
        // Leaves never overflow: their 64-bit values, widened.
        ValueExpr::Column(c) => match column(columns, *c, start, len)? {
            ColumnValues::I32(v) => {
                out.extend(v[start..start + len].iter().map(|&x| i128::from(x)))
            }
            ColumnValues::I64(v) => {
                out.extend(v[start..start + len].iter().map(|&x| i128::from(x)))
            }
            ColumnValues::Bytes { .. } => return Err(not_a_number(*c)),
        },
        ValueExpr::Literal(v) => out.resize(len, i128::from(*v)),
        ValueExpr::Rescale { child, factor } => {
            eval_i128(child, columns, start, len, out, bad)?;
            scale_i128(out, *factor, bad);
        }
        ValueExpr::Binary {
            op,
            left,
            right,
            left_factor,
            right_factor,
        } => {
            eval_i128(left, columns, start, len, out, bad)?;
            let mut rhs = Vec::with_capacity(len);
            eval_i128(right, columns, start, len, &mut rhs, bad)?;
            scale_i128(out, *left_factor, bad);
            scale_i128(&mut rhs, *right_factor, bad);
            let step = |l: &mut i128, r: i128, b: &mut bool| {
                let (v, o) = match op {
                    ArithOp::Add => l.overflowing_add(r),
                    ArithOp::Sub => l.overflowing_sub(r),
                    ArithOp::Mul => l.overflowing_mul(r),
                };
                *l = v;
                *b |= o;
            };
            for ((l, &r), b) in out.iter_mut().zip(&rhs).zip(bad.iter_mut()) {
                step(l, r, b);
            }
        }
    }
    Ok(())
}

fn scale_i128(values: &mut [i128], factor: i64, bad: &mut [bool]) {
    if factor != 1 {
        for (v, b) in values.iter_mut().zip(bad) {
            let (r, o) = v.overflowing_mul(i128::from(factor));
            *v = r;
            *b |= o;
        }
    }
}

fn column<'a>(
    columns: &Columns<'a>,
    c: usize,
    start: usize,
    len: usize,
) -> Result<&'a ColumnValues> {
    columns(c)
        .filter(|v| v.len() >= start + len)
        .ok_or_else(|| StorageError::Invalid(format!("no decoded values of column {c}")))
}

fn not_a_number(c: usize) -> StorageError {
    StorageError::Invalid(format!(
        "column {c} holds strings, not numbers to compute with"
    ))
}

/// What DataFusion says when a decimal computation leaves 128 bits.
pub(crate) fn overflow() -> StorageError {
    StorageError::Invalid("Arithmetic overflow: a computed decimal value exceeds 128 bits".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn col(c: usize) -> Box<ValueExpr> {
        Box::new(ValueExpr::Column(c))
    }

    #[test]
    fn a_product_too_large_for_64_bits_is_computed_in_128() {
        let big = ColumnValues::I64(vec![i64::MAX, 3]);
        let expr = ValueExpr::Binary {
            op: ArithOp::Mul,
            left: col(0),
            right: col(0),
            left_factor: 1,
            right_factor: 1,
        };
        let columns = |c: usize| (c == 0).then_some(&big);
        let mut out = Wide::default();
        eval_wide(&expr, &columns, 0, 2, &mut out).unwrap();
        assert_eq!(
            out.values,
            vec![i128::from(i64::MAX) * i128::from(i64::MAX), 9]
        );
        assert_eq!(out.bad, vec![false, false]);
    }

    #[test]
    fn sums_align_scales_and_an_overflow_of_128_bits_is_marked() {
        let a = ColumnValues::I64(vec![5, -7]);
        let b = ColumnValues::I32(vec![2, 4]);
        // a (scale 2) - b (scale 0) × 100 (to scale 2)
        let expr = ValueExpr::Binary {
            op: ArithOp::Sub,
            left: col(0),
            right: col(1),
            left_factor: 1,
            right_factor: 100,
        };
        let columns = |c: usize| match c {
            0 => Some(&a),
            1 => Some(&b),
            _ => None,
        };
        let mut out = Wide::default();
        eval_wide(&expr, &columns, 0, 2, &mut out).unwrap();
        assert_eq!(out.values, vec![5 - 200, -7 - 400]);
        assert_eq!(out.bad, vec![false, false]);
        let huge = ColumnValues::I64(vec![i64::MAX, 2]);
        let cube = ValueExpr::Binary {
            op: ArithOp::Mul,
            left: Box::new(ValueExpr::Binary {
                op: ArithOp::Mul,
                left: col(0),
                right: col(0),
                left_factor: 1,
                right_factor: 1,
            }),
            right: Box::new(ValueExpr::Binary {
                op: ArithOp::Mul,
                left: col(0),
                right: col(0),
                left_factor: 1,
                right_factor: 1,
            }),
            left_factor: 1,
            right_factor: 1,
        };
        let columns = |c: usize| (c == 0).then_some(&huge);
        eval_wide(&cube, &columns, 0, 2, &mut out).unwrap();
        assert_eq!(out.bad, vec![true, false]);
        assert_eq!(out.values[1], 16);
    }
}
