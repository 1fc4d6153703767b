//! The 2012 paper's `pbm-bandwidth`, `pbm-streams` and `pbm-sharing` presets: the
//! sharing-potential count against a hand-computed case, and the shapes the paper
//! reports; its §5 proposals (`pbm-throttle`, `pbm-opportunistic`) against plain PBM.

use coopscan_buffer::PolicyKind;
use coopscan_sim::{
    pbm_bandwidth, pbm_sharing, sharing_potential, simulate, CpuModel, DeviceModel, QuerySpec,
    SimConfig, Workload, DEFAULT_MAX_EVENTS,
};

fn query(name: &str, chunks: std::ops::Range<u32>) -> QuerySpec {
    QuerySpec {
        name: name.into(),
        kind: "k".into(),
        cycles_per_byte: 1.0,
        chunks: vec![chunks],
        columns: 0,
        workers: 1,
        split: coopscan_buffer::Split::Dynamic,
        snapshot: None,
        table: 0,
    }
}

fn small(record_timeline: bool) -> SimConfig {
    SimConfig {
        column_bytes: Vec::new(),
        chunk_count: 8,
        chunk_bytes: 1_000_000,
        tables: Vec::new(),
        frames: 8,
        budget_bytes: None,
        max_inflight: 1,
        device: DeviceModel::FixedPerChunk { seconds: 0.1 },
        cpu: CpuModel::new(2e9, 2),
        check_invariants: true,
        record_timeline,
        record_trace: false,
        faults: None,
        max_events: DEFAULT_MAX_EVENTS,
        eviction: Default::default(),
        column_order: Default::default(),
        tiles: false,
    }
}

/// Two scans arrive at 0 s over chunks 0..4 and 2..6. Before the first read completes
/// (0.1 s) nothing is processed: chunks 2, 3 are wanted by two scans and 0, 1, 4, 5 by
/// one. After both finish nothing is wanted.
#[test]
fn sharing_potential_counts_what_each_active_scan_still_wants() {
    let workload = Workload::independent(vec![(0.0, query("a", 0..4)), (0.0, query("b", 2..6))]);
    for policy in [PolicyKind::Normal, PolicyKind::Pbm, PolicyKind::Relevance] {
        let run = simulate(&small(true), &workload, policy).unwrap();
        let samples = sharing_potential(&workload, &run, 8, 1000).unwrap();
        let first = samples.first().unwrap();
        assert!(first.at_s < 0.1, "{policy}: first sample at {}", first.at_s);
        assert_eq!(first.chunks, [4, 2, 0, 0], "{policy}");
        // Every sample: no more chunks than the table, no more wants than remain.
        assert!(samples.iter().all(|s| s.chunks.iter().sum::<u32>() <= 6));
        let last = samples.last().unwrap();
        assert!(last.chunks.iter().sum::<u32>() <= 1, "{policy}: {last:?}");
    }
    let no_timeline = simulate(&small(false), &workload, PolicyKind::Normal).unwrap();
    assert!(sharing_potential(&workload, &no_timeline, 8, 10).is_err());
}

/// 2012 paper Figure 17: the microbenchmark has much reuse potential — more data is
/// wanted by two or more scans than by one, on average, under every policy.
#[test]
fn the_microbenchmark_has_much_sharing_potential() {
    let policies = [PolicyKind::Normal, PolicyKind::Pbm, PolicyKind::Relevance];
    let report = pbm_sharing(&policies, 42).unwrap();
    for run in &report.runs {
        let [one, two, three, more] = run.mean_chunks;
        assert!(
            two + three + more > one,
            "{}: {:?}",
            run.policy,
            run.mean_chunks
        );
    }
}

/// 2012 paper Figure 12: faster disks make every policy's streams faster, and PBM and
/// PBM/LRU keep reading less than LRU at every bandwidth.
#[test]
fn pbm_bandwidth_shapes() {
    let policies = [
        PolicyKind::Normal,
        PolicyKind::Pbm,
        PolicyKind::PbmLru,
        PolicyKind::Relevance,
    ];
    let report = pbm_bandwidth(&policies, 42, &[200, 700, 2000]).unwrap();
    println!("{}", coopscan_sim::pbm_bandwidth_text(&report));
    for name in ["normal", "pbm", "pbm-lru", "relevance"] {
        let times: Vec<f64> = report
            .points
            .iter()
            .map(|p| p.point.policies[name].avg_stream_s)
            .collect();
        assert!(times.windows(2).all(|w| w[1] < w[0]), "{name}: {times:?}");
    }
    for p in &report.points {
        let loads = |name: &str| p.point.policies[name].loads;
        assert!(loads("pbm") < loads("normal"), "{} MB/s", p.paper_mb_s);
        assert!(loads("pbm-lru") < loads("normal"), "{} MB/s", p.paper_mb_s);
    }
    assert!(pbm_bandwidth(&policies, 42, &[0]).is_err());
}

