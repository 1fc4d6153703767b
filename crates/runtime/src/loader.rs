//! The loader thread: the paper's ABM loop (§7.1) — ask the policy what to load, read
//! it, make it resident, signal the scans it serves.
//!
//! ```text
//!   lock ─ next_load(now) ─┬─ None ──► park on loader_wakeup ──► (event) ─┐
//!                          │                                            │
//!                          └─ LoadDecision ─ clone neighbours' bytes ─ unlock ─ read, copy, verify, wait for the throttle ─ lock
//!                  (per piece)  ├─ Ok  ─► resident[piece] = bytes; load_completed ─► post deliveries
//!                               └─ Err ─► load_failed ─► fail + unregister exactly those scans
//!                                         ─► notify scans ──► loop
//! ```
//! A failed load never panics the loader and never touches scans that did not need the
//! chunk; those keep running.

use std::any::Any;
use std::panic::{self, AssertUnwindSafe};
use std::sync::Arc;
use std::time::{Duration, Instant};

use coopscan_buffer::{AbmState, LoadDecision, Nanos, PieceId, ReadPlan};
use coopscan_storage::device::Completion;
use coopscan_storage::{ChunkBytes, Layout, PageCopies, StorageError};

use crate::error::RuntimeError;
use crate::load_log::LoadRecord;
use crate::shared::{Inner, Shared};
use crate::sync::MutexGuard;

/// Runs until shutdown. A panic anywhere in the loop (a bug here, in the policy, or in
/// the device or decoder below) stops the runtime and fails every scan with
/// [`RuntimeError::LoaderPanicked`]: nobody else would ever load the chunks they wait
/// for (issue "Reliability", item 11).
pub(crate) fn run(shared: Arc<Shared>) {
    // Unwind safety: after a panic nothing uses the ABM's state again except to fail
    // the scans; the lock (parking_lot, no poisoning) was released by the unwind.
    let outcome = panic::catch_unwind(AssertUnwindSafe(|| serve(&shared)));
    if let Err(payload) = outcome {
        let message = panic_message(payload.as_ref());
        let mut inner = shared.inner.lock();
        fail_everyone(&mut inner, RuntimeError::LoaderPanicked(message));
        shared.wake_all_scans(&mut inner);
        drop(inner);
        shared.loader_wakeup.notify_all();
    }
}

fn panic_message(payload: &(dyn Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "a panic without a message".to_string()
    }
}

/// How long the loader may find nothing to load while scan workers wait before it
/// reports the buffer's state (once per runtime): a stall no scan can leave. The one
/// seen in the TPC-H throughput run was the catalog making too little room for a
/// load of several scans' columns (docs/reliability.md), mended; the report stays for
/// whatever else could stall.
const STALL_REPORT_AFTER: Duration = Duration::from_secs(30);

/// The loader loop proper.
fn serve(shared: &Shared) {
    let mut inner = shared.inner.lock();
    while !inner.shutdown {
        let now = shared.now();
        let load = inner.decide(|driver| driver.next_load(now));
        // The neighbours' bytes to copy shared boundary pages from, taken now: the
        // plan names pieces resident at the decision, and an `Arc` keeps them valid
        // even if they are evicted while this load reads.
        let jobs = load.as_ref().map(|load| jobs(&inner, load));
        // Evicted pieces (for this load, or for one that then did not start) are
        // unpinned (the pool guarantees it); dropping our Arc frees their bytes once
        // no guard holds them.
        let evicted = inner.driver.take_evicted();
        inner.drop_evicted(&evicted);
        let (Some(load), Some(jobs)) = (load, jobs) else {
            let wait = shared
                .loader_wakeup
                .wait_for(&mut inner, STALL_REPORT_AFTER);
            if wait.timed_out() {
                report_stall(shared, &mut inner);
            }
            continue;
        };
        // Each piece woke the workers it answered (`load_pieces`).
        if !load_pieces(shared, &mut inner, &load, &jobs) {
            return;
        }
    }
}

