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
//!
//! In a session with [`ScanWorkers`]`(N)` a CScan is a parallel CScan (2012 paper
//! §2.2): one ABM scan of N workers, one output partition each, so DataFusion runs N
//! pipelines over it. The first partition to be polled registers the scan and leaves the other
//! workers' handles for their partitions (`Workers`); the ABM hands each worker
//! whatever chunk is ready, so no partition waits for I/O while another has resident
//! chunks (the paper's future work, built: a dynamic split). With [`StaticSplit`] too,
//! it is the paper's own way instead (§2.2): N ABM scans, each over a fixed run of the
//! query's chunks (`static_slices`), each its own query to the policy.

use std::sync::Arc;

use coopscan_buffer::ScanOrder::InOrder as InOrderScan;
use std::sync::{Mutex, PoisonError};

use coopscan_buffer::{
    static_slices, touched_chunks, CpuShares, RowRanges, ScanOrder, ScanPages, Split, TableId,
};
use coopscan_runtime::{CScan, Runtime, VersionHold};
use coopscan_storage::device::make_current_thread_nicer;
use datafusion::error::Result;
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::physical_plan::ExecutionPlan;

use crate::error::external;
use crate::feed::BatchSink;
use crate::leaf_plan::{ChunkSource, LeafScanExec};
use crate::order_hint::InOrderHint;
use crate::partial_states::ScanAggregation;
use crate::plan_common::{Order, ScanCore};
use crate::query_tag::QueryTag;
use coopscan_storage::aggregate::GroupedSums;
use coopscan_storage::ValueColumns;

/// One table of a shared [`Runtime`] (one buffer for all queries on all its tables):
/// where a cooperative scan's chunks come from. The provider and every plan built from
/// it share one, so its hold on the table's version keeps a version a checkpoint
/// replaced registered until the last plan that may scan it is gone
/// ([`coopscan_runtime::VersionHold`]).
pub struct Pooled {
    pub runtime: Arc<Runtime>,
    pub table: TableId,
    /// `None` if the runtime no longer served the table (its scans fail as unknown).
    _hold: Option<VersionHold>,
}

impl Pooled {
    pub fn new(runtime: Arc<Runtime>, table: TableId) -> Pooled {
        let hold = runtime.hold(table).ok();
        Pooled {
            runtime,
            table,
            _hold: hold,
        }
    }
}

/// The cooperative scan: a leaf plan whose chunks come from the shared [`Runtime`], in
/// any order, over one or more partitions (one per worker).
pub type CScanExec = LeafScanExec<Workers>;

/// A session extension that makes every CScan of its queries a parallel CScan of
/// (at most) this many workers, one output partition each. Without it a CScan has one
/// worker: on Table 2 with `--query-threads 2`, two workers per query raised
/// relevance's normalized latency 2.2× (docs/performance.md, "Parallel CScans"), so
/// the split is asked for, not implied by `target_partitions`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ScanWorkers(pub usize);

/// A session extension that makes the workers of a parallel CScan (`ScanWorkers`) N
/// separate scans over fixed runs of chunks (the 2012 paper's static split, §2.2)
/// instead of one scan whose workers take whichever chunk is ready.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StaticSplit;

/// One cooperative scan of a plan and its workers: `count` output partitions sharing
/// one registration, made by whichever partition is polled first.
pub struct Workers {
    pub pooled: Arc<Pooled>,
    split: Split,
    count: u16,
    /// An index selection's pages of each chunk (`IndexPlan::Chunks`), which the ABM
    /// may read alone when only such selections need a chunk.
    pages: Option<ScanPages>,
    /// The workers' handles, once registered; each partition takes its own.
    handles: Mutex<Option<Vec<Option<CScan>>>>,
}

impl Workers {
    /// A scan of `pooled` by `count` workers (at least 1, at most the ABM's limit),
    /// splitting its chunks as `split` says.
    pub fn new(pooled: Arc<Pooled>, count: usize, split: Split) -> Workers {
        let most = usize::from(coopscan_buffer::MAX_WORKERS);
        Workers {
            pooled,
            split,
            count: count.clamp(1, most) as u16,
            pages: None,
            handles: Mutex::new(None),
        }
    }

