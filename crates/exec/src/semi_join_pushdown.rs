//! [`PushSemiJoins`], a logical optimizer rule: a semi (or anti) join against the keys
//! an aggregation selects is moved below the inner joins and plain projections above
//! the table its keys come from.
//!
//! DataFusion turns `o_orderkey IN (SELECT l_orderkey … GROUP BY l_orderkey HAVING …)`
//! into a semi join on top of the query's join tree, so every row of that tree is built
//! first and then mostly dropped: in TPC-H Q18 the 6 M rows of customer ⋈ orders ⋈
//! lineitem, of which 399 pass. A semi join only keeps or drops rows of its left input
//! by their key, so where the key (and the join's other conditions on left columns)
//! comes from one input of an inner join, dropping those rows of that input first
//! gives the same rows. Below it the kept keys are few (a `HAVING` picks them), the
//! joins above get small build sides, and the hash join hands their keys to the scans
//! below as runtime filters. Only semi joins whose right side is an aggregation's
//! output are moved: `EXISTS` over a whole table (Q21's) can keep more rows than the
//! joins above it, which then are better done first.

use std::collections::HashSet;
use std::sync::Arc;

use datafusion::common::tree_node::Transformed;
use datafusion::common::{Column, Result};
use datafusion::logical_expr::{Expr, Join, JoinType, LogicalPlan, Projection};
use datafusion::optimizer::optimizer::ApplyOrder;
use datafusion::optimizer::{OptimizerConfig, OptimizerRule};

/// The rule; [`crate::query_session`] adds it after DataFusion's own.
#[derive(Debug, Default, Clone, Copy)]
pub struct PushSemiJoins;

impl OptimizerRule for PushSemiJoins {
    fn name(&self) -> &str {
        "push_semi_joins"
    }

    fn apply_order(&self) -> Option<ApplyOrder> {
        Some(ApplyOrder::TopDown)
    }

    fn rewrite(
        &self,
        plan: LogicalPlan,
        _config: &dyn OptimizerConfig,
    ) -> Result<Transformed<LogicalPlan>> {
        let LogicalPlan::Join(join) = &plan else {
            return Ok(Transformed::no(plan));
        };
        match pushed(join)? {
            Some(moved) => Ok(Transformed::yes(moved)),
            None => Ok(Transformed::no(plan)),
        }
    }
}

/// `join` moved as far down its left input as it goes, if it moves at all.
fn pushed(join: &Join) -> Result<Option<LogicalPlan>> {
    if !matches!(join.join_type, JoinType::LeftSemi | JoinType::LeftAnti)
        || join.null_aware
        || !aggregated(&join.right)
    {
        return Ok(None);
    }
    let needed = left_columns(join);
    let over = |input: &Arc<LogicalPlan>| -> Result<LogicalPlan> {
        let moved = with_inputs(join, Arc::clone(input), Arc::clone(&join.right))?;
        Ok(match pushed(&moved)? {
            Some(further) => further,
            None => LogicalPlan::Join(moved),
        })
    };
    Ok(match join.left.as_ref() {
        LogicalPlan::Projection(p) if passes_through(p, &needed) => {
            let input = over(&p.input)?;
            Some(LogicalPlan::Projection(Projection::try_new(
                p.expr.clone(),
                Arc::new(input),
            )?))
        }
        LogicalPlan::Join(inner) if inner.join_type == JoinType::Inner => {
            let within = |side: &LogicalPlan| needed.iter().all(|c| side.schema().has_column(c));
            let (left, right) = if within(&inner.left) {
                (Arc::new(over(&inner.left)?), Arc::clone(&inner.right))
            } else if within(&inner.right) {
                (Arc::clone(&inner.left), Arc::new(over(&inner.right)?))
            } else {
                return Ok(None);
            };
            Some(LogicalPlan::Join(with_inputs(inner, left, right)?))
        }
        _ => None,
    })
}

/// `join` over other inputs (its schema computed anew).
fn with_inputs(join: &Join, left: Arc<LogicalPlan>, right: Arc<LogicalPlan>) -> Result<Join> {
    Join::try_new(
        left,
        right,
        join.on.clone(),
        join.filter.clone(),
        join.join_type,
        join.join_constraint,
        join.null_equality,
        join.null_aware,
    )
}

/// The left input's columns that `join`'s keys and other conditions read.
fn left_columns(join: &Join) -> HashSet<Column> {
    let right = join.right.schema();
    let mut columns: HashSet<Column> = HashSet::new();
    for (left, _) in &join.on {
        columns.extend(left.column_refs().into_iter().cloned());
    }
    if let Some(filter) = &join.filter {
        let of_left = (filter.column_refs().into_iter()).filter(|c| !right.has_column(c));
        columns.extend(of_left.cloned());
    }
    columns
}

/// Whether each of `needed` is one of `projection`'s outputs as it is, a bare column.
fn passes_through(projection: &Projection, needed: &HashSet<Column>) -> bool {
    needed
        .iter()
        .all(|c| (projection.expr.iter()).any(|e| matches!(e, Expr::Column(own) if own == c)))
}

/// Whether `plan` is an aggregation's output, seen through aliases, projections and
/// filters (a `HAVING`).
fn aggregated(plan: &LogicalPlan) -> bool {
    match plan {
        LogicalPlan::Aggregate(a) => !a.group_expr.is_empty(),
        LogicalPlan::SubqueryAlias(s) => aggregated(&s.input),
        LogicalPlan::Projection(p) => aggregated(&p.input),
        LogicalPlan::Filter(f) => aggregated(&f.input),
        _ => false,
    }
}
