//! The runner end to end with the fake engine: every query runs and is checked, and a
//! single wrong answer fails the run naming the query.

mod common;

use common::{fake_factory, small_params, Reference, QUERY_DELAY};
use coopscan_bench::{run_benchmark, BenchError, BenchInput, BenchReport, TableInfo};

const TABLE: TableInfo = TableInfo {
    rows: 10_000,
    bytes: 40_960_000,
    fast_read_bytes: 40_960_000,
};

/// Runs the small workload on the fake engine; `wrong_answer_for` makes that query's
/// answer wrong.
fn run_small(wrong_answer_for: Option<u64>) -> Result<BenchReport, BenchError> {
    let params = small_params();
    let factory = fake_factory(wrong_answer_for);
    run_benchmark(&BenchInput {
        params: &params,
        table: TABLE,
        calibration: None,
        factory: &factory,
        reference: &Reference,
        progress: false,
        trace_dir: None,
    })
}

#[test]
fn every_policy_runs_every_query_and_checks_it() {
    let report = run_small(None).unwrap();
    let names: Vec<&str> = report.policies.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, ["normal", "attach", "elevator", "relevance"]);
    for p in &report.policies {
        assert_eq!(p.stats.queries, 6);
        assert_eq!(p.stats.results_checked, 6);
        assert_eq!(p.stats.io_requests, 6, "one fake load per query");
        assert!(p.stats.total_time_s >= 2.0 * QUERY_DELAY.as_secs_f64());
        // Stream 2 starts two staggers (10 ms) in.
        let first_of_stream2 = p.runs.iter().find(|r| r.query.stream == 2).unwrap();
        assert!(first_of_stream2.start.as_secs_f64() >= 0.010);
        let tagged: usize = p
            .stats
            .query_types
            .values()
            .filter_map(|t| {
                t.io_requests
                    .map(|avg| (avg * t.count as f64).round() as usize)
            })
            .sum();
        if p.name == "elevator" {
            assert!(p
                .stats
                .query_types
                .values()
                .all(|t| t.io_requests.is_none()));
        } else {
            assert_eq!(tagged, 6);
        }
    }
    // Standalone times exist for all 8 Table 2 types and are at least one fake query.
    assert_eq!(report.standalone.len(), 8);
    assert!(report
        .standalone
        .values()
        .all(|&s| s >= QUERY_DELAY.as_secs_f64()));
    // Each is the median of `standalone_runs` cold runs, all kept.
    assert_eq!(report.standalone_samples.len(), 8);
    for (t, samples) in &report.standalone_samples {
        assert_eq!(samples.0.len(), report.params.standalone_runs);
        let mut sorted = samples.0.clone();
        sorted.sort_by(f64::total_cmp);
        assert_eq!(report.standalone[t], sorted[sorted.len() / 2]);
    }
}

#[test]
fn one_wrong_result_fails_the_run_naming_the_query() {
    let err = run_small(Some(3)).unwrap_err(); // stream 1, query 1
    assert!(matches!(err, BenchError::WrongResult { .. }), "{err:?}");
    let message = err.to_string();
    assert!(message.contains("relevance"), "{message}");
    assert!(message.contains("#3 (stream 1, query 1"), "{message}");
    assert!(message.contains("WRONG RESULT"), "{message}");
}

#[test]
fn same_seed_gives_every_policy_the_same_queries() {
    let report = run_small(None).unwrap();
    let lists: Vec<Vec<_>> = report
        .policies
        .iter()
        .map(|p| {
            let mut queries: Vec<_> = p.runs.iter().map(|r| r.query.clone()).collect();
            queries.sort_by_key(|q| q.id);
            queries
        })
        .collect();
    assert!(lists.windows(2).all(|w| w[0] == w[1]));
}

