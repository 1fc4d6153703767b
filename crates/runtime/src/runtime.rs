//! The runtime for a catalog of tables under one buffer: builds each table's ABM from
//! its chunk map (`coopscan_buffer::Catalog`: one byte budget, eviction across
//! tables), starts one set of loader threads for all of them, registers CScans, and
//! stops everything on drop.

use std::collections::{BTreeSet, HashMap};
use std::ops::Range;
use std::sync::Arc;
use std::time::Instant;

use coopscan_buffer::{
    AbmConfig, AbmStats, AppendedChunk, Catalog, ChunkId, ColumnMask, Driver, Nanos, OnLoadFailure,
    Policy, PolicyKind, RowRanges, ScanId, ScanOrder, ScanPages, ScanSpec, SharedPages, Snapshot,
    TableGeometry, TableId,
};
use coopscan_storage::device::{Device, DeviceStats};
use coopscan_storage::{Layout, Table};

use crate::error::{Result, RuntimeError};
use crate::load_log::{LoadLog, LoadRecord};
use crate::scan::{CScan, Registration};
use crate::shared::{Inner, Served, ServedTables, Shared};
use crate::stats::{Counters, RuntimeStats, Scheduling};
use crate::sync::{Builder, JoinHandle, Mutex};

/// Scans and pins the ABM holds at one moment ([`Runtime::holdings`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Holdings {
    /// Registered and admitted scans.
    pub active_scans: usize,
    /// Registered scans waiting for admission.
    pub queued_scans: usize,
    /// Chunks some scan is processing right now.
    pub pinned_chunks: usize,
}

/// A hold on one version of a table ([`Runtime::hold`]): while one is left, a version a
/// checkpoint replaced is not retired, so a plan made before the checkpoint can still
/// register its scans on it when it runs (the paper's transactions "still working on
/// the old snapshot"). Dropping the last hold of a replaced version retires it; it is
/// freed when its last scan leaves.
pub struct VersionHold {
    shared: Arc<Shared>,
    table: TableId,
}

impl std::fmt::Debug for VersionHold {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("VersionHold").field(&self.table).finish()
    }
}

impl Drop for VersionHold {
    fn drop(&mut self) {
        let mut inner = self.shared.inner.lock();
        let table = self.table;
        let left = inner.holds.get_mut(&table).map(|n| {
            *n = n.saturating_sub(1);
            *n
        });
        if left != Some(0) {
            return;
        }
        inner.holds.remove(&table);
        if inner.superseded.remove(&table) {
            // An error means the runtime stopped: nothing is retired any more.
            let _ = inner.decide(|driver| driver.retire_table(table));
            self.shared.forget_freed(&mut inner);
            drop(inner);
            self.shared.wake_loaders();
        }
    }
}

/// How to run: the ABM's buffer and I/O limits, and the policy.
#[derive(Clone, Debug)]
pub struct RuntimeConfig {
    /// Byte budget (for all tables together), `max_inflight` (= number of loader
    /// threads, for all tables) and aging unit.
    pub abm: AbmConfig,
    pub policy: PolicyKind,
}

impl RuntimeConfig {
    /// A buffer of `chunks` chunk-sized frames (the table's largest chunk).
    pub fn new(chunks: u32, policy: PolicyKind) -> Self {
        RuntimeConfig {
            abm: AbmConfig::new(chunks),
            policy,
        }
    }
}

/// A running Active Buffer Manager over one table. Dropping it stops the loaders
/// (without waiting for a read in flight); scans still running then get
/// [`RuntimeError::ShutDown`].
pub struct Runtime {
    shared: Arc<Shared>,
    loaders: Vec<JoinHandle<()>>,
}

impl Runtime {
    /// Opens the table's files on `device` and starts `config.abm.max_inflight` loaders:
    /// a runtime of one table, [`TableId`] 0.
    pub fn new(table: Table, device: Arc<Device>, config: RuntimeConfig) -> Result<Runtime> {
        Runtime::with_tables(vec![table], device, config)
    }