/// The case PBM/LRU is for (2012 paper §3): short queries over a hot range that keep
/// coming back are served faster than under plain PBM, which evicts the hot chunks
/// whenever no hot query runs.
#[test]
fn pbm_lru_keeps_what_short_queries_keep_coming_back_to() {
    let report = coopscan_sim::pbm_lru_hot(&[PolicyKind::Pbm, PolicyKind::PbmLru], 42).unwrap();
    println!("{}", coopscan_sim::pbm_lru_hot_text(&report));
    let every_2s: Vec<_> = report
        .points
        .iter()
        .filter(|p| p.interval_s == 2.0)
        .collect();
    assert!(!every_2s.is_empty());
    for p in every_2s {
        let hot = |name: &str| p.policies[name].hot_latency_s;
        assert!(
            hot("pbm-lru") < hot("pbm") / 2.0,
            "{} %: pbm-lru {} s, pbm {} s",
            p.buffer_pct,
            hot("pbm-lru"),
            hot("pbm")
        );
    }
}

/// The 2012 paper's §5 proposals where it says PBM is weak (a small buffer, many scans
/// at different positions): both read less than plain PBM on the `pbm-buffer` workload
/// at 10 %, each query still getting exactly its chunks (the simulator checks).
#[test]
fn section5_proposals_read_less_than_pbm_on_a_small_buffer() {
    let policies = [
        PolicyKind::Pbm,
        PolicyKind::PbmThrottle,
        PolicyKind::PbmOpportunistic,
    ];
    let report = coopscan_sim::pbm_buffer(&policies, 42, &[10]).unwrap();
    println!("{}", coopscan_sim::pbm_buffer_text(&report));
    let loads = |name: &str| report.points[0].policies[name].loads;
    assert!(loads("pbm-throttle") < loads("pbm"));
    assert!(loads("pbm-opportunistic") < loads("pbm"));
    let held = |name: &str| report.points[0].policies[name].held_s;
    assert!(held("pbm-throttle") > 0.0, "the workload throttles");
    assert_eq!(held("pbm"), 0.0);
}

/// Figure 13's setup: every query scans half the table, and more streams read more.
#[test]
fn pbm_streams_reads_more_with_more_streams() {
    let report = coopscan_sim::pbm_streams(&[PolicyKind::Normal], 42, &[1, 2]).unwrap();
    println!("{}", coopscan_sim::pbm_streams_text(&report));
    let (one, two) = (&report.points[0], &report.points[1]);
    assert_eq!((one.streams, two.streams), (1, 2));
    let loads = |p: &coopscan_sim::PbmStreamsPoint| p.point.policies["normal"].loads;
    assert!(loads(two) > loads(one));
    let workload =
        coopscan_sim::pbm_streams_workload(&coopscan_sim::experiments::table2_config(), 2, 42)
            .unwrap();
    for q in workload.streams.iter().flat_map(|s| &s.queries) {
        let len: u32 = q.chunks.iter().map(|r| r.end - r.start).sum();
        assert_eq!(
            len,
            coopscan_sim::experiments::TABLE2_CHUNKS / 2,
            "{}",
            q.name
        );
    }
    assert!(coopscan_sim::pbm_streams(&[PolicyKind::Normal], 42, &[0]).is_err());
}

/// `pbm-streams` with one stream: one query at a time, so nothing is shared and a
/// policy's I/O is what it keeps from one query for the next. CScans under relevance
/// keep the chunks a query read last (keepRelevance ties least recently used first),
/// as PBM does, and read about as much; taking the lowest unneeded chunk instead kept
/// stale chunks and read 1279 against PBM's 927.
#[test]
fn one_stream_relevance_reads_about_what_pbm_reads() {
    let report =
        coopscan_sim::pbm_streams(&[PolicyKind::Pbm, PolicyKind::Relevance], 42, &[1]).unwrap();
    let loads = |name: &str| report.points[0].point.policies[name].loads;
    let (pbm, relevance) = (loads("pbm"), loads("relevance"));
    assert!(
        relevance * 100 <= pbm * 110,
        "relevance {relevance} vs pbm {pbm}"
    );
}