/// Reads the pieces of one load (DSM: its columns, in the order the ABM's
/// `column_order` put them in `LoadDecision::pieces`); each is made resident as its
/// transfer ends, so a scan that needs only the first columns can start before the
/// rest are in. Every piece's request is issued at once, before the first is made
/// resident, so the emulated disk transfers a load's pieces back to back: issued one
/// after another, with the lock taken between them, the disk idled while the loader
/// made each piece resident and woke the scans — on two busy cores longer than a
/// small piece's transfer. A CSM load's runs are read together (one request per run of
/// adjacent columns) and made resident in the same order once all are in. Its time, and
/// the waits to take the lock back, go to `RuntimeStats::{loader_busy,
/// loader_lock_wait}`. False if the runtime shut down meanwhile.
fn load_pieces(
    shared: &Shared,
    inner: &mut MutexGuard<'_, Inner>,
    load: &LoadDecision,
    jobs: &[PieceJob],
) -> bool {
    let started = Instant::now();
    let mut lock_wait = Duration::ZERO;
    let running = read_pieces(shared, inner, load, jobs, &mut lock_wait);
    shared.counters.load_timed(started.elapsed(), lock_wait);
    running
}

/// [`load_pieces`]' work; `lock_wait` sums the waits to take the lock back.
fn read_pieces(
    shared: &Shared,
    inner: &mut MutexGuard<'_, Inner>,
    load: &LoadDecision,
    jobs: &[PieceJob],
    lock_wait: &mut Duration,
) -> bool {
    let mut pieces = load.pieces.iter();
    let mut first_error = None;
    let mut reads = unlocked_timed(inner, lock_wait, || {
        read_tile(shared, load).unwrap_or_else(|| issue_all(shared, jobs))
    })
    .into_iter();
    for piece in pieces.by_ref() {
        if inner.shutdown {
            // Nobody will use the rest; the runtime is gone.
            return false;
        }
        // A piece is never left unread: past a failed issue the loop has stopped, and a
        // read that gave fewer pieces than the load has fails the missing ones.
        let issued = reads
            .next()
            .unwrap_or_else(|| Err(StorageError::Invalid(format!("{piece} was not read"))));
        let result = unlocked_timed(inner, lock_wait, || issued.and_then(Issued::arrive));
        let now = shared.now();
        let ok = match result {
            Ok(read) => {
                let ok = complete(shared, inner, load, *piece, read, now);
                // Only a piece that completes a waiting worker's chunk answers it; a
                // piece that could not be made resident stopped the runtime.
                match ok {
                    true => shared.wake_answered(inner),
                    false => shared.wake_all_scans(inner),
                }
                ok
            }
            Err(e) => {
                let e = Arc::new(e);
                first_error = Some(Arc::clone(&e));
                let ok = fail(shared, inner, *piece, e, now);
                // A failure posts nothing: the failed scans' workers learn of it when
                // they ask again, so all of them must wake.
                shared.wake_all_scans(inner);
                ok
            }
        };
        if !ok {
            break;
        }
    }
    match &first_error {
        None if !inner.shutdown => shared.counters.chunk_loaded(),
        None => {}
        // After a failure the rest of the load is abandoned: its pieces fail too, with
        // the cause, so a scan that needed only those learns which file failed.
        Some(cause) => {
            for piece in pieces {
                let error = Arc::new(StorageError::Invalid(format!(
                    "{piece} not read: an earlier piece of its load failed: {cause}"
                )));
                fail(shared, inner, *piece, error, shared.now());
            }
            shared.wake_all_scans(inner);
        }
    }
    true
}

/// Runs `f` without the lock, adding to `waited` how long taking the lock back took.
fn unlocked_timed<T>(
    inner: &mut MutexGuard<'_, Inner>,
    waited: &mut Duration,
    f: impl FnOnce() -> T,
) -> T {
    let mut done = None;
    let out = MutexGuard::unlocked(inner, || {
        let out = f();
        done = Some(Instant::now());
        out
    });
    if let Some(done) = done {
        *waited = waited.saturating_add(done.elapsed());
    }
    out
}

/// One piece of a load: its plan, and the neighbours' bytes it may copy pages from.
struct PieceJob {
    plan: ReadPlan,
    head: Option<Arc<ChunkBytes>>,
    tail: Option<Arc<ChunkBytes>>,
}

/// The jobs of `load`, under the lock: every neighbour a plan names is resident now.
fn jobs(inner: &Inner, load: &LoadDecision) -> Vec<PieceJob> {
    let bytes_of = |piece: Option<PieceId>| inner.resident.get(&piece?).cloned();
    load.reads
        .iter()
        .map(|plan| PieceJob {
            plan: plan.clone(),
            head: bytes_of(plan.head_from),
            tail: bytes_of(plan.tail_from),
        })
        .collect()
}

/// A piece whose request the emulated disk has booked: read and verified, not yet
/// delivered.
struct Issued {
    read: Read,
    verified: Result<(), StorageError>,
    done: Completion,
}

