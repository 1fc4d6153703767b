//! Table 3 of the 2007 paper (§6.3), simulated: the DSM twin of Table 2. Same workload
//! shape — 16 streams × 4 queries, 3 s apart, each FAST (Q6) or SLOW (Q1) with p = ½
//! over 1/10/50/100 % from a random start, 2 CPUs, a 200 MiB/s disk — with the paper's
//! three adjustments: lineitem in DSM at SF40 (4× Table 2's), a faster SLOW query (DSM
//! scans faster, and the original one made every policy CPU bound), and a 1.5 GB
//! buffer (each active chunk reserves memory per column).
//!
//! Scaled, as the other presets, by the paper's ratios, not its sizes:
//! - **columns**: lineitem's 16 columns with the widths of coopscan's own compressed DSM
//!   lineitem (file bytes per column at SF1, docs/performance.md "DSM page codecs"); a
//!   FAST query reads Q6's 4 columns, a SLOW query Q1's 7;
//! - **size**: scaled so that a full FAST scan reads in the paper's F-100 cold time
//!   (26.53 s at 200 MiB/s: 5.56 GB of Q6 columns); 256 chunks (the paper gives no DSM
//!   chunk count; Table 2's);
//! - **CPU**: FAST costs 0.125 × its read time per chunk (as in `table2`); SLOW is CPU
//!   bound at the paper's S-100 cold time (71.25 s per full scan, 2.35 × its read time);
//! - **buffer**: 1.5 GB over the scaled table is 15 chunks of all 16 columns (1.47 GB),
//!   23 % of the columns the workload reads (Table 2: 25 % of the table).
//!
//! The same seed draws the same query mix as `table2` (same random sequence), so the
//! two presets compare NSM and DSM on one workload. Table 3's published numbers are in
//! `coopscan_paper::table3`; a DSM run is never shown beside Table 2's.

use crate::engine::SimConfig;
use crate::experiments::{random_range_query, table2_config};
use crate::report::PaperNumbers;
use crate::workload::{StreamSpec, Workload};
use coopscan_paper::published::POLICIES;
use coopscan_paper::{table2, table3};
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::collections::BTreeMap;
use std::fmt::Write;

/// coopscan's DSM lineitem at SF1, file bytes per column (l_orderkey … l_comment).
pub const LINEITEM_SF1_COLUMN_BYTES: [u64; 16] = [
    3_117_056, 14_114_816, 10_981_376, 2_359_296, 5_238_784, 18_808_832, 3_141_632, 3_141_632,
    1_314_816, 786_432, 9_412_608, 9_412_608, 9_412_608, 1_597_440, 2_392_064, 70_094_848,
];
/// Q6: l_quantity, l_extendedprice, l_discount, l_shipdate.
pub const Q6_COLUMNS: u64 = 1 << 4 | 1 << 5 | 1 << 6 | 1 << 10;
/// Q1: Q6's columns plus l_tax, l_returnflag, l_linestatus.
pub const Q1_COLUMNS: u64 = Q6_COLUMNS | 1 << 7 | 1 << 8 | 1 << 9;

const CHUNKS: u32 = table2::CHUNKS;
const MIB: f64 = (1u64 << 20) as f64;
/// The paper's F-100 and S-100 cold times (Table 3).
pub const F100_COLD_S: f64 = table3::F100_STANDALONE_S;
pub const S100_COLD_S: f64 = table3::S100_STANDALONE_S;
/// 1.5 GB in chunks of every column of the scaled table (98 MB each).
const FRAMES: u32 = table3::BUFFER_CHUNKS;
/// FAST's CPU per chunk over its read time, as in `table2`.
const FAST_CPU_PER_IO: f64 = 0.125;

/// Bytes of each column's piece of one chunk.
fn column_bytes(disk_bytes_per_s: f64) -> Vec<u64> {
    let q6_sf1: u64 = bits_sum(Q6_COLUMNS);
    let q6_target = F100_COLD_S * disk_bytes_per_s;
    let scale = q6_target / q6_sf1 as f64 / f64::from(CHUNKS);
    LINEITEM_SF1_COLUMN_BYTES
        .iter()
        .map(|&b| ((b as f64 * scale).round() as u64).max(1))
        .collect()
}

