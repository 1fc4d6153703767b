//! `coopscan bench --preset clotho-tpch`: Clotho's Figure 9 (§7.3) as defined in
//! `coopscan_paper::clotho::TPCH` — TPC-H Q1, Q6, Q12 and Q14 (validation parameters)
//! over one database stored in NSM, PAX, DSM and CSM, each query cold in a fresh session
//! on a fresh emulated disk of the paper's era, rounds alternating the layouts; medians
//! and each layout ÷ NSM beside the paper's finding. Every answer must equal the first
//! layout's, and at SF 1 the kit's answer set where the repository holds it.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use anyhow::Context;
use coopscan_bench::samples::Samples;
use coopscan_lab::bench_cmd::{check_writable, BenchArgs};
use coopscan_paper::clotho::{BANDWIDTH_MB_S, LATENCY_MS, TPCH};
use coopscan_storage::device::Device;
use coopscan_storage::Layout;
use coopscan_tpch::answers::{answers_dir, compare_rows, rows_of, Answer, Tolerance};
use coopscan_tpch::{Params, QueryId};
use serde::Serialize;

use super::throughput::tokio_runtime;
use crate::session_args::SessionArgs;

/// Rounds when `--standalone-runs` does not say (the script this replaced ran 3).
const DEFAULT_ROUNDS: usize = 3;
/// Most rounds.
const MAX_ROUNDS: usize = 100;

/// Whether `name` is Clotho's Figure 9.
pub fn is_preset(name: &str) -> bool {
    name == TPCH.name
}

/// One query over one layout: its cold runs.
#[derive(Clone, Debug, Serialize)]
struct Cell {
    query: u8,
    layout: String,
    seconds: Vec<f64>,
    median_s: f64,
    over_nsm: Option<f64>,
    bytes_read: u64,
    requests: u64,
}

#[derive(Serialize)]
struct Report {
    preset: &'static str,
    figure: &'static str,
    finding: &'static str,
    sf: f64,
    rounds: usize,
    bandwidth_mb_s: f64,
    latency_ms: f64,
    /// Whether the kit's answer set checked the results too (SF 1 only).
    kit_answers: bool,
    cells: Vec<Cell>,
}

