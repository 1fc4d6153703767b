//! Checkpoints in the simulator (2012 paper §2.1, case (iv)): a checkpoint's image
//! shares no page with the old one, so the buffer takes it as a table of its own and
//! retires the old version, which keeps serving the scans that started on it and is
//! freed once the last of them leaves. The simulator fails a run on a duplicate,
//! unwanted or missing chunk, on an invariant broken after any event, and on a retired
//! version the buffer did not free by the end.
//!
//! ```text
//! COOPSCAN_SIM_SEED=1234 cargo test -p coopscan-sim --test checkpoints
//! ```
#![allow(clippy::unwrap_used)] // test code: an unwrap that fails is a failed test

use coopscan_buffer::{PolicyKind, Split};
use coopscan_sim::{
    simulate, CpuModel, DeviceModel, QuerySpec, SimCheckpoint, SimConfig, StreamSpec, Workload,
};
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

mod common;

const CHUNKS: u32 = 10;
/// A read of one chunk, and a query's processing of one: a full scan takes 1 s.
const READ_S: f64 = 0.05;
const CHUNK_BYTES: u64 = 1 << 20;

/// A table of `CHUNKS` chunks, a buffer holding `frames` of them, a device that reads
/// a chunk in `READ_S`, one core.
fn config(frames: u32) -> SimConfig {
    SimConfig {
        check_invariants: true,
        record_timeline: false,
        device: DeviceModel::FixedPerChunk { seconds: READ_S },
        cpu: CpuModel::new(2e9, 1),
        ..SimConfig::paper_2007(CHUNKS, CHUNK_BYTES, frames)
    }
}

/// A full scan processing each chunk in `READ_S`.
fn full_scan(name: &str) -> QuerySpec {
    QuerySpec {
        name: name.into(),
        kind: "full".into(),
        cycles_per_byte: READ_S * 2e9 / CHUNK_BYTES as f64,
        table: 0,
        chunks: std::iter::once(0..CHUNKS).collect(),
        columns: 0,
        workers: 1,
        split: Split::Dynamic,
        snapshot: None,
    }
}

/// One stream of two full scans with the whole table in the buffer: the second finds
/// every chunk resident — unless a checkpoint came between, after which it reads the
/// new version's chunks, none of which the first scan loaded. So the run loads the
/// table once without the checkpoint and twice with it, under every policy; the old
/// version is freed when the first scan leaves.
#[test]
fn a_scan_after_a_checkpoint_reads_the_new_version() {
    let stream = StreamSpec {
        start_s: 0.0,
        queries: vec![full_scan("first"), full_scan("second")],
    };
    let plain = Workload::new(vec![stream]);
    // While the first scan runs (it takes about 0.55 s).
    let checkpoint = SimCheckpoint {
        at_s: 0.25,
        table: 0,
        every_s: None,
    };
    let checkpointed = plain.clone().with_checkpoints(vec![checkpoint]);
    let cfg = config(2 * CHUNKS);
    for policy in PolicyKind::ALL {
        let without = simulate(&cfg, &plain, policy).unwrap();
        let with = simulate(&cfg, &checkpointed, policy).unwrap();
        assert_eq!(without.chunk_loads, u64::from(CHUNKS), "{policy}");
        assert_eq!(with.chunk_loads, 2 * u64::from(CHUNKS), "{policy}");
        assert_eq!((with.checkpoints, with.versions_freed), (1, 1), "{policy}");
        assert_eq!((without.checkpoints, without.versions_freed), (0, 0));
    }
}

/// A checkpoint after the last query changes nothing, and one of a table the run does
/// not have is refused before anything runs.
#[test]
fn checkpoints_outside_the_run_are_ignored_or_refused() {
    let plain = Workload::new(vec![StreamSpec {
        start_s: 0.0,
        queries: vec![full_scan("only")],
    }]);
    let late = plain.clone().with_checkpoints(vec![SimCheckpoint {
        at_s: 100.0,
        table: 0,
        every_s: None,
    }]);
    let cfg = config(CHUNKS);
    let (a, b) = (
        simulate(&cfg, &plain, PolicyKind::Relevance).unwrap(),
        simulate(&cfg, &late, PolicyKind::Relevance).unwrap(),
    );
    assert_eq!(a.total_time_s, b.total_time_s);
    assert_eq!(b.checkpoints, 0);
    let elsewhere = plain.with_checkpoints(vec![SimCheckpoint {
        at_s: 0.5,
        table: 3,
        every_s: None,
    }]);
    let refused = simulate(&cfg, &elsewhere, PolicyKind::Relevance).unwrap_err();
    assert!(refused.to_string().contains("table 3"), "{refused}");
}

/// Random streams of random scans (1-3 workers, either split) over a small buffer, with
/// 1-4 checkpoints at random times, under every policy: every query gets exactly its
/// chunks, invariants hold after every event, and every retired version is freed.
#[test]
fn random_checkpoints_leave_every_query_its_chunks() {
    let mut runs_with_checkpoints = 0;
    for seed in common::seeds(60) {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let frames = rng.random_range(4..=12);
        let cfg = config(frames);
        let streams = common::random_streams(&mut rng, 5, CHUNKS, |rng, name, run| QuerySpec {
            chunks: std::iter::once(run).collect(),
            workers: rng.random_range(1..=3),
            split: match rng.random_bool(0.5) {
                true => Split::Dynamic,
                false => Split::Static,
            },
            cycles_per_byte: rng.random_range(0.2..2.0) * 95.0,
            ..full_scan(&name)
        });
        let checkpoints = (0..rng.random_range(1..=4))
            .map(|_| SimCheckpoint {
                at_s: rng.random_range(0.0..1.5),
                table: 0,
                every_s: rng.random_bool(0.3).then(|| rng.random_range(0.05..0.5)),
            })
            .collect();
        let workload = Workload::new(streams).with_checkpoints(checkpoints);
        for policy in PolicyKind::ALL {
            let run = simulate(&cfg, &workload, policy).unwrap_or_else(|e| {
                panic!("seed {seed}, {policy}: {e}\nreplay: COOPSCAN_SIM_SEED={seed} cargo test -p coopscan-sim --test checkpoints")
            });
            assert_eq!(run.queries.len(), workload.query_count(), "seed {seed}");
            assert_eq!(run.versions_freed, run.checkpoints, "seed {seed} {policy}");
            // A checkpoint is taken only while queries run: the seeds must reach some.
            runs_with_checkpoints += usize::from(run.checkpoints > 0);
        }
    }
    assert!(
        runs_with_checkpoints > 100,
        "{runs_with_checkpoints} runs took a checkpoint"
    );
}
