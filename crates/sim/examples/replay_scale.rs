//! How long `coopscan opt`'s three replays (OPT, LRU, PBM's rule) take on large traces:
//! a synthetic trace of `REFS` references, 16 streams of in-order scans over random
//! ranges of a 100 000-chunk table, each query at its own pace (leaders, trailers and
//! overlaps, as in a PBM run), replayed with room for 10 % and 50 % of the pieces.
//!
//! ```text
//! cargo run --release -p coopscan-sim --example replay_scale [-- REFS...]   # default 1000000 10000000
//! ```

use coopscan_buffer::trace::opt::{distinct_bytes, replay_lru, replay_opt, Replay};
use coopscan_buffer::trace::pbm_replay::replay_pbm;
use coopscan_buffer::{ChunkId, Nanos, PieceId, Reference, ScanId, TableId};
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::process::ExitCode;
use std::time::Instant;

const STREAMS: u64 = 16;
const CHUNKS: u32 = 100_000;
const PIECE_BYTES: u64 = 1 << 20;

fn main() -> ExitCode {
    let args: Result<Vec<usize>, _> = std::env::args().skip(1).map(|a| a.parse()).collect();
    let sizes = match args {
        Ok(sizes) if sizes.is_empty() => vec![1_000_000, 10_000_000],
        Ok(sizes) => sizes,
        Err(e) => {
            eprintln!("replay_scale: REFS: {e}");
            return ExitCode::FAILURE;
        }
    };
    for refs in sizes {
        let trace = synthetic_trace(refs, 42);
        let distinct = distinct_bytes(&trace);
        for pct in [10, 50] {
            let capacity = distinct / 100 * pct;
            for (name, replay) in [
                ("OPT", replay_opt as fn(&[Reference], u64) -> Replay),
                ("LRU", replay_lru),
                ("PBM", replay_pbm),
            ] {
                let start = Instant::now();
                let out = replay(&trace, capacity);
                let secs = start.elapsed().as_secs_f64();
                println!(
                    "{refs} refs, buffer {pct:>2} %: {name} {:>9} loads in {secs:.2} s",
                    out.loads
                );
            }
        }
    }
    ExitCode::SUCCESS
}

/// `refs` references: each stream runs in-order scans over random ranges, one after
/// another, each at a random pace; the streams' references merged by time.
fn synthetic_trace(refs: usize, seed: u64) -> Vec<Reference> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let per_stream = refs.div_ceil(STREAMS as usize);
    let mut trace = Vec::with_capacity(per_stream * STREAMS as usize);
    for stream in 0..STREAMS {
        let (mut at, mut made, mut query) = (rng.random_range(0..1_000_000u64), 0, 0);
        while made < per_stream {
            let len = rng.random_range(1_000..50_000u32);
            let first = rng.random_range(0..CHUNKS - len);
            let pace = rng.random_range(50..500u64);
            let scan = ScanId(stream << 32 | query);
            for chunk in first..first + len {
                at += pace + rng.random_range(0..pace);
                trace.push(Reference {
                    at: Nanos(at),
                    scan,
                    piece: PieceId::whole(TableId(0), ChunkId(chunk)),
                    bytes: PIECE_BYTES,
                });
            }
            made += len as usize;
            query += 1;
        }
    }
    trace.sort_by_key(|r| (r.at, r.scan));
    trace.truncate(refs);
    trace
}
