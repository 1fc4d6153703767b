//! Named experiments: the 2004 report's simulations and the 2007 paper's Table 2.

use crate::engine::{shaped_run, simulate, SimConfig};
use crate::experiments::{defs, range_workload, short_names, table2_config};
use crate::model::{CpuModel, DeviceModel, CPU_HZ_2GHZ};
use crate::report::{table2_paper, PolicyReport, PresetReport};
use crate::workload::{QueryShape, QuerySpec, SimCheckpoint, Workload};
use crate::SimError;
use coopscan_buffer::PolicyKind;
use std::collections::HashMap;
use std::fmt;
use std::ops::Range;
use std::str::FromStr;

const MB: u64 = 1_000_000;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PresetName {
    Homogeneous,
    Heterogeneous,
    Table2,
    /// DSM twin of Table 2 (`table3.rs`).
    Table3,
    /// Figures 5-7 of the 2007 paper, by the generic executor (`sweep.rs`).
    Fig5,
    Fig6,
    Fig7,
    Fig8,
    Table4,
    PbmBuffer,
    PbmBandwidth,
    PbmSharing,
    MixedPool,
    PbmStreams,
    /// Scans of snapshots with a common prefix (2012 §2.1, `common_prefix.rs`).
    CommonPrefix,
}

impl PresetName {
    pub const ALL: [PresetName; 15] = [
        PresetName::Homogeneous,
        PresetName::Heterogeneous,
        PresetName::Table2,
        PresetName::Table3,
        PresetName::Fig5,
        PresetName::Fig6,
        PresetName::Fig7,
        PresetName::Fig8,
        PresetName::Table4,
        PresetName::PbmBuffer,
        PresetName::PbmBandwidth,
        PresetName::PbmSharing,
        PresetName::MixedPool,
        PresetName::PbmStreams,
        PresetName::CommonPrefix,
    ];

    /// Whether its queries may run with several workers ([`run_preset_shaped`]).
    pub fn takes_query_shape(self) -> bool {
        matches!(self, PresetName::Table2 | PresetName::Table3)
    }

    pub fn name(self) -> &'static str {
        match self {
            PresetName::Homogeneous => "homogeneous",
            PresetName::Heterogeneous => "heterogeneous",
            PresetName::Table2 => "table2",
            PresetName::Table3 => "table3",
            PresetName::Fig5 => "fig5",
            PresetName::Fig6 => "fig6",
            PresetName::Fig7 => "fig7",
            PresetName::Fig8 => "fig8",
            PresetName::Table4 => "table4",
            PresetName::PbmBuffer => "pbm-buffer",
            PresetName::PbmBandwidth => "pbm-bandwidth",
            PresetName::PbmSharing => "pbm-sharing",
            PresetName::MixedPool => "mixed-pool",
            PresetName::PbmStreams => "pbm-streams",
            PresetName::CommonPrefix => "common-prefix",
        }
    }
}

impl fmt::Display for PresetName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for PresetName {
    type Err = SimError;
    fn from_str(s: &str) -> Result<Self, SimError> {
        let s = s.trim();
        PresetName::ALL
            .into_iter()
            .find(|p| p.name().eq_ignore_ascii_case(s))
            .ok_or_else(|| SimError::UnknownPreset(s.to_string()))
    }
}

// ---- 2004 CWI report §3.1: 100 MB table, 20 chunks of 5 MB, 6-chunk buffer, 50 MB/s.

const SMALL_CHUNKS: u32 = 20;
const SMALL_CHUNK_BYTES: u64 = 5 * MB;
const SMALL_FRAMES: u32 = 6;
const SMALL_DISK_BYTES_PER_S: f64 = 50.0 * MB as f64;

fn small_table_config() -> SimConfig {
    SimConfig {
        // "Perfect" disk: every chunk costs 5 MB / 50 MB/s = 0.1 s, whatever the order.
        device: DeviceModel::Bandwidth {
            bytes_per_sec: SMALL_DISK_BYTES_PER_S,
            latency_s: 0.0,
        },
        cpu: CpuModel::new(CPU_HZ_2GHZ, 1),
        record_timeline: true,
        ..SimConfig::paper_2007(SMALL_CHUNKS, SMALL_CHUNK_BYTES, SMALL_FRAMES)
    }
}

fn full_scan(name: &str, cycles_per_byte: f64) -> QuerySpec {
    QuerySpec {
        name: name.into(),
        kind: format!("{cycles_per_byte}c/b"),
        cycles_per_byte,
        chunks: std::iter::once(0..SMALL_CHUNKS).collect(),
        columns: 0,
        workers: 1,
        split: coopscan_buffer::Split::Dynamic,
        snapshot: None,
        table: 0,
    }
}

