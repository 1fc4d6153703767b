//! The loader thread: the paper's ABM loop (§7.1) — ask the policy what to load, read
//! it, make it resident, signal the scans it serves.
//!
//! ```text
//!   lock ─ next_load(now) ─┬─ None ──► park on loader_wakeup ──► (event) ─┐
//!                          │                                            │
//!                          └─ LoadDecision ─ unlock ─ read + verify ─ lock
//!                  (per piece)  ├─ Ok  ─► resident[piece] = bytes; load_completed ─► post deliveries
//!                               └─ Err ─► load_failed ─► fail + unregister exactly those scans
//!                                         ─► notify scans ──► loop
//! ```
//! A failed load never panics the loader and never touches scans that did not need the
//! chunk; those keep running.

use std::sync::Arc;
use std::time::Duration;

use coopscan_buffer::{LoadDecision, Nanos, PieceId};
use coopscan_storage::{ChunkBytes, StorageError};
use parking_lot::MutexGuard;

use crate::error::RuntimeError;
use crate::load_log::LoadRecord;
use crate::shared::{Inner, Shared};

/// Runs until shutdown.
pub(crate) fn run(shared: Arc<Shared>) {
    let mut inner = shared.inner.lock();
    while !inner.shutdown {
        let now = shared.now();
        let Some(load) = inner.abm.next_load(now) else {
            shared.loader_wakeup.wait(&mut inner);
            continue;
        };
        // Evicted pieces are unpinned (the pool guarantees it); dropping our Arc frees
        // their bytes once no guard holds them.
        for evicted in &load.evicted {
            inner.resident.remove(evicted);
        }
        // The pieces of one load (DSM: its columns, smallest first) are read one after
        // another; each is made resident as it arrives, so a scan that needs only the
        // first columns can start before the rest are in.
        let mut pieces = load.pieces.iter();
        let mut all_read = true;
        for piece in pieces.by_ref() {
            if inner.shutdown {
                // Nobody will use the rest; the runtime is gone.
                return;
            }
            let result = MutexGuard::unlocked(&mut inner, || read(&shared, *piece));
            let now = shared.now();
            let ok = match result {
                Ok(bytes) => complete(&shared, &mut inner, &load, *piece, bytes, now),
                Err(e) => fail(&shared, &mut inner, *piece, Arc::new(e), now),
            };
            shared.scan_wakeup.notify_all();
            if !ok {
                all_read = false;
                break;
            }
        }
        if all_read {
            shared.counters.chunk_loaded();
        }
        // After a failure the rest of the load is abandoned: its pieces fail too.
        for piece in pieces {
            let error = Arc::new(StorageError::Invalid(format!(
                "{piece} not read: an earlier piece of its load failed"
            )));
            fail(&shared, &mut inner, *piece, error, shared.now());
        }
        shared.scan_wakeup.notify_all();
    }
}

/// Reads and verifies one piece; called without the lock.
fn read(shared: &Shared, piece: PieceId) -> Result<ChunkBytes, StorageError> {
    let k = piece.chunk.0 as usize;
    let projection = match piece.column {
        Some(column) => vec![usize::from(column)],
        None => shared.load_projection.clone(),
    };
    let bytes = shared
        .table
        .read_chunk(&shared.device, &shared.files, k, &projection)?;
    // A buffer manager checks what it reads before sharing it (PostgreSQL verifies
    // page checksums in ReadBuffer): a damaged page fails this load, and the error
    // reaches exactly the scans that needed the piece (`fail`), once.
    coopscan_storage::verify_chunk(&shared.table, &bytes.views())?;
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
    match inner.abm.load_completed(piece, now, &mut deliveries) {
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
    let scans = match inner.abm.load_failed(piece, now) {
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
        if let Err(e) = inner.abm.unregister_scan(scan, now, &mut deliveries) {
            fail_everyone(inner, e.into());
            return false;
        }
    }
    // Unregistering may admit queued scans and serve them.
    inner.post(&mut deliveries);
    false
}

/// The ABM rejected a loader event: a bug in the driver or the policy. The runtime
/// cannot go on safely, so it stops and every parked scan gets the error.
fn fail_everyone(inner: &mut Inner, error: RuntimeError) {
    let scans: Vec<_> = inner
        .abm
        .state()
        .active_slots()
        .map(|s| inner.abm.state().active_scan(s).id)
        .collect();
    for scan in scans {
        inner.failed.insert(scan, error.clone());
    }
    inner.shutdown = true;
}
