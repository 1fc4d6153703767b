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
use datafusion::physical_plan::ExecutionPlan;

pub use expr::NarrowDecimalExpr;
pub(crate) use program::compile_value;
use program::Program;

use crate::plan_exprs::rewrite_expressions;

/// The rule; add it with [`crate::query_session`] (sessions of this crate have it).
#[derive(Debug, Default)]
pub struct NarrowDecimals;

impl PhysicalOptimizerRule for NarrowDecimals {
    fn optimize(
        &self,
        plan: Arc<dyn ExecutionPlan>,
        _config: &ConfigOptions,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        // Projections and aggregate arguments: a filter's arithmetic is rare and cheap.
        plan.transform_up(|node| rewrite_expressions(node, &narrow, false))
            .map(|t| t.data)
    }

    fn name(&self) -> &str {
        "narrow_decimals"
    }

    fn schema_check(&self) -> bool {
        true
    }
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