/// Figure 3: three queries of 20 c/b started 0.5 s apart.
pub fn homogeneous() -> (SimConfig, Workload) {
    let queries = (0..3)
        .map(|i| (0.5 * f64::from(i), full_scan(&format!("Q{}", i + 1), 20.0)))
        .collect();
    (small_table_config(), Workload::independent(queries))
}

/// Figure 4: 45 c/b at 0 s, 5 c/b at 0.5 s, 25 c/b at 1.0 s.
pub fn heterogeneous() -> (SimConfig, Workload) {
    let queries = vec![
        (0.0, full_scan("Q1", 45.0)),
        (0.5, full_scan("Q2", 5.0)),
        (1.0, full_scan("Q3", 25.0)),
    ];
    (small_table_config(), Workload::independent(queries))
}

/// Table 2's workload (`coopscan_paper::experiments::TABLE2`): 16 streams × 4 random
/// queries (FAST/SLOW × 1/10/50/100%), streams 3 s apart.
pub fn table2(seed: u64) -> Result<(SimConfig, Workload), SimError> {
    let cfg = table2_config();
    let workload = range_workload(&cfg, &defs::TABLE2.workload, seed, short_names)?;
    Ok((cfg, workload))
}

/// Runs every policy on one setup; fills in standalone latencies when `normalize`.
pub fn run_policies(
    preset: &str,
    seed: u64,
    cfg: &SimConfig,
    workload: &Workload,
    policies: &[PolicyKind],
    normalize: bool,
) -> Result<PresetReport, SimError> {
    crate::engine::check_setup(cfg, workload)?;
    let standalone = if normalize {
        standalone_latencies(cfg, workload)?
    } else {
        HashMap::new()
    };
    let mut runs = Vec::new();
    for &policy in policies {
        let mut run = simulate(cfg, workload, policy)?;
        for q in &mut run.queries {
            q.standalone_s = standalone.get(&q.name).copied();
        }
        runs.push(run);
    }
    let policies = runs
        .iter()
        .map(|r| (r.policy.to_string(), PolicyReport::from_run(r)))
        .collect();
    // Each preset shows its own paper's numbers: never Table 2's beside a DSM run.
    let paper = match preset {
        "table2" => Some(table2_paper()),
        "table3" => Some(crate::table3::table3_paper()),
        _ => None,
    };
    Ok(PresetReport {
        preset: preset.into(),
        seed,
        config: cfg.clone(),
        workload: workload.clone(),
        policies,
        paper,
        runs,
    })
}

/// Latency of every query alone on a cold buffer (the paper's "standalone cold time").
/// Policy-independent for a lone scan; memoized by shape.
pub(crate) fn standalone_latencies(
    cfg: &SimConfig,
    workload: &Workload,
) -> Result<HashMap<String, f64>, SimError> {
    let alone = SimConfig {
        record_timeline: false,
        record_trace: false,
        faults: None,
        check_invariants: false,
        ..cfg.clone()
    };
    let mut by_shape: HashMap<Shape, f64> = HashMap::new();
    let mut out = HashMap::new();
    for q in workload.streams.iter().flat_map(|s| &s.queries) {
        let key = shape(cfg, q);
        let latency = match by_shape.get(&key) {
            Some(l) => *l,
            None => {
                let run = simulate(
                    &alone,
                    &Workload::independent(vec![(0.0, q.clone())]),
                    PolicyKind::Normal,
                )?;
                let l = run.total_time_s;
                by_shape.insert(key, l);
                l
            }
        };
        out.insert(q.name.clone(), latency);
    }
    Ok(out)
}

/// What a lone query's latency depends on: cycles per byte, columns, table, chunks.
type Shape = (u64, u64, u32, u32, Option<Vec<Range<u32>>>);

fn shape(cfg: &SimConfig, q: &QuerySpec) -> Shape {
    let len = q.chunks.iter().map(|r| r.end - r.start).sum();
    // The one table's chunks are equal: only how many matter. Chunks of `tables` may
    // differ in size, so there it matters which.
    let which = (!cfg.tables.is_empty()).then(|| q.chunks.clone());
    (q.cycles_per_byte.to_bits(), q.columns, q.table, len, which)
}

/// Runs a named scenario preset (not `fig8`, which has its own report).
pub fn run_preset(
    name: PresetName,
    policies: &[PolicyKind],
    seed: u64,
) -> Result<PresetReport, SimError> {
    run_preset_traced(name, policies, seed, false)
}

