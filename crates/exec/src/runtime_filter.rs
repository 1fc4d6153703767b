//! Filters a join fills in while the query runs (DataFusion's dynamic filters: the
//! build side's keys, pushed to the probe side's scan), applied to a scan's batches.
//!
//! A filter is worth its CPU only where it is cheap and drops tuples. Before the join
//! has built its side the filter is `true` and costs nothing. Once real, it is applied
//! only if it is made of comparisons and IN lists (the build side's key bounds, and
//! its keys when there are few: TPC-H Q18's 57 orders); a filter that looks tuples up
//! in the join's hash table costs what the join's own probe costs, so it is skipped
//! (measured: TPC-H Q4 took 1.6 × as long with it on 2 cores, 1.9 × on 16). A filter
//! that passes most of what a stream has delivered is dropped for the rest of that
//! stream.
//!
//! A partitioned join routes each tuple to its partition's keys (`CASE hash(key) % n
//! WHEN 0 THEN keys₀ … END`): hashing every tuple is what makes a lookup costly, so
//! such a filter is applied as the union of its branches ([`unrouted`]), one IN list
//! of every partition's keys — TPC-H Q17's 204 parts when its semi join was
//! partitioned, which cut its subquery's aggregation from 6 M tuples to 6 000 (on few
//! cores that join is now built on one partition and hands over the same keys as one
//! list itself: `query_session_config`).

use std::sync::Arc;

use datafusion::arrow::datatypes::SchemaRef;
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::error::Result;
use datafusion::execution::SendableRecordBatchStream;
use datafusion::logical_expr::Operator;
use datafusion::physical_expr::expressions::{
    in_list, lit, BinaryExpr, CaseExpr, CastExpr, Column, DynamicFilterPhysicalExpr, InListExpr,
    IsNotNullExpr, IsNullExpr, Literal, NotExpr,
};
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_plan::filter::batch_filter;
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::scalar::ScalarValue;
use futures::StreamExt;

/// Tuples a filter is tried on before its pass rate decides whether it stays.
const TRIAL_ROWS: usize = 1 << 16;
/// A filter passing more than this share of its trial is dropped.
const KEEP_BELOW_SHARE: f64 = 0.8;
/// The most branches of a routed filter applied as their disjunction when they are not
/// all IN lists of one key (each branch is evaluated on every tuple).
const MAX_UNION_BRANCHES: usize = 4;

/// Whether `filter` is one DataFusion fills in while the query runs.
pub fn is_dynamic(filter: &Arc<dyn PhysicalExpr>) -> bool {
    filter.is::<DynamicFilterPhysicalExpr>()
}

/// One filter of one stream and what it has done so far.
struct Trial {
    filter: Arc<dyn PhysicalExpr>,
    /// The probe side's schema (for building the merged IN list).
    schema: SchemaRef,
    /// What the filter said last, and what is applied for it ([`unrouted`]): a join
    /// updates its filter once, so this is worked out once.
    applied: Option<(Arc<dyn PhysicalExpr>, Arc<dyn PhysicalExpr>)>,
    /// Tuples it was evaluated on, and those it passed, since it became real.
    seen: usize,
    passed: usize,
    dropped: bool,
}

impl Trial {
    fn apply(&mut self, batch: RecordBatch) -> Result<RecordBatch> {
        if self.dropped {
            return Ok(batch);
        }
        let Some(current) = self.current()? else {
            return Ok(batch);
        };
        if !cheap(&current) {
            self.dropped = true;
            return Ok(batch);
        }
        let rows = batch.num_rows();
        let kept = batch_filter(&batch, &current)?;
        self.seen = self.seen.saturating_add(rows);
        self.passed = self.passed.saturating_add(kept.num_rows());
        if self.seen >= TRIAL_ROWS && self.passed as f64 > self.seen as f64 * KEEP_BELOW_SHARE {
            self.dropped = true;
        }
        Ok(kept)
    }

