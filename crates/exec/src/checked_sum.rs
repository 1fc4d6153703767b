//! `sum` over integers that fails on overflow instead of wrapping.
//!
//! DataFusion's `sum` of BIGINT (and of smaller integers, widened to BIGINT) adds with
//! wrapping: `select sum(x)` over values whose total passes 2^63 returned a wrapped,
//! negative number with exit 0, where DuckDB (HUGEINT) and PostgreSQL (numeric) return
//! the exact total. [`CheckedSum`] is DataFusion's `Sum` with its integer accumulators
//! replaced by ones whose additions are checked ("Arithmetic overflow" instead of a
//! wrapped total); every other type, the planning properties (signature, return and
//! state types, statistics, rewrites) and `DISTINCT` stay DataFusion's own.
//! [`crate::query_session`] registers it under the name `sum`, over the built-in.
//! Totals that fit are unchanged.

use std::fmt::Debug;
use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, BooleanArray, PrimitiveArray};
use datafusion::arrow::datatypes::{
    ArrowNativeTypeOp, ArrowPrimitiveType, DataType, FieldRef, Int64Type, UInt64Type,
};
use datafusion::common::{Result, ScalarValue};
use datafusion::functions_aggregate::sum::Sum;
use datafusion::logical_expr::expr::AggregateFunction;
use datafusion::logical_expr::function::{AccumulatorArgs, StateFieldsArgs};
use datafusion::logical_expr::utils::AggregateOrderSensitivity;
use datafusion::logical_expr::{
    Accumulator, AggregateUDFImpl, Documentation, EmitTo, Expr, GroupsAccumulator, Operator,
    ReversedUDAF, SetMonotonicity, Signature, StatisticsArgs,
};

/// DataFusion's `sum`, checked for integers.
#[derive(Debug, Default, PartialEq, Eq, Hash)]
pub struct CheckedSum {
    inner: Sum,
}

/// Whether `sum` over `args` gets a checked accumulator: integer totals, not DISTINCT
/// (whose accumulator sums a set of values DataFusion keeps itself).
fn checked_type(args: &AccumulatorArgs) -> Option<IntegerTotal> {
    if args.is_distinct {
        return None;
    }
    match args.return_field.data_type() {
        DataType::Int64 => Some(IntegerTotal::Signed),
        DataType::UInt64 => Some(IntegerTotal::Unsigned),
        _ => None,
    }
}

#[derive(Clone, Copy)]
enum IntegerTotal {
    Signed,
    Unsigned,
}

impl AggregateUDFImpl for CheckedSum {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn signature(&self) -> &Signature {
        self.inner.signature()
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        self.inner.return_type(arg_types)
    }

    fn accumulator(&self, args: AccumulatorArgs) -> Result<Box<dyn Accumulator>> {
        match checked_type(&args) {
            Some(IntegerTotal::Signed) => Ok(Box::new(Total::<Int64Type>::default())),
            Some(IntegerTotal::Unsigned) => Ok(Box::new(Total::<UInt64Type>::default())),
            None => self.inner.accumulator(args),
        }
    }

    fn state_fields(&self, args: StateFieldsArgs) -> Result<Vec<FieldRef>> {
        self.inner.state_fields(args)
    }

    fn groups_accumulator_supported(&self, args: AccumulatorArgs) -> bool {
        self.inner.groups_accumulator_supported(args)
    }

    fn create_groups_accumulator(
        &self,
        args: AccumulatorArgs,
    ) -> Result<Box<dyn GroupsAccumulator>> {
        match checked_type(&args) {
            Some(IntegerTotal::Signed) => Ok(Box::new(GroupTotals::<Int64Type>::default())),
            Some(IntegerTotal::Unsigned) => Ok(Box::new(GroupTotals::<UInt64Type>::default())),
            None => self.inner.create_groups_accumulator(args),
        }
    }

    fn create_sliding_accumulator(&self, args: AccumulatorArgs) -> Result<Box<dyn Accumulator>> {
        // `Total` retracts too (window frames that slide).
        match checked_type(&args) {
            Some(_) => self.accumulator(args),
            None => self.inner.create_sliding_accumulator(args),
        }
    }

    fn reverse_expr(&self) -> ReversedUDAF {
        ReversedUDAF::Identical
    }

    fn order_sensitivity(&self) -> AggregateOrderSensitivity {
        self.inner.order_sensitivity()
    }

    fn documentation(&self) -> Option<&Documentation> {
        self.inner.documentation()
    }

    fn set_monotonicity(&self, data_type: &DataType) -> SetMonotonicity {
        self.inner.set_monotonicity(data_type)
    }

    fn simplify_expr_op_literal(
        &self,
        agg_function: &AggregateFunction,
        arg: &Expr,
        op: Operator,
        lit: &Expr,
        arg_is_left: bool,
    ) -> Result<Option<Expr>> {
        self.inner
            .simplify_expr_op_literal(agg_function, arg, op, lit, arg_is_left)
    }

    fn value_from_stats(&self, statistics_args: &StatisticsArgs) -> Option<ScalarValue> {
        self.inner.value_from_stats(statistics_args)
    }
}

