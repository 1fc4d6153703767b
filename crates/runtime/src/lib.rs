//! # coopscan-runtime: the threaded driver of the Active Buffer Manager
//!
//! The ABM policies of `coopscan-buffer` are pure state machines. This crate gives them
//! threads, a clock and real I/O (see `docs/runtime.md`):
//!
//! ```text
//!   scan threads                    Mutex<Inner>                         loader thread(s)
//!   CScan::next_chunk ──lock──► Abm + resident bytes + mailboxes ◄──lock── next_load(now)
//!        │ parked on its own slot         ▲                          │ unlock
//!        ▼                                │                          ▼
//!   ChunkGuard::batch (decode,            └──lock── load_completed ◄─ Device read + verify
//!     no lock held)                                 / load_failed       (no lock held)
//!   drop guard ─► release_chunk    drop CScan ─► unregister_scan
//! ```
//!
//! ```no_run
//! # use std::sync::Arc;
//! # use coopscan_runtime::*;
//! # fn main() -> Result<(), RuntimeError> {
//! # let dir = std::path::Path::new("table");
//! let table = coopscan_storage::Table::open(dir)?;
//! let device = Arc::new(coopscan_storage::device::Device::new(Default::default()));
//! let runtime = Runtime::new(table, device, RuntimeConfig::new(16, PolicyKind::Relevance))?;
//! let mut scan = runtime.register(vec![0..1000, 5000..6000], vec![0, 2])?;
//! while let Some(chunk) = scan.next_chunk()? {
//!     let batch = chunk.batch()?; // only this scan's tuples, in row order
//!     # let _ = batch;
//! }
//! # Ok(()) }
//! ```

mod error;
mod guard;
mod load_log;
mod loader;
mod parking;
mod runtime;
mod scan;
mod shared;
mod stats;
mod sync;

pub use coopscan_buffer::{AbmConfig, PolicyKind, ADMISSION_CHUNKS_PER_SCAN};
pub use error::{Result, RuntimeError};
pub use guard::ChunkGuard;
pub use load_log::{LoadRecord, MAX_LOAD_LOG};
pub use runtime::{Holdings, Runtime, RuntimeConfig, VersionHold};
pub use scan::CScan;
pub use stats::{RuntimeStats, ScanStats, Scheduling};
#[cfg(feature = "shuttle")]
pub use sync::inject;
