//! An aggregation's value trees compiled into one list of steps, for the 64-bit pass
//! over a block: equal subtrees are one step (TPC-H Q1's `price × (1 − disc)` feeds two
//! sums), a literal operand stays a scalar rather than a block of copies, a 64-bit
//! column is read where it lies, and every step writes into a buffer kept from block to
//! block. A block where a step overflows is left to [`super::value::eval_wide`], which
//! evaluates it again in 128 bits.

use std::collections::HashMap;

use super::value::{Columns, ValueExpr};
use super::ArithOp;
use crate::column::ColumnValues;
use crate::error::{Result, StorageError};

/// One step: its operands are earlier steps. A binary step's operands are already
/// scaled (a factor other than 1 is a rescale step of its own).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Step {
    Column(usize),
    Literal(i64),
    Rescale {
        src: usize,
        factor: i64,
    },
    Binary {
        op: ArithOp,
        left: usize,
        right: usize,
    },
}

/// The compiled trees and their buffers.
#[derive(Debug)]
pub struct Program {
    steps: Vec<Step>,
    /// The step of each value tree, in the aggregation's order.
    roots: Vec<usize>,
    /// One block of each step's values (columns and literals leave theirs empty).
    buffers: Vec<Vec<i64>>,
}

/// A step's values in a block: where they lie, or one value for all.
#[derive(Clone, Copy)]
enum Operand<'a> {
    Slice(&'a [i64]),
    Scalar(i64),
}

impl Program {
    pub fn compile(values: &[ValueExpr]) -> Program {
        let mut program = Program {
            steps: Vec::new(),
            roots: Vec::new(),
            buffers: Vec::new(),
        };
        let mut seen = HashMap::new();
        for v in values {
            let root = program.intern(v, &mut seen);
            program.roots.push(root);
        }
        program.buffers = vec![Vec::new(); program.steps.len()];
        program
    }

    fn intern(&mut self, expr: &ValueExpr, seen: &mut HashMap<Step, usize>) -> usize {
        let step = match expr {
            ValueExpr::Column(c) => Step::Column(*c),
            ValueExpr::Literal(v) => Step::Literal(*v),
            ValueExpr::Rescale { child, factor } => Step::Rescale {
                src: self.intern(child, seen),
                factor: *factor,
            },
            ValueExpr::Binary {
                op,
                left,
                right,
                left_factor,
                right_factor,
            } => {
                let (l, r) = (self.intern(left, seen), self.intern(right, seen));
                Step::Binary {
                    op: *op,
                    left: self.rescaled(l, *left_factor, seen),
                    right: self.rescaled(r, *right_factor, seen),
                }
            }
        };
        self.add(step, seen)
    }

    /// `src`, or a step of it scaled by `factor` when that is not 1.
    fn rescaled(&mut self, src: usize, factor: i64, seen: &mut HashMap<Step, usize>) -> usize {
        if factor == 1 {
            return src;
        }
        self.add(Step::Rescale { src, factor }, seen)
    }

    fn add(&mut self, step: Step, seen: &mut HashMap<Step, usize>) -> usize {
        *seen.entry(step).or_insert_with(|| {
            self.steps.push(step);
            self.steps.len() - 1
        })
    }

    /// Evaluates every step for tuples `start..start + len` in 64 bits; `false` when a
    /// step overflowed (the block's values are then meaningless).
    pub fn eval(&mut self, columns: &Columns<'_>, start: usize, len: usize) -> Result<bool> {
        let mut over = false;
        for i in 0..self.steps.len() {
            let (done, rest) = self.buffers.split_at_mut(i);
            let out = &mut rest[0];
            let steps = &self.steps;
            let operand = |s: usize| operand(steps, done, s, columns, start, len);
            match steps[i] {
                Step::Column(c) => {
                    out.clear();
                    if let ColumnValues::I32(v) = column(columns, c, start, len)? {
                        out.extend(v[start..start + len].iter().map(|&x| i64::from(x)));
                    }
                }
                Step::Literal(_) => out.clear(),
                Step::Rescale { src, factor } => {
                    over |= unary(out, operand(src)?, len, |x| x.overflowing_mul(factor));
                }
                Step::Binary { op, left, right } => {
                    let (l, r) = (operand(left)?, operand(right)?);
                    over |= match op {
                        ArithOp::Add => binary(out, l, r, len, i64::overflowing_add),
                        ArithOp::Sub => binary(out, l, r, len, i64::overflowing_sub),
                        ArithOp::Mul => binary(out, l, r, len, i64::overflowing_mul),
                    };
                }
            }
        }
        Ok(!over)
    }

