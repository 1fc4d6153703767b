//! Test doubles: an in-memory engine that sleeps a little per query and returns a
//! deterministic output, and a policy run that logs one load per query.

#![allow(dead_code)]

pub mod html_check;

use coopscan_bench::{
    Consumption, IoStats, LoadRecord, Params, PolicyRun, PolicySetup, QueryEngine, QueryInstance,
    QueryOutput,
};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

pub const QUERY_DELAY: Duration = Duration::from_millis(2);
pub const ROWS_PER_CHUNK: u64 = 100;
pub const CHUNK_BYTES: u64 = 4096;

/// The right answer for `q`: what the reference and every correct engine return.
pub fn expected_output(q: &QueryInstance) -> QueryOutput {
    QueryOutput {
        rows: vec![
            format!("{}", q.query_type),
            format!("{}..{}", q.rows.start, q.rows.end),
        ],
    }
}

/// The reference: answers instantly.
pub struct Reference;

impl QueryEngine for Reference {
    fn run(&self, q: &QueryInstance) -> anyhow::Result<QueryOutput> {
        Ok(expected_output(q))
    }
}

pub struct FakeEngine {
    started: Instant,
    tagged: bool,
    /// Answers this query id wrongly, once.
    wrong_once: Option<u64>,
    wrong_done: AtomicBool,
    loads: Mutex<Vec<LoadRecord>>,
    requests: AtomicU64,
    /// Consuming fakes take this long per query, then consume every chunk of its rows.
    consume_after: Option<Duration>,
    consumptions: Mutex<Vec<Consumption>>,
}

impl FakeEngine {
    fn new(tagged: bool, wrong_once: Option<u64>, consume_after: Option<Duration>) -> Self {
        FakeEngine {
            started: Instant::now(),
            tagged,
            wrong_once,
            wrong_done: AtomicBool::new(false),
            loads: Mutex::new(Vec::new()),
            requests: AtomicU64::new(0),
            consume_after,
            consumptions: Mutex::new(Vec::new()),
        }
    }

    /// Every chunk of `q`'s rows (`ROWS_PER_CHUNK` each), all consumed now.
    fn consume_all(&self, q: &QueryInstance) -> anyhow::Result<()> {
        let at = self.started.elapsed();
        let chunks = q.rows.start / ROWS_PER_CHUNK..q.rows.end.div_ceil(ROWS_PER_CHUNK);
        let mut log = self
            .consumptions
            .lock()
            .map_err(|_| anyhow::anyhow!("poisoned"))?;
        for chunk in chunks {
            log.push(Consumption {
                at,
                tag: q.id,
                chunk: u32::try_from(chunk)?,
                bytes: CHUNK_BYTES,
            });
        }
        Ok(())
    }
}

impl QueryEngine for FakeEngine {
    fn run(&self, q: &QueryInstance) -> anyhow::Result<QueryOutput> {
        std::thread::sleep(self.consume_after.unwrap_or(QUERY_DELAY));
        if self.consume_after.is_some() {
            self.consume_all(q)?;
        }
        let record = LoadRecord {
            at: self.started.elapsed(),
            chunk: (q.rows.start / ROWS_PER_CHUNK) as u32,
            tag: self.tagged.then_some(q.id),
            bytes: CHUNK_BYTES,
        };
        self.loads
            .lock()
            .map_err(|_| anyhow::anyhow!("poisoned"))?
            .push(record);
        self.requests.fetch_add(1, Ordering::Relaxed);
        if self.wrong_once == Some(q.id) && !self.wrong_done.swap(true, Ordering::Relaxed) {
            return Ok(QueryOutput {
                rows: vec!["garbage".to_string()],
            });
        }
        Ok(expected_output(q))
    }
}

pub struct FakeRun {
    engine: FakeEngine,
}

impl PolicyRun for FakeRun {
    fn engine(&self) -> &dyn QueryEngine {
        &self.engine
    }

    fn load_log(&self) -> Vec<LoadRecord> {
        self.engine
            .loads
            .lock()
            .map(|l| l.clone())
            .unwrap_or_default()
    }

    fn io_stats(&self) -> IoStats {
        let requests = self.engine.requests.load(Ordering::Relaxed);
        IoStats {
            requests,
            bytes: requests * CHUNK_BYTES,
        }
    }

    fn consumptions(&self) -> Option<Vec<Consumption>> {
        self.engine.consume_after?;
        self.engine.consumptions.lock().ok().map(|c| c.clone())
    }
}

/// A factory whose elevator leaves loads untagged, like the real runtime's.
pub fn fake_factory(
    wrong_once: Option<u64>,
) -> impl Fn(PolicySetup<'_>) -> anyhow::Result<Box<dyn PolicyRun>> + Sync {
    move |setup: PolicySetup<'_>| {
        // Only the timed relevance run answers wrongly, not the standalone runs.
        let wrong_once = wrong_once.filter(|_| setup.policy == "relevance");
        let engine = FakeEngine::new(setup.policy != "elevator", wrong_once, None);
        Ok(Box::new(FakeRun { engine }) as Box<dyn PolicyRun>)
    }
}

