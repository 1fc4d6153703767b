//! A benchmark run's own workload on virtual time (`coopscan sim --replay`): the queries
//! `coopscan bench` ran — their streams, order, kinds and row ranges, as its JSON report
//! lists them, each as the chunks its rows touch — over the same table, with the run's buffer, device bandwidth,
//! stream stagger and measured CPU costs. A comparison the real engine made (one split
//! against the other, one policy against another) can then be replayed
//! deterministically and taken apart, where the real run varies with the machine.
//!
//! What the replay does not carry: chunks are all of one size (the table's bytes over
//! its chunks), every query of a kind costs the same CPU per byte, the CPU is `cores`
//! cores shared by the running queries (the simulator's model), and each query is
//! normalized by its own latency alone (the bench: one random range per query type).

use crate::engine::SimConfig;
use crate::model::{CpuModel, DeviceModel, CPU_HZ_2GHZ};
use crate::workload::{QuerySpec, StreamSpec, Workload};
use crate::SimError;
use coopscan_buffer::Split;
use std::collections::BTreeMap;
use std::ops::Range;

/// One query of the run, as the report lists it.
#[derive(Clone, Debug, PartialEq)]
pub struct ReplayQuery {
    /// The stream it ran in; stream `s` started `s × stagger_s` after the first.
    pub stream: usize,
    /// Its place in the stream: a stream runs its queries in this order, back to back.
    pub index: usize,
    /// Its type, e.g. "F-10" (per-type statistics).
    pub kind: String,
    /// The chunks its rows touch (the caller maps rows through the table's manifest:
    /// `coopscan_storage::Table::chunks_for_rows`).
    pub chunks: Range<u32>,
    /// CPU seconds it spends per byte of the chunks it reads, on one core.
    pub cpu_s_per_byte: f64,
}

/// The table and machine of the run.
#[derive(Clone, Debug, PartialEq)]
pub struct ReplaySetup {
    pub chunk_count: u32,
    pub table_bytes: u64,
    /// The buffer, in % of the table's chunks (`coopscan bench --buffer-pct`).
    pub buffer_pct: f64,
    /// The device's bandwidth the run had (throttled or calibrated).
    pub bytes_per_s: f64,
    /// How far apart the streams started.
    pub stagger_s: f64,
    pub cores: u32,
}

/// The simulator's setup and workload for `queries` on `setup` (each query with one
/// worker and the dynamic split: shape them with [`Workload::shaped`]).
pub fn replay_workload(
    setup: &ReplaySetup,
    queries: &[ReplayQuery],
) -> Result<(SimConfig, Workload), SimError> {
    check_setup(setup)?;
    if queries.is_empty() {
        return Err(invalid("the report lists no queries".into()));
    }
    let chunks = setup.chunk_count;
    let chunk_bytes = (setup.table_bytes / u64::from(chunks)).max(1);
    let mut streams: BTreeMap<usize, Vec<&ReplayQuery>> = BTreeMap::new();
    for q in queries {
        streams.entry(q.stream).or_default().push(q);
    }
    let streams = streams
        .into_iter()
        .map(|(stream, mut qs)| {
            qs.sort_by_key(|q| q.index);
            if let Some(w) = qs.windows(2).find(|w| w[0].index == w[1].index) {
                return Err(invalid(format!(
                    "stream {stream} lists its query {} twice",
                    w[0].index
                )));
            }
            let queries = qs
                .into_iter()
                .map(|q| query_spec(setup, q))
                .collect::<Result<Vec<_>, _>>()?;
            Ok(StreamSpec {
                start_s: stream as f64 * setup.stagger_s,
                queries,
            })
        })
        .collect::<Result<Vec<_>, SimError>>()?;
    let frames = (f64::from(chunks) * setup.buffer_pct / 100.0).round() as u32;
    let mut cfg = SimConfig::paper_2007(chunks, chunk_bytes, frames.max(1));
    cfg.device = DeviceModel::Bandwidth {
        bytes_per_sec: setup.bytes_per_s,
        latency_s: 0.0,
    };
    cfg.cpu = CpuModel::new(CPU_HZ_2GHZ, setup.cores);
    Ok((cfg, Workload::new(streams)))
}

fn check_setup(setup: &ReplaySetup) -> Result<(), SimError> {
    let positive = |x: f64| x.is_finite() && x > 0.0;
    if !(positive(setup.buffer_pct) && setup.buffer_pct <= 100.0) {
        return Err(invalid(format!(
            "buffer {} % is not in (0, 100]",
            setup.buffer_pct
        )));
    }
    let stagger_ok = setup.stagger_s.is_finite() && setup.stagger_s >= 0.0;
    if !(positive(setup.bytes_per_s) && stagger_ok) {
        return Err(invalid(format!(
            "bandwidth {} B/s and stagger {} s must be positive and finite",
            setup.bytes_per_s, setup.stagger_s
        )));
    }
    if setup.cores == 0 {
        return Err(invalid("the queries need a core".into()));
    }
    if setup.chunk_count == 0 || setup.table_bytes == 0 {
        return Err(invalid("a replay needs a table of some chunks".into()));
    }
    Ok(())
}

