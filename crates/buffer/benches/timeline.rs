//! PBM's bookkeeping cost: re-filing a piece (PagePush) and taking a victim (EvictPage)
//! on the bucket timeline, beside an exact ordered index (a B-tree keyed by predicted
//! time, O(log n), what a "binary heap or another priority queue" would cost; the 2012
//! paper found those too slow in Vectorwise).
//!
//! PBM/LRU's counter-rotating timeline is measured the same way (`pbm_lru` group).
//!
//! `cargo bench -p coopscan-buffer --bench timeline`

use coopscan_buffer::{BucketTimeline, CounterRotatingTimeline, Nanos, TimelineShape};
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::collections::{BTreeSet, HashMap};
use std::hint::black_box;
use std::time::Duration;

const PIECES: [u32; 3] = [10_000, 100_000, 1_000_000];
/// Predicted times spread over 10 minutes.
const HORIZON_NS: u64 = 600_000_000_000;

/// The exact alternative: every piece keyed by its predicted time.
#[derive(Default)]
struct Exact {
    order: BTreeSet<(u64, u32)>,
    due: HashMap<u32, u64>,
}

impl Exact {
    fn push(&mut self, key: u32, at: u64) {
        if let Some(old) = self.due.insert(key, at) {
            self.order.remove(&(old, key));
        }
        self.order.insert((at, key));
    }

    fn evict(&mut self) -> Option<u32> {
        let (_, key) = self.order.pop_last()?;
        self.due.remove(&key);
        Some(key)
    }
}

fn filled(n: u32, rng: &mut ChaCha8Rng) -> (BucketTimeline<u32>, Exact) {
    let mut t = BucketTimeline::new(TimelineShape::DEFAULT, Nanos::ZERO).expect("shape");
    let mut e = Exact::default();
    for key in 0..n {
        let at = rng.random_range(0..HORIZON_NS);
        t.push(key, Some(Nanos(at)));
        e.push(key, at);
    }
    (t, e)
}

fn refile(c: &mut Criterion) {
    let mut group = c.benchmark_group("pbm_refile");
    group
        .sample_size(20)
        .measurement_time(Duration::from_secs(2));
    for n in PIECES {
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        let (mut t, mut e) = filled(n, &mut rng);
        group.bench_function(BenchmarkId::new("timeline", n), |b| {
            b.iter(|| {
                let key = rng.random_range(0..n);
                t.push(key, Some(Nanos(rng.random_range(0..HORIZON_NS))));
            })
        });
        group.bench_function(BenchmarkId::new("btree", n), |b| {
            b.iter(|| {
                let key = rng.random_range(0..n);
                e.push(key, rng.random_range(0..HORIZON_NS));
            })
        });
    }
    group.finish();
}

/// Take the victim and file it again (a load bringing another piece in), so the
/// structure stays at its size.
fn evict(c: &mut Criterion) {
    let mut group = c.benchmark_group("pbm_evict");
    group
        .sample_size(20)
        .measurement_time(Duration::from_secs(2));
    for n in PIECES {
        let mut rng = ChaCha8Rng::seed_from_u64(2);
        let (mut t, mut e) = filled(n, &mut rng);
        group.bench_function(BenchmarkId::new("timeline", n), |b| {
            b.iter(|| {
                let victim = t.eviction_order().next().expect("filled");
                t.remove(victim);
                t.push(
                    black_box(victim),
                    Some(Nanos(rng.random_range(0..HORIZON_NS))),
                );
            })
        });
        group.bench_function(BenchmarkId::new("btree", n), |b| {
            b.iter(|| {
                let victim = e.evict().expect("filled");
                e.push(black_box(victim), rng.random_range(0..HORIZON_NS));
            })
        });
    }
    group.finish();
}

/// One refresh per 10 ms slice; the re-filed expired keys are part of the cost.
fn refresh(c: &mut Criterion) {
    let mut group = c.benchmark_group("pbm_refresh_slice");
    group
        .sample_size(20)
        .measurement_time(Duration::from_secs(2));
    for n in PIECES {
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        let (mut t, _) = filled(n, &mut rng);
        let mut now = 0u64;
        let slice = TimelineShape::DEFAULT.time_slice.0;
        group.bench_function(BenchmarkId::new("timeline", n), |b| {
            b.iter(|| {
                now += slice;
                for key in t.advance(Nanos(now)) {
                    t.push(key, Some(Nanos(rng.random_range(0..HORIZON_NS))));
                }
            })
        });
    }
    group.finish();
}

/// PBM/LRU's counter-rotating timeline, half its keys requested and half unrequested
/// (with an estimate): re-file a random key on a random side, take the victim and
/// re-file it, and one refresh slice (PBM buckets left, LRU buckets right, the expired
/// requested keys re-filed).
fn counter_rotating(c: &mut Criterion) {
    let mut group = c.benchmark_group("pbm_lru");
    group
        .sample_size(20)
        .measurement_time(Duration::from_secs(2));
    for n in PIECES {
        let mut rng = ChaCha8Rng::seed_from_u64(4);
        let mut t =
            CounterRotatingTimeline::new(TimelineShape::DEFAULT, Nanos::ZERO).expect("shape");
        let file = |t: &mut CounterRotatingTimeline<u32>, key: u32, rng: &mut ChaCha8Rng| {
            let at = Nanos(rng.random_range(0..HORIZON_NS));
            if rng.random_bool(0.5) {
                t.push_requested(key, at);
            } else {
                t.push_unrequested(key, Some(at));
            }
        };
        for key in 0..n {
            file(&mut t, key, &mut rng);
        }
        group.bench_function(BenchmarkId::new("refile", n), |b| {
            b.iter(|| {
                let key = rng.random_range(0..n);
                file(&mut t, black_box(key), &mut rng);
            })
        });
        group.bench_function(BenchmarkId::new("evict", n), |b| {
            b.iter(|| {
                let victim = t.eviction_order().next().expect("filled");
                t.remove(victim);
                file(&mut t, black_box(victim), &mut rng);
            })
        });
        let mut now = 0u64;
        let slice = TimelineShape::DEFAULT.time_slice.0;
        group.bench_function(BenchmarkId::new("refresh_slice", n), |b| {
            b.iter(|| {
                now += slice;
                for key in t.advance(Nanos(now)) {
                    file(&mut t, key, &mut rng);
                }
            })
        });
    }
    group.finish();
}

criterion_group!(benches, refile, evict, refresh, counter_rotating);
criterion_main!(benches);