    /// The smallest buffer a runtime over `tables` accepts: room for
    /// [`coopscan_buffer::ADMISSION_CHUNKS_PER_SCAN`] of the largest chunk of any of
    /// them (all columns), as the catalog requires.
    pub fn least_buffer_bytes(tables: &[Table]) -> Result<u64> {
        let mut largest = 0u64;
        for table in tables {
            let load_projection: Vec<usize> = (0..table.schema().len()).collect();
            largest = largest.max(geometry(table, &load_projection)?.max_chunk_bytes());
        }
        Ok(largest.saturating_mul(u64::from(coopscan_buffer::ADMISSION_CHUNKS_PER_SCAN)))
    }

    /// A runtime over several tables (table `i` is [`TableId`] `i`) under one buffer:
    /// `config.abm.budget` is the budget of all of them (`Chunks(n)` counts the largest
    /// chunk of any table), and one set of loaders reads for all.
    pub fn with_tables(
        tables: Vec<Table>,
        device: Arc<Device>,
        config: RuntimeConfig,
    ) -> Result<Runtime> {
        if tables.is_empty() {
            let why = "a runtime needs at least one table".to_string();
            return Err(coopscan_buffer::BufferError::InvalidConfig(why).into());
        }
        let mut geometries = Vec::with_capacity(tables.len());
        let mut served = Vec::with_capacity(tables.len());
        for table in tables {
            let load_projection: Vec<usize> = (0..table.schema().len()).collect();
            geometries.push(geometry(&table, &load_projection)?);
            let files = table.open_files(&device)?;
            served.push(Served {
                table: Arc::new(table),
                files,
                load_projection,
            });
        }
        let loader_count = config.abm.max_inflight;
        let catalog = Catalog::with_kind(geometries, &config.abm, config.policy)?;
        // A damaged page stays damaged: the scans that needed it fail (`loader.rs`).
        let driver = Driver::new(catalog, OnLoadFailure::FailScans);
        let shared = Arc::new(Shared {
            inner: Mutex::new(Inner {
                driver,
                resident: HashMap::new(),
                shutdown: false,
                stopped: None,
                tags: HashMap::new(),
                traced_tags: None,
                traced_registrations: None,
                load_log: LoadLog::default(),
                scheduling: Scheduling::default(),
                stall_reported: false,
                holds: HashMap::new(),
                superseded: BTreeSet::new(),
                parked: HashMap::new(),
            }),
            loader_wakeup: Default::default(),
            tables: ServedTables::new(served),
            device,
            started: Instant::now(),
            counters: Counters::default(),
        });
        let mut runtime = Runtime {
            shared,
            loaders: Vec::new(),
        };
        for i in 0..loader_count {
            let shared = Arc::clone(&runtime.shared);
            let handle = Builder::new()
                .name(format!("coopscan-loader-{i}"))
                .spawn(move || crate::loader::run(shared))
                .map_err(|e| RuntimeError::Spawn(e.to_string()))?;
            runtime.loaders.push(handle);
        }
        Ok(runtime)
    }

    /// Registers a CScan over tuple `ranges` (any order, may overlap) reading columns
    /// `projection`. It may be queued for admission; `next_chunk` then just waits longer.
    pub fn register(&self, ranges: Vec<Range<u64>>, projection: Vec<usize>) -> Result<CScan> {
        self.register_tagged(ranges, projection, None)
    }

    /// Registers a scan that gets its chunks in table order (a Scan sharing this
    /// runtime's buffer with the CScans), e.g. for a plan that needs order.
    pub fn register_in_order(
        &self,
        ranges: Vec<Range<u64>>,
        projection: Vec<usize>,
    ) -> Result<CScan> {
        self.register_in_order_tagged(ranges, projection, None)
    }

    /// [`Runtime::register_in_order`] with a tag for the load log, as
    /// [`Runtime::register_tagged`].
    pub fn register_in_order_tagged(
        &self,
        ranges: Vec<Range<u64>>,
        projection: Vec<usize>,
        tag: Option<u64>,
    ) -> Result<CScan> {
        self.register_scan(
            TableId(0),
            ranges.into(),
            projection,
            ScanOrder::InOrder,
            tag,
        )
    }

    /// [`Runtime::register`] with a tag that the load log attributes this scan's loads
    /// to (the benchmark tags each query's scan with the query's number).
    pub fn register_tagged(
        &self,
        ranges: Vec<Range<u64>>,
        projection: Vec<usize>,
        tag: Option<u64>,
    ) -> Result<CScan> {
        self.register_scan(TableId(0), ranges.into(), projection, ScanOrder::Any, tag)
    }

