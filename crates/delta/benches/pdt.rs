//! The costs of a Positional Delta Tree that updates and scans pay: one change by RID,
//! one RID→SID translation, and the merge of one chunk (per tuple) with a given density
//! of changes. `cargo bench -p coopscan-delta`.

use coopscan_delta::{Pdt, Rid};
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::hint::black_box;

const STABLE_ROWS: u64 = 6_000_000;
/// A DSM chunk's tuples in the benchmark's setup (about 100 k per chunk).
const CHUNK_ROWS: u64 = 100_000;

/// A tree of `changes` random changes (inserts, deletes, modifications alike).
fn tree(changes: usize, seed: u64) -> Pdt<i64> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut pdt = Pdt::new(STABLE_ROWS, 4);
    for _ in 0..changes {
        let rows = pdt.rows();
        let rid = Rid(rng.random_range(0..rows));
        let done = match rng.random_range(0..3) {
            0 => pdt.insert(rid, vec![1, 2, 3, 4]),
            1 => pdt.delete(rid),
            _ => pdt.modify(rid, vec![(1, 7)]),
        };
        done.expect("valid change");
    }
    pdt
}

fn changes(c: &mut Criterion) {
    let mut group = c.benchmark_group("change");
    for size in [10_000usize, 1_000_000] {
        let base = tree(size, 1);
        group.bench_with_input(BenchmarkId::new("modify", size), &base, |b, base| {
            let mut pdt = base.clone();
            let mut rng = ChaCha8Rng::seed_from_u64(2);
            b.iter(|| {
                pdt.modify(Rid(rng.random_range(0..pdt.rows())), vec![(2, 9)])
                    .expect("modify")
            });
        });
        group.bench_with_input(BenchmarkId::new("rid_to_sid", size), &base, |b, pdt| {
            let mut rng = ChaCha8Rng::seed_from_u64(3);
            b.iter(|| black_box(pdt.rid_to_sid(Rid(rng.random_range(0..pdt.rows())))));
        });
    }
    group.finish();
}

fn merge(c: &mut Criterion) {
    let mut group = c.benchmark_group("merge_chunk");
    group.throughput(Throughput::Elements(CHUNK_ROWS));
    // Changes per million stable tuples: none, 0.1 %, 1 %, 10 %.
    for per_million in [0usize, 1_000, 10_000, 100_000] {
        let pdt = tree(per_million * (STABLE_ROWS as usize / 1_000_000), 4);
        group.bench_with_input(BenchmarkId::from_parameter(per_million), &pdt, |b, pdt| {
            let mut rng = ChaCha8Rng::seed_from_u64(5);
            b.iter(|| {
                let start = rng.random_range(0..STABLE_ROWS / CHUNK_ROWS) * CHUNK_ROWS;
                let merged = pdt.merge_steps(start..start + CHUNK_ROWS).expect("merge");
                black_box(merged.steps.len())
            });
        });
    }
    group.finish();
}

criterion_group!(benches, changes, merge);
criterion_main!(benches);
