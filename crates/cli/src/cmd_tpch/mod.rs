//! `coopscan tpch`: the 22 TPC-H queries (`queries/tpch/`) over a database, one after
//! another in one session — the power run's shape — with each query's wall and CPU time,
//! and, with `--answers`, each result checked against the kit's answer set.
//!
//! Parameters are the specification's validation values, or with `--stream N` stream
//! N's seeded values in stream N's order (Appendix A). The scale factor (Q11's fraction)
//! comes from lineitem's manifest unless `--sf` names it.
//!
//! With `--streams S` it is the throughput run's shape instead: streams 1 to S at once,
//! each its queries (`--queries`, all 22 by default) in its own order with its own
//! parameters, all through one buffer; per policy of `--policies`, the stream times,
//! CPU-seconds, bytes and pieces read, and the pieces Belady's OPT would read.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use coopscan_bench::cpu::process_cpu_time;
use coopscan_exec::datafusion::prelude::SessionContext;
use coopscan_exec::plan_read_only;
use coopscan_storage::device::Device;
use coopscan_tpch::answers::{rows_of, Answer};
use coopscan_tpch::{sf_of_source, stream_params, Params, QueryId, MAX_SCALE_FACTOR};

use crate::session_args::{parse_policy, OpenTables, SessionArgs, SqlPolicy};

pub mod bench;
pub mod clotho;
mod peers;
mod sharing;
mod simulated;
mod throughput;

/// Most repetitions of each query.
const MAX_REPEAT: u32 = 100;
/// Largest stream number (stream numbers wrap every 41 as in `qgen`; more is a typo).
const MAX_STREAM: usize = 1 << 16;
/// Most streams of one throughput run (the 2012 paper's Figure 16 goes to 16).
pub(crate) const MAX_STREAMS: u16 = 64;

#[derive(clap::Args, Debug, Clone)]
pub struct TpchArgs {
    #[command(flatten)]
    pub session: SessionArgs,
    /// The queries to run, comma-separated (`1,6,14`); all 22 by default.
    #[arg(long, value_delimiter = ',', value_parser = parse_query)]
    pub queries: Vec<QueryId>,
    /// Run stream N: its query order and its own seeded parameters (0 = the power
    /// run's order); without it, the validation parameters in query order.
    #[arg(long, value_parser = clap::value_parser!(u64).range(0..MAX_STREAM as u64))]
    pub stream: Option<u64>,
    /// Seed of the streams' parameters.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Check every result against the answer set in DIR (`queries/tpch/answers-sf1`:
    /// validation parameters at SF 1 only).
    #[arg(long, value_name = "DIR", conflicts_with = "stream")]
    pub answers: Option<PathBuf>,
    /// Runs of each query; times are the median.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=i64::from(MAX_REPEAT)))]
    pub repeat: u32,
    /// The database's scale factor (default: read from lineitem's manifest).
    #[arg(long)]
    pub sf: Option<f64>,
    /// Run S streams at once (the throughput run): streams 1 to S, each in its own
    /// order with its own seeded parameters, all through one buffer.
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..=i64::from(MAX_STREAMS)), conflicts_with_all = ["stream", "answers", "repeat"])]
    pub streams: Option<u16>,
    /// Print the chosen queries' SQL (each after a `-- Qn` line) instead of running
    /// them: the same statements for another engine (`scripts/tpch_peers.py`).
    #[arg(long, conflicts_with_all = ["streams", "answers"])]
    pub print_sql: bool,
    /// With --streams: the policies to run the streams under, one after another
    /// (default: --policy).
    #[arg(long, value_delimiter = ',', value_parser = parse_policy, requires = "streams")]
    pub policies: Vec<SqlPolicy>,
    /// With --streams: keep each buffered policy's piece-reference trace in this
    /// directory as `tpch-<policy>.trace` (replay with `coopscan opt`).
    #[arg(long, value_name = "DIR", requires = "streams")]
    pub trace: Option<PathBuf>,
    /// Write the results as JSON to this file: each query's times, rows and check, or
    /// with --streams each policy's run.
    #[arg(long, value_name = "FILE", conflicts_with = "print_sql")]
    pub json: Option<PathBuf>,
}