/// `q` as a simulated CScan over its chunks.
fn query_spec(setup: &ReplaySetup, q: &ReplayQuery) -> Result<QuerySpec, SimError> {
    if q.chunks.is_empty() || q.chunks.end > setup.chunk_count {
        return Err(invalid(format!(
            "query {}.{} reads chunks {:?} of a table of {}",
            q.stream, q.index, q.chunks, setup.chunk_count
        )));
    }
    if !(q.cpu_s_per_byte.is_finite() && q.cpu_s_per_byte >= 0.0) {
        return Err(invalid(format!(
            "query {}.{}: CPU {} s per byte",
            q.stream, q.index, q.cpu_s_per_byte
        )));
    }
    Ok(QuerySpec {
        name: format!("s{}q{}", q.stream, q.index),
        kind: q.kind.clone(),
        cycles_per_byte: q.cpu_s_per_byte * CPU_HZ_2GHZ,
        table: 0,
        chunks: vec![q.chunks.clone()],
        columns: 0,
        workers: 1,
        split: Split::Dynamic,
        snapshot: None,
    })
}

fn invalid(why: String) -> SimError {
    SimError::InvalidSetup(format!("replay: {why}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::presets::run_policies;
    use coopscan_buffer::PolicyKind;

    /// Ten chunks of 1 MB each, a 30 % buffer.
    fn setup() -> ReplaySetup {
        ReplaySetup {
            chunk_count: 10,
            table_bytes: 10_000_000,
            buffer_pct: 30.0,
            bytes_per_s: 100e6,
            stagger_s: 0.5,
            cores: 2,
        }
    }

    fn query(stream: usize, index: usize, chunks: Range<u32>) -> ReplayQuery {
        ReplayQuery {
            stream,
            index,
            kind: "F-10".into(),
            chunks,
            cpu_s_per_byte: 1e-9,
        }
    }

    #[test]
    fn streams_start_a_stagger_apart_and_run_their_queries_in_order() {
        let queries = [query(1, 1, 0..1), query(0, 0, 5..10), query(1, 0, 3..4)];
        let (cfg, w) = replay_workload(&setup(), &queries).unwrap();
        assert_eq!(
            (cfg.chunk_count, cfg.frames, cfg.chunk_bytes),
            (10, 3, 1_000_000)
        );
        let starts: Vec<f64> = w.streams.iter().map(|s| s.start_s).collect();
        assert_eq!(starts, [0.0, 0.5]);
        // Each query one range of chunks: (first, end).
        let chunks: Vec<Vec<(u32, u32)>> = w.streams[1]
            .queries
            .iter()
            .map(|q| q.chunks.iter().map(|r| (r.start, r.end)).collect())
            .collect();
        assert_eq!(chunks, [[(3, 4)], [(0, 1)]]);
        assert_eq!(w.streams[0].queries[0].cycles_per_byte, 2.0);
    }

    #[test]
    fn a_replayed_run_reads_every_chunk_of_every_query() {
        let queries = [query(0, 0, 0..10), query(1, 0, 2..8), query(1, 1, 9..10)];
        let (cfg, w) = replay_workload(&setup(), &queries).unwrap();
        let w = w.shaped(crate::QueryShape {
            workers: 2,
            ..Default::default()
        });
        let report = run_policies("replay", 0, &cfg, &w, &[PolicyKind::Relevance], true).unwrap();
        let mut chunks: Vec<(String, u32)> = report.policies["relevance"]
            .queries
            .iter()
            .map(|q| (q.name.clone(), q.chunks))
            .collect();
        chunks.sort();
        let want = [("s0q0", 10), ("s1q0", 6), ("s1q1", 1)];
        let want: Vec<(String, u32)> = want.iter().map(|(n, c)| (n.to_string(), *c)).collect();
        assert_eq!(chunks, want);
    }

    #[test]
    fn bad_reports_are_refused() {
        let mut smaller = setup();
        smaller.chunk_count = 9;
        assert!(replay_workload(&smaller, &[query(0, 0, 9..10)]).is_err());
        assert!(replay_workload(&setup(), &[query(0, 0, 9..11)]).is_err());
        assert!(replay_workload(&setup(), &[query(0, 0, 5..5)]).is_err());
        assert!(replay_workload(&setup(), &[]).is_err());
        let mut no_chunks = setup();
        no_chunks.chunk_count = 0;
        assert!(replay_workload(&no_chunks, &[query(0, 0, 0..1)]).is_err());
        let mut no_disk = setup();
        no_disk.bytes_per_s = 0.0;
        assert!(replay_workload(&no_disk, &[query(0, 0, 0..1)]).is_err());
        let mut no_core = setup();
        no_core.cores = 0;
        assert!(replay_workload(&no_core, &[query(0, 0, 0..1)]).is_err());
        let twice = [query(0, 1, 0..1), query(0, 1, 1..2)];
        assert!(replay_workload(&setup(), &twice).is_err());
        let mut nan_cpu = query(0, 0, 0..1);
        nan_cpu.cpu_s_per_byte = f64::NAN;
        assert!(replay_workload(&setup(), &[nan_cpu]).is_err());
    }
}
