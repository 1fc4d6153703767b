//! # coopscan-paper: the papers' experiments, defined once
//!
//! The simulator (`coopscan-sim`, virtual time) and the benchmark (`coopscan-bench`,
//! the real engine) reproduce the same experiments. What an experiment *is* — its
//! setup in the paper, the numbers the paper published, and how its statistics are
//! defined — lives here, so the two cannot drift apart. Each side scales the setup to
//! its own table and device; neither keeps a copy of it.
//!
//! * [`experiment`], [`experiments`]: every experiment as one definition (workload,
//!   buffer, sweep, policies, published numbers, finding), run by both executors.
//! * [`table2`]: VLDB 2007 §5.1-5.2, Table 2 (setup and published numbers).
//! * [`table3`]: VLDB 2007 §6.3, Table 3, Table 2's DSM twin.
//! * [`table4`]: VLDB 2007 §6.3.1, Table 4, column overlap on a synthetic table.
//! * [`published`]: the shape of a published table, shared by Tables 2 and 3.
//! * [`stats`]: Table 2's statistics (stream time, normalized latency).
//! * [`sharing`]: PBM 2012 Figure 17, sharing potential (the classes and the sampling).
//! * [`mixed_pool`]: PBM 2012 §2.3/§5, Scans and CScans in one pool (buffers, bound).
//! * [`tpch_throughput`]: PBM 2012 §4.2, the TPC-H throughput run (Figures 14-16, 18).
//! * [`clotho`]: Clotho (VLDB 2004) §7.2's microbenchmarks: projectivity, selectivity
//!   (S-scan against SI-scan) and point queries over four layouts.

pub mod clotho;
pub mod common_prefix;
pub mod experiment;
pub mod experiments;
pub mod mixed_pool;
pub mod published;
pub mod sharing;
pub mod stats;
pub mod table2;
pub mod table3;
pub mod table4;
pub mod tpch_throughput;
