//! The simulator's side of the experiments defined once in
//! `coopscan_paper::experiments`: a definition's queries on the simulated table, and
//! its sweep's points in the simulator's units. The simulated machines themselves (the
//! 2007 paper's disk and CPUs, [`table2_config`]) scale every experiment the
//! same way: Table 2's 3 s stagger is 3 s of virtual time.

use crate::engine::SimConfig;
use crate::workload::{QuerySpec, StreamSpec, Workload};
use crate::SimError;
use coopscan_paper::experiment::{Axis, Experiment, QueryShape, Starts, WorkloadShape};
use coopscan_paper::table2;
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

pub use coopscan_paper::experiments as defs;

/// A query's name from its stream and its place in the stream.
pub type Names = fn(usize, usize) -> String;

/// `s03q1`: Table 2's and Figure 8's names.
pub fn short_names(stream: usize, query: usize) -> String {
    format!("s{stream:02}q{query}")
}

/// The queries of `shape` on the table of `cfg`, seeded: each stream's queries in
/// order, each a FAST or SLOW scan of a random range (Table 2's generator).
///
/// The draws per query are the speed (only when the speeds differ), the range size
/// (only when there are several) and the start, in that order, so a definition's
/// seed gives the same queries whatever else it sweeps.
pub fn range_workload(
    cfg: &SimConfig,
    shape: &WorkloadShape,
    seed: u64,
    names: Names,
) -> Result<Workload, SimError> {
    let QueryShape::Ranges {
        speeds,
        range_percents,
    } = shape.queries
    else {
        return Err(SimError::InvalidSetup(
            "column queries (Table 4) have their own generator: coopscan_sim::table4_workload"
                .into(),
        ));
    };
    let speeds = Speeds::parse(speeds)?;
    if range_percents.is_empty() {
        return Err(SimError::InvalidSetup(
            "a workload needs a range size".into(),
        ));
    }
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let streams = (0..shape.streams)
        .map(|s| {
            let queries = (0..shape.queries_per_stream)
                .map(|k| {
                    let slow = speeds.draw_slow(&mut rng);
                    let percent = match range_percents {
                        [only] => *only,
                        _ => range_percents[rng.random_range(0..range_percents.len())],
                    };
                    random_range_query(&mut rng, cfg, names(s, k), slow, percent)
                })
                .collect::<Vec<QuerySpec>>();
            StreamSpec {
                start_s: start_s(shape.starts, s),
                queries,
            }
        })
        .collect();
    Ok(Workload::new(streams))
}

/// When stream `s` starts, in virtual seconds.
pub fn start_s(starts: Starts, s: usize) -> f64 {
    match starts {
        Starts::Staggered => table2::STAGGER_S * s as f64,
        Starts::Together => 0.0,
    }
}

/// How a query's speed is drawn from a definition's letters.
enum Speeds {
    Fixed(bool),
    /// One FAST and one SLOW letter: a fair coin.
    Coin,
    /// Any other string: a letter drawn uniformly (repeats weigh).
    Letters(Vec<bool>),
}

impl Speeds {
    fn parse(speeds: &str) -> Result<Speeds, SimError> {
        let slow: Vec<bool> = speeds
            .chars()
            .map(|c| match c {
                'F' => Ok(false),
                'S' => Ok(true),
                other => Err(SimError::InvalidSetup(format!(
                    "speed {other:?} of {speeds:?} is neither F nor S"
                ))),
            })
            .collect::<Result<_, _>>()?;
        Ok(match slow.as_slice() {
            [] => return Err(SimError::InvalidSetup("a workload needs a speed".into())),
            [a, b] if a != b => Speeds::Coin,
            all if all.iter().all(|&s| s == all[0]) => Speeds::Fixed(all[0]),
            _ => Speeds::Letters(slow),
        })
    }

    fn draw_slow(&self, rng: &mut ChaCha8Rng) -> bool {
        match self {
            Speeds::Fixed(slow) => *slow,
            Speeds::Coin => rng.random_bool(0.5),
            Speeds::Letters(slow) => slow[rng.random_range(0..slow.len())],
        }
    }
}

