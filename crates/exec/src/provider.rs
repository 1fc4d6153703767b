//! `CoopTable`: a coopscan table as a DataFusion `TableProvider`.
//!
//! Schema: the table's stored columns, then the virtual `_rowid` (Int64, the tuple's
//! position in the table). `scan` turns the pushed filters into tuple ranges (see
//! [`crate::pushdown`]) and builds a [`ScanExec`] or a [`CScanExec`] depending on the
//! [`ScanMode`].

use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;
use coopscan_buffer::TableId;
use coopscan_runtime::Runtime;
use coopscan_storage::device::Device;
use coopscan_storage::Table;
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::catalog::{Session, TableProvider};
use datafusion::datasource::TableType;
use datafusion::error::Result as DfResult;
use datafusion::logical_expr::{Expr, TableProviderFilterPushDown};
use datafusion::physical_plan::ExecutionPlan;

use crate::counters::{ScanCounters, ScanCountersSnapshot};
use crate::cscan_exec::{
    CScanExec, InOrder, Pooled, PooledScanExec, ScanWorkers, StaticSplit, Workers,
};
use crate::delta::dml::{ChangedTable, DeltaSink, DmlExec};
use crate::delta::transaction::TransactionSlot;
use crate::delta::{DeltaScan, TableDelta};
use crate::error::external;
use crate::error::{ExecError, Result};
use crate::index_scan::{choose, IndexPageCost, IndexPlan, IndexScanExec, IndexScans, IndexSource};
use crate::plan_common::ScanCore;
use crate::pushdown::{
    classify, prune_ranges, row_filter, rowid_range, scan_ranges, Pushed, ROWID_COLUMN,
};
use crate::scan_exec::{DirectSource, ScanExec};
use crate::shape::{FilterAt, OutputShape};
use crate::statistics::{changed_table_statistics, scan_statistics};
use coopscan_buffer::RowRanges;
use coopscan_buffer::{ScanPages, Split};
use coopscan_delta::Pdt;
use coopscan_storage::index::{build_index, check_indexable, SecondaryIndex};
use datafusion::arrow::array::RecordBatch;
use datafusion::common::{not_impl_err, ScalarValue};
use datafusion::datasource::sink::DataSinkExec;
use datafusion::error::DataFusionError;
use datafusion::logical_expr::dml::InsertOp;
use parking_lot::RwLock;

/// How a [`CoopTable`]'s queries read chunks.
#[derive(Clone)]
pub enum ScanMode {
    /// In table order, straight from storage, each query on its own (the baseline).
    Scan,
    /// Through the shared Active Buffer Manager, in any order. All queries given the
    /// same `Runtime` cooperate, over all of its tables (one buffer).
    CScan(Arc<Runtime>),
}

impl fmt::Debug for ScanMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ScanMode::Scan => f.write_str("Scan"),
            ScanMode::CScan(_) => f.write_str("CScan"),
        }
    }
}

/// Where a query's chunks come from.
#[derive(Clone)]
enum Source {
    Direct(Arc<DirectSource>),
    Shared(Arc<Pooled>),
}

/// Cloning is cheap: the clone shares the original's source, counters and changes.
#[derive(Clone)]
pub struct CoopTable {
    table: Table,
    schema: SchemaRef,
    source: Source,
    counters: Arc<ScanCounters>,
    /// Scans of this table run in table order in the shared buffer, never as CScans
    /// (a small table: `CoopTable::in_order`).
    in_order: bool,
    /// The table's committed changes (inserts, deletes, updates).
    delta: Arc<TableDelta>,
    /// What an INSERT that leaves `_rowid` out gives it (ignored: a row's RID is its
    /// position).
    rowid_default: Expr,
    /// The table's usable secondary indexes (stale or damaged ones are left out).
    indexes: Arc<RwLock<Vec<Arc<SecondaryIndex>>>>,
}

impl fmt::Debug for CoopTable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mode = match self.source {
            Source::Direct(_) => "Scan",
            Source::Shared(_) if self.in_order => "Scan in the shared buffer",
            Source::Shared(_) => "CScan",
        };
        f.debug_struct("CoopTable")
            .field("table", &self.table.dir())
            .field("mode", &mode)
            .finish()
    }
}