    /// Value tree `v`'s values in the block [`Program::eval`] evaluated last.
    pub fn values<'s, 'a: 's>(
        &'s mut self,
        v: usize,
        columns: &Columns<'a>,
        start: usize,
        len: usize,
    ) -> Result<&'s [i64]> {
        let root = *self
            .roots
            .get(v)
            .ok_or_else(|| StorageError::Invalid(format!("no value {v}")))?;
        if let Step::Literal(x) = self.steps[root] {
            let out = &mut self.buffers[root];
            out.clear();
            out.resize(len, x);
            return Ok(out);
        }
        match operand(&self.steps, &self.buffers, root, columns, start, len)? {
            Operand::Slice(values) => Ok(values),
            Operand::Scalar(_) => Err(StorageError::Invalid("a literal as a block".into())),
        }
    }
}

/// Step `s`'s values: its buffer, its 64-bit column in place, or its literal.
fn operand<'b, 'a: 'b>(
    steps: &[Step],
    buffers: &'b [Vec<i64>],
    s: usize,
    columns: &Columns<'a>,
    start: usize,
    len: usize,
) -> Result<Operand<'b>> {
    Ok(match steps[s] {
        Step::Literal(x) => Operand::Scalar(x),
        Step::Column(c) => match column(columns, c, start, len)? {
            ColumnValues::I64(v) => Operand::Slice(&v[start..start + len]),
            _ => Operand::Slice(&buffers[s]),
        },
        _ => Operand::Slice(&buffers[s]),
    })
}

fn column<'a>(
    columns: &Columns<'a>,
    c: usize,
    start: usize,
    len: usize,
) -> Result<&'a ColumnValues> {
    let values = columns(c)
        .filter(|v| v.len() >= start + len)
        .ok_or_else(|| StorageError::Invalid(format!("no decoded values of column {c}")))?;
    match values {
        ColumnValues::Bytes { .. } => Err(StorageError::Invalid(format!(
            "column {c} holds strings, not numbers to sum"
        ))),
        numbers => Ok(numbers),
    }
}

/// `out = f(x)` over one operand; whether any step overflowed.
#[inline(always)]
fn unary(out: &mut Vec<i64>, x: Operand<'_>, len: usize, f: impl Fn(i64) -> (i64, bool)) -> bool {
    out.clear();
    let mut over = false;
    match x {
        Operand::Slice(xs) => out.extend(xs.iter().map(|&x| {
            let (v, o) = f(x);
            over |= o;
            v
        })),
        Operand::Scalar(x) => {
            let (v, o) = f(x);
            over = o;
            out.resize(len, v);
        }
    }
    over
}

/// `out = f(l, r)` element by element, a scalar operand repeated; whether any step
/// overflowed. Generic over `f` so each operator's loops are compiled (and vectorized)
/// on their own.
#[inline(always)]
fn binary(
    out: &mut Vec<i64>,
    l: Operand<'_>,
    r: Operand<'_>,
    len: usize,
    f: impl Fn(i64, i64) -> (i64, bool),
) -> bool {
    out.clear();
    let mut over = false;
    let mut step = |a: i64, b: i64| {
        let (v, o) = f(a, b);
        over |= o;
        v
    };
    match (l, r) {
        (Operand::Slice(a), Operand::Slice(b)) => {
            out.extend(a.iter().zip(b).map(|(&a, &b)| step(a, b)))
        }
        (Operand::Slice(a), Operand::Scalar(b)) => out.extend(a.iter().map(|&a| step(a, b))),
        (Operand::Scalar(a), Operand::Slice(b)) => out.extend(b.iter().map(|&b| step(a, b))),
        (Operand::Scalar(a), Operand::Scalar(b)) => {
            let v = step(a, b);
            out.resize(len, v);
        }
    }
    over
}

