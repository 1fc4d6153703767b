//! Table 4 of the 2007 paper (§6.3.1), simulated: how column overlap changes what
//! cooperative scans can share in DSM. A synthetic table of 10 int64 columns A-J;
//! 16 streams × 4 queries, each reading 3 adjacent columns over a random 40 % range; the
//! query types of a family are dealt to the streams in turn (one type: 16 queries of it
//! at a time; two types: 8 each). Normal vs relevance (any policy can be asked for):
//! I/Os and average query latency per family, beside the paper's.
//!
//! Scaled as the other presets keep ratios, not sizes: the paper's 200 M tuples × 80
//! bytes (16 GB) with a 1 GB buffer becomes 200 chunks of 10 × 1 MB pieces with a buffer
//! of 1/16 of the table; the disk runs at the paper's 200 MB/s and the queries are I/O
//! bound (FAST's CPU cost).

use crate::engine::{simulate, SimConfig};
use crate::experiments::cycles_per_byte_for;
use crate::presets::standalone_latencies;
use crate::workload::{QuerySpec, StreamSpec, Workload};
use crate::SimError;
use coopscan_buffer::{ColumnOrder, EvictionStrategy, PolicyKind};
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::Serialize;
use std::fmt::Write;

pub use coopscan_paper::table4::{FAMILIES, PAPER};

use coopscan_paper::table4::{COLUMNS, QUERIES_PER_STREAM, RANGE_PERCENT, STREAMS};

const CHUNKS: u32 = 200;
/// One column of one chunk: 125 k int64 values.
const PIECE_BYTES: u64 = 1_000_000;
/// 1 GB of a 16 GB table.
const FRAMES: u32 = CHUNKS / 16;
/// Streams start apart by this share of a query's standalone time (40 % of 3 columns).
const STAGGER_S: f64 = 0.3;
/// I/O bound, like FAST: CPU per chunk = this × its read time.
const CPU_PER_IO: f64 = 0.125;

#[derive(Clone, Debug, Serialize)]
pub struct Table4Row {
    pub family: String,
    pub policy: String,
    /// How relevance found room (greedy: the paper; knapsack: its footnote).
    pub eviction: EvictionStrategy,
    /// The order of each load's columns.
    pub column_order: ColumnOrder,
    /// Load requests (a load reads some columns of one chunk).
    pub loads: u64,
    /// Column pieces read (the paper's unit of I/O in DSM).
    pub pieces: u64,
    pub avg_latency_s: f64,
    pub stddev_latency_s: f64,
    pub avg_normalized_latency: f64,
    pub avg_stream_time_s: f64,
    /// Pieces evicted, and of those the ones no scan needed (evicted for free).
    pub evictions: u64,
    pub spare_evictions: u64,
}

#[derive(Clone, Debug, Serialize)]
pub struct Table4Report {
    pub seed: u64,
    pub config: SimConfig,
    pub rows: Vec<Table4Row>,
}

pub fn table4_config() -> SimConfig {
    SimConfig {
        column_bytes: vec![PIECE_BYTES; COLUMNS],
        ..SimConfig::paper_2007(CHUNKS, PIECE_BYTES * COLUMNS as u64, FRAMES)
    }
}

/// Column bits of a type such as "BCD".
fn column_bits(kind: &str) -> u64 {
    kind.bytes()
        .map(|c| 1u64 << (c - b'A'))
        .fold(0, |a, b| a | b)
}

