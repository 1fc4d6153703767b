//! `coopscan tpch --streams S`: the throughput run's shape. Streams 1 to S at once, each
//! its queries in its own Appendix A order with its own seeded parameters, all through
//! one buffer; per policy the stream times, CPU-seconds, bytes and pieces read, and the
//! pieces Belady's OPT would read on the same references. The presets of `coopscan
//! bench --preset tpch-…` (`super::bench`) run their points through [`run_policy`].

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use coopscan_bench::cpu::process_cpu_time;
use coopscan_bench::memory;
use coopscan_bench::tpch_throughput::TpchRun;
use coopscan_buffer::trace::opt::replay_opt;
use coopscan_buffer::{Nanos, Reference, ScanId};
use coopscan_exec::datafusion::prelude::SessionContext;
use coopscan_exec::plan_read_only;
use coopscan_storage::device::{Bandwidth, Device};
use coopscan_tpch::answers::{answer_tolerance, compare_rows, rows_of, Mismatch, Tolerance};
use coopscan_tpch::Params;
use futures::future::join_all;

use crate::session_args::{OpenTables, SessionArgs, SqlPolicy};

/// What a throughput run runs: the session's tables and how they are read, each
/// stream's queries in its order, where to keep the traces.
pub struct Setup<'a> {
    pub session: &'a SessionArgs,
    pub open: OpenTables,
    /// Per stream, its queries with their parameters in its order.
    pub streams: Vec<Vec<Params>>,
    pub trace: Option<&'a Path>,
    /// The process's resident set before any run (`memory::rss_bytes`): a run's memory
    /// is its peak above this.
    pub idle_rss_bytes: Option<u64>,
}

/// Where a run differs from the session's flags: its buffer and its device.
#[derive(Clone, Copy, Debug, Default)]
pub struct Conditions {
    pub buffer_bytes: Option<u64>,
    pub bandwidth_mb_s: Option<f64>,
}

/// A query of a throughput run: (stream, its position in the stream).
pub type QueryKey = (usize, usize);
/// A result as text rows, and the policy whose run returned it.
type FirstResult = (String, Vec<Vec<String>>);

/// Each (stream, position)'s result rows as the first run that ran it returned them;
/// every later run's rows are compared with these.
#[derive(Default)]
pub struct Results {
    first: HashMap<QueryKey, FirstResult>,
    compared: std::collections::HashSet<QueryKey>,
}

impl Results {
    /// Queries compared with another run's result at least once.
    pub fn checked(&self) -> usize {
        self.compared.len()
    }

    /// Keeps `rows` as the reference of `key`, or checks them against it within two
    /// runs of coopscan's float tolerance.
    fn record(
        &mut self,
        key: QueryKey,
        policy: &str,
        params: &Params,
        rows: Vec<Vec<String>>,
    ) -> anyhow::Result<()> {
        self.record_within(key, policy, params, rows, |_| Tolerance::ENGINES)
    }

    /// Checks another engine's `rows` for `key` against coopscan's, within TPC-H's
    /// validation tolerance (§2.1.3.5: other engines round and average otherwise:
    /// DuckDB's average of a decimal is a double). A peer's result is never the
    /// reference.
    pub fn record_peer(
        &mut self,
        key: QueryKey,
        engine: &str,
        params: &Params,
        rows: Vec<Vec<String>>,
    ) -> anyhow::Result<()> {
        anyhow::ensure!(
            self.first.contains_key(&key),
            "stream {}, {}: no coopscan result to check {engine}'s against",
            key.0,
            params.query()
        );
        let query = params.query();
        self.record_within(key, engine, params, rows, |c| answer_tolerance(query, c))
    }

    fn record_within(
        &mut self,
        key: QueryKey,
        policy: &str,
        params: &Params,
        rows: Vec<Vec<String>>,
        tolerance: impl Fn(usize) -> Tolerance + Copy,
    ) -> anyhow::Result<()> {
        let Some((first_policy, expected)) = self.first.get(&key) else {
            self.first.insert(key, (policy.to_string(), rows));
            return Ok(());
        };
        same_rows(expected, &rows, tolerance).map_err(|m| {
            anyhow::anyhow!(
                "stream {}, {} ({}): {policy}'s result differs from {first_policy}'s: {m}",
                key.0,
                params.query(),
                params.describe()
            )
        })?;
        self.compared.insert(key);
        Ok(())
    }
}

