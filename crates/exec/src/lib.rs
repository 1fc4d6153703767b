//! # coopscan-exec: Scan and CScan as DataFusion operators
//!
//! A coopscan table becomes a DataFusion table through [`CoopTable`]. Its queries read
//! either with [`ScanExec`] (in table order, straight from storage: the baseline) or
//! with [`CScanExec`] (chunks in any order from the table's shared Active Buffer
//! Manager, a `coopscan_runtime::Runtime`). See `docs/exec.md`.
//!
//! ```text
//!   SQL ─► SessionContext ─► CoopTable::scan(projection, filters)
//!                                 │ _rowid bounds → tuple range (Exact)
//!                                 │ zonemap conjuncts → pruned chunks (Inexact)
//!                   ┌─────────────┴──────────────┐
//!             ScanExec (Scan mode)        CScanExec (CScan mode)
//!   feeder thread: read_chunk_batch     feeder thread: CScan::next_chunk (blocks)
//!                   └──── mpsc channel ──► RecordBatch stream ─► DataFusion operators
//! ```
//!
//! ```no_run
//! # use std::sync::Arc;
//! # use coopscan_exec::*;
//! # use coopscan_runtime::{PolicyKind, Runtime, RuntimeConfig};
//! # async fn demo() -> Result<(), ExecError> {
//! let table = coopscan_storage::Table::open(std::path::Path::new("data/lineitem"))?;
//! let device = Arc::new(coopscan_storage::device::Device::new(Default::default()));
//! let runtime = Arc::new(Runtime::new(table, device, RuntimeConfig::new(64, PolicyKind::Relevance))?);
//! let ctx = session_context();
//! ctx.register_table("lineitem", Arc::new(CoopTable::cooperative(Arc::clone(&runtime))))?;
//! let batches = run_sql(&ctx, &Query::Fast.sql("lineitem", Some(0..100_000))).await?;
//! # let _ = batches; Ok(()) }
//! ```

mod checked_arithmetic;
mod checked_sum;
mod counters;
mod create_index;
mod cscan_exec;
pub mod delta;
mod error;
mod feed;
mod index_scan;
pub mod join_sides;
mod leaf_plan;
mod like_segments;
pub mod narrow_decimal;
mod order_hint;
mod partial_states;
mod plan_common;
mod plan_exprs;
mod planned_scans;
mod provider;
pub mod pushdown;
mod queries;
mod query_tag;
mod rewrite;
mod runtime_filter;
pub mod scan_aggregate;
mod scan_exec;
pub mod semi_join_pushdown;
mod session;
mod shape;
mod stand_in;
mod statistics;

/// The DataFusion this crate is built against, for callers that need its types.
pub use datafusion;

pub use checked_arithmetic::CheckedArithmetic;
pub use checked_sum::CheckedSum;
pub use counters::ScanCountersSnapshot;
pub use cscan_exec::{CScanExec, InOrder, Pooled, PooledScanExec, ScanWorkers, StaticSplit};
pub use error::{ExecError, Result};
pub use feed::{FeedPacing, FEED_CHANNEL_BATCHES};
pub use index_scan::{
    IndexPageCost, IndexScanExec, IndexScans, IndexSource, PAGE_FETCH_COST_BYTES,
};
pub use leaf_plan::{ChunkSource, LeafScanExec};
pub use order_hint::InOrderHint;
pub use planned_scans::{planned_scans, PlannedScan};
pub use provider::{CoopTable, ScanMode};
pub use pushdown::ROWID_COLUMN;
pub use queries::{
    attribute_name, columns_sql, fast_sql, slow_sql, Query, COLUMNS_PER_QUERY, FAST_COLUMNS,
    SLOW_COLUMNS, SLOW_EXTRA_DEFAULT, SLOW_EXTRA_MAX,
};
pub use query_tag::QueryTag;
pub use scan_exec::ScanExec;
pub use session::{
    plan_read_only, plan_read_or_change, query_session, query_session_config,
    read_only_sql_options, run_sql, session_context,
};