    /// Registers a scan of `table` (one of this runtime's) over tuple `ranges`, reading
    /// columns `projection`, in `order`, tagged for the load log; the methods above
    /// are this for table 0.
    pub fn register_scan(
        &self,
        table: TableId,
        ranges: RowRanges,
        projection: Vec<usize>,
        order: ScanOrder,
        tag: Option<u64>,
    ) -> Result<CScan> {
        let how = How {
            order,
            workers: 1,
            pages: None,
        };
        let mut workers = self.register_workers(table, ranges, projection, tag, how)?;
        match workers.pop() {
            Some(scan) => Ok(scan),
            None => Err(RuntimeError::Buffer(
                coopscan_buffer::BufferError::Invariant("a scan of one worker has none".into()),
            )),
        }
    }

    /// A parallel CScan (2012 paper §2.2) of `table`: one scan (one interest, each
    /// chunk of its ranges delivered once) with `workers` handles, one per worker
    /// thread, each processing its own chunk at a time. The scan is unregistered when
    /// the last handle is finished or dropped. Admission reserves room for 2 of its
    /// chunks (1 if it reads one) whatever the workers; further workers use the room
    /// there is (docs/abm.md, "Admission").
    pub fn register_parallel(
        &self,
        table: TableId,
        ranges: RowRanges,
        projection: Vec<usize>,
        workers: u16,
        tag: Option<u64>,
    ) -> Result<Vec<CScan>> {
        let how = How {
            order: ScanOrder::Any,
            workers,
            pages: None,
        };
        self.register_workers(table, ranges, projection, tag, how)
    }

    /// An index selection through the ABM (2004 report §4.2): a parallel CScan
    /// ([`Runtime::register_parallel`]) that needs only `pages` of its chunks. A chunk
    /// only such selections need is read as the union of their pages, and its handles
    /// then hold only those pages (`ChunkGuard` decodes them alone).
    pub fn register_selection(
        &self,
        table: TableId,
        ranges: RowRanges,
        projection: Vec<usize>,
        workers: u16,
        (tag, pages): (Option<u64>, ScanPages),
    ) -> Result<Vec<CScan>> {
        let how = How {
            order: ScanOrder::Any,
            workers,
            pages: Some(pages),
        };
        self.register_workers(table, ranges, projection, tag, how)
    }

    /// The most workers a scan of `table` reading `projection` may have under this
    /// runtime's budget (room for 2 of its chunks plus one per further worker, so that
    /// all of them can hold a chunk while one more is ready); 1 for an unknown table.
    pub fn max_workers(&self, table: TableId, projection: &[usize]) -> u16 {
        let inner = self.shared.inner.lock();
        let Ok(abm) = inner.driver.catalog().table(table) else {
            return 1;
        };
        let state = abm.state();
        state.max_workers(state.scan_cols(ColumnMask::of(projection)))
    }