/// [`run_preset`], also recording each run's piece-reference trace
/// (`RunResult::trace`) when `record_trace`.
pub fn run_preset_traced(
    name: PresetName,
    policies: &[PolicyKind],
    seed: u64,
    record_trace: bool,
) -> Result<PresetReport, SimError> {
    run_preset_shaped(
        name,
        policies,
        seed,
        record_trace,
        QueryShape::default(),
        None,
    )
}

/// A checkpoint of table 0 every `every_s` simulated seconds (the first at `every_s`),
/// while queries run.
fn checkpoints_every(every_s: f64) -> Vec<SimCheckpoint> {
    vec![SimCheckpoint {
        at_s: every_s,
        table: 0,
        every_s: Some(every_s),
    }]
}

/// [`run_preset_traced`] with every query of Table 2 or 3 run as `shape` says (its
/// workers and their split), and with a checkpoint of the table every
/// `checkpoint_every_s` simulated seconds (2012 paper §2.1, case (iv): from each on,
/// new queries read a new version sharing no page with the old); other presets take
/// only the default shape and no checkpoints.
pub fn run_preset_shaped(
    name: PresetName,
    policies: &[PolicyKind],
    seed: u64,
    record_trace: bool,
    shape: QueryShape,
    checkpoint_every_s: Option<f64>,
) -> Result<PresetReport, SimError> {
    let traced = |cfg: SimConfig| SimConfig {
        record_trace,
        ..cfg
    };
    if !name.takes_query_shape() && shape != QueryShape::default() {
        return Err(SimError::InvalidSetup(format!(
            "{name}: only table2 and table3 run their queries with several workers or CPU shares"
        )));
    }
    if !name.takes_query_shape() && checkpoint_every_s.is_some() {
        return Err(SimError::InvalidSetup(format!(
            "{name}: only table2 and table3 take checkpoints"
        )));
    }
    // Checkpoints follow no one version's chunks: no timeline with them.
    let checkpointed = |cfg: SimConfig, w: Workload| match checkpoint_every_s {
        None => (cfg, w),
        Some(every) => (
            SimConfig {
                record_timeline: false,
                ..cfg
            },
            w.with_checkpoints(checkpoints_every(every)),
        ),
    };
    match name {
        PresetName::Homogeneous => {
            let (cfg, w) = homogeneous();
            run_policies(name.name(), seed, &traced(cfg), &w, policies, false)
        }
        PresetName::Heterogeneous => {
            let (cfg, w) = heterogeneous();
            run_policies(name.name(), seed, &traced(cfg), &w, policies, false)
        }
        PresetName::Table2 => {
            let (cfg, w) = table2(seed)?;
            let (cfg, w) = shaped_run(cfg, w, shape);
            let (cfg, w) = checkpointed(cfg, w);
            run_policies(name.name(), seed, &traced(cfg), &w, policies, true)
        }
        PresetName::Table3 => {
            let (cfg, w) = crate::table3::table3(seed);
            let (cfg, w) = shaped_run(cfg, w, shape);
            let (cfg, w) = checkpointed(cfg, w);
            run_policies(name.name(), seed, &traced(cfg), &w, policies, true)
        }
        PresetName::Fig5 | PresetName::Fig6 | PresetName::Fig7 => Err(SimError::InvalidSetup(
            format!("{name} is a sweep: call coopscan_sim::run_sweep"),
        )),
        PresetName::Fig8 => Err(SimError::InvalidSetup(
            "fig8 has its own report: call coopscan_sim::fig8".into(),
        )),
        PresetName::Table4 => Err(SimError::InvalidSetup(
            "table4 has its own report: call coopscan_sim::table4".into(),
        )),
        PresetName::PbmBuffer => Err(SimError::InvalidSetup(
            "pbm-buffer has its own report: call coopscan_sim::pbm_buffer".into(),
        )),
        PresetName::PbmBandwidth => Err(SimError::InvalidSetup(
            "pbm-bandwidth has its own report: call coopscan_sim::pbm_bandwidth".into(),
        )),
        PresetName::PbmSharing => Err(SimError::InvalidSetup(
            "pbm-sharing has its own report: call coopscan_sim::pbm_sharing".into(),
        )),
        PresetName::MixedPool => Err(SimError::InvalidSetup(
            "mixed-pool has its own report: call coopscan_sim::mixed_pool".into(),
        )),
        PresetName::PbmStreams => Err(SimError::InvalidSetup(
            "pbm-streams has its own report: call coopscan_sim::pbm_streams".into(),
        )),
        PresetName::CommonPrefix => Err(SimError::InvalidSetup(
            "common-prefix has its own report: call coopscan_sim::common_prefix".into(),
        )),
    }
}
