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
//!
//! [`FeedPacing`] decides whether the feeder may decode ahead of its consumer
//! (`Ahead`, two threads busy at once) or only while the consumer waits for it
//! (`Alternate`, the 2007 paper's execution model: a query keeps one core busy).

use std::cell::RefCell;
use std::panic::{catch_unwind, AssertUnwindSafe};

use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use tokio::sync::mpsc;

use crate::error::ExecError;
use coopscan_storage::device::{make_current_thread_nicer, FEEDER_NICER_BY};

/// Batches buffered between a feeder and its consumer. Small on purpose: a CScan asks
/// for its next chunk only when the consumer has (nearly) caught up, so the ABM sees the
/// query's real speed.
pub const FEED_CHANNEL_BATCHES: usize = 2;

/// How a feeder runs beside its consumer. Put into a query's `SessionConfig`
/// (`with_extension(Arc::new(FeedPacing::Alternate))`); without it, `Ahead`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum FeedPacing {
    /// The feeder decodes the next chunk while the consumer works on the last one:
    /// a query can keep two cores busy (the scan's and its operators').
    #[default]
    Ahead,
    /// The feeder produces a batch only when the consumer asks for one, and waits
    /// while the consumer works on it: the query's threads take turns, so a query
    /// uses one core at a time, decoding included (the paper's one CPU per query).
    Alternate,
}

impl FeedPacing {
    /// The pacing `context`'s session asks for.
    pub fn of(context: &TaskContext) -> FeedPacing {
        context
            .session_config()
            .get_extension::<FeedPacing>()
            .map_or_else(FeedPacing::default, |p| *p)
    }
}

/// The consumer's requests for batches (`Alternate` pacing): one ticket per poll.
struct Demand {
    tickets: mpsc::UnboundedReceiver<()>,
    /// A ticket taken but not yet answered with a batch.
    held: bool,
}

impl Demand {
    /// Blocks until the consumer has asked for a batch; `false` once it is gone.
    fn wait(&mut self) -> bool {
        if !self.held {
            self.held = self.tickets.blocking_recv().is_some();
        }
        self.held
    }
}

/// The producer's end: sends batches cut to the session's batch size.
pub struct BatchSink {
    tx: mpsc::Sender<Result<RecordBatch>>,
    batch_rows: usize,
    /// The consumer's tickets: the first starts the feeder; under `Alternate` every
    /// batch answers one.
    demand: RefCell<Demand>,
    pacing: FeedPacing,
}

impl BatchSink {
    /// Sends `batch` in slices of at most `batch_rows` rows. `false`: the consumer is
    /// gone and the producer should stop. Under `Alternate` pacing it returns only
    /// once the consumer asks for more, so the next chunk is decoded while the
    /// consumer waits rather than while it works.
    pub fn send(&self, batch: RecordBatch) -> bool {
        let rows = batch.num_rows();
        let mut offset = 0;
        while offset < rows {
            let len = self.batch_rows.min(rows - offset);
            if !self.await_demand() {
                return false;
            }
            self.take_ticket();
            if self.tx.blocking_send(Ok(batch.slice(offset, len))).is_err() {
                return false;
            }
            offset += len;
        }
        self.await_demand()
    }

    /// Waits for the consumer to ask (`Alternate`); always `true` under `Ahead`.
    fn await_demand(&self) -> bool {
        self.pacing == FeedPacing::Ahead || self.demand.borrow_mut().wait()
    }

    /// The ticket being answered is used up.
    fn take_ticket(&self) {
        self.demand.borrow_mut().held = false;
    }

    /// The consumer dropped the stream.
    pub fn is_closed(&self) -> bool {
        self.tx.is_closed()
    }
}

