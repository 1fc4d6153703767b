//! Asking for in-order scans without an `ORDER BY`.
//!
//! A plan that needs `_rowid` order gets an in-order scan by itself (sort pushdown, see
//! `leaf_plan.rs`). Some callers know a query must read in table order for a reason
//! its SQL does not show; the benchmark's mixed-pool runs (2012 paper §2.3: Scans and
//! CScans in one pool) make a seeded share of their aggregates such queries. Such a
//! caller puts [`InOrderHint`] into the query's `SessionConfig`
//! (`SessionConfig::with_extension`); every cooperative scan of that session then
//! registers with `Runtime::register_in_order_tagged` and receives its chunks
//! ascending, exactly as a `PooledScanExec` would. Results do not change: only the
//! order the chunks arrive in, and what the pool's policy may do for the scan.

/// Every cooperative scan of a session carrying this reads in table order.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct InOrderHint;
