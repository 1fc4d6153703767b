//! `CScanExec`: a cooperative scan. Registers a `coopscan_runtime::CScan` with the
//! table's shared [`Runtime`] (one ABM for all queries on the table) and emits chunks
//! in whatever order the ABM delivers them. It declares no output ordering.
//!
//! Each `execute` registers one CScan at once (so queries are admitted in the order they
//! start) and moves it to a feeder thread, because `next_chunk` blocks. The chunk stays
//! pinned until its tuples are handed to the consumer; when the consumer is gone the
//! thread stops and drops the CScan, which unregisters it from the ABM.

use std::fmt;
use std::sync::Arc;

use coopscan_runtime::{CScan, Runtime};
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::error::Result;
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_plan::{DisplayAs, DisplayFormatType, ExecutionPlan, PlanProperties};

use crate::error::external;
use crate::feed::{spawn_feeder, BatchSink};
use crate::plan_common::{Order, ScanCore};
use crate::query_tag::QueryTag;

pub struct CScanExec {
    core: ScanCore,
    runtime: Arc<Runtime>,
    properties: Arc<PlanProperties>,
}

impl fmt::Debug for CScanExec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CScanExec")
            .field("core", &self.core)
            .finish()
    }
}

impl CScanExec {
    pub fn new(core: ScanCore, runtime: Arc<Runtime>) -> CScanExec {
        let properties = core.properties(Order::Any);
        CScanExec {
            core,
            runtime,
            properties,
        }
    }

    pub fn core(&self) -> &ScanCore {
        &self.core
    }
}

/// Takes chunks from the ABM until the scan is finished or the consumer is gone.
fn produce(core: &ScanCore, mut scan: CScan, sink: &BatchSink) -> Result<()> {
    // Checked before asking for another chunk: a cancelled query stops competing for
    // the buffer as soon as it has delivered its current chunk.
    while !sink.is_closed() {
        let Some(chunk) = scan.next_chunk().map_err(external)? else {
            return Ok(());
        };
        let decoded = chunk.batch().map_err(external)?;
        core.counters.chunk_delivered(decoded.num_rows());
        let batch = core.shape.assemble(&decoded, &chunk.rows())?;
        // The guard (the pin) lives until the consumer has taken the tuples.
        if !sink.send(batch) {
            return Ok(());
        }
    }
    Ok(())
}

impl DisplayAs for CScanExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.core.fmt_as("CScanExec", f)
    }
}

impl ExecutionPlan for CScanExec {
    fn name(&self) -> &str {
        "CScanExec"
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
        let tag = context
            .session_config()
            .get_extension::<QueryTag>()
            .map(|t| t.0);
        let scan = self
            .runtime
            .register_tagged(
                self.core.ranges.clone(),
                self.core.shape.storage_projection.clone(),
                tag,
            )
            .map_err(external)?;
        let running = self.core.counters.scan_started();
        let name = match scan.id() {
            Some(id) => format!("coopscan-cscan-{}", id.0),
            None => "coopscan-cscan".into(),
        };
        let core = self.core.clone();
        spawn_feeder(
            name,
            core.schema(),
            context.session_config().batch_size(),
            move |sink| {
                // Dropped after `produce` has dropped (unregistered) the scan.
                let _running = running;
                produce(&core, scan, sink)
            },
        )
    }
}
