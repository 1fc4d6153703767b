//! Attributing a query's chunk loads to it.
//!
//! A caller that wants per-query I/O counts (the benchmark) puts a [`QueryTag`] into the
//! query's `SessionConfig` (`SessionConfig::with_extension`); the CScan of that query
//! then registers with `Runtime::register_tagged`, and the runtime's load log names the
//! tag on every load the ABM scheduled for it.

/// The caller's identifier of the query a session runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct QueryTag(pub u64);
