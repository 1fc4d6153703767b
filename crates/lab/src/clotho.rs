//! `coopscan bench --preset clotho-projectivity | clotho-selectivity | clotho-point`:
//! Clotho's microbenchmarks (`coopscan_paper::clotho`) on the real engine, over the
//! synthetic relation in NSM, PAX, DSM and CSM. Each measurement is one query (or, for
//! point queries, [`POINT_QUERIES`] of them) in a fresh session on a fresh device, read
//! with O_DIRECT so every run is cold, on the emulated disk of the paper's era unless
//! `--bandwidth-mb` says otherwise; rounds alternate the layouts; medians are printed
//! beside the paper's finding. Every answer must equal the first layout's, or the run
//! fails naming the query.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use coopscan_exec::datafusion::arrow::util::pretty::pretty_format_batches;
use coopscan_exec::{
    query_session, query_session_config, run_sql, CoopTable, IndexScans, ScanMode,
};
use coopscan_paper::clotho::{
    selection_bound, ClothoExperiment, ClothoQuery, ATTRIBUTES, BANDWIDTH_MB_S, LATENCY_MS,
    POINT_QUERIES, ROWS, SELECTIVITY_PAYLOAD, VALUE_RANGE,
};
use coopscan_paper::table4::attribute_name;
use coopscan_storage::device::{Bandwidth, Device, DeviceConfig};
use coopscan_storage::index::{build_index, SecondaryIndex};
use coopscan_storage::{Layout, Table};

use crate::synthetic::{ensure_synthetic, SyntheticSpec, SYNTHETIC_SEED};

/// What `coopscan bench`'s flags say of a Clotho run (`None`: the experiment's own).
#[derive(Clone, Copy, Debug, Default)]
pub struct ClothoArgs {
    pub rows: Option<u64>,
    /// `--standalone-runs`: rounds over the layouts.
    pub rounds: Option<usize>,
    pub bandwidth_mb_s: Option<f64>,
    pub seed: Option<u64>,
    pub chunk_mb: Option<f64>,
}

/// Rounds when `--standalone-runs` does not say.
const DEFAULT_ROUNDS: usize = 3;
/// The indexed attribute: `a`.
const KEY: usize = 0;

/// How a measurement reads: a scan, or through the index of `a`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    SScan,
    SiScan,
}

impl Mode {
    fn name(self) -> &'static str {
        match self {
            Mode::SScan => "S-scan",
            Mode::SiScan => "SI-scan",
        }
    }

    fn index_scans(self) -> IndexScans {
        match self {
            Mode::SScan => IndexScans::Never,
            Mode::SiScan => IndexScans::Always,
        }
    }
}

/// One measurement's median and what it read.
struct Cell {
    point: f64,
    layout: Layout,
    mode: Mode,
    seconds: Vec<f64>,
    bytes: u64,
    requests: u64,
}

/// Runs `experiment` as `args` scale it, printing its table.
pub fn run(experiment: &ClothoExperiment, args: &ClothoArgs) -> anyhow::Result<()> {
    let rows = args.rows.unwrap_or(ROWS);
    anyhow::ensure!(rows > 0, "--rows must be positive");
    let rounds = args.rounds.unwrap_or(DEFAULT_ROUNDS).max(1);
    let config = device_config(args)?;
    let tables = tables(experiment, args, rows)?;
    let tokio = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let modes: &[Mode] = match experiment.query {
        ClothoQuery::Projectivity => &[Mode::SScan],
        ClothoQuery::Selectivity => &[Mode::SScan, Mode::SiScan],
        ClothoQuery::Point => &[Mode::SiScan],
    };
    let keys = match experiment.query {
        ClothoQuery::Point => tokio.block_on(point_keys(&tables[0].1, rows))?,
        _ => Vec::new(),
    };
    let mut cells = Vec::new();
    for &point in experiment.points {
        let sql = queries(experiment.query, point, &keys);
        let mut answer: Option<String> = None;
        let mut these: Vec<Cell> = Vec::new();
        for round in 0..rounds {
            // Alternate the layouts' order, so no layout always runs first.
            for i in 0..tables.len() {
                let (layout, table) = &tables[(i + round) % tables.len()];
                for &mode in modes {
                    let (secs, bytes, requests, got) =
                        tokio.block_on(measure(table, &config, mode, &sql))?;
                    let want = answer.get_or_insert_with(|| got.clone());
                    anyhow::ensure!(
                        *want == got,
                        "{} at {point}: {layout} {} answered differently:\n{got}\nnot\n{want}",
                        experiment.name,
                        mode.name()
                    );
                    let at = these
                        .iter()
                        .position(|c| c.layout == *layout && c.mode == mode);
                    match at {
                        Some(at) => these[at].seconds.push(secs),
                        None => these.push(Cell {
                            point,
                            layout: *layout,
                            mode,
                            seconds: vec![secs],
                            bytes,
                            requests,
                        }),
                    }
                }
            }
        }
        eprintln!("{} {point}: done", experiment.name);
        cells.extend(these);
    }
    print_report(experiment, rows, rounds, &config, &cells);
    Ok(())
}

