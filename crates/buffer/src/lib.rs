//! # coopscan-buffer: the Active Buffer Manager (ABM) of Cooperative Scans
//!
//! The ABM keeps track of every active CScan and which chunks each still needs, and
//! decides (a) which available chunk a scan processes next and (b) which chunk the
//! loader reads next, evicting what. Nine policies make these decisions: `normal`,
//! `attach`, `elevator` and `relevance` (Zukowski et al., VLDB 2007, Figure 3), `pbm`
//! (Predictive Buffer Management, Świtakowski et al., VLDB 2012), that paper's
//! proposals `pbm-lru` (§3), `mixed` (§2.3), `pbm-throttle` and `pbm-opportunistic`
//! (§5). Policies are pure
//! state machines: no threads, clocks, locks or I/O; time
//! comes in as a [`Nanos`] value, so the simulator (`coopscan-sim`) and the threaded
//! runtime drive the very same code.
//!
//! Two layers: a [`Pool`] of pieces under a byte budget with [`Replacer`]s that only
//! choose victims, and above it the scan scheduler ([`Abm`]) with the policies, where
//! scans say their ranges, columns and order ([`ScanSpec`]). See docs/abm.md.
//!
//! ## The driver contract
//!
//! ```text
//!   scan thread                         ABM                          loader
//!   register_scan(spec) ───────────────► admitted or queued
//!   next_chunk(scan) ──────────────────► Deliver(chunk)  (pinned for the scan)
//!                                       │ or Wait
//!                                       │                 ◄────── next_load()  (loader idle)
//!                                       │  LoadDecision{chunk, bytes, evicted} ──►  read
//!                                       │                 ◄────── load_completed(chunk)
//!   ◄── Delivery (for a waiting scan) ──┘                          (or load_failed)
//!   release_chunk(scan)  ──────────────► chunk consumed, unpinned
//!   ...until next_chunk says Finished
//!   unregister_scan(scan) ─────────────► pins and interest dropped; queued scans admitted
//! ```
//!
//! * A scan processes one chunk at a time: `next_chunk` while holding one is an error.
//! * `Wait` means the chunk arrives later in the `Delivery` list of some event
//!   (`load_completed`, or `unregister_scan` when a queued scan is admitted). A threaded
//!   driver parks the scan and hands it the delivery.
//! * The loader calls `next_load` whenever it is idle and after any event (each event can
//!   create work); `None` means "nothing useful now". `AbmConfig::max_inflight` (default 1,
//!   the papers' exclusive chunk I/O) bounds loads in flight.
//! * Throttling: a driver that can wait on time asks [`Abm::next_chunk_paced`], which
//!   may answer [`Paced::Hold`] (ask again at `until`); `next_chunk` never holds.
//! * Every method is O(classes + scans), never O(chunks × scans), but for the PBM
//!   family's re-filing; see `docs/abm.md`.
//!
//! ```
//! use coopscan_buffer::*;
//! let geometry = TableGeometry::uniform(8, 1000)?; // 8 chunks of 1000 rows
//! let mut abm = Abm::with_kind(geometry, AbmConfig::new(4), PolicyKind::Relevance)?;
//! let now = Nanos::ZERO;
//! let scan = abm.register_scan(&ScanSpec::full(8000), now)?.scan;
//! let mut deliveries = Vec::new();
//! let mut seen = 0;
//! loop {
//!     match abm.next_chunk(scan, now)? {
//!         NextChunk::Finished => break,
//!         NextChunk::Deliver(_) => {}
//!         NextChunk::Wait => {
//!             // The loader reads what the ABM asks for; completion serves the scan.
//!             let load = abm.next_load(now).expect("a waiting scan makes the loader busy");
//!             abm.load_completed(load.pieces[0], now, &mut deliveries)?;
//!             assert_eq!(deliveries.pop().map(|d| d.scan), Some(scan));
//!         }
//!     }
//!     abm.release_chunk(scan, now)?;
//!     seen += 1;
//! }
//! abm.unregister_scan(scan, now, &mut deliveries)?;
//! assert_eq!(seen, 8);
//! abm.check_invariants()?;
//! # Ok::<(), BufferError>(())
//! ```

mod abm;
pub mod catalog;
mod column_order;
mod config;
mod cpu_shares;
mod driver;
mod error;
mod geometry;
mod ids;
mod index;
mod invariants;
pub mod next_consumption;
mod page_schema;
pub mod policy;
pub mod pool;
mod replacer;
mod scan_set;
mod scatter;
mod sharing;
mod spec;
mod split;
mod state;
mod straddle;
mod strategy;
pub mod trace;
mod transitions;

pub use abm::{Abm, Delivery, LoadDecision, NextChunk, Paced, Registration};
pub use catalog::{Catalog, CatalogStats};
pub use config::{
    AbmConfig, BufferBudget, ADMISSION_CHUNKS_PER_SCAN, ADMISSION_MAX_OVERTAKES,
    DEFAULT_AGING_UNIT, MAX_SCANS, MAX_WORKERS, STARVED_BELOW,
};
pub use cpu_shares::{CpuShares, MAX_NICE_STEPS, NICE_STEP_WEIGHT};
pub use driver::{Answer, Driver, Mail, OnLoadFailure};
pub use error::BufferError;
pub use geometry::{AppendedChunk, SharedPages, TableGeometry, MAX_COLUMNS, UNIT_CHUNK_BYTES};
pub use ids::{ChunkId, HolderId, Nanos, ScanId, ScanSlot};
pub use index::ChunkClass;
pub use next_consumption::Paces;
pub use page_schema::PageSchemas;
pub use policy::next_use::{self, NextUseOrder};
pub use policy::{AnyPolicy, LoadChoice, Policy, PolicyKind, RelevanceRanking, UnknownPolicy};
pub use pool::{PieceId, PieceState, Pool, TableId, TableVersion};
pub use replacer::knapsack;
pub use replacer::timeline::{
    BucketTimeline, CounterRotatingTimeline, Filed, Placed, TimelineShape,
};
pub use replacer::{
    plan_eviction, plan_knapsack, Arrivals, EvictionOrder, EvictionRequest, FifoReplacer,
    KeepRanking, KeepRelevanceReplacer, LruReplacer, OrderReplacer, Replacer,
};
pub use scan_set::ScanSet;
pub use scatter::{page_runs, ScanPages};
pub use spec::{ChunkRanges, ColumnMask, RowRanges, ScanOrder, ScanSpec, Snapshot};
pub use split::{static_slices, touched_chunks, Split};
pub use state::{AbmState, AbmStats, Residency, ScanState};
pub use straddle::ReadPlan;
pub use strategy::{ColumnOrder, EvictionStrategy, UnknownChoice};
pub use trace::{read_trace, write_trace, Reference, TraceError};
