//! The 2012 paper's Figure 17 ("sharing potential") for a real run: at moments spread
//! evenly over the run, how many chunks are still wanted by exactly 1, 2, 3 and ≥ 4
//! active queries. A large volume wanted by two or more is what a buffer manager can
//! share; the paper finds much of it in its microbenchmark, little in TPC-H.
//!
//! The rule is the simulator's, defined once in `coopscan_paper::sharing`: sample `i`
//! of `n` is at `(i + ½) × total / n`; a query is active when `start ≤ t < end`, and an
//! active query wants each chunk of its ranges that it has not started processing by
//! `t` (its first [`Consumption`] of the chunk is later than `t`).
//!
//! A query's chunks are the chunks it consumed during the run. The runner keeps only
//! runs in which every query completed, and a completed scan was delivered every chunk
//! its rows intersect, so these are exactly the chunks of its ranges — without a second
//! copy of the table's chunk map (chunks hold varying row counts) in this crate.
//!
//! Odd input never panics: a consumption whose tag is no query of the run, or whose
//! chunk cannot hold any of its query's rows (chunk k starts at row ≥ k, as every chunk
//! holds a row, so a query over rows `..e` consumes only chunks `< e`), is ignored and
//! counted in [`IgnoredConsumptions`].

use crate::engine::Consumption;
use crate::workload::QueryRun;
use coopscan_paper::sharing::{
    mean_bytes, sample_sharing, shared_fraction, ScanWants, WantedPiece,
};
pub use coopscan_paper::sharing::{SharingSample, SHARING_CLASSES, SHARING_SAMPLES};
use serde::Serialize;
use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

const BYTES_PER_MIB: f64 = 1_048_576.0;

/// Consumptions the analysis could not place.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct IgnoredConsumptions {
    /// Tagged with no query of the run (e.g. a scan the runner did not start).
    pub unknown_tag: u64,
    /// A chunk its query's rows cannot reach (past the table).
    pub chunk_past_rows: u64,
}

/// One run's sharing potential.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SharingPotential {
    /// Time-averaged chunks wanted by exactly 1, 2, 3 and ≥ 4 queries.
    pub mean_chunks: [f64; SHARING_CLASSES],
    /// The same as volumes (MiB): each chunk counts with the most bytes any query
    /// consumed of it.
    pub mean_mib: [f64; SHARING_CLASSES],
    /// Of the time-averaged volume wanted, the share wanted by two or more queries
    /// (0 when nothing is ever wanted).
    pub shared_fraction: f64,
    pub ignored: IgnoredConsumptions,
    pub samples: Vec<SharingSample>,
}

/// The sharing potential of one run: `runs` (times since the run started), the
/// engine's `consumptions` (same clock), sampled `samples` times over `total`.
pub fn sharing_potential(
    runs: &[QueryRun],
    consumptions: &[Consumption],
    total: Duration,
    samples: usize,
) -> SharingPotential {
    let (per_query, ignored) = first_consumptions(runs, consumptions);
    let (wants, chunk_bytes) = wants_of(runs, &per_query);
    let sampled = sample_sharing(&wants, &chunk_bytes, total.as_secs_f64(), samples);
    let mut sum_chunks = [0.0; SHARING_CLASSES];
    for s in &sampled {
        for (sum, &c) in sum_chunks.iter_mut().zip(&s.sample.chunks) {
            *sum += f64::from(c);
        }
    }
    let mean_chunks = sum_chunks.map(|s| s / samples.max(1) as f64);
    let mean_mib = mean_bytes(&sampled).map(|b| b / BYTES_PER_MIB);
    SharingPotential {
        mean_chunks,
        mean_mib,
        shared_fraction: shared_fraction(&mean_mib),
        ignored,
        samples: sampled.into_iter().map(|s| s.sample).collect(),
    }
}

/// Per (query index, chunk): the first delivery and the bytes delivered in all.
type PerQuery = BTreeMap<(usize, u32), (Duration, u64)>;

fn first_consumptions(
    runs: &[QueryRun],
    consumptions: &[Consumption],
) -> (PerQuery, IgnoredConsumptions) {
    let by_tag: HashMap<u64, usize> = runs
        .iter()
        .enumerate()
        .map(|(q, r)| (r.query.id, q))
        .collect();
    let mut ignored = IgnoredConsumptions::default();
    let mut per_query = PerQuery::new();
    for c in consumptions {
        let Some(&q) = by_tag.get(&c.tag) else {
            ignored.unknown_tag = ignored.unknown_tag.saturating_add(1);
            continue;
        };
        if u64::from(c.chunk) >= runs[q].query.rows.end {
            ignored.chunk_past_rows = ignored.chunk_past_rows.saturating_add(1);
            continue;
        }
        let entry = per_query.entry((q, c.chunk)).or_insert((c.at, 0));
        entry.0 = entry.0.min(c.at);
        entry.1 = entry.1.saturating_add(c.bytes);
    }
    (per_query, ignored)
}

/// Per query: its active interval and the chunks it consumed, each wanted until its
/// first delivery. Chunks are renumbered densely (so no allocation is sized by a chunk
/// number); with them, each chunk's volume.
fn wants_of(runs: &[QueryRun], per_query: &PerQuery) -> (Vec<ScanWants>, Vec<u64>) {
    let mut dense: BTreeMap<u32, usize> = BTreeMap::new();
    let mut bytes: Vec<u64> = Vec::new();
    let mut wants: Vec<ScanWants> = runs
        .iter()
        .map(|r| ScanWants {
            start_s: r.start.as_secs_f64(),
            end_s: r.end.as_secs_f64(),
            pieces: Vec::new(),
        })
        .collect();
    for (&(q, chunk), &(at, delivered)) in per_query {
        let next = dense.len();
        let k = *dense.entry(chunk).or_insert(next);
        if k == bytes.len() {
            bytes.push(0);
        }
        bytes[k] = bytes[k].max(delivered);
        wants[q].pieces.push(WantedPiece {
            piece: k,
            until_s: at.as_secs_f64(),
        });
    }
    (wants, bytes)
}
