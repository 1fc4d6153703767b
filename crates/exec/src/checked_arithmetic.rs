//! Integer arithmetic that fails on overflow instead of wrapping.
//!
//! DataFusion evaluates `+`, `-` and `*` with arrow's wrapping kernels unless a
//! `BinaryExpr` carries `fail_on_overflow`, which its SQL planner never sets (its
//! `enable_ansi_mode` concerns only the Spark functions). So `select
//! sum(l_orderkey * 9223372036854775807) from lineitem` returned a wrapped number
//! where DuckDB and PostgreSQL raise an overflow error. [`CheckedArithmetic`] is a
//! physical optimizer rule that rebuilds every `+`, `-` and `*` of projections, filters
//! and aggregate arguments with `fail_on_overflow`, so arrow's checked kernels raise
//! "Arithmetic overflow" instead. Results that do not overflow are unchanged.
//!
//! Not covered (docs/reliability.md): the running total of `sum` over integers
//! (DataFusion's accumulator adds with wrapping) and expressions of join keys and
//! filters, window functions and sort keys.

use std::sync::Arc;

use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::common::Result;
use datafusion::logical_expr::Operator;
use datafusion::physical_expr::expressions::BinaryExpr;
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_optimizer::PhysicalOptimizerRule;
use datafusion::physical_plan::aggregates::AggregateExec;
use datafusion::physical_plan::filter::{FilterExec, FilterExecBuilder};
use datafusion::physical_plan::projection::{ProjectionExec, ProjectionExpr};
use datafusion::physical_plan::ExecutionPlan;

/// The rule; [`crate::query_session`] adds it before `NarrowDecimals`, so the
/// expression a narrowed one falls back to is checked too.
#[derive(Debug, Default)]
pub struct CheckedArithmetic;

impl PhysicalOptimizerRule for CheckedArithmetic {
    fn optimize(
        &self,
        plan: Arc<dyn ExecutionPlan>,
        _config: &ConfigOptions,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        plan.transform_up(check_node).map(|t| t.data)
    }

    fn name(&self) -> &str {
        "checked_arithmetic"
    }

    fn schema_check(&self) -> bool {
        true
    }
}

fn check_node(node: Arc<dyn ExecutionPlan>) -> Result<Transformed<Arc<dyn ExecutionPlan>>> {
    let rewritten = if let Some(projection) = node.downcast_ref::<ProjectionExec>() {
        check_projection(projection)?
    } else if let Some(filter) = node.downcast_ref::<FilterExec>() {
        check_filter(filter)?
    } else if let Some(aggregate) = node.downcast_ref::<AggregateExec>() {
        check_aggregate(aggregate)?
    } else {
        None
    };
    Ok(rewritten.map_or_else(|| Transformed::no(node), Transformed::yes))
}

fn check_projection(projection: &ProjectionExec) -> Result<Option<Arc<dyn ExecutionPlan>>> {
    let mut changed = false;
    let exprs: Vec<ProjectionExpr> = projection
        .expr()
        .iter()
        .map(|p| {
            let expr = checked(&p.expr)?;
            changed |= expr.transformed;
            Ok(ProjectionExpr {
                expr: expr.data,
                alias: p.alias.clone(),
            })
        })
        .collect::<Result<_>>()?;
    if !changed {
        return Ok(None);
    }
    let input = Arc::clone(projection.input());
    Ok(Some(Arc::new(ProjectionExec::try_new(exprs, input)?)))
}

fn check_filter(filter: &FilterExec) -> Result<Option<Arc<dyn ExecutionPlan>>> {
    let predicate = checked(filter.predicate())?;
    if !predicate.transformed {
        return Ok(None);
    }
    let rebuilt = FilterExecBuilder::from(filter)
        .with_predicate(predicate.data)
        .build()?;
    Ok(Some(Arc::new(rebuilt)))
}

fn check_aggregate(aggregate: &AggregateExec) -> Result<Option<Arc<dyn ExecutionPlan>>> {
    let mut changed = false;
    let mut aggr_exprs = Vec::with_capacity(aggregate.aggr_expr().len());
    for function in aggregate.aggr_expr() {
        let mut args = Vec::new();
        let mut any = false;
        for arg in function.expressions() {
            let arg = checked(&arg)?;
            any |= arg.transformed;
            args.push(arg.data);
        }
        let order_by = function
            .order_bys()
            .iter()
            .map(|s| Arc::clone(&s.expr))
            .collect();
        match any
            .then(|| function.with_new_expressions(args, order_by))
            .flatten()
        {
            Some(new) => {
                changed = true;
                aggr_exprs.push(Arc::new(new));
            }
            None => aggr_exprs.push(Arc::clone(function)),
        }
    }
    if !changed {
        return Ok(None);
    }
    Ok(Some(Arc::new(aggregate.with_new_aggr_exprs(aggr_exprs))))
}

/// `expr` with every `+`, `-` and `*` failing on overflow.
fn checked(expr: &Arc<dyn PhysicalExpr>) -> Result<Transformed<Arc<dyn PhysicalExpr>>> {
    Arc::clone(expr).transform_up(|e| {
        let Some(binary) = e.downcast_ref::<BinaryExpr>() else {
            return Ok(Transformed::no(e));
        };
        if !matches!(
            binary.op(),
            Operator::Plus | Operator::Minus | Operator::Multiply
        ) {
            return Ok(Transformed::no(e));
        }
        let rebuilt = BinaryExpr::new(
            Arc::clone(binary.left()),
            *binary.op(),
            Arc::clone(binary.right()),
        )
        .with_fail_on_overflow(true);
        Ok(Transformed::yes(Arc::new(rebuilt) as Arc<dyn PhysicalExpr>))
    })
}