    /// The scan of an index selection that needs only `pages` of its chunks (a
    /// dynamic split's; a static split's slices read whole chunks).
    pub fn with_pages(mut self, pages: Option<ScanPages>) -> Workers {
        self.pages = pages;
        self
    }

    /// Partition `partition`'s handle: the first caller registers the scan (with
    /// `register`) for every worker.
    fn take(
        &self,
        partition: usize,
        register: impl FnOnce(u16) -> Result<Vec<CScan>>,
    ) -> Result<CScan> {
        let mut handles = self.handles.lock().unwrap_or_else(PoisonError::into_inner);
        if handles.is_none() {
            *handles = Some(register(self.count)?.into_iter().map(Some).collect());
        }
        let slot = handles.as_mut().and_then(|h| h.get_mut(partition));
        slot.and_then(Option::take).ok_or_else(|| {
            datafusion::error::DataFusionError::Internal(format!(
                "CScanExec partition {partition} executed twice or beyond its {} workers",
                self.count
            ))
        })
    }
}

impl std::fmt::Debug for Workers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Workers({})", self.count)
    }
}

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
fn produce(core: &ScanCore, scan: CScan, sink: &BatchSink) -> Result<()> {
    match &core.aggregate {
        Some(aggregation) => aggregate(aggregation, scan, sink),
        None => deliver(core, scan, sink),
    }
}

/// An aggregating scan (`crate::scan_aggregate`): counts and sums the tuples of every
/// chunk it is handed, then sends one batch of partial states (more when its groups
/// pass its `flush_groups`).
fn aggregate(aggregation: &ScanAggregation, mut scan: CScan, sink: &BatchSink) -> Result<()> {
    let mut sums =
        GroupedSums::new(aggregation.spec.clone(), &aggregation.table).map_err(external)?;
    let columns = &aggregation.columns;
    // String group keys come as packed words: no strings built for them.
    let packed = aggregation.spec.packed_groups(&aggregation.table);
    let wanted = ValueColumns {
        columns,
        packed: &packed,
    };
    while !sink.is_closed() {
        let Some(chunk) = scan.next_chunk().map_err(external)? else {
            sink.send(aggregation.batch(&sums)?);
            return Ok(());
        };
        // One set of values per part: a scattered load's are apart.
        let parts = chunk
            .values(wanted, &aggregation.filter)
            .map_err(external)?;
        drop(chunk);
        for selected in &parts {
            let of = |c: usize| {
                let at = columns.iter().position(|&x| x == c)?;
                selected.columns.get(at)
            };
            sums.add(selected.len(), of, selected.keep())
                .map_err(external)?;
        }
        if sums.groups() > aggregation.flush_groups {
            if !sink.send(aggregation.batch(&sums)?) {
                return Ok(());
            }
            sums =
                GroupedSums::new(aggregation.spec.clone(), &aggregation.table).map_err(external)?;
        }
    }
    Ok(())
}

