//! Filters a join fills in while the query runs (DataFusion's dynamic filters: the
//! build side's keys, pushed to the probe side's scan), applied to a scan's batches.
//!
//! A filter is worth its CPU only where it drops tuples. Before the join has built its
//! side the filter is `true` and costs nothing; once it is real, a filter that passes
//! most of what a stream has delivered is dropped for the rest of that stream (TPC-H
//! Q5's joins pass nearly everything; Q7's, Q18's and Q20's drop most).

use std::sync::Arc;

use datafusion::arrow::record_batch::RecordBatch;
use datafusion::error::Result;
use datafusion::execution::SendableRecordBatchStream;
use datafusion::physical_expr::expressions::{DynamicFilterPhysicalExpr, Literal};
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
        if self.dropped || still_true(&self.filter)? {
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

/// Whether a dynamic filter is still its placeholder `true` (its join has not built).
fn still_true(filter: &Arc<dyn PhysicalExpr>) -> Result<bool> {
    let Some(dynamic) = filter.downcast_ref::<DynamicFilterPhysicalExpr>() else {
        return Ok(false);
    };
    let current = dynamic.current()?;
    Ok(current
        .downcast_ref::<Literal>()
        .is_some_and(|l| l.value() == &ScalarValue::Boolean(Some(true))))
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