/// The emulated disk: `--bandwidth-mb` (default the paper's era's), 4 ms a request.
fn device_config(args: &ClothoArgs) -> anyhow::Result<DeviceConfig> {
    let mb_s = args.bandwidth_mb_s.unwrap_or(BANDWIDTH_MB_S);
    let bandwidth = Bandwidth::mb_per_s(mb_s).map_err(|e| anyhow::anyhow!("{e}"))?;
    Ok(DeviceConfig {
        bandwidth: Some(bandwidth),
        latency_per_request: Duration::from_secs_f64(LATENCY_MS / 1000.0),
        ..DeviceConfig::default()
    })
}

/// The relation in every layout (generated once into the data directory), with the
/// index of `a` where the experiment reads through it.
fn tables(
    experiment: &ClothoExperiment,
    args: &ClothoArgs,
    rows: u64,
) -> anyhow::Result<Vec<(Layout, Table)>> {
    let setup = Device::new(DeviceConfig::default());
    Layout::ALL
        .iter()
        .map(|&layout| {
            let spec = SyntheticSpec {
                rows,
                columns: ATTRIBUTES,
                seed: args.seed.unwrap_or(SYNTHETIC_SEED),
                layout,
                chunk_mb: args.chunk_mb.unwrap_or(4.0),
            };
            let dir: PathBuf = ensure_synthetic(&spec, None, false)?;
            let table = Table::open(&dir).with_context(|| format!("{}", dir.display()))?;
            let indexed = matches!(SecondaryIndex::open(&table, KEY), Ok(Some(_)));
            if experiment.query != ClothoQuery::Projectivity && !indexed {
                eprintln!("{layout}: building the index of {}", attribute_name(KEY));
                build_index(&table, &setup, KEY)?;
            }
            Ok((layout, table))
        })
        .collect()
}