    fn register_workers(
        &self,
        table: TableId,
        ranges: RowRanges,
        projection: Vec<usize>,
        tag: Option<u64>,
        How {
            order,
            workers,
            pages,
        }: How,
    ) -> Result<Vec<CScan>> {
        if !(1..=coopscan_buffer::MAX_WORKERS).contains(&workers) {
            return Err(RuntimeError::Buffer(
                coopscan_buffer::BufferError::Workers {
                    asked: workers,
                    max: coopscan_buffer::MAX_WORKERS,
                },
            ));
        }
        let mut spec = ScanSpec::new(ranges.clone(), ColumnMask::of(&projection));
        spec.order = order;
        spec.table = table;
        spec.workers = workers;
        spec.pages = pages;
        let mut inner = self.shared.inner.lock();
        if inner.shutdown {
            return Err(inner.stop_error());
        }
        // The table's newest version, under the lock an append replaces it under: the
        // scan's snapshot is its chunks, and its ranges are rows of it.
        let served = (self.shared.served(table))
            .ok_or(coopscan_buffer::BufferError::UnknownTable(table.0))?;
        served.table.check_projection(&projection)?;
        let chunks = u32::try_from(served.table.chunk_count()).unwrap_or(u32::MAX);
        spec.snapshot = Some(Snapshot::first(chunks));
        let now = self.shared.now();
        // A scan touching no chunk never enters the ABM: it is finished at once.
        let id = if ranges.is_empty() {
            let geometry = inner.driver.catalog().table(table)?.geometry();
            geometry.snapshot_chunks(&Snapshot::first(chunks), &spec.ranges)?;
            None
        } else {
            Some(inner.decide(|driver| driver.register(&spec, now))?.scan)
        };
        if let (Some(id), Some(registered)) = (id, inner.traced_registrations.as_mut()) {
            registered.insert(id, now);
        }
        if let (Some(id), Some(tag)) = (id, tag) {
            inner.tags.insert(id, tag);
            if let Some(traced) = inner.traced_tags.as_mut() {
                traced.insert(id, tag);
            }
        }
        drop(inner);
        self.shared.counters.registered();
        self.shared.wake_loaders();
        let registration = id.map(|id| Registration::new(Arc::clone(&self.shared), id));
        let handles = (0..workers.max(1))
            .map(|w| {
                let worker = registration.as_ref().map(|r| (Arc::clone(r), w));
                let (ranges, projection) = (ranges.clone(), projection.clone());
                let served = Arc::clone(&served);
                CScan::new(Arc::clone(&self.shared), served, worker, ranges, projection)
            })
            .collect();
        Ok(handles)
    }

    /// The first table the runtime serves (lowest id) that no checkpoint has replaced,
    /// its newest version: for a runtime built by [`Runtime::new`], its one table
    /// (after [`Runtime::checkpointed`], the new image).
    pub fn table(&self) -> Arc<Table> {
        let inner = self.shared.inner.lock();
        let replaced =
            |t: TableId| inner.superseded.contains(&t) || inner.driver.catalog().is_retired(t);
        let all = self.shared.tables.all();
        let newest = all.iter().find(|(t, _)| !replaced(*t)).or(all.first());
        // A checkpoint adds the new version before the old one is retired: a runtime
        // always serves a table no checkpoint replaced.
        let (_, served) = newest.unwrap_or_else(|| unreachable!("a runtime serves no table"));
        Arc::clone(&served.table)
    }

    /// Table `table`'s newest version, if the runtime serves it.
    pub fn table_at(&self, table: TableId) -> Option<Arc<Table>> {
        Some(Arc::clone(&self.shared.served(table)?.table))
    }

    /// Every table the runtime serves, its newest version with its id, in id order: a
    /// version a checkpoint replaced too, until it is freed.
    pub fn tables(&self) -> Vec<(TableId, Arc<Table>)> {
        let tables = self.shared.tables.all().into_iter();
        tables.map(|(t, s)| (t, Arc::clone(&s.table))).collect()
    }

    /// A bulk append to table `table` committed (2012 §2.1): `appended` is the table's
    /// new version, the old one's chunks followed by new ones
    /// (`coopscan_storage::TableAppender`). Scans registered from now on read the new
    /// version; those registered before keep their snapshot. The ABM adds the new
    /// chunks (`Catalog::append_chunks`), and the chunks both versions have stay one
    /// chunk of the buffer, shared by the scans of either. Returns the new chunks.
    pub fn append(&self, table: TableId, appended: Table) -> Result<Range<ChunkId>> {
        let mut inner = self.shared.inner.lock();
        if inner.shutdown {
            return Err(inner.stop_error());
        }
        let old = (self.shared.served(table))
            .ok_or(coopscan_buffer::BufferError::UnknownTable(table.0))?;
        // Sized as the running ABM keeps the table: by column or by whole chunk.
        let columnar = inner.driver.catalog().table(table)?.geometry().columns() > 0;
        let (first, chunks) = appended_chunks(&old, &appended, columnar)?;
        let files = appended.open_files(&self.shared.device)?;
        // The new version first: a load of a new chunk, which the ABM can decide only
        // after `append_chunks`, always finds it.
        self.shared.tables.set(
            table,
            Served {
                table: Arc::new(appended),
                files,
                load_projection: old.load_projection.clone(),
            },
        );
        let added = inner.decide(|driver| driver.append_chunks(table, &chunks));
        // The ABM numbers the new chunks after the old ones, as the table does.
        debug_assert!(added.as_ref().map_or(true, |r| r.start.0 as usize == first));
        drop(inner);
        self.shared.wake_loaders();
        Ok(added?)
    }

