//! A parked scan worker's own slot: the event that answers the worker hands it the
//! answer there, so the worker never takes the ABM's lock to collect it.
//!
//! ```text
//!   worker: lock ─ ask ─ Wait ─ parked[holder] = slot ─ unlock ─ wait on slot ─┐
//!   event (a load, a release, an unregister), under the lock:                  │
//!     answer posted ─ ask on the worker's behalf ─ parked.remove ─ hand ───────┘
//! ```
//! A worker woken to take the lock back and ask again queued behind the loader, and
//! the loader behind it: the workers one load answers all wanted the lock the moment
//! the loader let go of it, and the loader wanted it back as the next piece arrived
//! (docs/performance.md, "Where two workers per query lose"). Handed its answer, a
//! worker goes straight to decoding.

use std::sync::Arc;

use coopscan_buffer::{ChunkId, ColumnMask};
use coopscan_storage::ChunkBytes;

use crate::error::RuntimeError;
use crate::sync::{Condvar, Mutex};

/// What a wait for a chunk ended with.
pub(crate) enum Woken {
    Chunk(ChunkId, Vec<Arc<ChunkBytes>>),
    Finished,
    Failed(RuntimeError),
}

/// What a parked worker is handed.
pub(crate) enum Handed {
    /// The answer its own `ask` would have got, asked on its behalf.
    Answer(Woken),
    /// Nothing was posted (a failure, the shutdown): the worker asks again.
    AskAgain,
}

/// One worker's slot. In `Inner::parked` while the worker waits on it; whoever removes
/// it from there under the lock hands it exactly one `Handed`, so a slot in the map is
/// always empty.
pub(crate) struct Parking {
    slot: Mutex<Option<Handed>>,
    wakeup: Condvar,
    /// The worker's projection as the ABM sees it: which resident pieces an answered
    /// chunk is handed with.
    pub(crate) columns: ColumnMask,
}

impl Parking {
    pub(crate) fn new(columns: ColumnMask) -> Parking {
        Parking {
            slot: Mutex::new(None),
            wakeup: Condvar::default(),
            columns,
        }
    }

    /// Hands the worker `handed` and wakes it.
    pub(crate) fn hand(&self, handed: Handed) {
        let mut slot = self.slot.lock();
        debug_assert!(slot.is_none(), "a parked worker is handed one answer");
        *slot = Some(handed);
        drop(slot);
        self.wakeup.notify_all();
    }

    /// Waits, without the ABM's lock, until the worker is handed something. Whatever was
    /// handed after the worker let go of the lock and before this wait is in the slot
    /// already: no answer is missed.
    pub(crate) fn wait(&self) -> Handed {
        let mut slot = self.slot.lock();
        #[cfg(feature = "shuttle")]
        if crate::sync::inject::lost_wakeup_on() {
            // The injected bug: parking before looking at the slot.
            self.wakeup.wait(&mut slot);
        }
        loop {
            if let Some(handed) = slot.take() {
                return handed;
            }
            self.wakeup.wait(&mut slot);
        }
    }
}
