//! The 2012 paper's example for parallel CScans (§2.2): a table of 10 chunks of which
//! {3, 5, 6, 7, 9} are resident, and one query scanning all of it with two workers on
//! two cores. A static split (chunks 0-4 and 5-9, the paper's way) leaves one worker 1
//! resident chunk and 4 to load, the other 4 and 1; a dynamic split (its future work)
//! lets either worker take whatever is ready. Disk: 0.1 s per chunk, one read at a time.

use coopscan_buffer::{PolicyKind, Split};

use crate::presets::homogeneous;
use crate::{simulate, QuerySpec, SimError, StreamSpec, Workload};

/// The chunks resident before the measured query starts.
pub const SPLIT_EXAMPLE_RESIDENT: [std::ops::Range<u32>; 3] = [3..4, 5..8, 9..10];
/// Chunks of the example's table.
pub const SPLIT_EXAMPLE_CHUNKS: u32 = 10;
/// Workers (and cores) of the measured query.
pub const SPLIT_EXAMPLE_WORKERS: u16 = 2;
/// When the measured query starts: after the warm-up query is done.
const START_S: f64 = 1.0;

/// What the measured query did.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SplitExampleRun {
    pub latency_s: f64,
    /// Loads issued on its behalf.
    pub loads: u64,
    /// Seconds of CPU per chunk at its cycles per byte.
    pub cpu_per_chunk_s: f64,
    /// Seconds per chunk read.
    pub read_per_chunk_s: f64,
}

fn query(
    name: &str,
    chunks: Vec<std::ops::Range<u32>>,
    cpb: f64,
    workers: u16,
    split: Split,
) -> QuerySpec {
    QuerySpec {
        name: name.into(),
        kind: name.into(),
        cycles_per_byte: cpb,
        chunks,
        columns: 0,
        workers,
        split,
        snapshot: None,
        table: 0,
    }
}

/// The two-worker query of `cycles_per_byte` under `policy`, after a one-worker query
/// made [`SPLIT_EXAMPLE_RESIDENT`] resident.
pub fn split_example(
    cycles_per_byte: f64,
    split: Split,
    policy: PolicyKind,
) -> Result<SplitExampleRun, SimError> {
    let (mut cfg, _) = homogeneous();
    cfg.chunk_count = SPLIT_EXAMPLE_CHUNKS;
    // Room for the resident five, a chunk per worker and one more.
    cfg.frames = 8;
    // One core per worker, as in the paper's parallel plans.
    cfg.cpu.cores = u32::from(SPLIT_EXAMPLE_WORKERS);
    let warm = query(
        "warm",
        SPLIT_EXAMPLE_RESIDENT.to_vec(),
        1.0,
        1,
        Split::Dynamic,
    );
    let scan = query(
        "scan",
        std::iter::once(0..SPLIT_EXAMPLE_CHUNKS).collect(),
        cycles_per_byte,
        SPLIT_EXAMPLE_WORKERS,
        split,
    );
    let streams = vec![
        StreamSpec {
            start_s: 0.0,
            queries: vec![warm],
        },
        StreamSpec {
            start_s: START_S,
            queries: vec![scan],
        },
    ];
    let run = simulate(&cfg, &Workload::new(streams), policy)?;
    let stuck = SimError::Stuck {
        policy,
        time_s: run.total_time_s,
        unfinished: 1,
    };
    let q = run.queries.iter().find(|q| q.name == "scan").ok_or(stuck)?;
    let chunk_bytes = cfg.chunk_bytes as f64;
    Ok(SplitExampleRun {
        latency_s: q.latency_s,
        loads: q.loads,
        cpu_per_chunk_s: cycles_per_byte * chunk_bytes / cfg.cpu.hz,
        read_per_chunk_s: cfg.device.chunk_read_s(cfg.chunk_bytes),
    })
}