/// The whole percents of a definition's buffer axis (or its one buffer).
pub fn buffer_points(e: &Experiment) -> Result<Vec<u32>, SimError> {
    let values = e
        .axis(|a| match a {
            Axis::BufferPct(v) => Some(v.to_vec()),
            _ => None,
        })
        .unwrap_or_else(|| vec![e.buffer_pct]);
    values.into_iter().map(whole_pct).collect()
}

/// A definition's one buffer in whole percents.
pub fn buffer_pct(e: &Experiment) -> Result<u32, SimError> {
    whole_pct(e.buffer_pct)
}

/// The stream counts of a definition's streams axis (or its one count).
pub fn stream_points(e: &Experiment) -> Vec<u32> {
    e.axis(|a| match a {
        Axis::Streams(v) => Some(v.iter().map(|&n| n as u32).collect()),
        _ => None,
    })
    .unwrap_or_else(|| vec![e.workload.streams as u32])
}

/// The paper's default MB/s and the points of a definition's bandwidth axis.
pub fn bandwidth_points(e: &Experiment) -> Result<(f64, Vec<u32>), SimError> {
    e.axis(|a| match a {
        Axis::BandwidthMbS {
            default_mb_s,
            points,
        } => Some((*default_mb_s, points.iter().map(|&b| b as u32).collect())),
        _ => None,
    })
    .ok_or_else(|| no_axis(e, "bandwidth"))
}

/// The paper's table (MiB) and the chunk counts of a definition's chunks axis.
pub fn chunk_points(e: &Experiment) -> Result<(u64, Vec<u32>), SimError> {
    e.axis(|a| match a {
        Axis::Chunks { table_mib, counts } => Some((*table_mib, counts.to_vec())),
        _ => None,
    })
    .ok_or_else(|| no_axis(e, "chunks"))
}

fn no_axis(e: &Experiment, axis: &str) -> SimError {
    SimError::InvalidSetup(format!("{}'s definition has no {axis} axis", e.name))
}

/// The in-order shares of a definition's axis (or its one share).
pub fn in_order_points(e: &Experiment) -> Vec<u32> {
    e.axis(|a| match a {
        Axis::InOrderPct(v) => Some(v.to_vec()),
        _ => None,
    })
    .unwrap_or_else(|| vec![e.workload.in_order_pct])
}

/// `pct` as a whole percent in 1..=100: the simulator sizes its buffer in frames of
/// `touched × pct / 100`, rounded up.
fn whole_pct(pct: f64) -> Result<u32, SimError> {
    if pct.fract() == 0.0 && (1.0..=100.0).contains(&pct) {
        Ok(pct as u32)
    } else {
        Err(SimError::InvalidSetup(format!(
            "buffer {pct} %: the simulator takes whole percents in 1..=100"
        )))
    }
}

const MIB: u64 = 1 << 20;

// ---- 2007 paper §5.1 / Table 2: 256 chunks of 16 MB, 64-chunk buffer, 2 CPUs.

pub const TABLE2_CHUNKS: u32 = table2::CHUNKS;
const TABLE2_CHUNK_BYTES: u64 = table2::CHUNK_MIB * MIB;
const TABLE2_FRAMES: u32 = table2::BUFFER_CHUNKS;
/// FAST (Q6) is I/O bound. Its CPU cost is derived from Table 2 itself: relevance kept
/// 2 CPUs 93.94% busy for 238.16 s = 447 core-s; the paper's SLOW queries (13×1%, 6×10%,
/// 6×50%, 8×100% = 3003 chunks at 35.27 s / 256 = 0.138 s each) account for 414 of
/// them, leaving 33 core-s for 3274 FAST chunks: 0.01 s per 80 ms chunk read.
pub(crate) const FAST_CPU_PER_IO: f64 = 0.125;
/// SLOW (Q1 + arithmetic) is CPU bound at 1.75x the read time (paper: 35.27 / 20.37).
pub(crate) const SLOW_CPU_PER_IO: f64 = table2::SLOW_CPU_OVER_READ;

