//! The plan nodes our physical optimizer rules rewrite expressions in — projections,
//! aggregate functions' arguments and, where a rule asks for every expression, filters,
//! group keys and aggregate `FILTER` clauses — rebuilt around the rewritten
//! expressions. Each rule supplies only its rewrite of one expression.

use std::sync::Arc;

use datafusion::arrow::datatypes::Schema;
use datafusion::common::tree_node::Transformed;
use datafusion::common::Result;
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_plan::aggregates::{AggregateExec, PhysicalGroupBy};
use datafusion::physical_plan::filter::{FilterExec, FilterExecBuilder};
use datafusion::physical_plan::projection::{ProjectionExec, ProjectionExpr};
use datafusion::physical_plan::ExecutionPlan;

/// A rule's rewrite of one expression evaluated over `schema` (its node's input).
pub(crate) type Rewrite<'a> =
    &'a dyn Fn(&Arc<dyn PhysicalExpr>, &Schema) -> Result<Transformed<Arc<dyn PhysicalExpr>>>;

/// `node` with `rewrite` applied to its expressions when it is a projection or an
/// aggregation (its functions' arguments; with `everywhere` also its group keys and
/// `FILTER` clauses) or, with `everywhere`, a filter; unchanged otherwise or when
/// nothing changed.
pub(crate) fn rewrite_expressions(
    node: Arc<dyn ExecutionPlan>,
    rewrite: Rewrite<'_>,
    everywhere: bool,
) -> Result<Transformed<Arc<dyn ExecutionPlan>>> {
    let rewritten = if let Some(projection) = node.downcast_ref::<ProjectionExec>() {
        rewrite_projection(projection, rewrite)?
    } else if let Some(aggregate) = node.downcast_ref::<AggregateExec>() {
        let keys = if everywhere {
            rewrite_keys_and_filters(aggregate, rewrite)?
        } else {
            None
        };
        let aggregate = keys.as_ref().map_or(aggregate, |k| k);
        let functions = rewrite_aggregate(aggregate, rewrite)?;
        match (functions, keys) {
            (Some(plan), _) => Some(plan),
            (None, Some(keys)) => Some(Arc::new(keys) as Arc<dyn ExecutionPlan>),
            (None, None) => None,
        }
    } else if let Some(filter) = node.downcast_ref::<FilterExec>().filter(|_| everywhere) {
        rewrite_filter(filter, rewrite)?
    } else {
        None
    };
    Ok(rewritten.map_or_else(|| Transformed::no(node), Transformed::yes))
}

fn rewrite_projection(
    projection: &ProjectionExec,
    rewrite: Rewrite<'_>,
) -> Result<Option<Arc<dyn ExecutionPlan>>> {
    let schema = projection.input().schema();
    let mut changed = false;
    let exprs: Vec<ProjectionExpr> = projection
        .expr()
        .iter()
        .map(|p| {
            let expr = rewrite(&p.expr, &schema)?;
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

fn rewrite_filter(
    filter: &FilterExec,
    rewrite: Rewrite<'_>,
) -> Result<Option<Arc<dyn ExecutionPlan>>> {
    let predicate = rewrite(filter.predicate(), &filter.input().schema())?;
    if !predicate.transformed {
        return Ok(None);
    }
    let rebuilt = FilterExecBuilder::from(filter)
        .with_predicate(predicate.data)
        .build()?;
    Ok(Some(Arc::new(rebuilt)))
}

/// The aggregation with its group keys and `FILTER` clauses rewritten, if any was
/// (its functions and everything else as they were).
fn rewrite_keys_and_filters(
    aggregate: &AggregateExec,
    rewrite: Rewrite<'_>,
) -> Result<Option<AggregateExec>> {
    let schema = aggregate.input_schema();
    let mut changed = false;
    let mut rewrite_all = |exprs: &[(Arc<dyn PhysicalExpr>, String)]| {
        exprs
            .iter()
            .map(|(e, name)| {
                let e = rewrite(e, &schema)?;
                changed |= e.transformed;
                Ok((e.data, name.clone()))
            })
            .collect::<Result<Vec<_>>>()
    };
    let group_by = aggregate.group_expr();
    let keys = rewrite_all(group_by.expr())?;
    let null_keys = rewrite_all(group_by.null_expr())?;
    let filters = aggregate
        .filter_expr()
        .iter()
        .map(|f| {
            f.as_ref()
                .map(|f| {
                    let f = rewrite(f, &schema)?;
                    changed |= f.transformed;
                    Ok(f.data)
                })
                .transpose()
        })
        .collect::<Result<Vec<_>>>()?;
    if !changed {
        return Ok(None);
    }
    let group_by = PhysicalGroupBy::new(
        keys,
        null_keys,
        group_by.groups().to_vec(),
        group_by.has_grouping_set(),
    );
    let rebuilt = AggregateExec::try_new(
        *aggregate.mode(),
        group_by,
        aggregate.aggr_expr().to_vec(),
        filters,
        Arc::clone(aggregate.input()),
        schema,
    )?;
    Ok(Some(rebuilt.with_limit_options(aggregate.limit_options())))
}

/// The aggregation with its functions' arguments rewritten, if any was.
fn rewrite_aggregate(
    aggregate: &AggregateExec,
    rewrite: Rewrite<'_>,
) -> Result<Option<Arc<dyn ExecutionPlan>>> {
    let schema = aggregate.input_schema();
    let mut changed = false;
    let mut aggr_exprs = Vec::with_capacity(aggregate.aggr_expr().len());
    for function in aggregate.aggr_expr() {
        let mut args = Vec::new();
        let mut any = false;
        for arg in function.expressions() {
            let arg = rewrite(&arg, &schema)?;
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
