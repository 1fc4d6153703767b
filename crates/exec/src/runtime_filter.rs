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

use std::sync::Arc;

use datafusion::arrow::record_batch::RecordBatch;
use datafusion::error::Result;
use datafusion::execution::SendableRecordBatchStream;
use datafusion::physical_expr::expressions::{
    BinaryExpr, CastExpr, Column, DynamicFilterPhysicalExpr, InListExpr, IsNotNullExpr, IsNullExpr,
    Literal, NotExpr,
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

/// Whether `filter` is one DataFusion fills in while the query runs.
pub fn is_dynamic(filter: &Arc<dyn PhysicalExpr>) -> bool {
    filter.is::<DynamicFilterPhysicalExpr>()
}

/// One filter of one stream and what it has done so far.
struct Trial {
    filter: Arc<dyn PhysicalExpr>,
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
        let Some(current) = current(&self.filter)? else {
            return Ok(batch);
        };
        if !cheap(&current) {
            self.dropped = true;
            return Ok(batch);
        }
        let rows = batch.num_rows();
        let kept = batch_filter(&batch, &self.filter)?;
        self.seen = self.seen.saturating_add(rows);
        self.passed = self.passed.saturating_add(kept.num_rows());
        if self.seen >= TRIAL_ROWS && self.passed as f64 > self.seen as f64 * KEEP_BELOW_SHARE {
            self.dropped = true;
        }
        Ok(kept)
    }
}

/// What a dynamic filter says now; `None` while it is its placeholder `true` (its
/// join has not built yet).
fn current(filter: &Arc<dyn PhysicalExpr>) -> Result<Option<Arc<dyn PhysicalExpr>>> {
    let Some(dynamic) = filter.downcast_ref::<DynamicFilterPhysicalExpr>() else {
        return Ok(Some(Arc::clone(filter)));
    };
    let current = dynamic.current()?;
    let placeholder = (current.downcast_ref::<Literal>())
        .is_some_and(|l| l.value() == &ScalarValue::Boolean(Some(true)));
    Ok((!placeholder).then_some(current))
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
        // A CASE (what a partitioned join pushes) is not cheap: every tuple passes.
        let case =
            CaseExpr::try_new(None, vec![(keys_in(&[1]), lit(true))], Some(lit(false))).unwrap();
        let (_, costly) = dynamic(Arc::new(case));
        assert_eq!(run(&[costly], 2, 4).await.len(), 8);
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