impl Issued {
    /// The piece once the emulated disk has transferred it (or the verification's error).
    fn arrive(self) -> Result<Read, StorageError> {
        self.done.wait();
        self.verified.map(|()| self.read)
    }
}

/// Every job's request issued in order, each read and verified at once; stops after the
/// first that cannot be issued (its error last).
fn issue_all(shared: &Shared, jobs: &[PieceJob]) -> Vec<Result<Issued, StorageError>> {
    let mut issued = Vec::with_capacity(jobs.len());
    for job in jobs {
        let next = issue(shared, job);
        let failed = next.is_err();
        issued.push(next);
        if failed {
            break;
        }
    }
    issued
}

/// CSM, a load of several pieces: each piece's result, in the load's order, read with
/// one request per run of adjacent columns (`Table::read_tile_pieces_early`) and
/// verified; `None` for other layouts and single pieces, which `issue_all` reads. A
/// failed read is the first piece's error (the load then fails the rest, naming it).
fn read_tile(shared: &Shared, load: &LoadDecision) -> Option<Vec<Result<Issued, StorageError>>> {
    let served = shared.served(load.table)?;
    let table = &served.table;
    if table.layout() != Layout::Csm || load.pieces.len() < 2 {
        return None;
    }
    let columns = load
        .pieces
        .iter()
        .map(|p| p.columns.single().map(usize::from))
        .collect::<Option<Vec<usize>>>()?;
    let k = load.chunk.0 as usize;
    let (pieces, done) =
        match table.read_tile_pieces_early(&shared.device, &served.files, k, &columns) {
            Ok(read) => read,
            Err(e) => return Some(vec![Err(e)]),
        };
    // Verified while the emulated disk still transfers, as `issue` does; all of them
    // arrive with the last run.
    let results = pieces
        .into_iter()
        .map(|bytes| {
            let verified = coopscan_storage::verify_chunk(table, &bytes.views());
            let read_bytes = bytes.bytes();
            let read = Read { bytes, read_bytes };
            Ok(Issued {
                read,
                verified,
                done,
            })
        })
        .collect();
    Some(results)
}

/// A piece as read: its bytes and how many of them came from the device.
struct Read {
    bytes: ChunkBytes,
    read_bytes: u64,
}

/// Reads and verifies one piece, its delivery left to the emulated disk; called
/// without the lock. A DSM piece copies its shared boundary pages from the neighbours
/// in `job` (`PageCopies`); verification checks the copied pages like the read ones.
fn issue(shared: &Shared, job: &PieceJob) -> Result<Issued, StorageError> {
    let piece = job.plan.piece;
    // A load's table lives while the load is in flight (the catalog frees a version
    // only without scans or loads): a missing one is a runtime bug, failed as a read.
    let served = (shared.served(piece.table))
        .ok_or_else(|| StorageError::Invalid(format!("{piece}: no such table version")))?;
    let (table, files) = (&served.table, &served.files);
    let k = piece.chunk.0 as usize;
    // A piece of one column is a DSM column's pages or a CSM column's run; the piece of
    // all columns is an NSM/PAX chunk's pages.
    let (bytes, delivered, read_bytes) = match piece.columns.single() {
        Some(column) => {
            let copies = PageCopies {
                head: job.head.as_deref(),
                tail: job.tail.as_deref(),
            };
            let column = usize::from(column);
            let read = table.read_piece_early(&shared.device, files, k, column, copies)?;
            (read.bytes, read.done, read.read_bytes)
        }
        None if !job.plan.pages.is_empty() => {
            // Index selections alone need the chunk: the union of their pages, kept
            // from one request over them (2004 report §4.2; `coopscan_buffer`'s
            // scatter.rs).
            let runs = &job.plan.pages;
            let (bytes, done) = table.read_chunk_pages_early(&shared.device, files, k, runs)?;
            (bytes, done, job.plan.read_bytes())
        }
        None => {
            // Pages hold every column: read the chunk's pages once for all of them.
            let projection = &served.load_projection;
            let (bytes, done) = table.read_chunk_early(&shared.device, files, k, projection)?;
            let read_bytes = bytes.bytes();
            (bytes, done, read_bytes)
        }
    };
    // A buffer manager checks what it reads before sharing it (PostgreSQL verifies
    // page checksums in ReadBuffer): a damaged page fails this load, and the error
    // reaches exactly the scans that needed the piece (`fail`), once. Verified while
    // the emulated disk still transfers, as a pipelined loader verifies one chunk
    // during the next one's transfer: otherwise the disk idles for the checksum time
    // after every load, and a lone I/O-bound scan ran 1.2-1.3× the table's read time
    // (issue 10; the paper's F-100 alone is its read time).
    let verified = coopscan_storage::verify_chunk(table, &bytes.views());
    let read = Read { bytes, read_bytes };
    Ok(Issued {
        read,
        verified,
        done: delivered,
    })
}

