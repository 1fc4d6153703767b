//! coopscan-peers: DuckDB and PostgreSQL run the benchmark's exact workload beside
//! coopscan (`coopscan bench --engines coopscan,duckdb,postgres`, issue 11). Each peer
//! is one more [`coopscan_bench::PolicyRun`] (named `duckdb` / `postgres`), so the
//! runner, the result checks against the reference engine and the reports treat it as
//! one more policy column. The TPC-H presets' peers (`tpch`: DuckDB, and DataFusion
//! over Parquet) run whole streams of TPC-H statements instead.
//!
//! ```text
//!  coopscan Table ─► export (text + l_rowid) ─► DuckDB file / PostgreSQL heap   (setup, cached)
//!  PolicySetup ─► confine (cgroup: blkio read throttle + memory cap; page cache dropped;
//!                DuckDB: kept out of the page cache while it runs, `page_cache`)
//!              ─► fresh driver / server ─► QueryEngine::run ─► canonical rows
//! ```

pub mod canonical;
pub mod driver;
pub mod duckdb;
pub mod error;
pub mod export;
pub mod leftovers;
pub mod page_cache;
pub mod postgres;
pub mod proc_stat;
pub mod run;
pub mod sys;
pub mod tpch;

pub use error::PeerError;
pub use run::{PeerSetup, Regime, SqlFor};