impl CoopTable {
    /// A provider for `table`. In [`ScanMode::Scan`] its files are opened on `device`;
    /// in [`ScanMode::CScan`] the runtime's own device is used and one of the runtime's
    /// tables must be this table (same directory and chunk map).
    pub fn new(table: Table, device: Arc<Device>, mode: ScanMode) -> Result<CoopTable> {
        let source = match mode {
            ScanMode::Scan => {
                let files = table.open_files(&device)?;
                Source::Direct(Arc::new(DirectSource {
                    table: table.clone(),
                    device,
                    files,
                }))
            }
            ScanMode::CScan(runtime) => {
                let same = |(_, t): &&(TableId, Arc<Table>)| {
                    t.dir() == table.dir() && t.manifest() == table.manifest()
                };
                let served = runtime.tables();
                let Some(&(table, _)) = served.iter().find(same) else {
                    return Err(ExecError::Invalid(format!(
                        "the runtime does not serve {}",
                        table.dir().display()
                    )));
                };
                Source::Shared(Arc::new(Pooled::new(runtime, table)))
            }
        };
        Ok(CoopTable::with_source(table, source))
    }

    fn with_source(table: Table, source: Source) -> CoopTable {
        let delta = TableDelta::logged(&table);
        CoopTable {
            schema: provider_schema(&table),
            delta: Arc::new(delta),
            rowid_default: Expr::Literal(ScalarValue::Int64(Some(0)), None),
            indexes: Arc::new(RwLock::new(usable_indexes(&table))),
            table,
            source,
            counters: Arc::default(),
            in_order: false,
        }
    }

    /// This provider with every scan of a cooperative table an in-order Scan in the
    /// shared buffer: the thesis's fallback for small tables (§7.5.1: "as our approach
    /// targets I/O bound situations, for small tables CScan should simply fall back on
    /// Scan"), kept in the one buffer so their pages stay resident for the next query.
    pub fn in_order(mut self) -> CoopTable {
        self.in_order = true;
        self
    }

    /// This provider with its changes logged at `path` (replayed from there if it
    /// exists) rather than in the table's directory; see [`TableDelta::logged_at`].
    pub fn with_log_at(mut self, path: std::path::PathBuf) -> CoopTable {
        self.delta = Arc::new(TableDelta::logged_at(&self.table, path));
        self
    }

    /// A cooperative provider over the (first) table `runtime` serves.
    pub fn cooperative(runtime: Arc<Runtime>) -> CoopTable {
        let table = Table::clone(&runtime.table());
        let pooled = Pooled::new(runtime, TableId(0));
        CoopTable::with_source(table, Source::Shared(Arc::new(pooled)))
    }

    /// A cooperative provider over table `table` of `runtime`.
    pub fn cooperative_of(runtime: Arc<Runtime>, table: TableId) -> Result<CoopTable> {
        let served = runtime.table_at(table);
        let served = served
            .ok_or_else(|| ExecError::Invalid(format!("the runtime has no table {}", table.0)))?;
        let served = Table::clone(&served);
        let pooled = Pooled::new(runtime, table);
        Ok(CoopTable::with_source(
            served,
            Source::Shared(Arc::new(pooled)),
        ))
    }

    pub fn table(&self) -> &Table {
        &self.table
    }

    /// A provider over this table's newest version after a bulk append committed to
    /// its directory (`delta::append::bulk_append`): read from storage as this one is,
    /// or handed to the shared buffer (`Runtime::append`: scans registered from now on
    /// read the new chunks, those before keep their snapshot), its changes read again
    /// from the log the append carried. This provider keeps its snapshot.
    pub fn appended(&self) -> Result<CoopTable> {
        self.reopened(|pooled, table| {
            pooled.runtime.append(pooled.table, table)?;
            Ok(pooled.table)
        })
    }

    /// A provider over the table's new stable image after a checkpoint committed to
    /// its directory (`delta::checkpoint`): read from storage, or handed to the shared
    /// buffer as a version of its own (`Runtime::checkpointed`, the 2012 paper's case
    /// (iv): it shares no page with the old image). This provider, and every plan made
    /// from it, keeps reading the old image and its changes; in the shared buffer the
    /// old version is dropped once the last of them is gone and its scans have left.
    pub fn checkpointed(&self) -> Result<CoopTable> {
        self.reopened(|pooled, table| Ok(pooled.runtime.checkpointed(pooled.table, table)?))
    }

