//! Running a blocking producer off the executor: a dedicated thread per scan feeds
//! batches into a bounded `tokio::sync::mpsc` channel whose receiver is the scan's
//! DataFusion stream.
//!
//! ```text
//!   feeder thread                          tokio task (DataFusion)
//!   next_chunk() (blocks) ─► batch ─► blocking_send ═══► recv().await ─► operators
//!        ▲                               │ Err: receiver dropped
//!        └── stop, drop the scan ◄───────┘   (query cancelled or finished early)
//! ```
//!
//! The feeder starts producing only when the consumer first polls the stream, not when
//! the plan is executed: DataFusion executes whole plan trees eagerly (a
//! `RepartitionExec` executes its input at once, and the partitions of a plan race to
//! do it), so a hash join's probe side is often executed before its build side. A
//! CScan registered then would take an ABM admission slot, load and wait for a
//! consumer that reads only after the build side — another scan of the same table,
//! possibly queued behind it for admission — is finished: a deadlock with small
//! buffers (issue "Reliability", item 1). Registering on first poll gives the ABM
//! only scans that someone is reading.
//!
//! `blocking_send` must never run on a runtime thread (it panics there); the feeder is a
//! plain `std::thread`, so it never does. A panic in the producer becomes an error in the
//! stream: silently ending the stream would return a wrong (short) answer.

use std::panic::{catch_unwind, AssertUnwindSafe};

use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::SendableRecordBatchStream;
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use tokio::sync::mpsc;

use crate::error::ExecError;

/// Batches buffered between a feeder and its consumer. Small on purpose: a CScan asks
/// for its next chunk only when the consumer has (nearly) caught up, so the ABM sees the
/// query's real speed.
pub const FEED_CHANNEL_BATCHES: usize = 2;

/// The producer's end: sends batches cut to the session's batch size.
pub struct BatchSink {
    tx: mpsc::Sender<Result<RecordBatch>>,
    batch_rows: usize,
}

impl BatchSink {
    /// Sends `batch` in slices of at most `batch_rows` rows. `false`: the consumer is
    /// gone and the producer should stop.
    pub fn send(&self, batch: RecordBatch) -> bool {
        let rows = batch.num_rows();
        let mut offset = 0;
        while offset < rows {
            let len = self.batch_rows.min(rows - offset);
            if self.tx.blocking_send(Ok(batch.slice(offset, len))).is_err() {
                return false;
            }
            offset += len;
        }
        true
    }

    /// The consumer dropped the stream.
    pub fn is_closed(&self) -> bool {
        self.tx.is_closed()
    }
}

/// Starts a thread named `name` that runs `produce` once the returned stream is first
/// polled (never, if the stream is dropped unpolled), and returns the stream of what it
/// sends. An error returned by `produce` (or a panic) ends the stream with that error.
pub fn spawn_feeder<F>(
    name: String,
    schema: SchemaRef,
    batch_rows: usize,
    produce: F,
) -> Result<SendableRecordBatchStream>
where
    F: FnOnce(&BatchSink) -> Result<()> + Send + 'static,
{
    let (tx, rx) = mpsc::channel(FEED_CHANNEL_BATCHES);
    let sink = BatchSink {
        tx,
        batch_rows: batch_rows.max(1),
    };
    // The consumer's first poll sends the one start signal (capacity 1: never blocks).
    let (start_tx, start_rx) = std::sync::mpsc::sync_channel::<()>(1);
    std::thread::Builder::new()
        .name(name)
        .spawn(move || {
            if start_rx.recv().is_err() {
                // The stream was dropped without being polled: nothing to produce.
                return;
            }
            let outcome = catch_unwind(AssertUnwindSafe(|| produce(&sink))).unwrap_or_else(|_| {
                Err(DataFusionError::Execution("a scan thread panicked".into()))
            });
            if let Err(e) = outcome {
                // Nobody to tell if the consumer is gone as well.
                let _ = sink.tx.blocking_send(Err(e));
            }
        })
        .map_err(|e| DataFusionError::from(ExecError::Spawn(e.to_string())))?;
    let stream = futures::stream::unfold((rx, Some(start_tx)), |(mut rx, start)| async move {
        if let Some(start) = start {
            // Fails only if the feeder is gone already; `recv` then ends the stream.
            let _ = start.try_send(());
        }
        rx.recv().await.map(|item| (item, (rx, None)))
    });
    Ok(Box::pin(RecordBatchStreamAdapter::new(schema, stream)))
}
