//! # coopscan-lab: the experiments on the real engine
//!
//! What `coopscan bench` runs, outside the command line: the benchmark's DataFusion
//! engine (`engine`: the `coopscan_bench::QueryEngine` of Scan and CScan plans, one
//! `Runtime` per policy run), its tables (`dataset`, `synthetic`, `table`, `data_dir`:
//! TPC-H lineitem and Table 4's relation generated into the cache on first use), the
//! peers wired in (`peers`: DuckDB and PostgreSQL through `coopscan-peers`), and the
//! orchestration of one invocation (`bench_cmd`: its arguments, calibration, the runs
//! of a preset, the reports), and Clotho's microbenchmarks over four layouts
//! (`clotho`: `--preset clotho-…`). `coopscan-bench` stays engine-agnostic; the CLI
//! only parses arguments.

pub mod bench_cmd;
pub mod clotho;
pub mod data_dir;
pub mod dataset;
pub mod engine;
pub mod peers;
pub mod refresh;
pub mod signals;
pub mod synthetic;
pub mod table;
