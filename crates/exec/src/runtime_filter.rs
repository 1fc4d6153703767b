//! Filters a join fills in while the query runs (DataFusion's dynamic filters: the
//! build side's keys, pushed to the probe side's scan), applied to a scan's batches.
//!
//! A filter is worth its CPU only where it is cheap and drops tuples. Before the join
//! has built its side the filter is `true` and costs nothing. Once real, it is applied
//! only while it is made of comparisons and IN lists (the build side's key bounds, and
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
