//! Runs the workload under one policy: one thread per stream; stream i sleeps until its
//! start offset, then runs its queries one after another, timing each and checking its
//! output against the reference. The first failure stops every stream (after its
//! current query) and is returned, naming the policy and the query.

use crate::cpu;
use crate::engine::{PolicyRun, QueryEngine};
use crate::error::BenchError;
use crate::reference::References;
use crate::refresh::{run_refreshes, RefreshRun, Refresher};
use crate::stats::{PolicyMeasurement, QueryRun};
use crate::workload::{QueryInstance, StreamPlan, Workload};
use indicatif::ProgressBar;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// A waiting stream checks this often whether another stream failed.
const ABORT_POLL: Duration = Duration::from_millis(20);

/// What every stream thread of one run shares.
struct StreamContext<'a> {
    policy: &'a str,
    engine: &'a dyn QueryEngine,
    references: &'a References,
    t0: Instant,
    abort: &'a AtomicBool,
    bar: &'a ProgressBar,
    /// When the last query stream ended (since `t0`): the run's wall time, a refresh
    /// pair still running then not counted.
    last_stream_end: std::sync::Mutex<Option<Duration>>,
}

/// Runs `workload` on `run` (a fresh runtime for `policy`) and measures it; with
/// `sharing`, also asks the engine when each query took each chunk (Figure 17); with
/// `refresh_every`, the engine's refresh stream runs beside the query streams.
pub fn run_policy(
    policy: &str,
    run: &dyn PolicyRun,
    workload: &Workload,
    references: &References,
    bar: &ProgressBar,
    sharing: bool,
    refresh_every: Option<Duration>,
) -> Result<PolicyMeasurement, BenchError> {
    let refresh = match (refresh_every, run.refresher()) {
        (Some(every), Some(refresher)) => Some((every, refresher)),
        (None, _) => None,
        (Some(_), None) => {
            return Err(BenchError::BadParameter(format!(
                "{policy}: this engine runs no refresh stream"
            )))
        }
    };
    let io_before = run.io_stats();
    let abort = AtomicBool::new(false);
    let cpu_before = cpu::process_cpu_time();
    let external_before = run.external_cpu_time();
    let ctx = StreamContext {
        policy,
        engine: run.engine(),
        references,
        t0: Instant::now(),
        abort: &abort,
        bar,
        last_stream_end: std::sync::Mutex::new(None),
    };
    let (per_stream, refreshes) = run_streams(&ctx, &workload.streams, refresh);
    let streams_end = ctx.last_stream_end.lock().ok().and_then(|end| *end);
    let wall = streams_end.unwrap_or_else(|| ctx.t0.elapsed());
    let cpu_time = cpu::process_cpu_time().saturating_sub(cpu_before)
        + run.external_cpu_time().saturating_sub(external_before);
    let mut runs = Vec::with_capacity(workload.query_count());
    for stream in per_stream {
        runs.extend(stream?);
    }
    let refreshes = refreshes.map_err(|(round, source)| BenchError::Query {
        policy: policy.to_string(),
        query: format!("refresh pair {round}"),
        source,
    })?;
    // Before OPT: an engine may answer both from one trace it takes once.
    let consumptions = sharing.then(|| run.consumptions()).flatten();
    Ok(PolicyMeasurement {
        policy: policy.to_string(),
        results_checked: runs.len(),
        runs,
        wall,
        cpu_use: cpu::cpu_use(cpu_time, wall, cpu::available_cores()),
        io: run.io_stats().since(io_before),
        loads: run.load_log(),
        opt_chunk_loads: run.opt_chunk_loads(),
        scheduling: run.scheduling(),
        loader: run.loader_time(),
        consumptions,
        refreshes,
    })
}

type Refreshes = Result<Vec<RefreshRun>, (u64, anyhow::Error)>;