pub fn run(args: &BenchArgs) -> anyhow::Result<()> {
    anyhow::ensure!(args.simulate.is_none(), "{}: no simulator side", TPCH.name);
    anyhow::ensure!(
        args.engines == "coopscan",
        "{}: coopscan alone (the layouts are coopscan's)",
        TPCH.name
    );
    anyhow::ensure!(
        args.html.is_none(),
        "{}: its report is the printed table and --json; there is no HTML page",
        TPCH.name
    );
    anyhow::ensure!(
        args.db.is_none() && args.layout.is_none(),
        "{}: runs one database per layout, generated at --sf; --db and --layout do not apply",
        TPCH.name
    );
    if let Some(json) = &args.json {
        check_writable(json)?;
    }
    let rounds = args.standalone_runs.unwrap_or(DEFAULT_ROUNDS);
    anyhow::ensure!(
        (1..=MAX_ROUNDS).contains(&rounds),
        "--standalone-runs: 1 to {MAX_ROUNDS} rounds"
    );
    let bandwidth = args.bandwidth_mb.map_or(BANDWIDTH_MB_S, |b| b.get());
    let databases = Layout::ALL
        .iter()
        .map(|&l| Ok((l, super::bench::generated_database(args.sf, l)?)))
        .collect::<anyhow::Result<Vec<(Layout, PathBuf)>>>()?;
    let queries: Vec<Params> = (TPCH.queries.iter())
        .map(|&q| Ok(Params::validation(QueryId::new(q)?, args.sf)))
        .collect::<anyhow::Result<_>>()?;
    let kit = kit_answers(args.sf, &queries)?;
    let flags = ["--bandwidth-mb".to_string(), bandwidth.to_string()]
        .into_iter()
        .chain(["--latency-ms".to_string(), LATENCY_MS.to_string()])
        // The bench's model, as the paper's: the cores shared equally.
        .chain(["--cpu-shares".to_string(), "equal".to_string()])
        .collect::<Vec<_>>();
    let mut cells = run_rounds(&databases, &queries, &kit, &flags, rounds)?;
    finish(&mut cells);
    let report = Report {
        preset: TPCH.name,
        figure: TPCH.figure,
        finding: TPCH.finding,
        sf: args.sf,
        rounds,
        bandwidth_mb_s: bandwidth,
        latency_ms: LATENCY_MS,
        kit_answers: !kit.is_empty(),
        cells,
    };
    print_report(&report);
    if let Some(path) = &args.json {
        std::fs::write(path, serde_json::to_string_pretty(&report)?)
            .with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(())
}

/// `rounds` rounds over the layouts (their order rotated each round), every query of
/// each cold, every answer checked: the cells, medians not yet taken.
fn run_rounds(
    databases: &[(Layout, PathBuf)],
    queries: &[Params],
    kit: &[Answer],
    flags: &[String],
    rounds: usize,
) -> anyhow::Result<Vec<Cell>> {
    let tokio = tokio_runtime()?;
    let mut cells: Vec<Cell> = Vec::new();
    let mut first: Vec<Option<Vec<Vec<String>>>> = vec![None; queries.len()];
    for round in 0..rounds {
        for i in 0..databases.len() {
            let (layout, db) = &databases[(i + round) % databases.len()];
            let session = SessionArgs::for_database(db, flags)?;
            for (q, params) in queries.iter().enumerate() {
                let (secs, bytes, requests, rows) = measure(&session, params, &tokio)
                    .with_context(|| format!("{} on {layout}", params.query()))?;
                check(params, *layout, &rows, &mut first[q], kit.get(q))?;
                record(&mut cells, params, *layout, secs, bytes, requests);
            }
        }
        eprintln!("{}: round {} of {rounds} done", TPCH.name, round + 1);
    }
    Ok(cells)
}

/// The kit's answers to `queries` at SF 1 when the repository's answer set is here;
/// none otherwise (the layouts are still checked against each other).
fn kit_answers(sf: f64, queries: &[Params]) -> anyhow::Result<Vec<Answer>> {
    let dir = answers_dir();
    if sf != 1.0 || !dir.is_dir() {
        return Ok(Vec::new());
    }
    queries
        .iter()
        .map(|p| Ok(Answer::load(&dir, p.query())?))
        .collect()
}

/// One cold run of `params` in a fresh session on a fresh device: seconds, bytes and
/// requests read, and the rows.
fn measure(
    session: &SessionArgs,
    params: &Params,
    tokio: &tokio::runtime::Runtime,
) -> anyhow::Result<(f64, u64, u64, Vec<Vec<String>>)> {
    let device = Arc::new(Device::new(session.device.config()?));
    let open = session.open_tables()?;
    let (ctx, _runtime) = session.open_with(open, session.policy, Arc::clone(&device))?;
    let sql = params.sql()?;
    let start = Instant::now();
    let batches = tokio.block_on(async {
        coopscan_exec::plan_read_only(&ctx, &sql)
            .await?
            .collect()
            .await
            .map_err(anyhow::Error::from)
    })?;
    let secs = start.elapsed().as_secs_f64();
    let stats = device.stats();
    Ok((secs, stats.bytes, stats.requests, rows_of(&batches)?))
}

/// The rows equal the first layout's (floating-point sums within two engines'
/// tolerance) and, where given, the kit's answer.
fn check(
    params: &Params,
    layout: Layout,
    rows: &[Vec<String>],
    first: &mut Option<Vec<Vec<String>>>,
    kit: Option<&Answer>,
) -> anyhow::Result<()> {
    if let Some(answer) = kit {
        answer.check(params.query(), rows).map_err(|m| {
            anyhow::anyhow!("{} on {layout}: not the kit's answer: {m}", params.query())
        })?;
    }
    match first {
        Some(want) => compare_rows(want, rows, |_| Tolerance::ENGINES).map_err(|m| {
            anyhow::anyhow!("{} on {layout} answered differently: {m}", params.query())
        }),
        None => {
            *first = Some(rows.to_vec());
            Ok(())
        }
    }
}

fn record(
    cells: &mut Vec<Cell>,
    params: &Params,
    layout: Layout,
    secs: f64,
    bytes: u64,
    requests: u64,
) {
    let (query, layout) = (params.query().number(), layout.to_string());
    match cells
        .iter_mut()
        .find(|c| c.query == query && c.layout == layout)
    {
        Some(cell) => cell.seconds.push(secs),
        None => cells.push(Cell {
            query,
            layout,
            seconds: vec![secs],
            median_s: 0.0,
            over_nsm: None,
            bytes_read: bytes,
            requests,
        }),
    }
}

/// Medians, each ÷ the same query's NSM median; cells in query, then layout order.
fn finish(cells: &mut [Cell]) {
    for cell in cells.iter_mut() {
        cell.median_s = Samples(cell.seconds.clone()).median();
    }
    let nsm = Layout::Nsm.to_string();
    let medians: Vec<(u8, f64)> = (cells.iter())
        .filter(|c| c.layout == nsm)
        .map(|c| (c.query, c.median_s))
        .collect();
    for cell in cells.iter_mut() {
        let base = medians.iter().find(|(q, _)| *q == cell.query).map(|m| m.1);
        cell.over_nsm = base.filter(|b| *b > 0.0).map(|b| cell.median_s / b);
    }
    let rank = |l: &str| Layout::ALL.iter().position(|x| x.to_string() == l);
    cells.sort_by_key(|c| (c.query, rank(&c.layout)));
}

fn print_report(r: &Report) {
    println!(
        "{} ({}): TPC-H SF {}, each query cold, median of {}; disk {} MB/s, {} ms per request; answers {}",
        r.preset,
        r.figure,
        r.sf,
        r.rounds,
        r.bandwidth_mb_s,
        r.latency_ms,
        if r.kit_answers { "the kit's and equal across layouts" } else { "equal across layouts" }
    );
    println!("query  layout   seconds   ÷ NSM    MB read  requests");
    for c in &r.cells {
        println!(
            "Q{:<4}  {:<6} {:>9.3}  {:>6}  {:>9.1}  {:>8}",
            c.query,
            c.layout,
            c.median_s,
            c.over_nsm.map_or("-".to_string(), |x| format!("{x:.2}")),
            c.bytes_read as f64 / 1e6,
            c.requests
        );
    }
    println!("paper: {}", r.finding);
    println!("ours:  {}", ours(&r.cells));
}

/// Each layout's range of ÷ NSM over the queries, and the queries where DSM or CSM is
/// not below NSM.
fn ours(cells: &[Cell]) -> String {
    let mut parts = Vec::new();
    for layout in &Layout::ALL[1..] {
        let name = layout.to_string();
        let ratios: Vec<(u8, f64)> = (cells.iter())
            .filter(|c| c.layout == name)
            .filter_map(|c| Some((c.query, c.over_nsm?)))
            .collect();
        let (lo, hi) = ratios.iter().fold((f64::INFINITY, 0.0f64), |(lo, hi), r| {
            (lo.min(r.1), hi.max(r.1))
        });
        if ratios.is_empty() {
            continue;
        }
        let slower: Vec<String> = (ratios.iter())
            .filter(|r| r.1 >= 1.0)
            .map(|r| format!("Q{}", r.0))
            .collect();
        let note = match slower.is_empty() {
            true => String::new(),
            false => format!(" (not faster than NSM in {})", slower.join(", ")),
        };
        parts.push(format!("{name} ÷ NSM {lo:.2}-{hi:.2}{note}"));
    }
    parts.join("; ")
}
