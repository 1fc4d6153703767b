//! `ScanExec`: the normal, in-order scan. Reads the chunks of its ranges one after
//! another straight from storage through the [`Device`], with no buffer manager —
//! the baseline the papers compare CScans against, and the scan for plans that need
//! table order.

use std::fmt;
use std::sync::Arc;

use coopscan_storage::device::Device;
use coopscan_storage::{Table, TableFiles};
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::error::Result;
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_plan::{DisplayAs, DisplayFormatType, ExecutionPlan, PlanProperties};

use crate::error::external;
use crate::feed::{spawn_feeder, BatchSink};
use crate::plan_common::{Order, ScanCore};

/// A table opened for direct (non-shared) reading.
pub struct DirectSource {
    pub table: Table,
    pub device: Arc<Device>,
    pub files: TableFiles,
}

impl fmt::Debug for DirectSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DirectSource")
            .field("table", &self.table.dir())
            .finish()
    }
}

#[derive(Debug)]
pub struct ScanExec {
    core: ScanCore,
    source: Arc<DirectSource>,
    properties: Arc<PlanProperties>,
}

impl ScanExec {
    pub fn new(core: ScanCore, source: Arc<DirectSource>) -> ScanExec {
        let properties = core.properties(Order::RowId);
        ScanExec {
            core,
            source,
            properties,
        }
    }

    pub fn core(&self) -> &ScanCore {
        &self.core
    }
}

/// Reads the chunks of `core.ranges` in table order and sends their tuples.
fn produce(core: &ScanCore, source: &DirectSource, sink: &BatchSink) -> Result<()> {
    let table = &source.table;
    for range in &core.ranges {
        for k in table.chunks_for_rows(range.clone()) {
            if sink.is_closed() {
                return Ok(());
            }
            let chunk = table.chunk(k).rows();
            let rows = chunk.start.max(range.start)..chunk.end.min(range.end);
            let decoded = table
                .read_chunk_batch(
                    &source.device,
                    &source.files,
                    k,
                    &core.shape.storage_projection,
                    Some(rows.clone()),
                )
                .map_err(external)?;
            core.counters.chunk_delivered(decoded.num_rows());
            let batch = core.shape.assemble(&decoded, &[rows])?;
            if !sink.send(batch) {
                return Ok(());
            }
        }
    }
    Ok(())
}

impl DisplayAs for ScanExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.core.fmt_as("ScanExec", f)
    }
}

impl ExecutionPlan for ScanExec {
    fn name(&self) -> &str {
        "ScanExec"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        &self.properties
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        Vec::new()
    }

    fn apply_expressions(
        &self,
        _f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> Result<TreeNodeRecursion>,
    ) -> Result<TreeNodeRecursion> {
        Ok(TreeNodeRecursion::Continue)
    }

    fn with_new_children(
        self: Arc<Self>,
        _children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        Ok(self)
    }

    fn execute(
        &self,
        _partition: usize,
        context: Arc<TaskContext>,
    ) -> Result<SendableRecordBatchStream> {
        let running = self.core.counters.scan_started();
        let (core, source) = (self.core.clone(), Arc::clone(&self.source));
        spawn_feeder(
            "coopscan-scan".into(),
            core.schema(),
            context.session_config().batch_size(),
            move |sink| {
                let _running = running;
                produce(&core, &source, sink)
            },
        )
    }
}