fn parse_query(s: &str) -> Result<QueryId, String> {
    s.parse::<QueryId>().map_err(|e| e.to_string())
}

/// One query of a power run, as `--json` writes it.
#[derive(serde::Serialize)]
struct QueryRun {
    query: u8,
    parameters: String,
    wall_s: f64,
    cpu_s: f64,
    rows: usize,
    /// `null` without `--answers`; otherwise whether the result matched, and if not why.
    correct: Option<bool>,
    mismatch: Option<String>,
}

impl QueryRun {
    fn of(m: &Measured) -> QueryRun {
        QueryRun {
            query: m.params.query().number(),
            parameters: m.params.describe(),
            wall_s: m.wall.as_secs_f64(),
            cpu_s: m.cpu.as_secs_f64(),
            rows: m.rows,
            correct: m.check.as_ref().map(Result::is_ok),
            mismatch: m.check.as_ref().and_then(|c| c.clone().err()),
        }
    }
}

/// One query's outcome.
struct Measured {
    params: Params,
    rows: usize,
    wall: Duration,
    cpu: Duration,
    check: Option<Result<(), String>>,
}

pub fn run(args: &TpchArgs) -> anyhow::Result<()> {
    let open = args.session.open_tables()?;
    let sf = match args.sf {
        Some(sf) => {
            anyhow::ensure!(
                sf > 0.0 && sf <= MAX_SCALE_FACTOR,
                "--sf must be in (0, {MAX_SCALE_FACTOR}], got {sf:e}"
            );
            sf
        }
        None => database_sf(&open)?,
    };
    if args.answers.is_some() {
        anyhow::ensure!(
            sf == 1.0,
            "the answer set is for SF 1; this database is SF {sf}"
        );
    }
    if let Some(streams) = args.streams {
        let setup = throughput::Setup {
            session: &args.session,
            open,
            streams: (1..=usize::from(streams))
                .map(|s| stream_queries(args, s, sf))
                .collect(),
            trace: args.trace.as_deref(),
            idle_rss_bytes: coopscan_bench::memory::rss_bytes(),
        };
        let policies = match args.policies.is_empty() {
            true => vec![args.session.policy],
            false => args.policies.clone(),
        };
        let runs = throughput::run(&setup, &policies)?;
        if let Some(path) = &args.json {
            write_json(path, &runs)?;
        }
        return Ok(());
    }
    let params = chosen_params(args, sf);
    if args.print_sql {
        for p in &params {
            println!("-- {}\n{}", p.query(), p.sql()?.trim_end());
        }
        return Ok(());
    }
    // Every answer read before any query runs: a wrong directory fails at once.
    let answers = match &args.answers {
        Some(dir) => params
            .iter()
            .map(|p| Answer::load(dir, p.query()).map(Some))
            .collect::<Result<Vec<_>, _>>()?,
        None => vec![None; params.len()],
    };
    let device = Arc::new(Device::new(args.session.device.config()?));
    let (ctx, _) = args.session.open_with(open, args.session.policy, device)?;
    let tokio = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the tokio runtime")?;
    println!("query  wall s   CPU s    rows  check   parameters");
    let mut measured = Vec::with_capacity(params.len());
    for (p, answer) in params.into_iter().zip(&answers) {
        let m = tokio.block_on(measure(&ctx, p, answer.as_ref(), args.repeat))?;
        print_row(&m);
        measured.push(m);
    }
    summarize(&measured, args.json.as_deref())
}

/// The queries to run with their parameters, in run order.
fn chosen_params(args: &TpchArgs, sf: f64) -> Vec<Params> {
    match args.stream {
        Some(stream) => stream_queries(args, stream as usize, sf),
        None => QueryId::all()
            .filter(|q| wanted(args, *q))
            .map(|q| Params::validation(q, sf))
            .collect(),
    }
}

