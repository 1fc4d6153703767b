//! `CScanExec`: a cooperative scan. Registers a `coopscan_runtime::CScan` with the
//! table's shared [`Runtime`] (one ABM for all queries on the table) and emits chunks
//! in whatever order the ABM delivers them. It declares no output ordering.
//!
//! Each `execute` starts a feeder thread (`next_chunk` blocks) that registers the CScan
//! when the consumer first polls the stream — not at `execute`: DataFusion executes a
//! join's probe side before it reads the build side, and a probe-side scan registered
//! early would hold an admission slot that the build side, another scan of the same
//! table, may need (a deadlock on small buffers; see `feed.rs`). Queries are admitted
//! in the order they start reading. The chunk stays
//! pinned only while it is decoded, never while the feeder waits for its consumer;
//! when the consumer is gone the thread stops and drops the CScan, which unregisters
//! it from the ABM.

use std::sync::Arc;

use coopscan_buffer::TableId;
use coopscan_runtime::{CScan, Runtime};
use datafusion::error::Result;
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::physical_plan::ExecutionPlan;

use crate::error::external;
use crate::feed::{spawn_feeder, BatchSink};
use crate::leaf_plan::{ChunkSource, LeafScanExec};
use crate::order_hint::InOrderHint;
use crate::plan_common::{Order, ScanCore};
use crate::query_tag::QueryTag;

/// One table of a shared [`Runtime`] (one buffer for all queries on all its tables):
/// where a cooperative scan's chunks come from.
pub struct Pooled {
    pub runtime: Arc<Runtime>,
    pub table: TableId,
}

/// The cooperative scan: a leaf plan whose chunks come from the shared [`Runtime`], in
/// any order.
pub type CScanExec = LeafScanExec<Pooled>;

/// A table of the shared [`Runtime`], read in table order: an in-order Scan whose
/// chunks come through the same buffer as the CScans' (2012 paper §2.3: Scan and CScan
/// in one pool). A plan that needs `_rowid` order gets it instead of a CScan and a sort.
pub struct InOrder(pub Arc<Pooled>);

impl std::fmt::Debug for InOrder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("InOrder(Runtime)")
    }
}

/// The ordered scan over the shared buffer.
pub type PooledScanExec = LeafScanExec<InOrder>;

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
        // The tuples are owned now: release the chunk before waiting for the consumer.
        // A consumer may leave this stream unread for a long time (a hash join reads
        // its build side first, possibly another scan of the same table); a pin held
        // meanwhile can make that other scan wait for a buffer that never frees up.
        drop(chunk);
        if !sink.send(batch) {
            return Ok(());
        }
    }
    Ok(())
}

impl ChunkSource for Pooled {
    const NAME: &'static str = "CScanExec";
    const ORDER: Order = Order::Any;

    fn execute(
        self: Arc<Self>,
        core: &ScanCore,
        context: Arc<TaskContext>,
    ) -> Result<SendableRecordBatchStream> {
        feed_from_pool(self, ScanOrder::Any, core, &context)
    }

    fn in_order(core: &ScanCore, source: &Arc<Self>) -> Option<Arc<dyn ExecutionPlan>> {
        let ordered = PooledScanExec::new(core.clone(), Arc::new(InOrder(Arc::clone(source))));
        Some(Arc::new(ordered))
    }
}

impl ChunkSource for InOrder {
    const NAME: &'static str = "PooledScanExec";
    const ORDER: Order = Order::RowId;

    fn execute(
        self: Arc<Self>,
        core: &ScanCore,
        context: Arc<TaskContext>,
    ) -> Result<SendableRecordBatchStream> {
        feed_from_pool(Arc::clone(&self.0), ScanOrder::InOrder, core, &context)
    }
}

/// Which order a scan over the shared buffer asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ScanOrder {
    Any,
    InOrder,
}

/// Starts the feeder of a scan over `source`: it registers on first poll (see the
/// module docs), tagged with the session's query tag.
fn feed_from_pool(
    source: Arc<Pooled>,
    order: ScanOrder,
    core: &ScanCore,
    context: &Arc<TaskContext>,
) -> Result<SendableRecordBatchStream> {
    let config = context.session_config();
    let tag = config.get_extension::<QueryTag>().map(|t| t.0);
    let order = if config.get_extension::<InOrderHint>().is_some() {
        ScanOrder::InOrder
    } else {
        order
    };
    let running = core.counters.scan_started();
    let core = core.clone();
    spawn_feeder(
        "coopscan-cscan".into(),
        core.schema(),
        context,
        move |sink| {
            // Dropped after `produce` has dropped (unregistered) the scan.
            let _running = running;
            let ranges = core.ranges.clone();
            let projection = core.shape.storage_projection.clone();
            let order = match order {
                ScanOrder::Any => coopscan_buffer::ScanOrder::Any,
                ScanOrder::InOrder => coopscan_buffer::ScanOrder::InOrder,
            };
            let scan = (source.runtime)
                .register_scan(source.table, ranges, projection, order, tag)
                .map_err(external)?;
            produce(&core, scan, sink)
        },
    )
}