/// The statements of one measurement at `point`.
fn queries(query: ClothoQuery, point: f64, keys: &[i64]) -> Vec<String> {
    let first = |k: usize| (0..k).map(attribute_name).collect::<Vec<_>>();
    let sums = |k: usize| {
        first(k)
            .iter()
            .map(|a| format!("sum({a})"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let k = (point as usize).clamp(1, ATTRIBUTES);
    match query {
        ClothoQuery::Projectivity => vec![format!("SELECT count(*), {} FROM t", sums(k))],
        ClothoQuery::Selectivity => vec![format!(
            "SELECT count(*), {} FROM t WHERE {} < {}",
            sums(SELECTIVITY_PAYLOAD),
            attribute_name(KEY),
            selection_bound(point)
        )],
        ClothoQuery::Point => keys
            .iter()
            .map(|v| {
                let payload = first(k).join(", ");
                format!(
                    "SELECT {payload} FROM t WHERE {} = {v}",
                    attribute_name(KEY)
                )
            })
            .collect(),
    }
}

/// The keys of [`POINT_QUERIES`] records spread over the relation (read once, untimed).
async fn point_keys(table: &Table, rows: u64) -> anyhow::Result<Vec<i64>> {
    let device = Arc::new(Device::new(DeviceConfig::default()));
    let ctx = session(table, device, Mode::SScan)?;
    let step = (rows / POINT_QUERIES as u64).max(1);
    let wanted: Vec<String> = (0..POINT_QUERIES as u64)
        .map(|i| ((i * step + step / 2) % rows).to_string())
        .collect();
    let sql = format!(
        "SELECT {} FROM t WHERE _rowid IN ({}) ORDER BY _rowid",
        attribute_name(KEY),
        wanted.join(", ")
    );
    let batches = run_sql(&ctx, &sql).await?;
    let text = pretty_format_batches(&batches)?.to_string();
    let keys: Vec<i64> = text
        .lines()
        .filter_map(|l| l.trim_matches(|c| c == '|' || c == ' ').parse().ok())
        .collect();
    anyhow::ensure!(!keys.is_empty(), "no keys read for the point queries");
    anyhow::ensure!(
        keys.iter().all(|&k| (0..VALUE_RANGE as i64).contains(&k)),
        "a key outside the relation's values"
    );
    Ok(keys)
}

/// A session reading `table` through `device` as `mode` says.
fn session(
    table: &Table,
    device: Arc<Device>,
    mode: Mode,
) -> anyhow::Result<coopscan_exec::datafusion::prelude::SessionContext> {
    let config = query_session_config(1).with_extension(Arc::new(mode.index_scans()));
    let ctx = query_session(config);
    let provider = CoopTable::new(table.clone(), device, ScanMode::Scan)?;
    ctx.register_table("t", Arc::new(provider))?;
    Ok(ctx)
}

/// Runs `sql` cold in a fresh session on a fresh device: seconds, bytes and requests
/// read, and the answers as text.
async fn measure(
    table: &Table,
    config: &DeviceConfig,
    mode: Mode,
    sql: &[String],
) -> anyhow::Result<(f64, u64, u64, String)> {
    let device = Arc::new(Device::new(config.clone()));
    let ctx = session(table, Arc::clone(&device), mode)?;
    let start = Instant::now();
    let mut answers = String::new();
    for statement in sql {
        let batches = run_sql(&ctx, statement)
            .await
            .with_context(|| format!("running {statement}"))?;
        answers.push_str(&pretty_format_batches(&batches)?.to_string());
    }
    let seconds = start.elapsed().as_secs_f64();
    let stats = device.stats();
    Ok((seconds, stats.bytes, stats.requests, answers))
}

fn median(values: &[f64]) -> f64 {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn print_report(
    experiment: &ClothoExperiment,
    rows: u64,
    rounds: usize,
    config: &DeviceConfig,
    cells: &[Cell],
) {
    let point_name = match experiment.query {
        ClothoQuery::Selectivity => "selected %",
        _ => "attributes",
    };
    println!(
        "{} ({}): {rows} tuples × {ATTRIBUTES} attributes, cold, median of {rounds}; disk {:?} per request, {}",
        experiment.name,
        experiment.figure,
        config.latency_per_request,
        config.bandwidth.map_or("unthrottled".into(), |b| format!("{b:?}"))
    );
    println!("{point_name:>10}  layout  mode      seconds   ÷ NSM     MB read  requests");
    for cell in cells {
        let nsm = cells
            .iter()
            .find(|c| c.point == cell.point && c.mode == cell.mode && c.layout == Layout::Nsm)
            .map_or(f64::NAN, |c| median(&c.seconds));
        let secs = median(&cell.seconds);
        println!(
            "{:>10}  {:<6}  {:<8} {:>8.3}  {:>6.2}  {:>10.1}  {:>8}",
            cell.point,
            cell.layout.to_string(),
            cell.mode.name(),
            secs,
            secs / nsm,
            cell.bytes as f64 / 1e6,
            cell.requests
        );
    }
    println!("paper: {}", experiment.finding);
}
