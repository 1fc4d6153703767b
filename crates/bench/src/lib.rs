//! coopscan-bench: the engine-agnostic half of the Cooperative Scans stream benchmark
//! (the 2007 paper's §5: Table 2, Figures 4-8). It defines the workload, runs it under
//! each policy through the [`QueryEngine`] / [`PolicyFactory`] seam, checks every result
//! against a reference engine, computes Table 2's statistics and writes the reports
//! (text beside the paper's numbers, JSON, HTML with Figures 4 and 5, and for a preset's
//! sweep Figures 5-8's tables and line charts). See
//! `docs/bench.md` for the JSON schema and the wiring.
//!
//! ```text
//!  presets ─► Params ─► workload (mix, seed) ─► bench::run_benchmark ─► BenchReport ─► report::{text,json,html}
//!                                   reference ─┘   runner (threads)  ─┘   stats ─┘
//! ```

pub mod bandwidth;
pub mod bench;
pub mod calibration;
pub mod cpu;
pub mod engine;
pub mod error;
pub mod estimate;
pub mod memory;
pub mod mix;
pub mod presets;
pub mod reference;
pub mod refresh;
pub mod report;
pub mod runner;
pub mod samples;
pub mod sharing;
/// Table 2's setup and published numbers (defined once, in `coopscan-paper`).
pub use coopscan_paper::table2 as paper;
pub mod stats;
pub mod table_info;
pub mod tpch_throughput;
pub mod workload;

pub use bandwidth::{BandwidthMbS, BandwidthOutOfRange, BANDWIDTH_MB_S_MAX, BANDWIDTH_MB_S_MIN};
pub use bench::{
    device_shortfall, resolve_bandwidth, run_benchmark, trace_path, BenchInput, BenchReport,
    PolicyResult, TableInfo,
};
pub use calibration::{calibrate, Calibration, CalibrationInput};
pub use engine::{
    Consumption, IoStats, LoadRecord, LoaderTime, PolicyFactory, PolicyRun, PolicySetup,
    QueryEngine, QueryOutput, SchedulingCost,
};
pub use error::BenchError;
pub use mix::{Mix, QueryKind, QueryType};
pub use presets::{check_stagger_s, preset, Overrides, Params, StaggerOutOfRange, MAX_STAGGER_S};
pub use refresh::{Refresh, RefreshTimes, Refresher};
pub use samples::Samples;
pub use workload::{QueryInstance, Workload};
