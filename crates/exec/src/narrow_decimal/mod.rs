//! Decimal arithmetic on 64-bit integers where the values allow it.
//!
//! DataFusion evaluates `+`, `-` and `*` on `Decimal128` columns with checked 128-bit
//! integer arithmetic, and its result types grow (DECIMAL(15,2) × DECIMAL(15,2) is
//! DECIMAL(31,4)). TPC-H's money columns hold values of at most eight digits, so
//! products and sums of a few of them fit in 64 bits many times over. SLOW (Q1 with
//! sixteen extra sums) spent about 60 % of its CPU in those 128-bit kernels
//! (docs/performance.md); DuckDB, the peer we are measured against, computes the same
//! decimals on 64-bit integers when they fit.
//!
//! [`NarrowDecimals`] is a physical optimizer rule: in projections and aggregate
//! arguments it replaces each maximal tree of decimal `+`, `-`, `*`, widening casts,
//! columns and literals by a [`NarrowDecimalExpr`], which evaluates the same scaled
//! integers in `i64` and returns the `Decimal128` array DataFusion would have: same
//! type (worked out as arrow's kernels do, and checked against DataFusion's declared
//! type at planning), same values (exact integer arithmetic at the same scales). If a
//! batch has nulls, a value that does not fit, or any step overflows, that batch is
//! evaluated by the original expression instead, so results and errors never change;
//! only the speed does.

mod expr;
mod leaf;
mod program;

use std::sync::Arc;

use datafusion::arrow::datatypes::Schema;
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::{Transformed, TreeNode, TreeNodeRecursion};
use datafusion::common::Result;
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_optimizer::PhysicalOptimizerRule;
use datafusion::physical_plan::aggregates::AggregateExec;
use datafusion::physical_plan::projection::{ProjectionExec, ProjectionExpr};
use datafusion::physical_plan::ExecutionPlan;

pub use expr::NarrowDecimalExpr;
use program::Program;

/// The rule; add it with [`crate::query_session`] (sessions of this crate have it).
#[derive(Debug, Default)]
pub struct NarrowDecimals;

impl PhysicalOptimizerRule for NarrowDecimals {
    fn optimize(
        &self,
        plan: Arc<dyn ExecutionPlan>,
        _config: &ConfigOptions,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        plan.transform_up(rewrite_node).map(|t| t.data)
    }

    fn name(&self) -> &str {
        "narrow_decimals"
    }

    fn schema_check(&self) -> bool {
        true
    }
}

fn rewrite_node(node: Arc<dyn ExecutionPlan>) -> Result<Transformed<Arc<dyn ExecutionPlan>>> {
    let rewritten = if let Some(projection) = node.downcast_ref::<ProjectionExec>() {
        rewrite_projection(projection)?
    } else if let Some(aggregate) = node.downcast_ref::<AggregateExec>() {
        rewrite_aggregate(aggregate)?
    } else {
        None
    };
    Ok(rewritten.map_or_else(|| Transformed::no(node), Transformed::yes))
}

/// The projection with its expressions narrowed, if any was.
fn rewrite_projection(projection: &ProjectionExec) -> Result<Option<Arc<dyn ExecutionPlan>>> {
    let schema = projection.input().schema();
    let mut changed = false;
    let exprs: Vec<ProjectionExpr> = projection
        .expr()
        .iter()
        .map(|p| {
            let expr = narrow(&p.expr, &schema)?;
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

/// The aggregation with its functions' arguments narrowed, if any was.
fn rewrite_aggregate(aggregate: &AggregateExec) -> Result<Option<Arc<dyn ExecutionPlan>>> {
    let schema = aggregate.input_schema();
    let mut changed = false;
    let mut aggr_exprs = Vec::with_capacity(aggregate.aggr_expr().len());
    for function in aggregate.aggr_expr() {
        let mut args = Vec::new();
        let mut narrowed = false;
        for arg in function.expressions() {
            let arg = narrow(&arg, &schema)?;
            narrowed |= arg.transformed;
            args.push(arg.data);
        }
        let order_by = function
            .order_bys()
            .iter()
            .map(|s| Arc::clone(&s.expr))
            .collect();
        let rebuilt = narrowed
            .then(|| function.with_new_expressions(args, order_by))
            .flatten();
        match rebuilt {
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

/// Replaces each maximal narrowable subtree of `expr` (top-down, so the largest wins).
fn narrow(
    expr: &Arc<dyn PhysicalExpr>,
    schema: &Schema,
) -> Result<Transformed<Arc<dyn PhysicalExpr>>> {
    Arc::clone(expr).transform_down(|e| {
        if e.is::<NarrowDecimalExpr>() {
            return Ok(Transformed::new(e, false, TreeNodeRecursion::Jump));
        }
        match Program::compile(&e, schema) {
            Some(program) => {
                let narrowed: Arc<dyn PhysicalExpr> = Arc::new(NarrowDecimalExpr::new(program, e));
                Ok(Transformed::new(narrowed, true, TreeNodeRecursion::Jump))
            }
            None => Ok(Transformed::no(e)),
        }
    })
}
