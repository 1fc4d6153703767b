//! `ScanExec`: the normal, in-order scan. Reads the chunks of its ranges one after
//! another straight from storage through the [`Device`], with no buffer manager —
//! the baseline the papers compare CScans against, and the scan for plans that need
//! table order.

use std::fmt;
use std::sync::Arc;

use coopscan_storage::device::Device;
use coopscan_storage::{Table, TableFiles};
use datafusion::error::Result;
use datafusion::execution::{SendableRecordBatchStream, TaskContext};

use crate::error::external;
use crate::feed::BatchSink;
use crate::leaf_plan::{ChunkSource, LeafScanExec};
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

/// The in-order scan: a leaf plan reading straight from storage.
pub type ScanExec = LeafScanExec<DirectSource>;

/// Reads the chunks of `core.ranges` in table order and sends their tuples.
fn produce(core: &ScanCore, source: &DirectSource, sink: &BatchSink) -> Result<()> {
    let table = &source.table;
    for range in core.ranges.ranges() {
        for k in table.chunks_for_rows(range.clone()) {
            if sink.is_closed() {
                return Ok(());
            }
            let chunk = table.chunk(k).rows();
            let rows = chunk.start.max(range.start)..chunk.end.min(range.end);
            let (device, files) = (&source.device, &source.files);
            let projection = &core.shape.storage_projection;
            let batch = match core.shape.decoding_filter() {
                Some(filter) => {
                    let selected = table
                        .read_chunk_selected(device, files, k, projection, Some(rows), filter)
                        .map_err(external)?;
                    core.counters.chunk_delivered(selected.batch.num_rows());
                    core.assemble_selected(&selected)?
                }
                None => {
                    let decoded = table
                        .read_chunk_batch(device, files, k, projection, Some(rows.clone()))
                        .map_err(external)?;
                    core.counters.chunk_delivered(decoded.num_rows());
                    core.assemble(&decoded, &[rows])?
                }
            };
            if !sink.send(batch) {
                return Ok(());
            }
        }
    }
    if let Some(tail) = core.tail() {
        sink.send(tail?);
    }
    Ok(())
}

impl ChunkSource for DirectSource {
    const NAME: &'static str = "ScanExec";
    const ORDER: Order = Order::RowId;

    fn execute(
        self: Arc<Self>,
        core: &ScanCore,
        _partition: usize,
        context: Arc<TaskContext>,
    ) -> Result<SendableRecordBatchStream> {
        core.feed("coopscan-scan", &context, move |core, sink| {
            produce(core, &self, sink)
        })
    }
}