/// Every stream on its own thread, and the refresh stream beside them until the last
/// one ends.
fn run_streams(
    ctx: &StreamContext<'_>,
    streams: &[StreamPlan],
    refresh: Option<(Duration, &dyn Refresher)>,
) -> (Vec<Result<Vec<QueryRun>, BenchError>>, Refreshes) {
    let left = AtomicUsize::new(streams.len());
    std::thread::scope(|scope| {
        let left = &left;
        let handles: Vec<_> = streams
            .iter()
            .map(|stream| {
                scope.spawn(move || {
                    let _ended = StreamEnded { ctx, left };
                    run_stream(ctx, stream)
                })
            })
            .collect();
        let refreshes = refresh.map(|(every, refresher)| {
            scope.spawn(move || run_refreshes(refresher, every, ctx.t0, left, ctx.abort))
        });
        let per_stream = handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(BenchError::StreamPanicked(ctx.policy.to_string())))
            })
            .collect();
        let refreshes = match refreshes {
            None => Ok(Vec::new()),
            Some(h) => h
                .join()
                .unwrap_or_else(|_| Err((0, anyhow::anyhow!("the refresh stream panicked")))),
        };
        (per_stream, refreshes)
    })
}

/// Counts a stream out when its thread ends, even by a panic (which also stops the
/// others, as a failure does): the refresh stream runs until no stream is left.
struct StreamEnded<'a, 'c> {
    ctx: &'a StreamContext<'c>,
    left: &'a AtomicUsize,
}

impl Drop for StreamEnded<'_, '_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.ctx.abort.store(true, Ordering::Relaxed);
        }
        if self.left.fetch_sub(1, Ordering::Relaxed) == 1 {
            let end = self.ctx.t0.elapsed();
            if let Ok(mut last) = self.ctx.last_stream_end.lock() {
                *last = Some(end);
            }
        }
    }
}

fn run_stream(ctx: &StreamContext<'_>, stream: &StreamPlan) -> Result<Vec<QueryRun>, BenchError> {
    // Checked: an `Instant` past the clock's range panics, and in a stream thread that
    // panic used to cost the run (`--stagger-s 1e19`).
    let result = match ctx.t0.checked_add(stream.start_offset) {
        Some(start) => wait_until(ctx, start).then(|| run_queries(ctx, &stream.queries)),
        None => Some(Err(BenchError::BadParameter(format!(
            "{}: a stream cannot start {:?} after the run, beyond the clock's range",
            ctx.policy, stream.start_offset
        )))),
    };
    let result = result.unwrap_or_else(|| Ok(Vec::new()));
    if result.is_err() {
        ctx.abort.store(true, Ordering::Relaxed);
    }
    result
}

fn run_queries(
    ctx: &StreamContext<'_>,
    queries: &[QueryInstance],
) -> Result<Vec<QueryRun>, BenchError> {
    let mut runs = Vec::with_capacity(queries.len());
    for q in queries {
        if ctx.abort.load(Ordering::Relaxed) {
            break;
        }
        runs.push(run_one(ctx, q)?);
        ctx.bar.inc(1);
    }
    Ok(runs)
}

/// Runs and checks one query; times are relative to the run's start.
fn run_one(ctx: &StreamContext<'_>, q: &QueryInstance) -> Result<QueryRun, BenchError> {
    let start = ctx.t0.elapsed();
    let output = ctx.engine.run(q).map_err(|source| BenchError::Query {
        policy: ctx.policy.to_string(),
        query: q.to_string(),
        source,
    })?;
    let end = ctx.t0.elapsed();
    ctx.references.check(ctx.policy, q, &output)?;
    Ok(QueryRun {
        query: q.clone(),
        start,
        end,
    })
}

/// Sleeps until `deadline`; false if another stream failed meanwhile.
fn wait_until(ctx: &StreamContext<'_>, deadline: Instant) -> bool {
    loop {
        if ctx.abort.load(Ordering::Relaxed) {
            return false;
        }
        let now = Instant::now();
        if now >= deadline {
            return true;
        }
        std::thread::sleep((deadline - now).min(ABORT_POLL));
    }
}