    /// A checkpoint of table `table` committed (2012 §2.1, case (iv)): `image` is the
    /// table's new stable image, which shares no page with the old one, so the ABM
    /// serves it as a table of its own — returned: scans registered on it read the new
    /// image. The old version is retired once no [`VersionHold`] on it is left (at
    /// once if none is): scans already on it go on and new ones may still register on
    /// its id (a plan or transaction on the old snapshot), and once none is left and no
    /// load of it runs, its pieces and metadata are dropped and its id is unknown. Both
    /// versions share the one budget meanwhile.
    pub fn checkpointed(&self, table: TableId, image: Table) -> Result<TableId> {
        let load_projection: Vec<usize> = (0..image.schema().len()).collect();
        let geometry = geometry(&image, &load_projection)?;
        let files = image.open_files(&self.shared.device)?;
        let mut inner = self.shared.inner.lock();
        if inner.shutdown {
            return Err(inner.stop_error());
        }
        let kind = inner.driver.catalog().table(table)?.policy().kind();
        let new = inner.decide(|driver| driver.add_table_of_kind(geometry, kind))?;
        // Served before the ABM can decide a load of it (the loaders wait for the lock).
        let served = Served {
            table: Arc::new(image),
            files,
            load_projection,
        };
        self.shared.tables.set(new, served);
        match inner.holds.contains_key(&table) {
            true => _ = inner.superseded.insert(table),
            false => {
                inner.decide(|driver| driver.retire_table(table))?;
                self.shared.forget_freed(&mut inner);
            }
        }
        drop(inner);
        self.shared.wake_loaders();
        Ok(new)
    }

    /// A hold on table `table`'s version: after a checkpoint replaced it
    /// ([`Runtime::checkpointed`]), it stays registered until the last hold goes.
    pub fn hold(&self, table: TableId) -> Result<VersionHold> {
        let mut inner = self.shared.inner.lock();
        inner.driver.catalog().table(table)?;
        *inner.holds.entry(table).or_default() += 1;
        Ok(VersionHold {
            shared: Arc::clone(&self.shared),
            table,
        })
    }

    pub fn stats(&self) -> RuntimeStats {
        self.shared.counters.snapshot()
    }

    /// The device's own counters (requests, bytes, busy and throttle time).
    /// Time spent in ABM calls since the runtime started, and how many (Figure 8's
    /// scheduling cost, measured on the real engine).
    pub fn scheduling(&self) -> Scheduling {
        self.shared.inner.lock().scheduling
    }

    /// The device the runtime reads through (an index scan beside its CScans reads
    /// through it too, so the emulated disk sees both).
    pub fn device(&self) -> &Arc<Device> {
        &self.shared.device
    }

    pub fn device_stats(&self) -> DeviceStats {
        self.shared.device.stats()
    }

    /// The ABM's counters (loads, evictions, deliveries, failures), every table's
    /// added up.
    pub fn abm_stats(&self) -> AbmStats {
        self.shared.inner.lock().driver.catalog().abm_stats()
    }

    /// Pieces evicted for another table's load, and their bytes.
    pub fn foreign_evictions(&self) -> (u64, u64) {
        let stats = self.shared.inner.lock().driver.catalog().stats();
        (stats.foreign_evictions, stats.foreign_bytes)
    }

    /// Every chunk load so far, in completion order, and how many were not recorded
    /// because the log was full.
    pub fn load_log(&self) -> (Vec<LoadRecord>, u64) {
        let inner = self.shared.inner.lock();
        (inner.load_log.records().to_vec(), inner.load_log.dropped())
    }

    /// Time since the runtime started: the clock of [`LoadRecord::at`].
    pub fn elapsed(&self) -> std::time::Duration {
        self.shared.started.elapsed()
    }

