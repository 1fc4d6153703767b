//! `coopscan tpch`: the 22 TPC-H queries (`queries/tpch/`) over a database, one after
//! another in one session — the power run's shape — with each query's wall and CPU time,
//! and, with `--answers`, each result checked against the kit's answer set.
//!
//! Parameters are the specification's validation values, or with `--stream N` stream
//! N's seeded values in stream N's order (Appendix A). The scale factor (Q11's fraction)
//! comes from lineitem's manifest unless `--sf` names it.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::Context;
use coopscan_bench::cpu::process_cpu_time;
use coopscan_exec::datafusion::prelude::SessionContext;
use coopscan_exec::plan_read_only;
use coopscan_tpch::answers::{rows_of, Answer};
use coopscan_tpch::{sf_of_source, stream_order, stream_params, Params, QueryId, MAX_SCALE_FACTOR};

use crate::session_args::SessionArgs;

/// Most repetitions of each query.
const MAX_REPEAT: u32 = 100;
/// Largest stream number (stream numbers wrap every 41 as in `qgen`; more is a typo).
const MAX_STREAM: usize = 1 << 16;

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
    #[arg(long, default_value_t = 1, requires = "stream")]
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
}

fn parse_query(s: &str) -> Result<QueryId, String> {
    s.parse::<QueryId>().map_err(|e| e.to_string())
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
                "--sf must be in (0, {MAX_SCALE_FACTOR}], got {sf}"
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
    let params = chosen_params(args, sf);
    let ctx = args.session.open_with(open)?;
    let tokio = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the tokio runtime")?;
    println!("query  wall s   CPU s    rows  check   parameters");
    let mut measured = Vec::with_capacity(params.len());
    for p in params {
        let m = tokio.block_on(measure(&ctx, p, args))?;
        print_row(&m);
        measured.push(m);
    }
    summarize(&measured)
}

/// The queries to run with their parameters, in run order.
fn chosen_params(args: &TpchArgs, sf: f64) -> Vec<Params> {
    let wanted = |q: &QueryId| args.queries.is_empty() || args.queries.contains(q);
    match args.stream {
        Some(stream) => {
            let stream = stream as usize;
            debug_assert_eq!(stream_order(stream).len(), 22);
            stream_params(args.seed, stream, sf)
                .into_iter()
                .filter(|p| wanted(&p.query()))
                .collect()
        }
        None => QueryId::all()
            .filter(wanted)
            .map(|q| Params::validation(q, sf))
            .collect(),
    }
}

/// The scale factor lineitem was generated at.
fn database_sf(open: &crate::session_args::OpenTables) -> anyhow::Result<f64> {
    let lineitem = open
        .names
        .iter()
        .position(|n| n == "lineitem")
        .context("no table named lineitem: is this a TPC-H database?")?;
    let source = open.tables[lineitem].manifest().source.clone().unwrap_or_default();
    sf_of_source(&source).with_context(|| {
        format!("lineitem's manifest does not say its scale factor ({source:?}): pass --sf")
    })
}

/// Runs `params` `--repeat` times: median wall and CPU time, the last run's rows
/// checked against the answer set.
async fn measure(ctx: &SessionContext, params: Params, args: &TpchArgs) -> anyhow::Result<Measured> {
    let sql = params.sql()?;
    let mut walls = Vec::new();
    let mut cpus = Vec::new();
    let mut rows = Vec::new();
    for _ in 0..args.repeat {
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
    let check = match &args.answers {
        None => None,
        Some(dir) => {
            let answer = Answer::load(dir, params.query())?;
            Some(answer.check(params.query(), &rows).map_err(|m| m.to_string()))
        }
    };
    Ok(Measured {
        params,
        rows: rows.len(),
        wall: median(&mut walls),
        cpu: median(&mut cpus),
        check,
    })
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
fn summarize(measured: &[Measured]) -> anyhow::Result<()> {
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