/// Makes a read piece resident and serves the scans it completes; false if the ABM
/// rejected the event (then everything has been failed).
fn complete(
    shared: &Shared,
    inner: &mut Inner,
    load: &LoadDecision,
    piece: PieceId,
    read: Read,
    now: Nanos,
) -> bool {
    let Read { bytes, read_bytes } = read;
    let copied = bytes.bytes().saturating_sub(read_bytes);
    shared.counters.loaded(read_bytes, copied);
    let tag = load.on_behalf_of.and_then(|s| inner.tags.get(&s).copied());
    inner.load_log.push(LoadRecord {
        at: Duration::from_nanos(now.0),
        chunk: load.chunk.0,
        tag,
        bytes: read_bytes,
    });
    inner.resident.insert(piece, Arc::new(bytes));
    match inner.decide(|driver| driver.loaded(piece, now)) {
        Ok(()) => {
            shared.forget_freed(inner);
            true
        }
        Err(e) => {
            fail_everyone(inner, e.into());
            false
        }
    }
}

/// Fails exactly the scans that needed `piece`; the driver takes them out of the ABM at
/// once, so the policy stops retrying it on their behalf, and their handles see the
/// error. False (the load is over); also when the ABM rejected the event (then
/// everything has been failed).
fn fail(
    shared: &Shared,
    inner: &mut Inner,
    piece: PieceId,
    e: Arc<StorageError>,
    now: Nanos,
) -> bool {
    shared.counters.load_failed();
    let error = RuntimeError::Load {
        chunk: piece.chunk,
        source: e,
    };
    if let Err(e) = inner.decide(|driver| driver.load_failed(piece, now, error)) {
        fail_everyone(inner, e.into());
    }
    shared.forget_freed(inner);
    false
}

/// The runtime cannot go on safely (the ABM rejected a loader event, or a loader
/// panicked): it stops, and every scan gets `error` — active scans in their mailbox,
/// queued ones and later registrations through `stopped`.
fn fail_everyone(inner: &mut Inner, error: RuntimeError) {
    inner.driver.fail_all(error.clone());
    inner.stopped.get_or_insert(error);
    inner.shutdown = true;
}

/// Reports on stderr, once, that scan workers have waited `STALL_REPORT_AFTER` with
/// the ABM offering nothing to load, and what every table's buffer holds: what a
/// stall's cause must be found in. Nothing when no worker waits (an idle runtime).
fn report_stall(shared: &Shared, inner: &mut Inner) {
    let waiting = inner.driver.waiting_count();
    if inner.stall_reported || waiting == 0 || inner.shutdown {
        return;
    }
    inner.stall_reported = true;
    eprint!(
        "coopscan: {waiting} scan workers have waited {} s with nothing to load (a stall; please report it with what follows)\n{}",
        STALL_REPORT_AFTER.as_secs(),
        buffer_report(shared, inner)
    );
}

/// What the shared buffer holds now: its bytes, and per table its chunks, resident
/// pieces, pins, loads in flight and scans (`Runtime::buffer_report`).
pub(crate) fn buffer_report(shared: &Shared, inner: &Inner) -> String {
    let catalog = inner.driver.catalog();
    let mut report = format!(
        "  buffer: {} bytes, {} used, {} free; {} scan workers waiting\n",
        catalog.budget_bytes(),
        catalog.used_bytes(),
        catalog.free_bytes(),
        inner.driver.waiting_count()
    );
    for abm in catalog.tables() {
        let served = shared.served(abm.state().table());
        let name = served.map_or_else(String::new, |s| s.table.manifest().name.clone());
        report.push_str(&table_line(&name, abm.state()));
    }
    report
}

/// One table's line of a buffer report: its chunks, resident pieces, pins and scans.
fn table_line(name: &str, state: &AbmState) -> String {
    let pinned = state.pinned_chunks();
    format!(
        "  table {name}: {} chunks, {} pieces resident ({} bytes), {pinned} chunks pinned, {} loads in flight, {} scans active ({} starved), {} queued\n",
        state.chunk_count(),
        state.pool().len(),
        state.pool().used_bytes(),
        state.inflight(),
        state.active_count(),
        state.starved_mask().len(),
        state.pending_count()
    )
}