    /// The shared buffer's state in words: its bytes, the scan workers waiting, and per
    /// table its chunks, resident pieces, pinned chunks, loads in flight and scans (what
    /// the loader prints when scans wait and it finds nothing to load for 30 s).
    pub fn buffer_report(&self) -> String {
        let inner = self.shared.inner.lock();
        crate::loader::buffer_report(&self.shared, &inner)
    }

    /// What the buffer holds on behalf of scans right now. All zero once every scan
    /// handle and chunk guard is gone: nothing leaked (for tests and debugging).
    pub fn holdings(&self) -> Holdings {
        let inner = self.shared.inner.lock();
        let mut holdings = Holdings::default();
        for abm in inner.driver.catalog().tables() {
            let state = abm.state();
            holdings.pinned_chunks += state.pinned_chunks();
            holdings.active_scans += state.active_count() as usize;
            holdings.queued_scans += state.pending_count();
        }
        holdings
    }

    /// Starts recording every piece reference (each chunk delivered to a scan
    /// references the pieces the scan reads of it), for an offline replay under OPT
    /// (`coopscan opt`); 48 bytes per reference until [`Runtime::take_trace`].
    pub fn record_trace(&self) {
        let mut inner = self.shared.inner.lock();
        inner.driver.record_trace();
        inner.traced_tags.get_or_insert_with(HashMap::new);
        inner.traced_registrations.get_or_insert_with(HashMap::new);
    }

    /// When every scan registered since [`Runtime::record_trace`] did, on the trace's
    /// clock: where a scan's interest starts (its first reference may come much later).
    pub fn traced_registrations(&self) -> HashMap<ScanId, Nanos> {
        self.shared
            .inner
            .lock()
            .traced_registrations
            .clone()
            .unwrap_or_default()
    }

    /// The tag of every scan registered with one since [`Runtime::record_trace`],
    /// unregistered scans included: what names a trace's scans.
    pub fn traced_tags(&self) -> HashMap<ScanId, u64> {
        self.shared
            .inner
            .lock()
            .traced_tags
            .clone()
            .unwrap_or_default()
    }

    /// The piece references recorded so far, in order (recording continues).
    pub fn take_trace(&self) -> Vec<coopscan_buffer::Reference> {
        self.shared.inner.lock().driver.take_trace()
    }

    /// Table `table`'s chunks and pieces as its ABM sees them now (what a simulation of
    /// this runtime's workload lays out, `coopscan_sim::SimTable`).
    pub fn geometry(&self, table: TableId) -> Result<TableGeometry> {
        let inner = self.shared.inner.lock();
        Ok(inner.driver.catalog().table(table)?.geometry().clone())
    }

    /// The buffer's byte budget (all tables' together).
    pub fn buffer_bytes(&self) -> u64 {
        self.shared.inner.lock().driver.catalog().budget_bytes()
    }

    /// Bytes every table's loading and resident pieces hold now.
    pub fn used_bytes(&self) -> u64 {
        self.shared.inner.lock().driver.catalog().used_bytes()
    }

    /// Runs the ABM's full consistency check (for tests and debugging).
    pub fn check_invariants(&self) -> Result<()> {
        Ok(self
            .shared
            .inner
            .lock()
            .driver
            .catalog()
            .check_invariants()?)
    }
}

impl Drop for Runtime {
    /// Stops the loaders without waiting for them: a loader in the middle of a read
    /// (which may take a throttled device's whole latency) finishes it on its own, sees
    /// the shutdown and exits; nobody needs what it reads, so the caller should not
    /// wait for it (issue "Reliability", item 10). The loaders own a reference to the
    /// shared state, so it outlives them.
    fn drop(&mut self) {
        let mut inner = self.shared.inner.lock();
        inner.shutdown = true;
        self.shared.wake_all_scans(&mut inner);
        drop(inner);
        self.shared.loader_wakeup.notify_all();
        self.loaders.clear();
    }
}

/// How a scan registers beside its table, ranges and columns.
struct How {
    order: ScanOrder,
    workers: u16,
    /// An index selection's pages (`ScanSpec::pages`).
    pages: Option<ScanPages>,
}