/// Sends the scan's tuples of every chunk it is handed, one batch a chunk.
fn deliver(core: &ScanCore, mut scan: CScan, sink: &BatchSink) -> Result<()> {
    // Checked before asking for another chunk: a cancelled query stops competing for
    // the buffer as soon as it has delivered its current chunk.
    while !sink.is_closed() {
        let Some(chunk) = scan.next_chunk().map_err(external)? else {
            // All workers may send it: the scan's ledger lets the first one's rows through.
            if let Some(tail) = core.tail() {
                sink.send(tail?);
            }
            return Ok(());
        };
        let batch = match core.shape.decoding_filter() {
            Some(filter) => {
                let projection = &core.shape.storage_projection;
                let selected = chunk.select(projection, filter).map_err(external)?;
                core.counters.chunk_delivered(selected.batch.num_rows());
                core.assemble_selected(&selected)?
            }
            None => {
                let decoded = chunk.batch().map_err(external)?;
                core.counters.chunk_delivered(decoded.num_rows());
                core.assemble(&decoded, &chunk.rows())?
            }
        };
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

impl ChunkSource for Workers {
    const NAME: &'static str = "CScanExec";
    const ORDER: Order = Order::Any;

    fn execute(
        self: Arc<Self>,
        core: &ScanCore,
        partition: usize,
        context: Arc<TaskContext>,
    ) -> Result<SendableRecordBatchStream> {
        feed_from_pool(Feed::Workers(self, partition), core, &context)
    }

    fn partitions(&self) -> usize {
        usize::from(self.count)
    }

    fn in_order(core: &ScanCore, source: &Arc<Self>) -> Option<Arc<dyn ExecutionPlan>> {
        let pooled = Arc::clone(&source.pooled);
        let ordered = PooledScanExec::new(core.clone(), Arc::new(InOrder(pooled)));
        Some(Arc::new(ordered))
    }
}

impl ChunkSource for InOrder {
    const NAME: &'static str = "PooledScanExec";
    const ORDER: Order = Order::RowId;

    fn execute(
        self: Arc<Self>,
        core: &ScanCore,
        _partition: usize,
        context: Arc<TaskContext>,
    ) -> Result<SendableRecordBatchStream> {
        feed_from_pool(Feed::InOrder(Arc::clone(&self.0)), core, &context)
    }
}

/// What a feeder over the shared buffer registers: a worker of a CScan, or an in-order
/// Scan.
enum Feed {
    Workers(Arc<Workers>, usize),
    InOrder(Arc<Pooled>),
}

/// Starts the feeder of a scan over the shared buffer: it registers on first poll (see
/// the module docs), tagged with the session's query tag. A session with the in-order
/// hint makes every CScan an in-order Scan (of one worker).
fn feed_from_pool(
    feed: Feed,
    core: &ScanCore,
    context: &Arc<TaskContext>,
) -> Result<SendableRecordBatchStream> {
    let config = context.session_config();
    let tag = config.get_extension::<QueryTag>().map(|t| t.0);
    let shares = config
        .get_extension::<CpuShares>()
        .map_or_else(CpuShares::default, |s| *s);
    let feed = match feed {
        Feed::Workers(w, _) if config.get_extension::<InOrderHint>().is_some() => {
            Feed::InOrder(Arc::clone(&w.pooled))
        }
        feed => feed,
    };
    core.feed("coopscan-cscan", context, move |core, sink| {
        let ranges = core.ranges.clone();
        let projection = core.shape.load_columns();
        let scan = match &feed {
            Feed::InOrder(pooled) => (pooled.runtime)
                .register_scan(pooled.table, ranges, projection, InOrderScan, tag)
                .map_err(external)?,
            Feed::Workers(workers, partition) => workers.take(*partition, |count| {
                let pooled = &workers.pooled;
                let runtime = &pooled.runtime;
                match (workers.split, &workers.pages) {
                    (Split::Dynamic, Some(pages)) => runtime
                        .register_selection(
                            pooled.table,
                            ranges,
                            projection,
                            count,
                            (tag, pages.clone()),
                        )
                        .map_err(external),
                    (Split::Dynamic, None) => runtime
                        .register_parallel(pooled.table, ranges, projection, count, tag)
                        .map_err(external),
                    (Split::Static, _) => {
                        let table = runtime.table_at(pooled.table);
                        let starts = table.as_deref().map_or(&[][..], |t| t.chunk_row_starts());
                        static_slices(&ranges, starts, usize::from(count))
                            .into_iter()
                            .map(|slice| {
                                let scan = runtime.register_scan(
                                    pooled.table,
                                    slice,
                                    projection.clone(),
                                    ScanOrder::Any,
                                    tag,
                                );
                                scan.map_err(external)
                            })
                            .collect()
                    }
                }
            })?,
        };
        let pooled = match &feed {
            Feed::InOrder(pooled) => pooled,
            Feed::Workers(workers, _) => &workers.pooled,
        };
        give_way_by_length(pooled, &core.ranges, shares);
        produce(core, scan, sink)
    })
}

/// Lowers the calling feeder's share of the cores by the chunks its query reads (all
/// its workers' together), as `shares` says; failing that, it runs as it did.
fn give_way_by_length(pooled: &Pooled, ranges: &RowRanges, shares: CpuShares) {
    if shares == CpuShares::Equal {
        return;
    }
    let Some(table) = pooled.runtime.table_at(pooled.table) else {
        return;
    };
    let chunks = touched_chunks(ranges, table.chunk_row_starts()).len();
    let steps = shares.nice_steps(u32::try_from(chunks).unwrap_or(u32::MAX));
    let _ = make_current_thread_nicer(i32::from(steps));
}