    /// A provider over the image now in this table's directory, read as this one is:
    /// from storage, or from the shared buffer's table `serve` hands the image to.
    fn reopened(&self, serve: impl FnOnce(&Pooled, Table) -> Result<TableId>) -> Result<CoopTable> {
        let table = Table::open(self.table.dir())?.with_decode_budget(self.table.decode_budget());
        let provider = match &self.source {
            Source::Direct(direct) => {
                CoopTable::new(table, Arc::clone(&direct.device), ScanMode::Scan)?
            }
            Source::Shared(pooled) => {
                let served = serve(pooled, table)?;
                CoopTable::cooperative_of(Arc::clone(&pooled.runtime), served)?
            }
        };
        Ok(CoopTable {
            in_order: self.in_order,
            ..provider
        })
    }

    /// The table's committed changes.
    pub fn delta(&self) -> &Arc<TableDelta> {
        &self.delta
    }

    /// The device this provider's scans read through.
    pub fn device(&self) -> Arc<Device> {
        match &self.source {
            Source::Direct(s) => Arc::clone(&s.device),
            Source::Shared(p) => Arc::clone(p.runtime.device()),
        }
    }

    /// Builds (or rebuilds) the index of stored column `column` and uses it from the
    /// next scan on.
    pub fn create_index(&self, column: usize) -> Result<()> {
        build_index(&self.table, &self.device(), column)?;
        *self.indexes.write() = usable_indexes(&self.table);
        Ok(())
    }

    /// The indexed columns whose index scans may use.
    pub fn indexed_columns(&self) -> Vec<usize> {
        self.indexes.read().iter().map(|i| i.column()).collect()
    }

    /// Chunks and tuples delivered by this provider's scans so far.
    pub fn counters(&self) -> ScanCountersSnapshot {
        self.counters.snapshot()
    }

    /// The leaf plan of a scan: a cooperative one has `workers` partitions, sharing its
    /// chunks as `split` says.
    fn plan(&self, core: ScanCore, workers: usize, split: Split) -> Arc<dyn ExecutionPlan> {
        self.plan_with_pages(core, (workers, split), None)
    }

    /// [`Self::plan`] of an index selection through the ABM that needs only `pages` of
    /// its chunks (a CScan's; a Scan reads them whole).
    fn plan_with_pages(
        &self,
        core: ScanCore,
        (workers, split): (usize, Split),
        pages: Option<ScanPages>,
    ) -> Arc<dyn ExecutionPlan> {
        match &self.source {
            Source::Direct(s) => Arc::new(ScanExec::new(core, Arc::clone(s))),
            Source::Shared(p) if self.in_order => {
                Arc::new(PooledScanExec::new(core, Arc::new(InOrder(Arc::clone(p)))))
            }
            Source::Shared(p) => {
                // No more workers than the buffer has room for beside the scan's own
                // two chunks (a 16-core session must not make a small buffer refuse it).
                let most = p.runtime.max_workers(p.table, &core.shape.load_columns());
                let workers = Workers::new(Arc::clone(p), workers.min(usize::from(most)), split)
                    .with_pages(pages);
                Arc::new(CScanExec::new(core, Arc::new(workers)))
            }
        }
    }
}

impl ChangedTable for CoopTable {
    fn columns(&self) -> SchemaRef {
        Arc::clone(&self.schema)
    }

    fn changes(&self) -> &Arc<TableDelta> {
        &self.delta
    }

    fn scan_for_change(
        &self,
        filters: &[Expr],
        snapshot: Pdt<ScalarValue>,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        let all: Vec<usize> = (0..self.schema.fields().len()).collect();
        // A change's scan is planned inside an async statement holding the table's
        // writer lock: no index lookup (reads) there.
        let never = (IndexScans::Never, IndexPageCost::default());
        self.scan_plan(&all, filters, None, (1, Split::Dynamic, never), snapshot)
    }
}

/// The indexes of `table`'s columns that fit this version of it; a stale or damaged
/// one is left out (`coopscan index` reports and rebuilds it).
fn usable_indexes(table: &Table) -> Vec<Arc<SecondaryIndex>> {
    (0..table.schema().len())
        .filter(|&c| check_indexable(table, c).is_ok())
        .filter_map(|c| SecondaryIndex::open(table, c).ok().flatten())
        .map(Arc::new)
        .collect()
}

/// The stored columns, then `_rowid`.
fn provider_schema(table: &Table) -> SchemaRef {
    let stored = table.arrow_schema();
    let mut fields: Vec<Field> = stored.fields().iter().map(|f| f.as_ref().clone()).collect();
    fields.push(Field::new(ROWID_COLUMN, DataType::Int64, false));
    Arc::new(Schema::new(fields))
}

#[async_trait]
impl TableProvider for CoopTable {
    fn schema(&self) -> SchemaRef {
        Arc::clone(&self.schema)
    }