/// `--stagger-s 1e19` used to panic a stream thread adding the stream's start to the
/// run's `Instant`. The flag is bounded now; the runner itself also turns a start
/// beyond the clock's range into an error for that run, and the other streams stop.
#[test]
fn a_stream_start_beyond_the_clock_is_an_error_not_a_panic() {
    use coopscan_bench::runner::run_policy;
    use coopscan_bench::workload::{Workload, WorkloadSpec};
    use coopscan_bench::{PolicyFactory, PolicySetup};
    let params = small_params();
    let mut workload = Workload::generate(&WorkloadSpec {
        streams: 3,
        queries_per_stream: 2,
        mix: params.mix.clone(),
        seed: params.seed,
        stagger: std::time::Duration::from_millis(1),
        table_rows: TABLE.rows,
        in_order_pct: 0,
    })
    .unwrap();
    workload.streams[2].start_offset = std::time::Duration::MAX;
    let factory = fake_factory(None);
    let run = factory
        .start(PolicySetup {
            policy: "normal",
            params: &params,
            bandwidth_mb_s: None,
        })
        .unwrap();
    let references = coopscan_bench::reference::References::compute(
        &Reference,
        workload.queries(),
        &indicatif::ProgressBar::hidden(),
    )
    .unwrap();
    let bar = indicatif::ProgressBar::hidden();
    let err = run_policy(
        "normal",
        run.as_ref(),
        &workload,
        &references,
        &bar,
        false,
        None,
    )
    .unwrap_err();
    assert!(
        matches!(err, BenchError::BadParameter(_)) && err.to_string().contains("clock"),
        "{err:?}"
    );
}

/// A refresh stream stops when the query streams end, also when one of them panics
/// (the run then fails, naming the panic, rather than waiting for the refreshes).
#[test]
fn a_refresh_stream_ends_with_the_streams_even_after_a_panic() {
    use coopscan_bench::runner::run_policy;
    use coopscan_bench::workload::{Workload, WorkloadSpec};
    use coopscan_bench::{
        IoStats, LoadRecord, PolicyRun, QueryEngine, QueryInstance, QueryOutput, RefreshTimes,
        Refresher,
    };
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::time::Duration;

    struct Engine {
        panic_on: Option<u64>,
    }
    impl QueryEngine for Engine {
        fn run(&self, q: &QueryInstance) -> anyhow::Result<QueryOutput> {
            std::thread::sleep(Duration::from_millis(5));
            assert_ne!(Some(q.id), self.panic_on, "a query that panics");
            common::Reference.run(q)
        }
    }
    struct Pairs(AtomicU64);
    impl Refresher for Pairs {
        fn refresh(&self, _round: u64) -> anyhow::Result<RefreshTimes> {
            self.0.fetch_add(1, Ordering::Relaxed);
            Ok(RefreshTimes::default())
        }
    }
    struct Run {
        engine: Engine,
        pairs: Pairs,
    }
    impl PolicyRun for Run {
        fn engine(&self) -> &dyn QueryEngine {
            &self.engine
        }
        fn load_log(&self) -> Vec<LoadRecord> {
            Vec::new()
        }
        fn io_stats(&self) -> IoStats {
            IoStats::default()
        }
        fn refresher(&self) -> Option<&dyn Refresher> {
            Some(&self.pairs)
        }
    }

    let params = small_params();
    let workload = Workload::generate(&WorkloadSpec {
        streams: 3,
        queries_per_stream: 2,
        mix: params.mix.clone(),
        seed: params.seed,
        stagger: Duration::from_millis(1),
        table_rows: TABLE.rows,
        in_order_pct: 0,
    })
    .unwrap();
    let bar = indicatif::ProgressBar::hidden();
    let references =
        coopscan_bench::reference::References::compute(&Reference, workload.queries(), &bar)
            .unwrap();
    let every = Some(Duration::from_millis(1));
    for panic_on in [None, Some(1)] {
        let run = Run {
            engine: Engine { panic_on },
            pairs: Pairs(AtomicU64::new(0)),
        };
        let done = run_policy("normal", &run, &workload, &references, &bar, false, every);
        match panic_on {
            None => {
                let m = done.expect("runs");
                assert_eq!(m.runs.len(), 6);
                assert!(!m.refreshes.is_empty(), "pairs ran beside the streams");
                assert_eq!(
                    m.refreshes.len() as u64,
                    run.pairs.0.load(Ordering::Relaxed)
                );
            }
            Some(_) => assert!(
                matches!(done, Err(BenchError::StreamPanicked(_))),
                "{done:?}"
            ),
        }
    }
}
