//! The loader thread: the paper's ABM loop (§7.1) — ask the policy what to load, read
//! it, make it resident, signal the scans it serves.
//!
//! ```text
//!   lock ─ next_load(now) ─┬─ None ──► park on loader_wakeup ──► (event) ─┐
//!                          │                                            │
//!                          └─ LoadDecision ─ unlock ─ read, verify, wait for the throttle ─ lock
//!                  (per piece)  ├─ Ok  ─► resident[piece] = bytes; load_completed ─► post deliveries
//!                               └─ Err ─► load_failed ─► fail + unregister exactly those scans
//!                                         ─► notify scans ──► loop
//! ```
//! A failed load never panics the loader and never touches scans that did not need the
//! chunk; those keep running.

use std::any::Any;
use std::panic::{self, AssertUnwindSafe};
use std::sync::Arc;
use std::time::Duration;

use coopscan_buffer::{LoadDecision, Nanos, PieceId};
use coopscan_storage::{ChunkBytes, StorageError};
use parking_lot::MutexGuard;

use crate::error::RuntimeError;
use crate::load_log::LoadRecord;
use crate::shared::{Inner, Shared};

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
        drop(inner);
        shared.scan_wakeup.notify_all();
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

/// The loader loop proper.
fn serve(shared: &Shared) {
    let mut inner = shared.inner.lock();
    while !inner.shutdown {
        let now = shared.now();
        let Some(load) = inner.decide(|abm| abm.next_load(now)) else {
            shared.loader_wakeup.wait(&mut inner);
            continue;
        };
        // Evicted pieces are unpinned (the pool guarantees it); dropping our Arc frees
        // their bytes once no guard holds them.
        for evicted in &load.evicted {
            inner.resident.remove(evicted);
        }
        if !load_pieces(shared, &mut inner, &load) {
            return;
        }
        shared.scan_wakeup.notify_all();
    }
}

/// Reads the pieces of one load (DSM: its columns, smallest first) one after another;
/// each is made resident as it arrives, so a scan that needs only the first columns can
/// start before the rest are in. False if the runtime shut down meanwhile.
fn load_pieces(shared: &Shared, inner: &mut MutexGuard<'_, Inner>, load: &LoadDecision) -> bool {
    let mut pieces = load.pieces.iter();
    let mut first_error = None;
    for piece in pieces.by_ref() {
        if inner.shutdown {
            // Nobody will use the rest; the runtime is gone.
            return false;
        }
        let result = MutexGuard::unlocked(inner, || read(shared, *piece));
        let now = shared.now();
        let ok = match result {
            Ok(bytes) => complete(shared, inner, load, *piece, bytes, now),
            Err(e) => {
                let e = Arc::new(e);
                first_error = Some(Arc::clone(&e));
                fail(shared, inner, *piece, e, now)
            }
        };
        shared.scan_wakeup.notify_all();
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
        }
    }
    true
}

/// Reads and verifies one piece; called without the lock.
fn read(shared: &Shared, piece: PieceId) -> Result<ChunkBytes, StorageError> {
    let k = piece.chunk.0 as usize;
    let projection = match piece.column {
        Some(column) => vec![usize::from(column)],
        None => shared.load_projection.clone(),
    };
    let (bytes, delivered) =
        shared
            .table
            .read_chunk_early(&shared.device, &shared.files, k, &projection)?;
    // A buffer manager checks what it reads before sharing it (PostgreSQL verifies
    // page checksums in ReadBuffer): a damaged page fails this load, and the error
    // reaches exactly the scans that needed the piece (`fail`), once. Verified while
    // the emulated disk still transfers, as a pipelined loader verifies one chunk
    // during the next one's transfer: otherwise the disk idles for the checksum time
    // after every load, and a lone I/O-bound scan ran 1.2-1.3× the table's read time
    // (issue 10; the paper's F-100 alone is its read time).
    let verified = coopscan_storage::verify_chunk(&shared.table, &bytes.views());
    delivered.wait();
    verified?;
    Ok(bytes)
}

/// Makes a read piece resident and serves the scans it completes; false if the ABM
/// rejected the event (then everything has been failed).
fn complete(
    shared: &Shared,
    inner: &mut Inner,
    load: &LoadDecision,
    piece: PieceId,
    bytes: ChunkBytes,
    now: Nanos,
) -> bool {
    shared.counters.loaded(bytes.bytes());
    let tag = load.on_behalf_of.and_then(|s| inner.tags.get(&s).copied());
    inner.load_log.push(LoadRecord {
        at: Duration::from_nanos(now.0),
        chunk: load.chunk.0,
        tag,
        bytes: bytes.bytes(),
    });
    inner.resident.insert(piece, Arc::new(bytes));
    let mut deliveries = Vec::new();
    match inner.decide(|abm| abm.load_completed(piece, now, &mut deliveries)) {
        Ok(()) => {
            inner.post(&mut deliveries);
            true
        }
        Err(e) => {
            fail_everyone(inner, e.into());
            false
        }
    }
}

/// Fails exactly the scans that needed `piece` and unregisters them at once, so the
/// policy stops retrying it on their behalf; their handles see the error. False if the
/// ABM rejected the event (then everything has been failed).
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
    let scans = match inner.decide(|abm| abm.load_failed(piece, now)) {
        Ok(scans) => scans,
        Err(e) => {
            fail_everyone(inner, e.into());
            return false;
        }
    };
    let mut deliveries = Vec::new();
    for scan in scans {
        inner.delivered.remove(&scan);
        inner.failed.insert(scan, error.clone());
        if let Err(e) = inner.decide(|abm| abm.unregister_scan(scan, now, &mut deliveries)) {
            fail_everyone(inner, e.into());
            return false;
        }
    }
    // Unregistering may admit queued scans and serve them.
    inner.post(&mut deliveries);
    false
}

/// The runtime cannot go on safely (the ABM rejected a loader event, or a loader
/// panicked): it stops, and every scan gets `error` — active scans in their mailbox,
/// queued ones and later registrations through `stopped`.
fn fail_everyone(inner: &mut Inner, error: RuntimeError) {
    // `scan(slot)`, not `active_scan`: after a panic the state may be half-updated, and
    // this must not panic again.
    let state = inner.abm.state();
    let scans: Vec<_> = state
        .active_slots()
        .filter_map(|s| state.scan(s).map(|scan| scan.id))
        .collect();
    for scan in scans {
        inner.failed.insert(scan, error.clone());
    }
    inner.stopped.get_or_insert(error);
    inner.shutdown = true;
}
