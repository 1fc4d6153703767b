//! How long a preset will take, said before it starts (issue 10: fig5 and fig6 run for
//! an hour or more on SF1).
//!
//! A rough model from the calibration's balance, not a promise: a query alone takes its
//! share of F-100's read time, SLOW `slow_cpu_over_fast_read` times that (it is CPU
//! bound); a policy's timed run does the whole workload's alone-time on
//! [`CORES`] cores at best; each query type is also run alone `standalone_runs` times.
//! Measured against Table 2 on SF1 (342 MB/s): 85 s of alone-time gives 42 s per policy,
//! where normal took 44 s and relevance 31 s.

use crate::mix::QueryKind;
use crate::presets::Params;

/// Cores the timed runs share (the paper's machine and ours have two).
pub const CORES: f64 = 2.0;
const PERCENT: f64 = 100.0;

/// Seconds one run of `params` is expected to take at `read_s` seconds per full read of
/// the table: its policies' timed runs plus its standalone runs.
pub fn run_seconds(params: &Params, read_s: f64) -> f64 {
    let types = params.mix.query_types();
    if types.is_empty() || !(read_s.is_finite() && read_s > 0.0) {
        return 0.0;
    }
    let alone = |kind: QueryKind, percent: u32| {
        let cpu_factor = match kind {
            QueryKind::Fast | QueryKind::Columns { .. } => 1.0,
            QueryKind::Slow => params.slow_cpu_over_fast_read,
        };
        read_s * f64::from(percent) / PERCENT * cpu_factor
    };
    let per_type: Vec<f64> = types.iter().map(|t| alone(t.kind, t.percent)).collect();
    let mean_alone = per_type.iter().sum::<f64>() / per_type.len() as f64;
    let queries = (params.streams * params.queries_per_stream) as f64;
    let timed = queries * mean_alone / CORES * params.policies.len() as f64;
    let standalone = per_type.iter().sum::<f64>() * params.standalone_runs as f64;
    timed + standalone
}

/// Seconds the whole preset is expected to take.
pub fn preset_seconds(runs: &[Params], read_s: f64) -> f64 {
    runs.iter().map(|p| run_seconds(p, read_s)).sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::presets::{preset, Overrides};

    #[test]
    fn table2_at_a_two_second_read_is_worked_out_by_hand() {
        let mut params = preset("table2", &Overrides::default()).unwrap().remove(0);
        params.policies = vec!["normal".into(), "relevance".into()];
        params.standalone_runs = 3;
        // Types F and S over 1, 10, 50, 100 %: F alone 0.02 + 0.2 + 1 + 2 = 3.22 s,
        // S alone 1.75 × that = 5.635 s; mean over the 8 types 8.855 / 8 s.
        let mean = 8.855 / 8.0;
        let timed = 64.0 * mean / 2.0 * 2.0;
        let standalone = 8.855 * 3.0;
        let got = run_seconds(&params, 2.0);
        assert!((got - (timed + standalone)).abs() < 1e-9, "{got}");
    }

    #[test]
    fn twice_the_streams_or_the_runs_take_twice_as_long() {
        let mut params = preset("table2", &Overrides::default()).unwrap().remove(0);
        params.standalone_runs = 0;
        let one = run_seconds(&params, 2.0);
        assert!(one > 0.0);
        assert!((preset_seconds(&[params.clone(), params.clone()], 2.0) - 2.0 * one).abs() < 1e-9);
        params.streams *= 2;
        assert!((run_seconds(&params, 2.0) - 2.0 * one).abs() < 1e-9);
        assert_eq!(run_seconds(&params, f64::NAN), 0.0);
        assert_eq!(run_seconds(&params, -1.0), 0.0);
    }
}