    /// What the filter says now, as applied ([`unrouted`], a dynamic filter only: a
    /// static one is applied as it is); `None` while it passes everything (its
    /// placeholder `true` before the join has built).
    fn current(&mut self) -> Result<Option<Arc<dyn PhysicalExpr>>> {
        let Some(dynamic) = self.filter.downcast_ref::<DynamicFilterPhysicalExpr>() else {
            return Ok(Some(Arc::clone(&self.filter)));
        };
        let said = dynamic.current()?;
        let applied = match &self.applied {
            Some((last, applied)) if Arc::ptr_eq(last, &said) => Arc::clone(applied),
            _ => {
                let applied = unrouted(Arc::clone(&said), &self.schema)?;
                self.applied = Some((said, Arc::clone(&applied)));
                applied
            }
        };
        Ok((!is_true(&applied)).then_some(applied))
    }
}

fn is_true(expr: &Arc<dyn PhysicalExpr>) -> bool {
    literal(expr) == Some(true)
}

fn literal(expr: &Arc<dyn PhysicalExpr>) -> Option<bool> {
    match expr.downcast_ref::<Literal>()?.value() {
        ScalarValue::Boolean(Some(b)) => Some(*b),
        _ => None,
    }
}

/// `filter` with every `CASE` in it replaced by the union of its branches, where that
/// union is cheap: one IN list when every branch is an IN list of the same key (alone
/// or beside its bounds), else their disjunction of at most [`MAX_UNION_BRANCHES`].
///
/// A tuple a `CASE` passes, the branch it took passes, so the union passes it too:
/// more tuples may pass, never fewer. That is safe only for a dynamic filter, which
/// prunes ahead of an operator that applies the exact condition itself (a join's
/// probe, a TopK): [`Trial::current`] applies it to those only.
fn unrouted(filter: Arc<dyn PhysicalExpr>, schema: &SchemaRef) -> Result<Arc<dyn PhysicalExpr>> {
    let rewritten = filter.transform_up(|expr| {
        let Some(case) = expr.downcast_ref::<CaseExpr>() else {
            return Ok(Transformed::no(expr));
        };
        let branches = (case
            .when_then_expr()
            .iter()
            .map(|(_, then)| Arc::clone(then)))
        .chain(case.else_expr().cloned());
        Ok(match union(branches.collect(), schema)? {
            Some(union) => Transformed::yes(union),
            None => Transformed::no(expr),
        })
    })?;
    Ok(rewritten.data)
}

/// One filter passing what any of `branches` passes, if a cheap one exists.
fn union(
    branches: Vec<Arc<dyn PhysicalExpr>>,
    schema: &SchemaRef,
) -> Result<Option<Arc<dyn PhysicalExpr>>> {
    if branches.iter().any(is_true) {
        return Ok(Some(lit(true)));
    }
    let live: Vec<_> = (branches.into_iter())
        .filter(|b| literal(b) != Some(false))
        .collect();
    if live.is_empty() {
        return Ok(Some(lit(false)));
    }
    if let Some(merged) = merged_in_list(&live, schema)? {
        return Ok(Some(merged));
    }
    if live.len() > MAX_UNION_BRANCHES || !live.iter().all(cheap) {
        return Ok(None);
    }
    Ok(live
        .into_iter()
        .reduce(|a, b| Arc::new(BinaryExpr::new(a, Operator::Or, b)) as _))
}

/// One IN list of all `branches`' values when each is an IN list (not negated) of the
/// same expression, alone or ANDed with other conditions (a join's key bounds, which
/// the list implies).
fn merged_in_list(
    branches: &[Arc<dyn PhysicalExpr>],
    schema: &SchemaRef,
) -> Result<Option<Arc<dyn PhysicalExpr>>> {
    let lists: Option<Vec<&InListExpr>> = branches.iter().map(membership).collect();
    let Some(lists) = lists else {
        return Ok(None);
    };
    let key = lists[0].expr();
    if lists.iter().any(|l| l.negated() || l.expr() != key) {
        return Ok(None);
    }
    let values = lists
        .iter()
        .flat_map(|l| l.list().iter().cloned())
        .collect();
    Ok(Some(in_list(Arc::clone(key), values, &false, schema)?))
}

/// The IN list a branch requires: the branch itself, or a side of its AND.
fn membership(branch: &Arc<dyn PhysicalExpr>) -> Option<&InListExpr> {
    if let Some(list) = branch.downcast_ref::<InListExpr>() {
        return Some(list);
    }
    let and = branch.downcast_ref::<BinaryExpr>()?;
    if *and.op() != Operator::And {
        return None;
    }
    membership(and.right()).or_else(|| membership(and.left()))
}