fn bits_sum(cols: u64) -> u64 {
    (0..16)
        .filter(|c| cols >> c & 1 == 1)
        .map(|c| LINEITEM_SF1_COLUMN_BYTES[c])
        .sum()
}

pub fn table3_config() -> SimConfig {
    let base = table2_config();
    let columns = column_bytes(table2::DISK_MIB_S * MIB);
    SimConfig {
        chunk_count: CHUNKS,
        chunk_bytes: columns.iter().sum(),
        column_bytes: columns,
        frames: FRAMES,
        ..base
    }
}

/// Bytes of one chunk's pieces for `cols`.
fn chunk_bytes_of(cfg: &SimConfig, cols: u64) -> u64 {
    let read = |(i, b): (usize, &u64)| (cols >> i & 1 == 1).then_some(*b);
    cfg.column_bytes.iter().enumerate().filter_map(read).sum()
}

/// Cycles per processed byte for a FAST and a SLOW query.
fn cycles_per_byte(cfg: &SimConfig, slow: bool) -> f64 {
    let cols = if slow { Q1_COLUMNS } else { Q6_COLUMNS };
    let bytes = chunk_bytes_of(cfg, cols) as f64;
    let cpu_s = if slow {
        S100_COLD_S / f64::from(CHUNKS)
    } else {
        FAST_CPU_PER_IO * cfg.device.chunk_read_s(bytes as u64)
    };
    cpu_s * cfg.cpu.hz / bytes
}

/// Table 2's workload (same seed, same draws), with DSM columns and Table 3's costs.
pub fn table3(seed: u64) -> (SimConfig, Workload) {
    let cfg = table3_config();
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let percents = table2::RANGE_PERCENTS;
    let streams = (0..table2::STREAMS)
        .map(|s| {
            let queries = (0..table2::QUERIES_PER_STREAM)
                .map(|k| {
                    let slow = rng.random_bool(0.5);
                    let percent = percents[rng.random_range(0..percents.len())];
                    let mut q =
                        random_range_query(&mut rng, &cfg, format!("s{s:02}q{k}"), slow, percent);
                    q.columns = if slow { Q1_COLUMNS } else { Q6_COLUMNS };
                    q.cycles_per_byte = cycles_per_byte(&cfg, slow);
                    q
                })
                .collect();
            StreamSpec {
                start_s: table2::STAGGER_S * s as f64,
                queries,
            }
        })
        .collect();
    (cfg, Workload::new(streams))
}

/// Table 3's system statistics, by policy name, for the report.
pub(crate) fn table3_paper() -> BTreeMap<String, PaperNumbers> {
    crate::report::paper_numbers(&table3::TABLE3_SYSTEM)
}

/// Per query type: the paper's cold and average latencies beside ours (a
/// `PresetReport` of the `table3` preset).
pub fn table3_queries_text(report: &crate::PresetReport) -> String {
    let mut out =
        String::from("\nTable 3 per type, ours / paper: cold (s), then average latency (s)\n");
    let _ = write!(out, "{:<6} {:>15}", "type", "cold");
    for policy in POLICIES {
        let _ = write!(out, " {policy:>17}");
    }
    out.push('\n');
    for row in table3::TABLE3_QUERIES {
        let (kind, cold) = (row.query_type, row.standalone_s);
        let ours = |policy: &str, f: fn(&crate::QueryResult) -> Option<f64>| {
            let p = report.policies.get(policy)?;
            let v: Vec<f64> = p
                .queries
                .iter()
                .filter(|q| q.kind == kind)
                .filter_map(f)
                .collect();
            (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
        };
        let first = report.policies.keys().next().map_or("", |k| k.as_str());
        let cell = |x: Option<f64>, theirs: f64| match x {
            Some(x) => format!("{x:.2} / {theirs:.2}"),
            None => format!("- / {theirs:.2}"),
        };
        let _ = write!(
            out,
            "{kind:<6} {:>15}",
            cell(ours(first, |q| q.standalone_s), cold)
        );
        for (policy, theirs) in POLICIES.iter().zip(&row.cells) {
            let _ = write!(
                out,
                " {:>17}",
                cell(ours(policy, |q| Some(q.latency_s)), theirs.latency_avg_s)
            );
        }
        out.push('\n');
    }
    out
}
