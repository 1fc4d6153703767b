//! Table 2 with the cores shared equally against shorter scans first
//! (`coopscan_buffer::CpuShares`), over twenty workloads (seeds 1-20), at the paper's
//! CPU/I/O balance and at the balance of `coopscan bench --bandwidth-mb 400` on this
//! project's machine (CPU per byte ÷ 4.6): medians per policy with one worker per
//! query, then the dynamic against the static split at two workers.
//! docs/performance.md, "Shorter scans first on the CPU".
//!
//! ```text
//! cargo run --release -p coopscan-sim --example cpu_shares_seeds
//! ```

use coopscan_buffer::{CpuShares, PolicyKind, Split};
use coopscan_sim::presets::{run_policies, table2};
use coopscan_sim::{shaped_run, PolicyReport, QueryShape, SimError};

/// The two balances: the paper's, and the bench's at a 400 MB/s throttle.
const CPU_DIVISORS: [f64; 2] = [1.0, 1840.0 / 400.0];
const SEEDS: std::ops::RangeInclusive<u64> = 1..=20;
const POLICIES: [PolicyKind; 3] = [
    PolicyKind::Normal,
    PolicyKind::Attach,
    PolicyKind::Relevance,
];

fn main() -> Result<(), SimError> {
    for divisor in CPU_DIVISORS {
        println!("CPU per byte ÷ {divisor:.1}, one worker per query, medians of 20 seeds");
        println!("policy     shares       stream  norm.lat");
        for policy in POLICIES {
            for shares in CpuShares::ALL {
                let one = QueryShape {
                    cpu_shares: shares,
                    ..QueryShape::default()
                };
                let runs = over_seeds(divisor, policy, one)?;
                let stream = median(runs.iter().map(|r| r.avg_stream_time_s));
                let latency = median(runs.iter().map(latency));
                println!(
                    "{:<10} {:<11} {stream:>7.2}  {latency:>8.3}",
                    policy.name(),
                    shares.name()
                );
            }
        }
        println!("two workers, relevance: dynamic ÷ static split, medians of 20 seeds");
        for shares in CpuShares::ALL {
            let shape = |split| QueryShape {
                workers: 2,
                split,
                cpu_shares: shares,
            };
            let dynamic = over_seeds(divisor, PolicyKind::Relevance, shape(Split::Dynamic))?;
            let fixed = over_seeds(divisor, PolicyKind::Relevance, shape(Split::Static))?;
            let pairs = dynamic.iter().zip(&fixed);
            let stream = median(
                pairs
                    .clone()
                    .map(|(d, s)| d.avg_stream_time_s / s.avg_stream_time_s),
            );
            let ratios: Vec<f64> = (pairs.map(|(d, s)| latency(d) / latency(s))).collect();
            let worse = ratios.iter().filter(|r| **r > 1.0).count();
            let latency = median(ratios.into_iter());
            println!(
                "{:<11} stream {stream:.3}  norm.lat {latency:.3} (dynamic worse in {worse}/20)",
                shares.name()
            );
        }
        println!();
    }
    Ok(())
}

/// Table 2 of every seed under `policy`, shaped as `shape`, CPU per byte ÷ `divisor`.
fn over_seeds(
    divisor: f64,
    policy: PolicyKind,
    shape: QueryShape,
) -> Result<Vec<PolicyReport>, SimError> {
    SEEDS
        .map(|seed| {
            let (cfg, workload) = table2(seed)?;
            let (cfg, mut workload) = shaped_run(cfg, workload, shape);
            for q in workload.streams.iter_mut().flat_map(|s| &mut s.queries) {
                q.cycles_per_byte /= divisor;
            }
            let mut report = run_policies("table2", seed, &cfg, &workload, &[policy], true)?;
            Ok(report
                .policies
                .remove(policy.name())
                .expect("the policy ran"))
        })
        .collect()
}

/// Its normalized latency (every run here is normalized).
fn latency(run: &PolicyReport) -> f64 {
    run.avg_normalized_latency.unwrap_or(f64::NAN)
}

fn median(values: impl Iterator<Item = f64>) -> f64 {
    let mut v: Vec<f64> = values.collect();
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => f64::NAN,
        n if n % 2 == 0 => (v[n / 2 - 1] + v[n / 2]) / 2.0,
        n => v[n / 2],
    }
}