/// Starts a thread named `name` that runs `produce` once the returned stream is first
/// polled (never, if the stream is dropped unpolled), and returns the stream of what it
/// sends, paced as `context`'s session asks ([`FeedPacing`]). An error returned by
/// `produce` (or a panic) ends the stream with that error.
pub fn spawn_feeder<F>(
    name: String,
    schema: SchemaRef,
    context: &TaskContext,
    produce: F,
) -> Result<SendableRecordBatchStream>
where
    F: FnOnce(&BatchSink) -> Result<()> + Send + 'static,
{
    let pacing = FeedPacing::of(context);
    let (tx, rx) = mpsc::channel(FEED_CHANNEL_BATCHES);
    // Every poll sends a ticket under `Alternate`; under `Ahead` only the first does,
    // as the start signal.
    let (ticket_tx, tickets) = mpsc::unbounded_channel();
    let sink = BatchSink {
        tx,
        batch_rows: context.session_config().batch_size().max(1),
        demand: RefCell::new(Demand {
            tickets,
            held: false,
        }),
        pacing,
    };
    std::thread::Builder::new()
        .name(name)
        .spawn(move || {
            // Give way to the loader when the queries saturate the cores (see
            // `coopscan_storage::device::FEEDER_NICER_BY`); failing that, run as inherited.
            let _ = make_current_thread_nicer(FEEDER_NICER_BY);
            if !sink.demand.borrow_mut().wait() {
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
    let stream =
        futures::stream::unfold((rx, Some(ticket_tx)), move |(mut rx, tickets)| async move {
            if let Some(t) = &tickets {
                // Fails only if the feeder is gone already; `recv` then ends the stream.
                let _ = t.send(());
            }
            let tickets = tickets.filter(|_| pacing == FeedPacing::Alternate);
            rx.recv().await.map(|item| (item, (rx, tickets)))
        });
    Ok(Box::pin(RecordBatchStreamAdapter::new(schema, stream)))
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    use std::time::Duration;

    use datafusion::arrow::array::Int64Array;
    use datafusion::arrow::datatypes::{DataType, Field, Schema};
    use datafusion::prelude::SessionConfig;
    use futures::StreamExt;

    use super::*;

    const BATCHES: usize = 6;
    /// Long enough for a free-running feeder to fill its channel many times over.
    const SETTLE: Duration = Duration::from_millis(150);

    fn schema() -> SchemaRef {
        Arc::new(Schema::new(vec![Field::new("x", DataType::Int64, false)]))
    }

    /// A feeder of `BATCHES` one-row batches counting how many it has produced.
    fn counting_feeder(pacing: FeedPacing) -> (SendableRecordBatchStream, Arc<AtomicUsize>) {
        let config = SessionConfig::new().with_extension(Arc::new(pacing));
        let context = TaskContext::default().with_session_config(config);
        let produced = Arc::new(AtomicUsize::new(0));
        let counter = Arc::clone(&produced);
        let stream = spawn_feeder("test-feeder".into(), schema(), &context, move |sink| {
            for i in 0..BATCHES {
                counter.fetch_add(1, Ordering::SeqCst);
                let column = Arc::new(Int64Array::from(vec![i as i64]));
                let batch = RecordBatch::try_new(schema(), vec![column])?;
                if !sink.send(batch) {
                    break;
                }
            }
            Ok(())
        })
        .unwrap();
        (stream, produced)
    }

    fn values(batches: &[RecordBatch]) -> Vec<i64> {
        batches
            .iter()
            .flat_map(|b| {
                let a = b.column(0).as_any().downcast_ref::<Int64Array>().unwrap();
                a.values().to_vec()
            })
            .collect()
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn alternate_pacing_produces_only_what_the_consumer_asked_for() {
        let (mut stream, produced) = counting_feeder(FeedPacing::Alternate);
        let first = stream.next().await.unwrap().unwrap();
        tokio::time::sleep(SETTLE).await;
        // The consumer holds one batch and has not asked again: nothing more is made.
        assert_eq!(produced.load(Ordering::SeqCst), 1);
        let mut all = vec![first];
        while let Some(b) = stream.next().await {
            all.push(b.unwrap());
            tokio::time::sleep(Duration::from_millis(5)).await;
            // At most the batch just received: the feeder never runs ahead.
            assert_eq!(produced.load(Ordering::SeqCst), all.len());
        }
        assert_eq!(values(&all), (0..BATCHES as i64).collect::<Vec<_>>());
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn ahead_pacing_fills_the_channel_before_it_is_asked() {
        let (mut stream, produced) = counting_feeder(FeedPacing::Ahead);
        let first = stream.next().await.unwrap().unwrap();
        tokio::time::sleep(SETTLE).await;
        // Two batches wait in the channel and a third is blocked in `send`.
        assert_eq!(produced.load(Ordering::SeqCst), FEED_CHANNEL_BATCHES + 2);
        let mut all = vec![first];
        while let Some(b) = stream.next().await {
            all.push(b.unwrap());
        }
        assert_eq!(values(&all), (0..BATCHES as i64).collect::<Vec<_>>());
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_stream_never_polled_produces_nothing() {
        for pacing in [FeedPacing::Ahead, FeedPacing::Alternate] {
            let (stream, produced) = counting_feeder(pacing);
            tokio::time::sleep(SETTLE).await;
            assert_eq!(produced.load(Ordering::SeqCst), 0, "{pacing:?}");
            drop(stream);
            tokio::time::sleep(SETTLE).await;
            assert_eq!(produced.load(Ordering::SeqCst), 0, "{pacing:?}");
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn alternate_feeder_stops_when_the_consumer_leaves() {
        let (mut stream, produced) = counting_feeder(FeedPacing::Alternate);
        stream.next().await.unwrap().unwrap();
        drop(stream);
        tokio::time::sleep(SETTLE).await;
        assert_eq!(produced.load(Ordering::SeqCst), 1);
    }
}
