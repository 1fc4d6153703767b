//! Table 2's statistics on a hand-made run; every expected value is worked out by hand
//! in the comments.

use coopscan_bench::stats::{PolicyMeasurement, PolicyStats, QueryRun, Standalone};
use coopscan_bench::{
    IoStats, LoadRecord, LoaderTime, QueryInstance, QueryKind, QueryType, SchedulingCost,
};
use std::time::Duration;

const F10: QueryType = QueryType {
    kind: QueryKind::Fast,
    percent: 10,
};
const F100: QueryType = QueryType {
    kind: QueryKind::Fast,
    percent: 100,
};
const S100: QueryType = QueryType {
    kind: QueryKind::Slow,
    percent: 100,
};

fn run(
    id: u64,
    stream: usize,
    index: usize,
    query_type: QueryType,
    start: f64,
    end: f64,
) -> QueryRun {
    QueryRun {
        query: QueryInstance {
            id,
            stream,
            index,
            query_type,
            rows: 0..10,
            in_order: false,
        },
        start: Duration::from_secs_f64(start),
        end: Duration::from_secs_f64(end),
    }
}

fn load(tag: Option<u64>) -> LoadRecord {
    LoadRecord {
        at: Duration::ZERO,
        chunk: 0,
        tag,
        bytes: 16,
    }
}

/// Stream 0: F-10 0→2 s, S-100 2→10 s. Stream 1: F-10 3→7 s, F-100 7→8 s.
/// Standalone: F-10 1 s, S-100 4 s, F-100 0.5 s.
fn measurement(tags: [Option<u64>; 7]) -> (PolicyMeasurement, Standalone) {
    let m = PolicyMeasurement {
        policy: "relevance".into(),
        runs: vec![
            run(0, 0, 0, F10, 0.0, 2.0),
            run(1, 0, 1, S100, 2.0, 10.0),
            run(2, 1, 0, F10, 3.0, 7.0),
            run(3, 1, 1, F100, 7.0, 8.0),
        ],
        wall: Duration::from_secs(11),
        cpu_use: 0.5,
        io: IoStats {
            requests: 7,
            bytes: 112,
        },
        loads: tags.into_iter().map(load).collect(),
        results_checked: 4,
        opt_chunk_loads: Some(5),
        scheduling: Some(SchedulingCost {
            seconds: 0.25,
            calls: 40,
        }),
        loader: Some(LoaderTime {
            busy_s: 9.5,
            lock_wait_s: 3.0,
        }),
        consumptions: None,
        refreshes: Vec::new(),
    };
    let standalone = Standalone::from([(F10, 1.0), (S100, 4.0), (F100, 0.5)]);
    (m, standalone)
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-9
}

#[test]
fn system_statistics_by_hand() {
    let tags = [Some(0), Some(0), Some(2), Some(1), Some(1), Some(1), None];
    let (m, standalone) = measurement(tags);
    let s = PolicyStats::compute(&m, &standalone);
    // Stream times: 10 − 0 = 10 and 8 − 3 = 5 → 7.5.
    assert!(close(s.avg_stream_time_s, 7.5), "{}", s.avg_stream_time_s);
    // Normalized: 2/1, 8/4, 4/1, 1/0.5 = 2, 2, 4, 2 → 2.5.
    assert!(
        close(s.avg_normalized_latency, 2.5),
        "{}",
        s.avg_normalized_latency
    );
    // Wall time 11 s outlasts the last query (10 s).
    assert!(close(s.total_time_s, 11.0));
    assert_eq!((s.scheduling_s, s.abm_calls), (Some(0.25), Some(40)));
    assert_eq!(
        (s.loader_busy_s, s.loader_lock_wait_s),
        (Some(9.5), Some(3.0))
    );
    assert_eq!(
        (
            s.io_requests,
            s.io_bytes,
            s.chunk_loads,
            s.queries,
            s.results_checked
        ),
        (7, 112, 7, 4, 4)
    );
}

#[test]
fn per_type_statistics_by_hand() {
    let tags = [Some(0), Some(0), Some(2), Some(1), Some(1), Some(1), None];
    let (m, standalone) = measurement(tags);
    let s = PolicyStats::compute(&m, &standalone);
    let f10 = &s.query_types[&F10];
    // Latencies 2 and 4: mean 3, sample stddev sqrt(((2−3)² + (4−3)²) / 1) = √2.
    assert_eq!(f10.count, 2);
    assert!(close(f10.latency_avg_s, 3.0));
    assert!(close(f10.latency_stddev_s, 2f64.sqrt()));
    // Normalized 2/1 and 4/1 → 3.
    assert!(close(f10.normalized_latency, 3.0));
    // Loads tagged 0, 0, 2 belong to the two F-10 queries: 3 loads, 1.5 per query.
    assert_eq!(f10.io_requests, Some(1.5));
    let s100 = &s.query_types[&S100];
    assert_eq!((s100.count, s100.io_requests), (1, Some(3.0)));
    assert!(close(s100.latency_stddev_s, 0.0) && close(s100.normalized_latency, 2.0));
    assert!(close(s100.standalone_s, 4.0));
    // F-100 had no load scheduled for it: zero, not unknown.
    assert_eq!(s.query_types[&F100].io_requests, Some(0.0));
}

#[test]
fn untagged_loads_leave_per_type_ios_unknown() {
    // Elevator: no load is scheduled for a query.
    let (m, standalone) = measurement([None; 7]);
    let s = PolicyStats::compute(&m, &standalone);
    assert!(s.query_types.values().all(|t| t.io_requests.is_none()));
    assert_eq!(s.chunk_loads, 7);
}