/// A factory whose queries take `per_query` each and then consume every chunk of their
/// rows: each query wants all its chunks for as long as it runs.
pub fn consuming_factory(
    per_query: Duration,
) -> impl Fn(PolicySetup<'_>) -> anyhow::Result<Box<dyn PolicyRun>> + Sync {
    move |_: PolicySetup<'_>| {
        let engine = FakeEngine::new(true, None, Some(per_query));
        Ok(Box::new(FakeRun { engine }) as Box<dyn PolicyRun>)
    }
}

/// Table 2's parameters shrunk to run in milliseconds.
pub fn small_params() -> Params {
    let mut params = coopscan_bench::presets::table2();
    params.streams = 3;
    params.queries_per_stream = 2;
    params.stagger_s = Some(0.005);
    params.bandwidth_mb = coopscan_bench::BandwidthMbS::checked(100.0);
    params
}

/// Query `i` of a synthetic run: stream `i`, the mix's first type, started at 1 s and
/// done `latency_s` later.
pub fn query_run(
    params: &Params,
    i: usize,
    latency_s: f64,
    in_order: bool,
) -> coopscan_bench::stats::QueryRun {
    coopscan_bench::stats::QueryRun {
        query: QueryInstance {
            id: i as u64,
            stream: i,
            index: 0,
            query_type: params.mix.query_types()[0],
            rows: 0..10,
            in_order,
        },
        start: Duration::from_secs(1),
        end: Duration::from_secs(1) + Duration::from_secs_f64(latency_s),
    }
}

/// A policy's statistics with the numbers the sweep figures plot; the rest empty.
pub fn sweep_stats(
    io_requests: u64,
    avg_stream_time_s: f64,
    avg_normalized_latency: f64,
    scheduling: Option<(f64, u64)>,
) -> coopscan_bench::stats::PolicyStats {
    coopscan_bench::stats::PolicyStats {
        avg_stream_time_s,
        avg_normalized_latency,
        total_time_s: SWEEP_TOTAL_TIME_S,
        cpu_use: 0.5,
        io_requests,
        io_bytes: io_requests * CHUNK_BYTES,
        chunk_loads: io_requests as usize,
        opt_chunk_loads: None,
        scheduling_s: scheduling.map(|s| s.0),
        abm_calls: scheduling.map(|s| s.1),
        loader_busy_s: None,
        loader_lock_wait_s: None,
        queries: 4,
        results_checked: 4,
        query_types: Default::default(),
        sharing: None,
        refresh: None,
    }
}

/// Every synthetic run's wall time: the base of the scheduling share.
pub const SWEEP_TOTAL_TIME_S: f64 = 80.0;

/// A report of one sweep point, without running anything: `params` as the preset
/// made them, one result per `(policy, stats)`.
pub fn synthetic_report(
    params: Params,
    policies: Vec<(&str, coopscan_bench::stats::PolicyStats)>,
) -> coopscan_bench::BenchReport {
    coopscan_bench::BenchReport {
        params,
        table: coopscan_bench::TableInfo {
            rows: 10_000,
            bytes: 40_960_000,
            fast_read_bytes: 40_960_000,
        },
        bandwidth_mb_s: Some(100.0),
        stagger_s: 0.5,
        calibration: None,
        standalone: Default::default(),
        standalone_samples: Default::default(),
        reference_queries: 0,
        policies: policies
            .into_iter()
            .map(|(name, stats)| coopscan_bench::PolicyResult {
                name: name.to_string(),
                stats,
                runs: Vec::new(),
                loads: Vec::new(),
            })
            .collect(),
    }
}

/// Every `<svg` opens and closes, and inside each the element tags balance.
pub fn assert_balanced_svgs(html: &str) -> usize {
    let svgs: Vec<&str> = html.split("<svg").skip(1).collect();
    for svg in &svgs {
        let body = &svg[..svg.find("</svg>").expect("unclosed svg")];
        let mut stack: Vec<String> = Vec::new();
        for tag in body.split('<').skip(1) {
            let tag = &tag[..tag.find('>').expect("unclosed tag")];
            let name: String = tag
                .trim_start_matches('/')
                .chars()
                .take_while(|c| c.is_alphanumeric())
                .collect();
            if tag.starts_with('/') {
                assert_eq!(
                    stack.pop().as_deref(),
                    Some(name.as_str()),
                    "unbalanced </{name}>"
                );
            } else if !tag.ends_with('/') {
                stack.push(name);
            }
        }
        assert!(stack.is_empty(), "unclosed {stack:?}");
    }
    svgs.len()
}