#[cfg(test)]
mod tests {
    use rand::{RngExt, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    use super::*;

    fn tree(rng: &mut ChaCha8Rng, depth: u32) -> ValueExpr {
        if depth == 0 || rng.random_bool(0.3) {
            return match rng.random_range(0..4) {
                0 => ValueExpr::Literal(rng.random_range(-100..100)),
                c => ValueExpr::Column(c - 1),
            };
        }
        if rng.random_bool(0.2) {
            return ValueExpr::Rescale {
                child: Box::new(tree(rng, depth - 1)),
                factor: [1, 10, 100][rng.random_range(0..3)],
            };
        }
        let factor = |rng: &mut ChaCha8Rng| [1, 1, 10, 100][rng.random_range(0..4)];
        ValueExpr::Binary {
            op: [ArithOp::Add, ArithOp::Sub, ArithOp::Mul][rng.random_range(0..3)],
            left: Box::new(tree(rng, depth - 1)),
            right: Box::new(tree(rng, depth - 1)),
            left_factor: factor(rng),
            right_factor: factor(rng),
        }
    }

    /// A tuple's value of `expr` computed one checked 64-bit step at a time, the
    /// independent reference: `None` when a step (a factor included) leaves 64 bits.
    fn checked(expr: &ValueExpr, columns: &[ColumnValues], i: usize) -> Option<i64> {
        match expr {
            ValueExpr::Column(c) => Some(match &columns[*c] {
                ColumnValues::I32(v) => i64::from(v[i]),
                ColumnValues::I64(v) => v[i],
                ColumnValues::Bytes { .. } => return None,
            }),
            ValueExpr::Literal(v) => Some(*v),
            ValueExpr::Rescale { child, factor } => {
                checked(child, columns, i)?.checked_mul(*factor)
            }
            ValueExpr::Binary {
                op,
                left,
                right,
                left_factor,
                right_factor,
            } => {
                let l = checked(left, columns, i)?.checked_mul(*left_factor)?;
                let r = checked(right, columns, i)?.checked_mul(*right_factor)?;
                match op {
                    ArithOp::Add => l.checked_add(r),
                    ArithOp::Sub => l.checked_sub(r),
                    ArithOp::Mul => l.checked_mul(r),
                }
            }
        }
    }

    /// The compiled trees give each tree's values, tuple by tuple one checked step at
    /// a time, wherever no step of any tree overflows 64 bits, and say so exactly where
    /// one does; shared subtrees and repeated trees included.
    #[test]
    fn compiled_trees_agree_with_each_tree_evaluated_alone() {
        let mut rng = ChaCha8Rng::seed_from_u64(0x9e0);
        let n = 3000;
        let (mut narrow_blocks, mut wide_blocks) = (0, 0);
        for case in 0..200 {
            let big = case % 4 == 0;
            let columns = [
                ColumnValues::I64(
                    (0..n)
                        .map(|_| rng.random_range(-1_000_000..1_000_000))
                        .collect(),
                ),
                ColumnValues::I32((0..n).map(|_| rng.random()).collect()),
                ColumnValues::I64(
                    (0..n)
                        .map(|_| {
                            if big {
                                rng.random()
                            } else {
                                rng.random_range(-99..99)
                            }
                        })
                        .collect(),
                ),
            ];
            let of = |c: usize| columns.get(c);
            let mut trees: Vec<ValueExpr> = (0..rng.random_range(1..5))
                .map(|_| tree(&mut rng, 3))
                .collect();
            trees.push(trees[0].clone());
            let mut program = Program::compile(&trees);
            let mut start = 0;
            while start < n {
                let len = rng.random_range(1..=super::super::BLOCK).min(n - start);
                let fits = program.eval(&of, start, len).expect("eval");
                let want: Option<Vec<Vec<i64>>> = (trees.iter())
                    .map(|t| {
                        (start..start + len)
                            .map(|i| checked(t, &columns, i))
                            .collect()
                    })
                    .collect();
                assert_eq!(fits, want.is_some(), "case {case}: {trees:?}");
                let Some(want) = want else {
                    wide_blocks += 1;
                    start += len;
                    continue;
                };
                narrow_blocks += 1;
                for (v, want) in want.iter().enumerate() {
                    let got = program.values(v, &of, start, len).expect("values");
                    assert_eq!(got, &want[..], "case {case} tree {v}: {:?}", trees[v]);
                }
                start += len;
            }
        }
        assert!(
            narrow_blocks > 100 && wide_blocks > 10,
            "{narrow_blocks} / {wide_blocks}"
        );
    }
}
