//! # coopscan-paper: the papers' experiments, defined once
//!
//! The simulator (`coopscan-sim`, virtual time) and the benchmark (`coopscan-bench`,
//! the real engine) reproduce the same experiments. What an experiment *is* — its
//! setup in the paper, the numbers the paper published, and how its statistics are
//! defined — lives here, so the two cannot drift apart. Each side scales the setup to
//! its own table and device; neither keeps a copy of it.
//!
//! * [`table2`]: VLDB 2007 §5.1-5.2, Table 2 (setup and published numbers).
//! * [`stats`]: Table 2's statistics (stream time, normalized latency).

pub mod stats;
pub mod table2;