/// Table 2's machine: the 2007 paper's (200 MiB/s, 80 ms per 16 MiB chunk, a full scan
/// in 20.5 s; two 2 GHz CPUs) with its 256 chunks and 64-chunk buffer.
pub fn table2_config() -> SimConfig {
    SimConfig {
        record_timeline: true,
        ..SimConfig::paper_2007(TABLE2_CHUNKS, TABLE2_CHUNK_BYTES, TABLE2_FRAMES)
    }
}

/// Cycles per byte that make a query's CPU time per chunk `ratio` × the chunk read time.
pub(crate) fn cycles_per_byte_for(cfg: &SimConfig, ratio: f64) -> f64 {
    ratio * cfg.device.chunk_read_s(cfg.chunk_bytes) * cfg.cpu.hz / cfg.chunk_bytes as f64
}

/// A FAST/SLOW query over `percent`% of `chunk_count` chunks from a random start.
pub(crate) fn random_range_query(
    rng: &mut ChaCha8Rng,
    cfg: &SimConfig,
    name: String,
    slow: bool,
    percent: u32,
) -> QuerySpec {
    let n = cfg.chunk_count;
    let len = ((f64::from(n) * f64::from(percent) / 100.0).round() as u32).clamp(1, n);
    let start = rng.random_range(0..=n - len);
    let (letter, ratio) = if slow {
        ('S', SLOW_CPU_PER_IO)
    } else {
        ('F', FAST_CPU_PER_IO)
    };
    QuerySpec {
        name,
        kind: format!("{letter}-{percent:02}"),
        cycles_per_byte: cycles_per_byte_for(cfg, ratio),
        chunks: std::iter::once(start..start + len).collect(),
        columns: 0,
        workers: 1,
        split: coopscan_buffer::Split::Dynamic,
        snapshot: None,
        table: 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The simulator's presets are the definitions, every one of them, plus the 2004
    /// report's two scenarios, which only the simulator runs.
    #[test]
    fn the_simulator_runs_every_definition_and_only_them() {
        use crate::PresetName;
        for preset in PresetName::ALL {
            if matches!(preset, PresetName::Homogeneous | PresetName::Heterogeneous) {
                continue;
            }
            assert!(defs::by_name(preset.name()).is_some(), "{preset}");
        }
        for e in defs::ALL {
            assert!(e.name.parse::<PresetName>().is_ok(), "{}", e.name);
        }
    }

    #[test]
    fn the_pbm_definitions_give_the_simulators_points() {
        assert_eq!(
            buffer_points(&defs::PBM_BUFFER).unwrap(),
            [10, 20, 40, 60, 80, 100]
        );
        assert_eq!(stream_points(&defs::PBM_STREAMS), [1, 2, 4, 8, 16, 32]);
        let (default, points) = bandwidth_points(&defs::PBM_BANDWIDTH).unwrap();
        assert_eq!((default, points.len()), (700.0, 6));
        assert_eq!(buffer_points(&defs::MIXED_POOL).unwrap(), [10, 40, 80]);
        assert!(buffer_points(&defs::FIG6).is_err(), "12.5 % is not whole");
    }

    #[test]
    fn a_workload_follows_its_shape() {
        let cfg = table2_config();
        let w = range_workload(&cfg, &defs::TABLE2.workload, 7, short_names).unwrap();
        assert_eq!(w.streams.len(), 16);
        assert!(w.streams.iter().all(|s| s.queries.len() == 4));
        assert_eq!(w.streams[2].start_s, 6.0);
        let kinds: std::collections::BTreeSet<char> = w
            .streams
            .iter()
            .flat_map(|s| &s.queries)
            .filter_map(|q| q.kind.chars().next())
            .collect();
        assert_eq!(kinds.into_iter().collect::<String>(), "FS");
        let fast = range_workload(&cfg, &defs::FIG8.workload, 7, short_names).unwrap();
        assert!(fast
            .streams
            .iter()
            .flat_map(|s| &s.queries)
            .all(|q| q.kind.starts_with('F')));
        let together = range_workload(&cfg, &defs::PBM_BUFFER.workload, 7, short_names).unwrap();
        assert!(together.streams.iter().all(|s| s.start_s == 0.0));
        assert!(range_workload(&cfg, &defs::TABLE4.workload, 7, short_names).is_err());
    }
}
