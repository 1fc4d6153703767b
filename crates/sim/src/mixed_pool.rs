//! `mixed-pool`: Scans and CScans in one pool with one temperature (2012 paper §2.3 and
//! §5, never built there). The `pbm-buffer` microbenchmark with a seeded share of its
//! queries needing order (Scans, `ScanOrder::InOrder`) and the rest CScans, under the
//! `mixed` policy (relevance's scheduling; eviction by predicted next consumption,
//! whoever consumes a piece), measured against the same queries run
//!
//! - all as Scans under PBM (what a system without CScans does), and
//! - all as CScans under relevance (what a system that ignores the need for order does:
//!   a lower bound on the I/O of any mix, since it has the most freedom);
//!
//! and, for the same mix, under plain relevance (its keepRelevance eviction) to show
//! what the one temperature adds.
//!
//! The target: the mixed pool never reads more than 5 % more than the better of
//! the two pure runs.

use crate::engine::{simulate_ordered, SimConfig};
use crate::experiments::table2_config;
use crate::pbm_buffer::{chunks_touched, pbm_buffer_workload};
use crate::workload::Workload;
use crate::{geometry, SimError};
use coopscan_buffer::trace::opt::replay_opt;
use coopscan_buffer::{AnyPolicy, PolicyKind, ADMISSION_CHUNKS_PER_SCAN};
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::Serialize;
use std::collections::BTreeSet;
use std::fmt::Write as _;

/// The bound: mixed ÷ the better pure run.
pub const MIXED_TARGET: f64 = coopscan_paper::mixed_pool::TARGET;
/// Seeds the choice of Scans apart from the workload's own seed.
const ORDER_SEED_SALT: u64 = 0x5ca9;

#[derive(Clone, Copy, Debug, Serialize)]
pub struct MixedRun {
    pub loads: u64,
    pub avg_stream_s: f64,
    /// Belady's OPT replayed on this run's references (only for the mixed pool's run):
    /// the least I/O any eviction could have done for the order its scans consumed in.
    pub opt_loads: Option<u64>,
}

#[derive(Clone, Debug, Serialize)]
pub struct MixedPoint {
    pub buffer_pct: u32,
    pub frames: u32,
    pub in_order_pct: u32,
    /// Scans in the mix.
    pub scans: usize,
    pub all_scans_pbm: MixedRun,
    pub all_cscans_relevance: MixedRun,
    pub mixed: MixedRun,
    pub mix_under_relevance: MixedRun,
}

impl MixedPoint {
    /// Mixed pool's loads ÷ the better of the two pure runs.
    pub fn ratio(&self) -> f64 {
        coopscan_paper::mixed_pool::mixed_over_best(
            self.mixed.loads,
            self.all_scans_pbm.loads,
            self.all_cscans_relevance.loads,
        )
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct MixedReport {
    pub seed: u64,
    pub chunks_touched: u32,
    pub points: Vec<MixedPoint>,
}

/// The names of `pct` % of the workload's queries (seeded): the ones that need order.
pub fn choose_scans(workload: &Workload, pct: u32, seed: u64) -> BTreeSet<String> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ ORDER_SEED_SALT);
    workload
        .streams
        .iter()
        .flat_map(|s| &s.queries)
        .filter(|_| rng.random_range(0..100) < pct)
        .map(|q| q.name.clone())
        .collect()
}

/// The runs of each point, named by `coopscan_paper::mixed_pool`.
struct MixedPolicies {
    all_scans: PolicyKind,
    all_cscans: PolicyKind,
    /// The mix's policies: one temperature, then relevance's own eviction.
    mix: [PolicyKind; 2],
}

impl MixedPolicies {
    fn of_definition() -> Result<MixedPolicies, SimError> {
        use coopscan_paper::mixed_pool::{ALL_CSCANS_POLICY, ALL_SCANS_POLICY, MIX_POLICIES};
        let kind = |name: &str| {
            name.parse::<PolicyKind>()
                .map_err(|e| SimError::InvalidSetup(format!("mixed-pool policy {name}: {e}")))
        };
        Ok(MixedPolicies {
            all_scans: kind(ALL_SCANS_POLICY)?,
            all_cscans: kind(ALL_CSCANS_POLICY)?,
            mix: [kind(MIX_POLICIES[0])?, kind(MIX_POLICIES[1])?],
        })
    }
}