/// The ABM's view of the table: chunk boundaries and the bytes a load reads. NSM/PAX:
/// one piece per chunk, all its pages (one resident chunk serves every projection), of
/// the table's page size (index selections' scattered loads read some of them).
/// DSM and CSM: one piece per column of a chunk, its column's pages (CSM: its run in
/// the chunk's tile, never shared), so a scan loads only its columns.
fn geometry(table: &Table, load_projection: &[usize]) -> Result<TableGeometry> {
    let geometry =
        TableGeometry::from_chunk_starts(table.chunk_row_starts().to_vec(), table.rows())?;
    let columnar = loads_columns(table, load_projection);
    let pieces = (0..table.chunk_count()).map(|k| piece_bytes(table, k, load_projection, columnar));
    if columnar {
        let geometry = geometry
            .with_column_bytes(pieces.collect())?
            .with_shared_pages(shared_pages(table, load_projection)?)?;
        // CSM: a chunk's columns are runs of one tile, read together; loads follow
        // Clotho's page schemas.
        return Ok(match table.layout() {
            Layout::Csm => geometry.with_tiles()?,
            _ => geometry,
        });
    }
    let page_bytes = u64::from(table.manifest().page_bytes);
    Ok(geometry
        .with_chunk_bytes(pieces.flatten().collect())?
        .with_page_bytes(page_bytes)?)
}

/// Whether the ABM keeps `table`'s chunks as one piece per column of `load_projection`
/// (DSM, CSM) rather than one piece of all its pages. Decided when the runtime starts
/// (`Runtime::append` sizes an append's chunks as the running geometry does).
fn loads_columns(table: &Table, load_projection: &[usize]) -> bool {
    table.layout().columnar()
        && table.chunk_count() > 0
        && load_projection.len() <= ColumnMask::BITS
}

/// The bytes of chunk `k`'s pieces: one per column of `projection` when `columnar`,
/// else one of all of them.
fn piece_bytes(table: &Table, k: usize, projection: &[usize], columnar: bool) -> Vec<u64> {
    match columnar {
        true => projection
            .iter()
            .map(|&c| extent_bytes(table, k, &[c]))
            .collect(),
        false => vec![extent_bytes(table, k, projection)],
    }
}

/// The chunks `new` adds to `old`'s (a bulk append of the same table: the same table
/// id, layout and schema, and `old`'s chunks unchanged at its start), their pieces
/// sized per column when `columnar` ([`piece_bytes`]), and the first new chunk's number.
fn appended_chunks(
    old: &Served,
    new: &Table,
    columnar: bool,
) -> Result<(usize, Vec<AppendedChunk>)> {
    let (was, now) = (old.table.manifest(), new.manifest());
    let n = was.chunks.len();
    let extends = was.table_id == now.table_id
        && was.layout == now.layout
        && was.schema == now.schema
        && now.chunks.get(..n) == Some(&was.chunks[..]);
    if !extends {
        let why = format!(
            "{} is not an append to the table the runtime serves",
            new.dir().display()
        );
        return Err(coopscan_buffer::BufferError::InvalidGeometry(why).into());
    }
    let projection = &old.load_projection;
    let chunks = (n..new.chunk_count())
        .map(|k| AppendedChunk {
            rows: new.chunk(k).row_count,
            bytes: piece_bytes(new, k, projection, columnar),
        })
        .collect();
    Ok((n, chunks))
}

/// Bytes a load of chunk `k`'s `projection` reads (at least 1: the ABM sizes no piece 0).
fn extent_bytes(table: &Table, k: usize, projection: &[usize]) -> u64 {
    let extents = table.chunk_extents(k, projection);
    extents.iter().map(|e| e.len).sum::<u64>().max(1)
}

/// DSM: per piece, the bytes of its first and last page when the neighbouring chunk's
/// piece of the column holds that page too (the loader then copies it from there when
/// that piece is resident instead of reading it again).
fn shared_pages(table: &Table, load_projection: &[usize]) -> Result<Vec<Vec<SharedPages>>> {
    let page = u64::from(table.manifest().page_bytes);
    let shared = |k: usize, c: usize| -> Result<SharedPages> {
        let pages = table.column_pages(k, c)?;
        Ok(SharedPages {
            head: if pages.head_shared { page } else { 0 },
            tail: if pages.tail_shared { page } else { 0 },
        })
    };
    (0..table.chunk_count())
        .map(|k| load_projection.iter().map(|&c| shared(k, c)).collect())
        .collect()
}
