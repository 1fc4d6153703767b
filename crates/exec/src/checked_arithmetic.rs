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
//! Group keys and aggregate `FILTER` clauses are rewritten too; join keys, join filters
//! and window arguments reach the plan as projections. Floats are unaffected (their
//! checked kernels give infinities, as before); decimals were already checked; `sum`'s
//! running total is [`crate::checked_sum::CheckedSum`]'s. Not covered
//! (docs/reliability.md): sort keys, whose rewrite would have to reach the windows and
//! repartitions that require the same expressions.

use std::sync::Arc;

use datafusion::arrow::datatypes::Schema;
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::common::Result;
use datafusion::logical_expr::Operator;
use datafusion::physical_expr::expressions::BinaryExpr;
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_optimizer::PhysicalOptimizerRule;
use datafusion::physical_plan::ExecutionPlan;

use crate::plan_exprs::rewrite_expressions;

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
        let rewrite = |expr: &Arc<dyn PhysicalExpr>, _: &Schema| checked(expr);
        plan.transform_up(|node| rewrite_expressions(node, &rewrite, true))
            .map(|t| t.data)
    }

    fn name(&self) -> &str {
        "checked_arithmetic"
    }

    fn schema_check(&self) -> bool {
        true
    }
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