/// One running total; `None` until a non-null value arrives (the sum of no values is
/// NULL).
#[derive(Debug)]
struct Total<T: ArrowPrimitiveType> {
    sum: Option<T::Native>,
    /// Values added and not retracted: a frame that slides past all its values sums to
    /// NULL again.
    count: u64,
}

impl<T: ArrowPrimitiveType> Default for Total<T> {
    fn default() -> Self {
        Total {
            sum: None,
            count: 0,
        }
    }
}

impl<T: ArrowPrimitiveType> Total<T>
where
    T::Native: ArrowNativeTypeOp,
{
    fn add_all(&mut self, values: &ArrayRef) -> Result<()> {
        let values = values.as_primitive::<T>();
        for v in values.iter().flatten() {
            self.sum = Some(self.sum.unwrap_or(T::Native::ZERO).add_checked(v)?);
            self.count += 1;
        }
        Ok(())
    }
}

impl<T: ArrowPrimitiveType + Debug> Accumulator for Total<T>
where
    T::Native: ArrowNativeTypeOp,
{
    fn update_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        self.add_all(&values[0])
    }

    fn merge_batch(&mut self, states: &[ArrayRef]) -> Result<()> {
        self.add_all(&states[0])
    }

    fn retract_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        let values = values[0].as_primitive::<T>();
        for v in values.iter().flatten() {
            self.sum = Some(self.sum.unwrap_or(T::Native::ZERO).sub_checked(v)?);
            self.count = self.count.saturating_sub(1);
        }
        Ok(())
    }

    fn supports_retract_batch(&self) -> bool {
        true
    }

    fn evaluate(&mut self) -> Result<ScalarValue> {
        let sum = self.sum.filter(|_| self.count > 0);
        ScalarValue::new_primitive::<T>(sum, &T::DATA_TYPE)
    }

    fn state(&mut self) -> Result<Vec<ScalarValue>> {
        Ok(vec![self.evaluate()?])
    }

    fn size(&self) -> usize {
        std::mem::size_of_val(self)
    }
}

/// Totals per group, and which groups have seen a value.
#[derive(Debug)]
struct GroupTotals<T: ArrowPrimitiveType> {
    sums: Vec<T::Native>,
    seen: Vec<bool>,
}

impl<T: ArrowPrimitiveType> Default for GroupTotals<T> {
    fn default() -> Self {
        GroupTotals {
            sums: Vec::new(),
            seen: Vec::new(),
        }
    }
}

impl<T: ArrowPrimitiveType> GroupTotals<T>
where
    T::Native: ArrowNativeTypeOp,
{
    fn add(
        &mut self,
        values: &ArrayRef,
        groups: &[usize],
        filter: Option<&BooleanArray>,
        total_groups: usize,
    ) -> Result<()> {
        self.sums.resize(total_groups, T::Native::ZERO);
        self.seen.resize(total_groups, false);
        let values = values.as_primitive::<T>();
        for (row, &group) in groups.iter().enumerate() {
            if values.is_null(row) || filter.is_some_and(|f| !f.is_valid(row) || !f.value(row)) {
                continue;
            }
            self.sums[group] = self.sums[group].add_checked(values.value(row))?;
            self.seen[group] = true;
        }
        Ok(())
    }

    fn take(&mut self, emit_to: EmitTo) -> ArrayRef {
        let sums = emit_to.take_needed(&mut self.sums);
        let seen = emit_to.take_needed(&mut self.seen);
        let totals: PrimitiveArray<T> = sums
            .into_iter()
            .zip(seen)
            .map(|(sum, seen)| seen.then_some(sum))
            .collect();
        Arc::new(totals)
    }
}

impl<T: ArrowPrimitiveType + Send + Sync> GroupsAccumulator for GroupTotals<T>
where
    T::Native: ArrowNativeTypeOp,
{
    fn update_batch(
        &mut self,
        values: &[ArrayRef],
        group_indices: &[usize],
        opt_filter: Option<&BooleanArray>,
        total_num_groups: usize,
    ) -> Result<()> {
        self.add(&values[0], group_indices, opt_filter, total_num_groups)
    }

    fn merge_batch(
        &mut self,
        values: &[ArrayRef],
        group_indices: &[usize],
        total_num_groups: usize,
    ) -> Result<()> {
        self.add(&values[0], group_indices, None, total_num_groups)
    }

    fn evaluate(&mut self, emit_to: EmitTo) -> Result<ArrayRef> {
        Ok(self.take(emit_to))
    }

    fn state(&mut self, emit_to: EmitTo) -> Result<Vec<ArrayRef>> {
        Ok(vec![self.take(emit_to)])
    }

    /// Each row its own group: the state of a sum is its value (NULL where filtered).
    fn convert_to_state(
        &self,
        values: &[ArrayRef],
        opt_filter: Option<&BooleanArray>,
    ) -> Result<Vec<ArrayRef>> {
        let values = values[0].as_primitive::<T>();
        let kept = |row: usize| opt_filter.is_none_or(|f| f.is_valid(row) && f.value(row));
        let state: PrimitiveArray<T> = (0..values.len())
            .map(|row| (kept(row) && values.is_valid(row)).then(|| values.value(row)))
            .collect();
        Ok(vec![Arc::new(state)])
    }

    fn size(&self) -> usize {
        self.sums.capacity() * std::mem::size_of::<T::Native>() + self.seen.capacity()
    }
}
