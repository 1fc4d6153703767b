//! # coopscan-sim: the ABM policies on virtual time
//!
//! Drives the very same `coopscan_buffer::Abm` the threaded runtime uses, with a
//! simulated device (fixed cost per chunk, or bandwidth + latency) and a simulated CPU
//! (queries cost cycles per byte on a 2 GHz clock; cores shared by the running queries),
//! as in the simulator of the 2004 CWI report §3.1. Runs are deterministic: the same
//! preset and seed give the same numbers. One table, or several in one buffer
//! (`SimConfig::tables`: the 2012 paper's TPC-H throughput run, §4.2).
//!
//! Presets (see `docs/simulation.md`): `homogeneous` and `heterogeneous` (2004 report
//! Figures 3 and 4), `table2` (2007 paper Table 2 workload), `table3` (its DSM twin,
//! Table 3), `fig8` (scheduling cost against the number of chunks), `table4` (DSM column
//! overlap), `pbm-buffer` (2012 paper Figure 11: LRU, PBM, PBM/LRU, CScans and OPT
//! against the buffer size), `pbm-bandwidth` (Figure 12: against the disk bandwidth),
//! `pbm-streams` (Figure 13: against the number of streams), `pbm-sharing` (Figure 17:
//! the volume wanted by 1, 2, 3, ≥ 4 scans over time) and
//! `mixed-pool` (Scans and CScans in one pool with one temperature, §2.3/§5).

mod boundaries;
mod common_prefix;
mod dsm_variants;
mod engine;
mod error;
pub mod experiments;
mod fig8;
mod mixed_pool;
mod model;
mod parallel_split;
mod pbm_bandwidth;
mod pbm_buffer;
mod pbm_lru_hot;
mod pbm_sharing;
mod pbm_streams;
pub mod presets;
mod replay;
mod report;
mod result;
pub mod svg;
mod sweep;
mod table3;
mod table4;
mod timeline;
mod workload;

pub use boundaries::Boundaries;
pub use common_prefix::{common_prefix, common_prefix_text, CommonPrefixReport, CommonPrefixRun};
pub use dsm_variants::{table4_variants, variants_text, VARIANTS};
pub use engine::{
    abm_config, check_setup, geometries, geometry, shaped_run, simulate, simulate_catalog,
    simulate_ordered, simulate_policy, simulate_tables, table_policies, SimConfig, SimFaults,
    SimTable, DEFAULT_MAX_EVENTS, MAX_FAULT_PER_MILLE,
};
pub use error::SimError;
pub use fig8::{fig8, fig8_default_chunks, Fig8Point, Fig8Report};
pub use mixed_pool::{
    choose_scans, mixed_pool, mixed_pool_text, MixedPoint, MixedReport, MixedRun, MIXED_TARGET,
};
pub use model::{CpuModel, DeviceModel, LoaderCpu, CPU_HZ_2GHZ};
pub use parallel_split::{
    split_example, SplitExampleRun, SPLIT_EXAMPLE_CHUNKS, SPLIT_EXAMPLE_RESIDENT,
    SPLIT_EXAMPLE_WORKERS,
};
pub use pbm_bandwidth::{
    pbm_bandwidth, pbm_bandwidth_text, pbm_bandwidth_with, PbmBandwidthOptions, PbmBandwidthPoint,
    PbmBandwidthReport,
};
pub use pbm_buffer::{
    pbm_buffer, pbm_buffer_text, pbm_buffer_workload, PbmBufferPoint, PbmBufferReport, PbmBufferRow,
};
pub use pbm_lru_hot::{
    pbm_lru_hot, pbm_lru_hot_text, HotPoint, HotReport, HotRow, HOT_BUFFER_PCT, HOT_CHUNKS,
    HOT_INTERVALS_S,
};
pub use pbm_sharing::{
    pbm_sharing, pbm_sharing_text, sharing_potential, PbmSharingReport, PbmSharingRun,
    SharingSample, SHARING_CLASSES, SHARING_SAMPLES,
};
pub use pbm_streams::{
    pbm_streams, pbm_streams_text, pbm_streams_workload, PbmStreamsPoint, PbmStreamsReport,
};
pub use presets::{run_preset, run_preset_shaped, run_preset_traced, PresetName};
pub use replay::{replay_workload, ReplayQuery, ReplaySetup};
pub use report::{PaperNumbers, PolicyReport, PresetReport};
pub use result::{QueryResult, RunResult};
pub use sweep::{run_sweep, sweep_text, SweepPoint, SweepReport, SweepRow};
pub use table3::{table3, table3_config, table3_queries_text};
pub use table4::{
    table4, table4_config, table4_on, table4_text, table4_workload, Table4Report, Table4Row,
    FAMILIES,
};
pub use timeline::{Interval, Processing, Timeline};
pub use workload::{QueryShape, QuerySpec, SimCheckpoint, StreamSpec, Workload};