/// `actual` holds `expected`'s rows within `tolerance` (per column), in the same order
/// or, where an `ORDER BY` leaves ties (Q11's equal values at SF 10), in another. The
/// order beyond ties is each engine's own, not what these comparisons are for; a
/// difference is reported at its place in `actual`'s order.
fn same_rows(
    expected: &[Vec<String>],
    actual: &[Vec<String>],
    tolerance: impl Fn(usize) -> Tolerance + Copy,
) -> Result<(), Mismatch> {
    let Err(in_order) = compare_rows(expected, actual, tolerance) else {
        return Ok(());
    };
    if expected.len() != actual.len() {
        return Err(in_order);
    }
    let sorted = |rows: &[Vec<String>]| {
        let mut rows = rows.to_vec();
        rows.sort_unstable();
        rows
    };
    compare_rows(&sorted(expected), &sorted(actual), tolerance).map_err(|_| in_order)
}

/// One policy's run: what it measured, and its piece references when it had a buffer.
pub struct PolicyRun {
    pub run: TpchRun,
    pub trace: Option<Vec<Reference>>,
    /// When the trace's scans registered, on its clock.
    pub registered: HashMap<ScanId, Nanos>,
}

/// All streams at once under each of `policies`, one after another; a line each.
pub fn run(setup: &Setup, policies: &[SqlPolicy]) -> anyhow::Result<Vec<TpchRun>> {
    let tokio = tokio_runtime()?;
    if let Some(dir) = setup.trace {
        std::fs::create_dir_all(dir)
            .with_context(|| format!("--trace: creating {}", dir.display()))?;
    }
    print_header();
    let mut results = Results::default();
    let mut runs = Vec::with_capacity(policies.len());
    for &policy in policies {
        let all = setup.streams.len();
        let done = run_policy(
            setup,
            all,
            policy,
            Conditions::default(),
            &mut results,
            &tokio,
        )?;
        if let (Some(dir), Some(trace)) = (setup.trace, &done.trace) {
            keep_trace(&dir.join(format!("tpch-{policy}.trace")), trace)?;
        }
        print_run(&done.run);
        runs.push(done.run);
    }
    if policies.len() > 1 {
        println!(
            "results: {} queries, every policy's result the same",
            results.checked()
        );
    }
    Ok(runs)
}

pub fn tokio_runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the tokio runtime")
}

/// The first `streams` streams at once under `policy`, on a fresh device and buffer
/// set by `conditions`; every result checked against `results`.
pub fn run_policy(
    setup: &Setup,
    streams: usize,
    policy: SqlPolicy,
    conditions: Conditions,
    results: &mut Results,
    tokio: &tokio::runtime::Runtime,
) -> anyhow::Result<PolicyRun> {
    let mut config = setup.session.device.config()?;
    if let Some(mb_s) = conditions.bandwidth_mb_s {
        config.bandwidth = Some(Bandwidth::mb_per_s(mb_s).map_err(|e| anyhow::anyhow!("{e}"))?);
    }
    let device = Arc::new(Device::new(config));
    let mut session = setup.session.clone();
    session.buffer_bytes = conditions.buffer_bytes.or(session.buffer_bytes);
    let (ctx, runtime) = session.open_with(setup.open.clone(), policy, Arc::clone(&device))?;
    if let Some(runtime) = &runtime {
        runtime.record_trace();
    }
    let memory0 = setup.idle_rss_bytes.filter(|_| memory::reset_peak_rss());
    let (cpu0, io0) = (process_cpu_time(), device.stats().bytes);
    let chosen = setup.streams.iter().take(streams);
    let outcomes = tokio
        .block_on(join_all(chosen.map(|params| run_stream(&ctx, params))))
        .into_iter()
        .collect::<anyhow::Result<Vec<_>>>()
        .with_context(|| format!("under {policy}"))?;
    let cpu = process_cpu_time().saturating_sub(cpu0);
    let bytes_read = device.stats().bytes.saturating_sub(io0);
    let memory_bytes = memory0.and_then(|m| Some(memory::peak_rss_bytes()?.saturating_sub(m)));
    let mut stream_s = Vec::with_capacity(outcomes.len());
    for (s, (time, rows)) in outcomes.into_iter().enumerate() {
        stream_s.push(time.as_secs_f64());
        for (q, (params, rows)) in setup.streams[s].iter().zip(rows).enumerate() {
            results.record((s + 1, q), &policy.to_string(), params, rows)?;
        }
    }
    let trace = runtime.as_ref().map(|r| r.take_trace());
    let registered = (runtime.as_ref()).map_or_else(HashMap::new, |r| r.traced_registrations());
    let opt = match (&runtime, &trace) {
        (Some(runtime), Some(trace)) => Some(replay_opt(trace, runtime.buffer_bytes())),
        _ => None,
    };
    let avg_stream_s = stream_s.iter().sum::<f64>() / stream_s.len().max(1) as f64;
    Ok(PolicyRun {
        run: TpchRun {
            policy: policy.to_string(),
            streams: stream_s.len(),
            avg_stream_s,
            max_stream_s: stream_s.iter().copied().fold(0.0, f64::max),
            stream_s,
            cpu_s: cpu.as_secs_f64(),
            bytes_read,
            piece_loads: runtime.as_ref().map(|r| r.stats().piece_loads),
            opt_piece_loads: opt.as_ref().map(|o| o.loads),
            opt_bytes: opt.as_ref().map(|o| o.bytes_loaded),
            rounds_avg_stream_s: vec![avg_stream_s],
            memory_bytes,
            engine_version: None,
        },
        trace,
        registered,
    })
}