    fn table_type(&self) -> TableType {
        TableType::Base
    }

    fn supports_filters_pushdown(
        &self,
        filters: &[&Expr],
    ) -> DfResult<Vec<TableProviderFilterPushDown>> {
        Ok(filters
            .iter()
            .map(|f| {
                classify(&self.table, f).map_or(TableProviderFilterPushDown::Unsupported, |p| {
                    p.pushdown(&self.table)
                })
            })
            .collect())
    }

    async fn scan(
        &self,
        state: &dyn Session,
        projection: Option<&Vec<usize>>,
        filters: &[Expr],
        limit: Option<usize>,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        let all: Vec<usize>;
        let projection = match projection {
            Some(p) => p.as_slice(),
            None => {
                all = (0..self.schema.fields().len()).collect();
                &all
            }
        };
        // A cooperative scan gets the workers the session asks for (`ScanWorkers`).
        let workers = state.config().get_extension::<ScanWorkers>();
        let split = match state.config().get_extension::<StaticSplit>() {
            Some(_) => Split::Static,
            None => Split::Dynamic,
        };
        let workers = workers.map_or(1, |w| w.0);
        let index_scans = (
            state
                .config()
                .get_extension::<IndexScans>()
                .map_or(IndexScans::Auto, |i| *i),
            state
                .config()
                .get_extension::<IndexPageCost>()
                .map(|c| *c)
                .unwrap_or_default(),
        );
        // A session in a transaction reads its own changes of this table.
        let own = state.config().get_extension::<TransactionSlot>();
        let snapshot = match own.and_then(|t| t.snapshot_of(&self.delta)) {
            Some(own) => own,
            None => self.delta.snapshot()?,
        };
        let how = (workers, split, index_scans);
        if self.indexes.read().is_empty() {
            return self.scan_plan(projection, filters, limit, how, snapshot);
        }
        // Planning may look an index up (reads): off the executor's threads.
        let (this, projection, filters) = (self.clone(), projection.to_vec(), filters.to_vec());
        tokio::task::spawn_blocking(move || {
            this.scan_plan(&projection, &filters, limit, how, snapshot)
        })
        .await
        .map_err(|e| DataFusionError::External(Box::new(e)))?
    }

    async fn insert_into(
        &self,
        _state: &dyn Session,
        input: Arc<dyn ExecutionPlan>,
        op: InsertOp,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        if op != InsertOp::Append {
            return not_impl_err!("{op} on a coopscan table: only INSERT INTO appends");
        }
        let sink = DeltaSink {
            delta: Arc::clone(&self.delta),
            schema: self.schema(),
        };
        Ok(Arc::new(DataSinkExec::new(input, Arc::new(sink), None)))
    }

    async fn delete_from(
        &self,
        state: &dyn Session,
        filters: Vec<Expr>,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        Ok(Arc::new(DmlExec::delete(
            Arc::new(self.clone()),
            state,
            &filters,
        )?))
    }

    async fn update(
        &self,
        state: &dyn Session,
        assignments: Vec<(String, Expr)>,
        filters: Vec<Expr>,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        let plan = DmlExec::update(Arc::new(self.clone()), state, &assignments, &filters)?;
        Ok(Arc::new(plan))
    }

    /// `_rowid` is the row's position, never a value an INSERT gives: one it names is
    /// ignored, and one it leaves out is this.
    fn get_column_default(&self, column: &str) -> Option<&Expr> {
        (column == ROWID_COLUMN).then_some(&self.rowid_default)
    }
}

