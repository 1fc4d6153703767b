//! `coopscan tpch --streams S`: the throughput run's shape. Streams 1 to S at once, each
//! its queries in its own Appendix A order with its own seeded parameters, all through
//! one buffer; per policy the stream times, CPU-seconds, bytes and pieces read, and the
//! pieces Belady's OPT would read on the same references.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use coopscan_bench::cpu::process_cpu_time;
use coopscan_buffer::trace::opt::replay_opt;
use coopscan_buffer::Reference;
use coopscan_exec::datafusion::prelude::SessionContext;
use coopscan_exec::plan_read_only;
use coopscan_storage::device::Device;
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
    pub seed: u64,
    pub sf: f64,
}

/// One policy's throughput run, as `--json` writes it.
#[derive(serde::Serialize)]
pub struct ThroughputRun {
    policy: String,
    streams: usize,
    seed: u64,
    sf: f64,
    avg_stream_s: f64,
    max_stream_s: f64,
    stream_s: Vec<f64>,
    cpu_s: f64,
    mb_read: f64,
    /// Pieces the buffer manager read (DSM: a column of a chunk; none for plain Scans).
    piece_loads: Option<u64>,
    /// Pieces Belady's OPT reads on the same piece references in the same buffer.
    opt_piece_loads: Option<u64>,
}

/// All streams at once under each of `policies`, one after another; a line each.
pub fn run(setup: &Setup, policies: &[SqlPolicy]) -> anyhow::Result<Vec<ThroughputRun>> {
    let tokio = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the tokio runtime")?;
    if let Some(dir) = setup.trace {
        std::fs::create_dir_all(dir)
            .with_context(|| format!("--trace: creating {}", dir.display()))?;
    }
    println!(
        "policy             avg stream s  max stream s    CPU s   MB read  pieces OPT pieces  stream times"
    );
    let mut runs = Vec::with_capacity(policies.len());
    for &policy in policies {
        let run = run_policy(setup, policy, &tokio)?;
        print_run(&run);
        runs.push(run);
    }
    Ok(runs)
}

/// The streams at once under `policy`, on a fresh device and buffer.
fn run_policy(
    setup: &Setup,
    policy: SqlPolicy,
    tokio: &tokio::runtime::Runtime,
) -> anyhow::Result<ThroughputRun> {
    let device = Arc::new(Device::new(setup.session.device.config()?));
    let (ctx, runtime) =
        (setup.session).open_with(setup.open.clone(), policy, Arc::clone(&device))?;
    if let Some(runtime) = &runtime {
        runtime.record_trace();
    }
    let (cpu0, io0) = (process_cpu_time(), device.stats().bytes);
    let streams_run = setup.streams.iter().map(|params| run_stream(&ctx, params));
    let times = tokio
        .block_on(join_all(streams_run))
        .into_iter()
        .collect::<anyhow::Result<Vec<Duration>>>()
        .with_context(|| format!("under {policy}"))?;
    let cpu = process_cpu_time().saturating_sub(cpu0);
    let mb = device.stats().bytes.saturating_sub(io0) as f64 / f64::from(1u32 << 20);
    let (piece_loads, opt_piece_loads) = match &runtime {
        Some(runtime) => {
            let trace = runtime.take_trace();
            if let Some(dir) = setup.trace {
                keep_trace(&dir.join(format!("tpch-{policy}.trace")), &trace)?;
            }
            let opt = replay_opt(&trace, runtime.buffer_bytes());
            (Some(runtime.stats().piece_loads), Some(opt.loads))
        }
        None => (None, None),
    };
    let stream_s: Vec<f64> = times.iter().map(Duration::as_secs_f64).collect();
    Ok(ThroughputRun {
        policy: policy.to_string(),
        streams: stream_s.len(),
        seed: setup.seed,
        sf: setup.sf,
        avg_stream_s: stream_s.iter().sum::<f64>() / stream_s.len().max(1) as f64,
        max_stream_s: stream_s.iter().copied().fold(0.0, f64::max),
        stream_s,
        cpu_s: cpu.as_secs_f64(),
        mb_read: mb,
        piece_loads,
        opt_piece_loads,
    })
}

fn keep_trace(path: &Path, trace: &[Reference]) -> anyhow::Result<()> {
    let file = std::fs::File::create(path)
        .with_context(|| format!("--trace: creating {}", path.display()))?;
    coopscan_buffer::write_trace(std::io::BufWriter::new(file), trace)
        .with_context(|| format!("--trace: writing {}", path.display()))
}

fn print_run(r: &ThroughputRun) {
    let each: Vec<String> = r.stream_s.iter().map(|s| format!("{s:.2}")).collect();
    let count = |v: Option<u64>| v.map_or("-".to_string(), |v| v.to_string());
    println!(
        "{:<18} {:>12.2} {:>13.2} {:>8.2} {:>9.1} {:>7} {:>10}  {}",
        r.policy,
        r.avg_stream_s,
        r.max_stream_s,
        r.cpu_s,
        r.mb_read,
        count(r.piece_loads),
        count(r.opt_piece_loads),
        each.join(" ")
    );
}

/// Runs a stream's queries one after another; its time.
async fn run_stream(ctx: &SessionContext, params: &[Params]) -> anyhow::Result<Duration> {
    let start = Instant::now();
    for p in params {
        let sql = p.sql()?;
        plan_read_only(ctx, &sql)
            .await?
            .collect()
            .await
            .with_context(|| format!("{} ({})", p.query(), p.describe()))?;
    }
    Ok(start.elapsed())
}