pub fn keep_trace(path: &Path, trace: &[Reference]) -> anyhow::Result<()> {
    let file = std::fs::File::create(path)
        .with_context(|| format!("--trace: creating {}", path.display()))?;
    coopscan_buffer::write_trace(std::io::BufWriter::new(file), trace)
        .with_context(|| format!("--trace: writing {}", path.display()))
}

pub fn print_header() {
    println!(
        "policy             avg stream s  max stream s    CPU s   MB read  pieces OPT pieces  stream times"
    );
}

pub fn print_run(r: &TpchRun) {
    let each: Vec<String> = r.stream_s.iter().map(|s| format!("{s:.2}")).collect();
    let count = |v: Option<u64>| v.map_or("-".to_string(), |v| v.to_string());
    println!(
        "{:<18} {:>12.2} {:>13.2} {:>8.2} {:>9.1} {:>7} {:>10}  {}",
        r.policy,
        r.avg_stream_s,
        r.max_stream_s,
        r.cpu_s,
        r.mb_read(),
        count(r.piece_loads),
        count(r.opt_piece_loads),
        each.join(" ")
    );
}

/// Runs a stream's queries one after another: its time, and each query's rows.
async fn run_stream(
    ctx: &SessionContext,
    params: &[Params],
) -> anyhow::Result<(Duration, Vec<Vec<Vec<String>>>)> {
    let start = Instant::now();
    let mut rows = Vec::with_capacity(params.len());
    for p in params {
        let sql = p.sql()?;
        let batches = plan_read_only(ctx, &sql)
            .await?
            .collect()
            .await
            .with_context(|| format!("{} ({})", p.query(), p.describe()))?;
        rows.push(rows_of(&batches)?);
    }
    Ok((start.elapsed(), rows))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows(cells: &[(&str, &str)]) -> Vec<Vec<String>> {
        cells
            .iter()
            .map(|(a, b)| vec![a.to_string(), b.to_string()])
            .collect()
    }

    #[test]
    fn ties_in_another_order_are_the_same_rows_and_other_values_are_not() {
        let same_rows =
            |e: &[Vec<String>], a: &[Vec<String>]| same_rows(e, a, |_| Tolerance::ENGINES);
        let first = rows(&[("7", "10.00"), ("3", "5.00"), ("9", "5.00")]);
        assert!(same_rows(&first, &first).is_ok());
        let swapped = rows(&[("7", "10.00"), ("9", "5.00"), ("3", "5.00")]);
        assert!(
            same_rows(&first, &swapped).is_ok(),
            "equal values in either order"
        );
        let other = rows(&[("7", "10.00"), ("9", "5.00"), ("4", "5.00")]);
        assert!(same_rows(&first, &other).is_err());
        assert!(same_rows(&first, &first[..2]).is_err(), "a row missing");
    }
}