/// Whether `expr` is only comparisons, boolean logic and IN lists over columns and
/// literals: a few operations per tuple. Anything else (a hash-table lookup, a `CASE`
/// over a partitioned join's partitions) is not.
fn cheap(expr: &Arc<dyn PhysicalExpr>) -> bool {
    let known = expr.is::<BinaryExpr>()
        || expr.is::<Column>()
        || expr.is::<Literal>()
        || expr.is::<InListExpr>()
        || expr.is::<IsNullExpr>()
        || expr.is::<IsNotNullExpr>()
        || expr.is::<NotExpr>()
        || expr.is::<CastExpr>();
    known && expr.children().into_iter().all(cheap)
}

/// `stream` with `filters` applied to each batch (see the module's text).
pub fn filtered(
    stream: SendableRecordBatchStream,
    filters: &[Arc<dyn PhysicalExpr>],
) -> SendableRecordBatchStream {
    if filters.is_empty() {
        return stream;
    }
    let schema = stream.schema();
    let mut trials: Vec<Trial> = (filters.iter())
        .map(|f| Trial {
            filter: Arc::clone(f),
            schema: Arc::clone(&schema),
            applied: None,
            seen: 0,
            passed: 0,
            dropped: false,
        })
        .collect();
    let batches = stream.map(move |batch| {
        trials
            .iter_mut()
            .try_fold(batch?, |batch, trial| trial.apply(batch))
    });
    Box::pin(RecordBatchStreamAdapter::new(schema, batches))
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::{Int64Array, RecordBatch};
    use datafusion::arrow::datatypes::{DataType, Field, Schema};
    use datafusion::physical_expr::expressions::{col, in_list, lit, CaseExpr};
    use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
    use futures::TryStreamExt;

    fn schema() -> Arc<Schema> {
        Arc::new(Schema::new(vec![Field::new("k", DataType::Int64, false)]))
    }

    /// Batches of `rows` keys each, 0.., through `filters`, as the kept keys.
    async fn run(filters: &[Arc<dyn PhysicalExpr>], batches: usize, rows: i64) -> Vec<i64> {
        let schema = schema();
        let data: Vec<Result<RecordBatch>> = (0..batches as i64)
            .map(|b| {
                let keys = Int64Array::from_iter_values(b * rows..(b + 1) * rows);
                Ok(RecordBatch::try_new(
                    Arc::clone(&schema),
                    vec![Arc::new(keys)],
                )?)
            })
            .collect();
        let stream = Box::pin(RecordBatchStreamAdapter::new(
            Arc::clone(&schema),
            futures::stream::iter(data),
        ));
        let out: Vec<RecordBatch> = filtered(stream, filters).try_collect().await.unwrap();
        out.iter()
            .flat_map(|b| {
                let keys = b.column(0).as_any().downcast_ref::<Int64Array>().unwrap();
                keys.values().to_vec()
            })
            .collect()
    }

    fn dynamic(
        inner: Arc<dyn PhysicalExpr>,
    ) -> (Arc<DynamicFilterPhysicalExpr>, Arc<dyn PhysicalExpr>) {
        let key = col("k", &schema()).unwrap();
        let filter = Arc::new(DynamicFilterPhysicalExpr::new(vec![key], inner));
        let as_expr: Arc<dyn PhysicalExpr> = Arc::clone(&filter) as _;
        (filter, as_expr)
    }

    fn keys_in(keys: &[i64]) -> Arc<dyn PhysicalExpr> {
        let list = keys.iter().map(|&k| lit(k)).collect();
        in_list(col("k", &schema()).unwrap(), list, &false, &schema()).unwrap()
    }

    #[tokio::test]
    async fn a_built_cheap_filter_drops_tuples_a_placeholder_or_a_costly_one_does_not() {
        let (placeholder, expr) = dynamic(lit(true));
        assert!(is_dynamic(&expr));
        assert_eq!(run(&[Arc::clone(&expr)], 2, 4).await.len(), 8);
        placeholder.update(keys_in(&[1, 6, 40])).unwrap();
        assert_eq!(run(&[expr], 2, 4).await, [1, 6]);
        // A CASE of many branches that are not IN lists is not cheap: every tuple passes.
        let (_, costly) = dynamic(routed(5, |p| key_cmp(Operator::Eq, p)));
        assert_eq!(run(&[costly], 2, 4).await.len(), 8);
    }

    /// `k` compared with `value` by `op`.
    fn key_cmp(op: Operator, value: i64) -> Arc<dyn PhysicalExpr> {
        Arc::new(BinaryExpr::new(
            col("k", &schema()).unwrap(),
            op,
            lit(value),
        ))
    }

    /// What a partitioned join of `partitions` pushes: `CASE k % partitions WHEN p THEN
    /// branch(p) … ELSE false END`.
    fn routed(
        partitions: i64,
        branch: impl Fn(i64) -> Arc<dyn PhysicalExpr>,
    ) -> Arc<dyn PhysicalExpr> {
        let route = key_cmp(Operator::Modulo, partitions);
        let arms = (0..partitions).map(|p| (lit(p), branch(p))).collect();
        Arc::new(CaseExpr::try_new(Some(route), arms, Some(lit(false))).unwrap())
    }

    /// Partition `p`'s keys among `keys` (routed by `k % partitions`), as a join's
    /// branch: its bounds AND its IN list.
    fn partition_keys(keys: &[i64], partitions: i64, p: i64) -> Arc<dyn PhysicalExpr> {
        let mine: Vec<i64> = keys
            .iter()
            .copied()
            .filter(|k| k % partitions == p)
            .collect();
        if mine.is_empty() {
            return lit(false);
        }
        let low = key_cmp(Operator::GtEq, *mine.iter().min().unwrap());
        let high = key_cmp(Operator::LtEq, *mine.iter().max().unwrap());
        let bounds = Arc::new(BinaryExpr::new(low, Operator::And, high));
        Arc::new(BinaryExpr::new(bounds, Operator::And, keys_in(&mine)))
    }

    #[tokio::test]
    async fn a_partitioned_joins_filter_is_applied_as_one_in_list_of_every_partitions_keys() {
        let keys = [1, 6, 7, 12, 40];
        let (_, expr) = dynamic(routed(3, |p| partition_keys(&keys, 3, p)));
        assert_eq!(run(&[Arc::clone(&expr)], 4, 8).await, [1, 6, 7, 12]);
        let said = expr.downcast_ref::<DynamicFilterPhysicalExpr>().unwrap();
        let applied = unrouted(said.current().unwrap(), &schema()).unwrap();
        let list = applied.downcast_ref::<InListExpr>().expect("one IN list");
        assert_eq!(list.len(), keys.len());
    }

    #[tokio::test]
    async fn a_routed_filter_of_other_branches_is_their_disjunction_while_they_are_few() {
        // Partition p keeps the keys below 3 + p: a superset of what the CASE keeps.
        let few = routed(3, |p| key_cmp(Operator::Lt, 3 + p));
        let (_, expr) = dynamic(few);
        assert_eq!(run(&[expr], 1, 8).await, [0, 1, 2, 3, 4]);
        // Past MAX_UNION_BRANCHES the CASE stays, not cheap: every tuple passes.
        let partitions = MAX_UNION_BRANCHES as i64 + 1;
        let (_, many) = dynamic(routed(partitions, |p| key_cmp(Operator::Lt, 3 + p)));
        assert_eq!(run(&[many], 1, 8).await.len(), 8);
        // A partition whose build was canceled (ELSE true): nothing can be ruled out.
        let route = key_cmp(Operator::Modulo, 2);
        let arms = vec![(lit(0i64), keys_in(&[2]))];
        let canceled = CaseExpr::try_new(Some(route), arms, Some(lit(true))).unwrap();
        let (_, expr) = dynamic(Arc::new(canceled));
        assert_eq!(run(&[expr], 1, 8).await.len(), 8);
    }

    #[tokio::test]
    async fn a_filter_that_passes_most_of_its_trial_is_dropped() {
        let rows = TRIAL_ROWS as i64;
        // Passes everything but key 0 during the trial, then drops everything: applied
        // for the trial's batch only.
        let most: Vec<i64> = (1..rows).chain([rows + rows / 2]).collect();
        let (_, expr) = dynamic(keys_in(&most));
        let kept = run(&[expr], 2, rows).await;
        assert_eq!(
            kept.len() as i64,
            (rows - 1) + rows,
            "the second batch passed whole"
        );
        // A selective one stays: only its keys in both batches.
        let (_, expr) = dynamic(keys_in(&[3, rows + 3]));
        assert_eq!(run(&[expr], 2, rows).await, [3, rows + 3]);
    }
}