/// The workload of one family.
pub fn table4_workload(cfg: &SimConfig, family: &[&str], seed: u64) -> Workload {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let len = CHUNKS * RANGE_PERCENT / 100;
    let streams = (0..STREAMS)
        .map(|s| {
            let kind = family[s % family.len()];
            let queries = (0..QUERIES_PER_STREAM)
                .map(|k| {
                    let start = rng.random_range(0..=CHUNKS - len);
                    QuerySpec {
                        name: format!("s{s:02}q{k}"),
                        kind: kind.to_string(),
                        cycles_per_byte: cycles_per_byte_for(cfg, CPU_PER_IO),
                        chunks: std::iter::once(start..start + len).collect(),
                        columns: column_bits(kind),
                        workers: 1,
                        split: coopscan_buffer::Split::Dynamic,
                        snapshot: None,
                        table: 0,
                    }
                })
                .collect();
            StreamSpec {
                start_s: STAGGER_S * s as f64,
                queries,
            }
        })
        .collect();
    Workload::new(streams)
}

/// Every family under every policy in `policies`, with the paper's choices (greedy
/// eviction, smallest column first).
pub fn table4(policies: &[PolicyKind], seed: u64) -> Result<Table4Report, SimError> {
    table4_on(&table4_config(), policies, seed)
}

/// [`table4`] on a given configuration (e.g. another eviction strategy or column order).
pub fn table4_on(
    cfg: &SimConfig,
    policies: &[PolicyKind],
    seed: u64,
) -> Result<Table4Report, SimError> {
    let cfg = cfg.clone();
    let mut rows = Vec::new();
    for family in FAMILIES {
        let workload = table4_workload(&cfg, family, seed);
        let alone = standalone_latencies(&cfg, &workload)?;
        for &policy in policies {
            let mut run = simulate(&cfg, &workload, policy)?;
            for q in &mut run.queries {
                q.standalone_s = alone.get(&q.name).copied();
            }
            let latencies: Vec<f64> = run.queries.iter().map(|q| q.latency_s).collect();
            let (avg, sd) = mean_stddev(&latencies);
            rows.push(Table4Row {
                family: family.join(","),
                policy: policy.to_string(),
                eviction: cfg.eviction,
                column_order: cfg.column_order,
                loads: run.chunk_loads,
                pieces: run.bytes_loaded / PIECE_BYTES,
                avg_latency_s: avg,
                stddev_latency_s: sd,
                avg_normalized_latency: run.avg_normalized_latency().unwrap_or(f64::NAN),
                avg_stream_time_s: run.avg_stream_time_s(),
                evictions: run.evictions,
                spare_evictions: run.spare_evictions,
            });
        }
    }
    Ok(Table4Report {
        seed,
        config: cfg,
        rows,
    })
}

fn mean_stddev(v: &[f64]) -> (f64, f64) {
    let n = v.len().max(1) as f64;
    let mean = v.iter().sum::<f64>() / n;
    let var = v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n;
    (mean, var.sqrt())
}

/// The table, with the paper's normal/relevance numbers beside ours.
pub fn table4_text(report: &Table4Report) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "Table 4 (simulated DSM, 10 columns, 3-column queries over 40 % ranges, buffer 1/16; \
         eviction {}, column order {})",
        report.config.eviction, report.config.column_order
    );
    let _ = writeln!(
        out,
        "{:<17} {:<10} {:>6} {:>7} {:>9} {:>8} {:>6} | paper: I/Os  avg lat  stddev",
        "family", "policy", "loads", "pieces", "avg lat", "stddev", "norm"
    );
    for r in &report.rows {
        let paper = PAPER
            .iter()
            .find(|(f, _)| *f == r.family)
            .and_then(|(_, p)| match r.policy.as_str() {
                "normal" => Some(p[0]),
                "relevance" => Some(p[1]),
                _ => None,
            });
        let paper = paper.map_or(String::new(), |(io, lat, sd)| {
            format!("{io:>12} {lat:>8.2} {sd:>7.2}")
        });
        let _ = writeln!(
            out,
            "{:<17} {:<10} {:>6} {:>7} {:>9.3} {:>8.3} {:>6.2} | {paper}",
            r.family,
            r.policy,
            r.loads,
            r.pieces,
            r.avg_latency_s,
            r.stddev_latency_s,
            r.avg_normalized_latency
        );
    }
    out
}
