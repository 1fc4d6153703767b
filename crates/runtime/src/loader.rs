//! The loader thread: the paper's ABM loop (§7.1) — ask the policy what to load, read
//! it, make it resident, signal the scans it serves.
//!
//! ```text
//!   lock ─ next_load(now) ─┬─ None ──► park on loader_wakeup ──► (event) ─┐
//!                          │                                            │
//!                          └─ LoadDecision ─ unlock ─ read + verify ─ lock
//!                               ├─ Ok  ─► resident[c] = bytes; load_completed ─► post deliveries
//!                               └─ Err ─► load_failed ─► fail + unregister exactly those scans
//!                                         ─► notify scans ──► loop
//! ```
//! A failed load never panics the loader and never touches scans that did not need the
//! chunk; those keep running.

use std::sync::Arc;
use std::time::Duration;

use coopscan_buffer::{ChunkId, LoadDecision, Nanos};
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
        // Evicted chunks are unpinned (the pool guarantees it); dropping our Arc frees
        // their bytes once no guard holds them.
        for evicted in &load.evicted {
            inner.resident.remove(evicted);
        }
        let chunk = load.chunk;
        let result = MutexGuard::unlocked(&mut inner, || read(&shared, chunk));
        let now = shared.now();
        match result {
            Ok(bytes) => complete(&shared, &mut inner, load, bytes, now),
            Err(e) => fail(&shared, &mut inner, load.chunk, e, now),
        }
        shared.scan_wakeup.notify_all();
    }
}

/// Reads and verifies one chunk; called without the lock.
fn read(shared: &Shared, chunk: ChunkId) -> Result<ChunkBytes, StorageError> {
    let k = chunk.0 as usize;
    let bytes =
        shared
            .table
            .read_chunk(&shared.device, &shared.files, k, &shared.load_projection)?;
    // A buffer manager checks what it reads before sharing it (PostgreSQL verifies
    // page checksums in ReadBuffer): a damaged page fails this load, and the error
    // reaches exactly the scans that needed the chunk (`fail`), once.
    coopscan_storage::verify_chunk(&shared.table, &bytes.views())?;
    Ok(bytes)
}

fn complete(shared: &Shared, inner: &mut Inner, load: LoadDecision, bytes: ChunkBytes, now: Nanos) {
    shared.counters.loaded(bytes.bytes());
    let tag = load.on_behalf_of.and_then(|s| inner.tags.get(&s).copied());
    inner.load_log.push(LoadRecord {
        at: Duration::from_nanos(now.0),
        chunk: load.chunk.0,
        tag,
        bytes: bytes.bytes(),
    });
    inner.resident.insert(load.chunk, Arc::new(bytes));
    let mut deliveries = Vec::new();
    match inner.abm.load_completed(load.chunk, now, &mut deliveries) {
        Ok(()) => inner.post(&mut deliveries),
        Err(e) => fail_everyone(inner, e.into()),
    }
}

/// Fails exactly the scans that needed `chunk` and unregisters them at once, so the
/// policy stops retrying the chunk on their behalf; their handles see the error.
fn fail(shared: &Shared, inner: &mut Inner, chunk: ChunkId, e: StorageError, now: Nanos) {
    shared.counters.load_failed();
    let error = RuntimeError::Load {
        chunk,
        source: Arc::new(e),
    };
    let scans = match inner.abm.load_failed(chunk, now) {
        Ok(scans) => scans,
        Err(e) => return fail_everyone(inner, e.into()),
    };
    let mut deliveries = Vec::new();
    for scan in scans {
        inner.delivered.remove(&scan);
        inner.failed.insert(scan, error.clone());
        if let Err(e) = inner.abm.unregister_scan(scan, now, &mut deliveries) {
            return fail_everyone(inner, e.into());
        }
    }
    // Unregistering may admit queued scans and serve them.
    inner.post(&mut deliveries);
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