/// Whether `--queries` (all when empty) names `query`.
fn wanted(args: &TpchArgs, query: QueryId) -> bool {
    args.queries.is_empty() || args.queries.contains(&query)
}

/// Stream `stream`'s queries of `--queries`, in its order, with its seeded parameters.
fn stream_queries(args: &TpchArgs, stream: usize, sf: f64) -> Vec<Params> {
    stream_params(args.seed, stream, sf)
        .into_iter()
        .filter(|p| wanted(args, p.query()))
        .collect()
}

/// The scale factor lineitem was generated at.
pub(crate) fn database_sf(open: &OpenTables) -> anyhow::Result<f64> {
    let lineitem = open
        .names
        .iter()
        .position(|n| n == "lineitem")
        .context("no table named lineitem: is this a TPC-H database?")?;
    let source = open.tables[lineitem]
        .manifest()
        .source
        .clone()
        .unwrap_or_default();
    sf_of_source(&source).with_context(|| {
        format!("lineitem's manifest does not say its scale factor ({source:?}): pass --sf")
    })
}

/// Runs `params` `repeat` times: median wall and CPU time, the last run's rows
/// checked against `answer`.
async fn measure(
    ctx: &SessionContext,
    params: Params,
    answer: Option<&Answer>,
    repeat: u32,
) -> anyhow::Result<Measured> {
    let sql = params.sql()?;
    let mut walls = Vec::new();
    let mut cpus = Vec::new();
    let mut rows = Vec::new();
    for _ in 0..repeat {
        let (cpu0, start) = (process_cpu_time(), Instant::now());
        let batches = plan_read_only(ctx, &sql)
            .await?
            .collect()
            .await
            .with_context(|| format!("{}", params.query()))?;
        walls.push(start.elapsed());
        cpus.push(process_cpu_time().saturating_sub(cpu0));
        rows = rows_of(&batches)?;
    }
    let check = answer.map(|a| a.check(params.query(), &rows).map_err(|m| m.to_string()));
    Ok(Measured {
        params,
        rows: rows.len(),
        wall: median(&mut walls),
        cpu: median(&mut cpus),
        check,
    })
}

fn write_json(path: &Path, value: &impl serde::Serialize) -> anyhow::Result<()> {
    let text = serde_json::to_string_pretty(value)?;
    std::fs::write(path, text).with_context(|| format!("--json: writing {}", path.display()))
}

fn median(values: &mut [Duration]) -> Duration {
    values.sort_unstable();
    values.get(values.len() / 2).copied().unwrap_or_default()
}

fn print_row(m: &Measured) {
    let check = match &m.check {
        None => "-",
        Some(Ok(())) => "ok",
        Some(Err(_)) => "WRONG",
    };
    println!(
        "{:<5} {:>7.3} {:>7.3} {:>7}  {:<6}  {}",
        m.params.query().to_string(),
        m.wall.as_secs_f64(),
        m.cpu.as_secs_f64(),
        m.rows,
        check,
        m.params.describe()
    );
    if let Some(Err(why)) = &m.check {
        println!("      {why}");
    }
}

/// Prints the sums; fails if any result was wrong.
fn summarize(measured: &[Measured], json: Option<&Path>) -> anyhow::Result<()> {
    if let Some(path) = json {
        write_json(path, &measured.iter().map(QueryRun::of).collect::<Vec<_>>())?;
    }
    let wall: Duration = measured.iter().map(|m| m.wall).sum();
    let cpu: Duration = measured.iter().map(|m| m.cpu).sum();
    println!(
        "total {:>7.3} {:>7.3}  ({} queries; medians summed)",
        wall.as_secs_f64(),
        cpu.as_secs_f64(),
        measured.len()
    );
    let wrong: Vec<String> = measured
        .iter()
        .filter(|m| matches!(m.check, Some(Err(_))))
        .map(|m| m.params.query().to_string())
        .collect();
    anyhow::ensure!(wrong.is_empty(), "wrong results: {}", wrong.join(", "));
    Ok(())
}