impl CoopTable {
    /// The leaf plan of a scan of `projection` (provider column indexes) under `filters`.
    pub(crate) fn scan_plan(
        &self,
        projection: &[usize],
        filters: &[Expr],
        limit: Option<usize>,
        (workers, split, index_scans): (usize, Split, (IndexScans, IndexPageCost)),
        snapshot: Pdt<ScalarValue>,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        let schema = Arc::new(self.schema.project(projection)?);
        let mut shape = OutputShape::new(schema, projection, self.table.schema().len());
        let pushed: Vec<_> = filters
            .iter()
            .filter_map(|f| classify(&self.table, f))
            .collect();
        if let Some(filter) = row_filter(&self.table, &pushed) {
            // Storage knows stored values only: a changed table's filter waits for the
            // merged tuples.
            let at = if snapshot.is_empty() {
                FilterAt::Decoding
            } else {
                FilterAt::Merged
            };
            let text = filter.describe(self.table.schema());
            shape = shape.with_filter(filter, at, text);
        }
        // DataFusion passes a LIMIT only when no filter stays above the scan (every
        // pushed conjunct Exact), so any `limit` tuples answer it: the first ones, so
        // a `SELECT … LIMIT 10` loads one chunk, not the table — unless the scan
        // filters, when the first tuples may not pass (DataFusion's limit above stops
        // the scan once it has enough).
        let limit = limit
            .filter(|_| shape.filter().is_none())
            .map(|l| u64::try_from(l).unwrap_or(u64::MAX));
        let core = if snapshot.is_empty() {
            self.stable_core(shape, &pushed, limit)
        } else {
            // The indexes know the stable tuples only.
            let core = self.changed_core(shape, &pushed, limit, snapshot)?;
            return Ok(self.plan(core, workers, split));
        };
        let indexes = self.indexes.read().clone();
        let device = self.device();
        let (shape, ranges) = (&core.shape, &core.ranges);
        let how = (index_scans, device.as_ref());
        let chosen = match choose(&self.table, &indexes, &pushed, shape, ranges, how) {
            Ok(chosen) => chosen,
            Err(failed) => {
                // A damaged index never fails a query: it is dropped from this
                // provider (`coopscan index DIR` reports it) and the table scanned.
                self.indexes.write().retain(|i| i.column() != failed.column);
                None
            }
        };
        match chosen {
            Some(IndexPlan::Fetch { index, rows }) => {
                // What the planner is told: the fetched rows, not the scan's ranges.
                let fetched = RowRanges::new(rows.iter().map(|&r| r..r + 1));
                let statistics = Arc::new(scan_statistics(&self.table, &core.shape, &fetched));
                let core = ScanCore { statistics, ..core };
                let files = self.table.open_files(&device).map_err(external)?;
                let source = IndexSource {
                    table: self.table.clone(),
                    device,
                    files,
                    index,
                    rows,
                };
                Ok(Arc::new(IndexScanExec::new(core, Arc::new(source))))
            }
            Some(IndexPlan::Chunks { ranges, pages }) => {
                let statistics = Arc::new(scan_statistics(&self.table, &core.shape, &ranges));
                let core = ScanCore {
                    ranges,
                    statistics,
                    ..core
                };
                Ok(self.plan_with_pages(core, (workers, split), pages))
            }
            None => Ok(self.plan(core, workers, split)),
        }
    }

    /// A scan of the stable table: `ranges` are RIDs and SIDs alike.
    fn stable_core(&self, shape: OutputShape, pushed: &[Pushed], limit: Option<u64>) -> ScanCore {
        let mut ranges = scan_ranges(&self.table, pushed);
        if let Some(limit) = limit {
            ranges = ranges.first_rows(limit);
        }
        let statistics = Arc::new(scan_statistics(&self.table, &shape, &ranges));
        let counters = Arc::clone(&self.counters);
        ScanCore {
            shape,
            ranges,
            counters,
            statistics,
            delta: None,
            aggregate: None,
        }
    }

    /// A scan of a changed table (2012 paper §2.1): the wanted RIDs translated into the
    /// SID ranges the chunks are read for, zonemaps pruning only chunks without changed
    /// tuples, every chunk merged with the snapshot.
    fn changed_core(
        &self,
        shape: OutputShape,
        pushed: &[Pushed],
        limit: Option<u64>,
        snapshot: Pdt<ScalarValue>,
    ) -> DfResult<ScanCore> {
        let mut wanted = RowRanges::new([rowid_range(pushed, snapshot.rows())]);
        if let Some(limit) = limit {
            wanted = wanted.first_rows(limit);
        }
        let sids = snapshot.sid_ranges(wanted.ranges()).map_err(external)?;
        let stable = scan_statistics(&self.table, &shape, &RowRanges::new(sids.clone()));
        let statistics = Arc::new(changed_table_statistics(&stable, wanted.rows()));
        let mut delta = DeltaScan::new(snapshot, wanted);
        if delta.pdt.stable_rows() == 0 {
            let stable = self
                .table
                .arrow_schema()
                .project(&shape.storage_projection)?;
            delta = delta.with_empty_stable(RecordBatch::new_empty(Arc::new(stable)));
        }
        let ranges = prune_ranges(&self.table, pushed, &sids, |rows| delta.patches_in(rows));
        let counters = Arc::clone(&self.counters);
        let delta = Some(Arc::new(delta));
        Ok(ScanCore {
            shape,
            ranges,
            counters,
            statistics,
            delta,
            aggregate: None,
        })
    }
}