fn run(
    cfg: &SimConfig,
    workload: &Workload,
    kind: PolicyKind,
    scans: &BTreeSet<String>,
) -> Result<MixedRun, SimError> {
    let cfg = SimConfig {
        record_trace: kind == PolicyKind::Mixed,
        ..cfg.clone()
    };
    let policy = AnyPolicy::new(kind, &geometry(&cfg)?, &crate::abm_config(&cfg));
    let r = simulate_ordered(&cfg, workload, policy, scans)?;
    let capacity = cfg.chunk_bytes * u64::from(cfg.frames);
    Ok(MixedRun {
        loads: r.chunk_loads,
        avg_stream_s: r.avg_stream_time_s(),
        opt_loads: r.trace.as_ref().map(|t| replay_opt(t, capacity).loads),
    })
}

/// Every (buffer, share of Scans) point: the four runs.
pub fn mixed_pool(
    seed: u64,
    buffer_pcts: &[u32],
    in_order_pcts: &[u32],
) -> Result<MixedReport, SimError> {
    if let Some(bad) = buffer_pcts.iter().chain(in_order_pcts).find(|&&p| p > 100) {
        return Err(SimError::InvalidSetup(format!("{bad} %: at most 100")));
    }
    let base = SimConfig {
        record_timeline: false,
        ..table2_config()
    };
    let policies = MixedPolicies::of_definition()?;
    let workload = pbm_buffer_workload(&base, seed)?;
    let touched = chunks_touched(&workload);
    let all: BTreeSet<String> = choose_scans(&workload, 100, seed);
    let none = BTreeSet::new();
    let mut points = Vec::new();
    for &buffer_pct in buffer_pcts {
        let frames = (u64::from(touched) * u64::from(buffer_pct)).div_ceil(100) as u32;
        let cfg = SimConfig {
            frames: frames.max(ADMISSION_CHUNKS_PER_SCAN),
            ..base.clone()
        };
        let all_scans_pbm = run(&cfg, &workload, policies.all_scans, &all)?;
        let all_cscans_relevance = run(&cfg, &workload, policies.all_cscans, &none)?;
        for &in_order_pct in in_order_pcts {
            let scans = choose_scans(&workload, in_order_pct, seed);
            points.push(MixedPoint {
                buffer_pct,
                frames: cfg.frames,
                in_order_pct,
                scans: scans.len(),
                all_scans_pbm,
                all_cscans_relevance,
                mixed: run(&cfg, &workload, policies.mix[0], &scans)?,
                mix_under_relevance: run(&cfg, &workload, policies.mix[1], &scans)?,
            });
        }
    }
    Ok(MixedReport {
        seed,
        chunks_touched: touched,
        points,
    })
}

/// One line per point: loads / average stream time of the four runs and the ratio.
pub fn mixed_pool_text(report: &MixedReport) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "mixed-pool (2012 paper §2.3/§5, simulated; seed {}): the pbm-buffer workload, a share \
         of its 128 queries as in-order Scans; loads / avg stream time (s)",
        report.seed
    );
    let _ = writeln!(
        out,
        "{:>6} {:>6} {:>5} {:>18} {:>18} {:>18} {:>10} {:>18} {:>7}",
        "buffer",
        "Scans%",
        "Scans",
        "all Scans: pbm",
        "all CScans: relev.",
        "mix: mixed",
        "OPT(mixed)",
        "mix: relevance",
        "mixed÷best"
    );
    let cell = |r: &MixedRun| format!("{:>8} / {:>7.1}", r.loads, r.avg_stream_s);
    for p in &report.points {
        let _ = writeln!(
            out,
            "{:>5}% {:>5}% {:>5} {:>18} {:>18} {:>18} {:>10} {:>18} {:>7.3}",
            p.buffer_pct,
            p.in_order_pct,
            p.scans,
            cell(&p.all_scans_pbm),
            cell(&p.all_cscans_relevance),
            cell(&p.mixed),
            p.mixed.opt_loads.map_or("-".into(), |l| l.to_string()),
            cell(&p.mix_under_relevance),
            p.ratio()
        );
    }
    let _ = writeln!(
        out,
        "target (issue 12): mixed ≤ {MIXED_TARGET} × min(all Scans under PBM, all CScans under relevance)"
    );
    out
}
