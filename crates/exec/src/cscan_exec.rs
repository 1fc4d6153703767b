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

use coopscan_runtime::{CScan, Runtime};
use datafusion::error::Result;
use datafusion::execution::{SendableRecordBatchStream, TaskContext};

use crate::error::external;
use crate::feed::{spawn_feeder, BatchSink};
use crate::leaf_plan::{ChunkSource, LeafScanExec};
use crate::plan_common::{Order, ScanCore};
use crate::query_tag::QueryTag;

/// The cooperative scan: a leaf plan whose chunks come from the table's shared
/// [`Runtime`] (one ABM for all queries on the table), in any order.
pub type CScanExec = LeafScanExec<Runtime>;

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

impl ChunkSource for Runtime {
    const NAME: &'static str = "CScanExec";
    const ORDER: Order = Order::Any;

    fn execute(
        self: Arc<Self>,
        core: &ScanCore,
        context: Arc<TaskContext>,
    ) -> Result<SendableRecordBatchStream> {
        let tag = context
            .session_config()
            .get_extension::<QueryTag>()
            .map(|t| t.0);
        let running = core.counters.scan_started();
        let core = core.clone();
        spawn_feeder(
            "coopscan-cscan".into(),
            core.schema(),
            &context,
            move |sink| {
                // Dropped after `produce` has dropped (unregistered) the scan.
                let _running = running;
                let scan = self
                    .register_tagged(
                        core.ranges.clone().into(),
                        core.shape.storage_projection.clone(),
                        tag,
                    )
                    .map_err(external)?;
                produce(&core, scan, sink)
            },
        )
    }
}
