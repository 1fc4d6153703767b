//! How long a preset will take, said before it starts (issue 10: fig5 and fig6 run for
//! an hour or more on SF1).
//!
//! A rough model from the calibration's balance, not a promise: a query alone takes its
//! share of F-100's read time, SLOW `slow_cpu_over_fast_read` times that (it is CPU
//! bound); a policy's timed run does the whole workload's alone-time on
//! [`CORES`] cores at best, and lasts at least until the last stream has started
//! (`streams - 1` staggers) and run its own queries; each query type is also run alone
//! `standalone_runs` times. Measured against Table 2 on SF1 (342 MB/s): 85 s of
//! alone-time gives 42 s per policy, where normal took 44 s and relevance 31 s. (The
//! stagger used to be left out: `--stagger-s 1e12` was announced as "roughly 1 min".)

use crate::mix::QueryKind;
use crate::presets::Params;

/// Cores the timed runs share (the paper's machine and ours have two).
pub const CORES: f64 = 2.0;
const PERCENT: f64 = 100.0;

/// Seconds one run of `params` is expected to take at `read_s` seconds per full read of
/// the table: its policies' timed runs plus its standalone runs. The stagger is
/// `params.stagger_s`, else the paper's fraction of `read_s` (as the run resolves it).
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
    let stagger_s = params
        .stagger_s
        .unwrap_or(params.stagger_over_scan * read_s);
    let last_stream = params.streams.saturating_sub(1) as f64 * stagger_s
        + params.queries_per_stream as f64 * mean_alone;
    let per_policy = (queries * mean_alone / CORES).max(last_stream);
    let timed = per_policy * params.policies.len() as f64;
    let standalone = per_type.iter().sum::<f64>() * params.standalone_runs as f64;
    timed + standalone
}

/// Seconds the whole preset is expected to take.
pub fn preset_seconds(runs: &[Params], read_s: f64) -> f64 {
    runs.iter().map(|p| run_seconds(p, read_s)).sum()
}

/// Longest estimate said in minutes, and in hours; beyond, in days.
const SAY_MINUTES_UP_TO_S: f64 = 90.0 * 60.0;
const SAY_HOURS_UP_TO_S: f64 = 48.0 * 3600.0;

/// `seconds` as a person reads an estimate: `3 min`, `12.5 h`, `4.2 days` (whole
/// minutes rounded up, as "expect roughly N min" always said).
pub fn describe(seconds: f64) -> String {
    if !(seconds.is_finite() && seconds >= 0.0) {
        return "an unknown time".to_string();
    }
    if seconds <= SAY_MINUTES_UP_TO_S {
        format!("{:.0} min", (seconds / 60.0).ceil())
    } else if seconds <= SAY_HOURS_UP_TO_S {
        format!("{:.1} h", seconds / 3600.0)
    } else {
        format!("{:.1} days", seconds / 86_400.0)
    }
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

    #[test]
    fn the_stagger_delays_the_last_stream_and_the_estimate_with_it() {
        let mut params = preset("table2", &Overrides::default()).unwrap().remove(0);
        params.policies = vec!["normal".into(), "relevance".into()];
        params.standalone_runs = 0;
        // The paper's stagger (0.147 of a read) is hidden behind the work itself.
        let paper = run_seconds(&params, 2.0);
        params.stagger_s = Some(params.stagger_over_scan * 2.0);
        assert_eq!(run_seconds(&params, 2.0), paper);
        // 16 streams 3000 s apart: the last starts 45 000 s in, then runs its 4 queries
        // (mean alone 8.855 / 8 s each), once per policy.
        params.stagger_s = Some(3000.0);
        let want = 2.0 * (15.0 * 3000.0 + 4.0 * 8.855 / 8.0);
        assert!((run_seconds(&params, 2.0) - want).abs() < 1e-9);
        assert_eq!(describe(run_seconds(&params, 2.0)), "25.0 h");
    }

    #[test]
    fn durations_are_said_in_minutes_hours_or_days() {
        assert_eq!(describe(0.0), "0 min");
        assert_eq!(describe(61.0), "2 min");
        assert_eq!(describe(90.0 * 60.0), "90 min");
        assert_eq!(describe(12.5 * 3600.0), "12.5 h");
        assert_eq!(describe(10.0 * 86_400.0), "10.0 days");
        assert_eq!(describe(f64::INFINITY), "an unknown time");
    }
}
