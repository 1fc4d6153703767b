//! The dynamic against the static split of Table 2 (every query two workers, relevance)
//! over twenty workloads (seeds 1-20), at the paper's CPU/I/O balance and at the
//! balance of `coopscan bench --bandwidth-mb 400` on this project's machine (every
//! query's CPU per byte divided by 4.6, the calibrated 1840 MB/s over 400 MB/s): how
//! often one split is better, and whether a difference in normalized latency is the
//! queries' or their standalone runs' (each split normalizes by its own; here also by
//! the static split's for both). docs/performance.md, "The split over twenty workloads".
//!
//! ```text
//! cargo run --release -p coopscan-sim --example split_seeds
//! ```

use coopscan_buffer::{PolicyKind, Split};
use coopscan_sim::presets::{run_policies, table2};
use coopscan_sim::{PolicyReport, QueryShape, SimError};
use std::collections::HashMap;

/// The two balances: the paper's, and the bench's at a 400 MB/s throttle.
const CPU_DIVISORS: [f64; 2] = [1.0, 1840.0 / 400.0];
const SEEDS: std::ops::RangeInclusive<u64> = 1..=20;

fn main() -> Result<(), SimError> {
    for divisor in CPU_DIVISORS {
        println!("CPU per byte ÷ {divisor:.1}: dynamic ÷ static, per seed");
        println!("seed  stream  norm.lat  lat.by.static.alone  loads");
        let mut ratios = Vec::new();
        for seed in SEEDS {
            let dynamic = run(seed, divisor, Split::Dynamic)?;
            let fixed = run(seed, divisor, Split::Static)?;
            let alone: HashMap<&str, f64> = fixed
                .queries
                .iter()
                .filter_map(|q| Some((q.name.as_str(), q.standalone_s?)))
                .collect();
            let r = [
                dynamic.avg_stream_time_s / fixed.avg_stream_time_s,
                norm(&dynamic, None) / norm(&fixed, None),
                norm(&dynamic, Some(&alone)) / norm(&fixed, Some(&alone)),
                dynamic.chunk_loads as f64 / fixed.chunk_loads as f64,
            ];
            println!(
                "{seed:>4}  {:>6.3}  {:>8.3}  {:>19.3}  {:>5.3}",
                r[0], r[1], r[2], r[3]
            );
            ratios.push(r);
        }
        for (k, what) in ["stream", "norm. latency", "by static alone", "loads"]
            .iter()
            .enumerate()
        {
            let mut v: Vec<f64> = ratios.iter().map(|r| r[k]).collect();
            v.sort_by(f64::total_cmp);
            let worse = v.iter().filter(|x| **x > 1.0).count();
            let median = (v[v.len() / 2 - 1] + v[v.len() / 2]) / 2.0;
            println!(
                "{what:<16} median {median:.3}, dynamic worse in {worse}/{}",
                v.len()
            );
        }
        println!();
    }
    Ok(())
}

/// Table 2 of `seed`, every query two workers of `split`, under relevance.
fn run(seed: u64, cpu_divisor: f64, split: Split) -> Result<PolicyReport, SimError> {
    let (cfg, workload) = table2(seed)?;
    let mut workload = workload.shaped(QueryShape {
        workers: 2,
        split,
        ..QueryShape::default()
    });
    for q in workload.streams.iter_mut().flat_map(|s| &mut s.queries) {
        q.cycles_per_byte /= cpu_divisor;
    }
    let mut report = run_policies(
        "table2",
        seed,
        &cfg,
        &workload,
        &[PolicyKind::Relevance],
        true,
    )?;
    Ok(report.policies.remove("relevance").expect("relevance ran"))
}

/// Average latency over standalone latency: each query's own (`None`) or those given.
fn norm(p: &PolicyReport, alone: Option<&HashMap<&str, f64>>) -> f64 {
    let each = p.queries.iter().map(|q| {
        let base = match alone {
            Some(a) => a[q.name.as_str()],
            None => q.standalone_s.expect("normalized run"),
        };
        q.latency_s / base
    });
    each.sum::<f64>() / p.queries.len() as f64
}
