//! Cost per ABM decision at 1k, 10k and 100k chunks with 16, 64 and 256 scans.
//! Target (BENCHMARKS.md): ≤ 10 µs per decision at 100k chunks and 64 scans.
//!
//! `cargo bench -p coopscan-buffer --bench decisions`

#[path = "support/driver.rs"]
mod driver;

use coopscan_buffer::{EvictionStrategy, PolicyKind};
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use driver::Driver;
use std::time::Duration;

const CHUNK_COUNTS: [u32; 3] = [1_000, 10_000, 100_000];
const SCAN_COUNTS: [usize; 3] = [16, 64, 256];
/// Decisions run before measuring, after the buffer first fills (so that evictions are
/// part of the measured steady state), letting classes fragment as in a long run.
const WARMUP_DECISIONS: u64 = 20_000;
const WARMUP_BATCH: u64 = 10_000;

fn decisions(c: &mut Criterion) {
    let mut group = c.benchmark_group("decision");
    group
        .sample_size(20)
        .measurement_time(Duration::from_secs(3))
        .warm_up_time(Duration::from_secs(1));
    for kind in PolicyKind::ALL {
        for &chunks in chunk_counts(kind) {
            for scans in SCAN_COUNTS {
                let mut driver = Driver::new(kind, chunks, scans, 42);
                while driver.abm().state().stats().evictions == 0 {
                    driver.run(WARMUP_BATCH);
                }
                driver.run(WARMUP_DECISIONS);
                let id = BenchmarkId::new(kind.name(), format!("{chunks}chunks/{scans}scans"));
                group.bench_function(id, |b| b.iter_custom(|iters| driver.run(iters)));
                let stats = driver.abm().state().stats();
                let classes = driver.abm().state().class_count();
                eprintln!(
                    "  {kind} {chunks}/{scans}: {classes} live classes, {} loads, {} evictions",
                    stats.loads, stats.evictions
                );
            }
        }
    }
    group.finish();
}

/// Column storage: 16 columns, scans over up to 4 adjacent ones (issue target: ≤ 10 µs
/// at 100k chunks × 16 columns × 64 scans, and measured at 256 scans).
fn dsm_decisions(c: &mut Criterion) {
    let mut group = c.benchmark_group("dsm_decision");
    group
        .sample_size(20)
        .measurement_time(Duration::from_secs(3))
        .warm_up_time(Duration::from_secs(1));
    for kind in PolicyKind::ALL
        .into_iter()
        .filter(|&k| k != PolicyKind::Mixed)
    {
        for scans in SCAN_COUNTS {
            let chunks = 100_000;
            let mut driver = Driver::with_columns(kind, chunks, DSM_COLUMNS, scans, 42);
            while driver.abm().state().stats().evictions == 0 {
                driver.run(WARMUP_BATCH);
            }
            driver.run(WARMUP_DECISIONS);
            let id = BenchmarkId::new(kind.name(), format!("{chunks}chunks/16cols/{scans}scans"));
            group.bench_function(id, |b| b.iter_custom(|iters| driver.run(iters)));
            let classes = driver.abm().state().class_count();
            eprintln!("  dsm {kind} {chunks}/{scans}: {classes} live classes");
        }
    }
    // Relevance with the knapsack eviction (the 2007 paper's footnote).
    for scans in SCAN_COUNTS {
        let chunks = 100_000;
        let knapsack = EvictionStrategy::Knapsack;
        let kind = PolicyKind::Relevance;
        let mut driver = Driver::with_eviction(kind, chunks, DSM_COLUMNS, scans, 42, knapsack);
        while driver.abm().state().stats().evictions == 0 {
            driver.run(WARMUP_BATCH);
        }
        driver.run(WARMUP_DECISIONS);
        let id = BenchmarkId::new(
            "relevance-knapsack",
            format!("{chunks}chunks/16cols/{scans}scans"),
        );
        group.bench_function(id, |b| b.iter_custom(|iters| driver.run(iters)));
        let stats = driver.abm().state().stats();
        eprintln!(
            "  dsm knapsack {chunks}/{scans}: {} evictions, {} of pieces nobody needed",
            stats.evictions, stats.spare_evictions
        );
    }
    group.finish();
}

const DSM_COLUMNS: u32 = 16;

/// `mixed` ranks every resident piece on each eviction (O(pieces × scans), built for
/// the simulator, see policy/next_use.rs): at 10k chunks and more its warm-up alone
/// would take many minutes, so it runs only at 1k chunks (and not on the DSM table).
fn chunk_counts(kind: PolicyKind) -> &'static [u32] {
    match kind {
        PolicyKind::Mixed => &CHUNK_COUNTS[..1],
        _ => &CHUNK_COUNTS,
    }
}

criterion_group!(benches, decisions, dsm_decisions);
criterion_main!(benches);
