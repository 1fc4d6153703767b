//! `coopscan bench`: the concurrent-stream benchmark of the 2007 paper (Table 2,
//! Figures 4-8) on real TPC-H data through DataFusion, every policy in one invocation.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::Context;
use coopscan_bench::calibration::{calibrate_measured, replay};
use coopscan_bench::estimate;
use coopscan_bench::report::{html, json, text};
use coopscan_bench::{
    check_stagger_s, preset, run_benchmark, BandwidthMbS, BenchInput, Calibration, Mix, Overrides,
    Params, PolicySetup, TableInfo,
};

use coopscan_bench::presets::Dataset;
use coopscan_bench::refresh::{Refresh, TPCH_REFRESH_PER_MILLE};
use coopscan_buffer::CpuShares;
use coopscan_exec::{SLOW_EXTRA_DEFAULT, SLOW_EXTRA_MAX};
use coopscan_storage::{Layout, Table};

use crate::data_dir::data_root;
use crate::engine::{resident_engine, scan_engine, DfFactory, QueryShape};
use crate::peers;
use crate::table::{
    dataset_of, projected_bytes, reference_columns, table_bytes, warn_if_not_all_admitted,
};
use coopscan_bench::BenchReport;
use coopscan_peers::Regime;

#[derive(clap::Args, Debug)]
pub struct BenchArgs {
    /// Experiment: table2, table3 (DSM), table4 (synthetic), fig5, fig6, fig7, fig8 (2007
    /// paper), pbm-buffer, pbm-streams,
    /// pbm-bandwidth or pbm-sharing (2012 paper Figures 11, 13, 12 and 17: LRU, PBM,
    /// PBM/LRU, CScans), mixed-pool (Scans and CScans in one pool, §2.3);
    /// clotho-projectivity, clotho-selectivity, clotho-point (Clotho Figures 7a, 7c and
    /// 8a over NSM, PAX, DSM and CSM; `--rows`, `--standalone-runs` rounds,
    /// `--bandwidth-mb`); tpch-throughput, tpch-buffer, tpch-bandwidth, tpch-streams
    /// (the 2012 paper's TPC-H throughput run, Figures 18, 14, 15 and 16: `--db`,
    /// `--streams`, `--queries` per stream, `--buffer-pct`, `--bandwidth-mb`,
    /// `--policies`, `--seed`); see ../shared/BENCHMARKS.md.
    #[arg(long, default_value = "table2")]
    pub preset: String,
    /// TPC-H scale factor of the lineitem table (generated into the cache if missing).
    #[arg(long, default_value_t = 1.0)]
    pub sf: f64,
    /// The tpch-* presets: the TPC-H database to run on (default: all 8 tables at
    /// --sf in --layout, DSM unless given, generated into the cache if missing).
    #[arg(long, value_name = "DIR")]
    pub db: Option<PathBuf>,
    /// Tuples of table4's synthetic relation (default: the preset's, 10 M).
    #[arg(long)]
    pub rows: Option<u64>,
    /// Storage layout: nsm, pax, dsm or csm (default: the preset's; pax, table3 dsm).
    #[arg(long)]
    pub layout: Option<Layout>,
    /// Chunk size in MB (default: the preset's, 4; fig8 sweeps it). A dataset is
    /// generated per chunk size.
    #[arg(long)]
    pub chunk_mb: Option<f64>,
    #[arg(long)]
    pub streams: Option<usize>,
    /// Queries per stream.
    #[arg(long)]
    pub queries: Option<usize>,
    /// Buffer size as a percentage of the table's chunks.
    #[arg(long)]
    pub buffer_pct: Option<f64>,
    /// Device bandwidth in MB/s, 0.001 to 1000000 (BANDWIDTH_MB_S_MIN and _MAX);
    /// default: calibrated to the paper's CPU/I/O balance.
    #[arg(long, conflicts_with = "calibration")]
    pub bandwidth_mb: Option<BandwidthMbS>,
    /// Use the calibration of a previous run's JSON report exactly (same bandwidth,
    /// same normalizers' device) instead of measuring a new one. A regular file of at
    /// most 512 MiB whose bandwidth passes --bandwidth-mb's checks.
    #[arg(long, value_name = "FILE")]
    pub calibration: Option<PathBuf>,
    /// Cores one query may use. Default 1, the paper's model: DataFusion plans one
    /// partition and the scan decodes while the operators wait, so each query keeps
    /// one core busy and concurrent queries share the machine's cores.
    #[arg(long)]
    pub query_threads: Option<usize>,
    /// Workers of each query's cooperative scan, 1 to 64 (default 1): more makes every
    /// CScan a parallel CScan of that many partitions sharing one ABM scan (2012 paper
    /// §2.2), which the buffer hands chunks to whichever is free.
    #[arg(long)]
    pub scan_workers: Option<usize>,
    /// With --scan-workers: the 2012 paper's static split (each worker its own scan of
    /// a fixed run of chunks) instead of one scan whose workers take any ready chunk.
    #[arg(long)]
    pub static_split: bool,
    /// equal | short-first: how the cores are shared among the scans decoding at once
    /// (default equal, the papers' model); short-first lowers a scan's share one nice
    /// level per doubling of the chunks it reads.
    #[arg(long)]
    pub cpu_shares: Option<CpuShares>,
    /// Standalone cold runs per query type (default 3); their median normalizes latency.
    #[arg(long)]
    pub standalone_runs: Option<usize>,
    /// Delay between stream starts in seconds, 0 to 3600 (MAX_STAGGER_S); default: the
    /// paper's 3 s scaled to the full-scan time.
    #[arg(long, value_parser = parse_stagger_s)]
    pub stagger_s: Option<f64>,
    /// Query mix, e.g. table2, FS-M, FFS-L.
    #[arg(long)]
    pub mix: Option<String>,
    #[arg(long)]
    pub seed: Option<u64>,
    /// Share of the queries, in %, that read in table order (in-order Scans beside
    /// the CScans; each query drawn with this probability, seeded). Default: the
    /// preset's, 0 (mixed-pool: 100, 0 and 50). The peers read in order anyway.
    #[arg(long, value_parser = clap::value_parser!(u32).range(0..=100))]
    pub in_order_pct: Option<u32>,
    /// Run a refresh stream beside the query streams: a pair every this many seconds
    /// (0.001 to 3600), RF1 inserting --refresh-per-mille of lineitem's tuples (copies
    /// under new order keys, after the last tuple), RF2 deleting them; the queries'
    /// tuples stay the same, so their results are still checked. coopscan's engine
    /// only; the changes go to a temporary delta log. Default: none.
    #[arg(long, value_name = "SECONDS")]
    pub refresh_every_s: Option<f64>,
    /// Tuples each RF1 inserts, per mille of the table's (default 1: TPC-H's 0.1 %).
    #[arg(long, requires = "refresh_every_s", value_name = "PER_MILLE")]
    pub refresh_per_mille: Option<f64>,
    /// Comma-separated policies: normal, attach, elevator, relevance, pbm, pbm-lru,
    /// mixed, pbm-throttle, pbm-opportunistic (default: the preset's; table2: the
    /// 2007 paper's four); `relevance/knapsack` frees DSM room by the paper's knapsack
    /// instead of its greedy loop.
    #[arg(long)]
    pub policies: Option<String>,
    /// Extra aggregates that make SLOW CPU-bound, at most 256 (SLOW_EXTRA_MAX).
    #[arg(long, default_value_t = SLOW_EXTRA_DEFAULT,
          value_parser = clap::value_parser!(u32).range(0..=i64::from(SLOW_EXTRA_MAX)))]
    pub slow_extra: u32,
    /// Write the JSON report here (default: in the report directory).
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// Write the HTML report here (default: in the report directory).
    #[arg(long)]
    pub html: Option<PathBuf>,
    /// Comma-separated engines: coopscan (every policy), duckdb, postgres; for the
    /// tpch-* presets coopscan, duckdb, datafusion-parquet (peers are set up and cached
    /// under the data directory, see docs/bench.md).
    #[arg(long, default_value = "coopscan")]
    pub engines: String,
    /// Comma-separated regimes: io (every engine on the same throttled device with a
    /// capped page cache) and cached (everything in memory, CPU bound).
    #[arg(long, default_value = "io")]
    pub regimes: String,
    /// Keep every coopscan policy's piece-reference trace of its timed run in this
    /// directory (created if missing), as `<run label>-<policy>.trace`; replay one with
    /// `coopscan opt FILE`.
    #[arg(long, value_name = "DIR")]
    pub trace: Option<PathBuf>,
    /// The tpch-* presets: also (`--simulate`) or only (`--simulate only`) run every
    /// point's policies in the simulator — the same streams, buffer, device and
    /// policies; each query's scans read off its plan and its CPU measured alone —
    /// reported as `sim:POLICY` beside the real runs.
    #[arg(long, value_enum, num_args = 0..=1, default_missing_value = "also")]
    pub simulate: Option<Simulate>,
}

/// Whether a preset's points run in the simulator too, or only there (`--simulate`).
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Simulate {
    /// Beside the real engine's runs.
    Also,
    /// Instead of them (the calibration still runs on the real engine).
    Only,
}

/// `coopscan bench`. A run stopped by SIGINT or SIGTERM ends in the signal thread
/// (`signals.rs`) once its changes to the machine are undone, not here.
pub fn run(args: &BenchArgs) -> anyhow::Result<()> {
    let result = run_bench(args);
    coopscan_peers::leftovers::wait_while_stopping();
    result
}

fn run_bench(args: &BenchArgs) -> anyhow::Result<()> {
    // What a killed run left on the machine (a server, cgroups, a disk's readahead) is
    // undone first; this run's own changes are undone on SIGINT and SIGTERM too.
    for line in coopscan_peers::leftovers::init(&data_root().join("leftovers"))? {
        eprintln!("note: a previous run's leftover: {line}");
    }
    crate::signals::undo_on_signal()?;
    anyhow::ensure!(
        args.simulate.is_none(),
        "--simulate: only the tpch-* presets (the others have `coopscan sim --preset`)"
    );
    if let Some(experiment) = coopscan_paper::clotho::by_name(&args.preset) {
        anyhow::ensure!(
            args.engines == "coopscan",
            "{}: coopscan alone (the peers have no secondary-index scan to compare)",
            args.preset
        );
        let clotho = crate::clotho::ClothoArgs {
            rows: args.rows,
            rounds: args.standalone_runs,
            bandwidth_mb_s: args.bandwidth_mb.map(|b| b.get()),
            seed: args.seed,
            chunk_mb: args.chunk_mb,
        };
        return crate::clotho::run(experiment, &clotho);
    }
    let runs = preset(&args.preset, &overrides(args)?)?;
    // A misspelt policy fails now, not after the calibration and earlier runs.
    for policy in runs
        .iter()
        .flat_map(|p| p.policies.iter().chain([&p.standalone_policy]))
    {
        crate::engine::parse_policy(policy).with_context(|| format!("--policies {policy}"))?;
    }
    // So does an engine asked for that cannot run here, or a calibration file that
    // is not one.
    let engines = peers::parse_engines(&args.engines)?;
    let regimes = peers::parse_regimes(&args.regimes)?;
    peers::check_installed(&engines)?;
    let mut calibration = args
        .calibration
        .as_deref()
        .map(replay_calibration)
        .transpose()?;
    // A run takes minutes: find out now, not after it, that a report cannot be written.
    let paths = report_paths(args)?;
    check_writable(&paths.json)?;
    check_writable(&paths.html)?;
    if let Some(dir) = &args.trace {
        std::fs::create_dir_all(dir)
            .with_context(|| format!("--trace: creating {}", dir.display()))?;
    }
    let tokio = Arc::new(
        tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()?,
    );
    let with_coopscan = engines.iter().any(|e| e == "coopscan");
    let with_peers = engines.iter().any(|e| e != "coopscan");
    let use_cgroups = with_peers && regimes.contains(&Regime::IoBound) && peers::cgroups_usable();
    let mut reports = Vec::new();
    for (index, params) in runs.iter().enumerate() {
        eprintln!("[run {}/{}] {}", index + 1, runs.len(), params.label);
        // Runs of a chunk-size sweep (fig8) each need their own dataset.
        let table_dir = dataset_of(params, args.sf)?;
        anyhow::ensure!(
            !with_peers || params.dataset == Dataset::Lineitem,
            "the peers run lineitem's queries only, not {}'s",
            params.preset
        );
        let table = Table::open(&table_dir)?;
        let shape = QueryShape {
            slow_extra: args.slow_extra,
            threads: params.query_threads,
            scan_workers: params.scan_workers,
            static_split: params.static_split,
            cpu_shares: params.cpu_shares.parse()?,
        };
        let reference = scan_engine(&table, Arc::clone(&tokio), shape)?;
        let checked = peers::CachedReference::new(&reference);
        let info = TableInfo {
            rows: table.rows(),
            bytes: table_bytes(&table),
            fast_read_bytes: projected_bytes(&table, &reference_columns(&params.mix))?,
        };
        warn_if_not_all_admitted(&table, params)?;
        if params.bandwidth_mb.is_none() && calibration.is_none() {
            calibration = Some(calibrate_device(&table, &tokio, shape, params, info)?);
        }
        if let Some(c) = &calibration {
            warn_if_other_balance(c, params);
        }
        if index == 0 {
            let bandwidth = args
                .bandwidth_mb
                .or(calibration.as_ref().map(|c| c.bandwidth_mb_s));
            let repeats = engines.len() * regimes.len();
            announce_duration(&runs, bandwidth, info.fast_read_bytes, repeats);
        }
        for &regime in &regimes {
            let mut params = params.clone();
            if engines.len() > 1 || regimes.len() > 1 {
                params.label = format!("{} · {}", params.label, regime.name());
            }
            let cached = regime == Regime::Cached;
            if cached {
                coopscan_peers::sys::warm_page_cache(table.dir())?;
            }
            let factory = DfFactory {
                table: table.clone(),
                tokio: Arc::clone(&tokio),
                slow_extra: args.slow_extra,
                cached,
            };
            let start = |setup: PolicySetup<'_>| factory.start_run(setup);
            let peers = if with_peers {
                let cache = data_root().join("peers").join(dataset_name(&table_dir));
                peers::prepare_peers(
                    &engines,
                    &peers::PeerContext {
                        table: &table,
                        cache: &cache,
                        table_bytes: info.bytes,
                        slow_extra: args.slow_extra,
                        regime,
                        use_cgroups,
                    },
                )?
            } else {
                Vec::new()
            };
            if with_peers && regime == Regime::IoBound {
                // The run's own device (a pbm-bandwidth point scales it).
                let bandwidth =
                    coopscan_bench::bench::resolve_bandwidth(&params, calibration.as_ref())?;
                let mut lines = Vec::new();
                if with_coopscan {
                    lines.push(peers::device_check(
                        "coopscan", &start, "normal", &params, bandwidth, info.rows,
                    )?);
                }
                for peer in &peers {
                    let start = |setup: PolicySetup<'_>| peer.start(setup);
                    lines.push(peers::device_check(
                        peer.name(),
                        &start,
                        peer.name(),
                        &params,
                        bandwidth,
                        info.rows,
                    )?);
                }
                println!(
                    "device check ({}):\n  {}",
                    regime.name(),
                    lines.join("\n  ")
                );
            }
            let mut report: Option<BenchReport> = None;
            if with_coopscan {
                let input = BenchInput {
                    params: &params,
                    table: info,
                    calibration: calibration.clone(),
                    factory: &start,
                    reference: &checked,
                    progress: true,
                    trace_dir: args.trace.as_deref(),
                };
                report = Some(
                    run_benchmark(&input)
                        .with_context(|| format!("benchmark run {}", params.label))?,
                );
            }
            for peer in &peers {
                let r = peers::run_peer(peer, &params, info, calibration.clone(), &checked)?;
                match report.as_mut() {
                    Some(main) => peers::merge(main, r),
                    None => report = Some(r),
                }
            }
            let Some(mut report) = report else {
                continue;
            };
            if cached {
                // The stagger came from the calibrated bandwidth; nothing was throttled.
                report.bandwidth_mb_s = None;
            }
            print!("{}", text::render(&report));
            reports.push(report);
        }
    }
    // A preset's sweep (fig5-fig8): its tables across the runs, after the last run.
    print!("{}", text::render_sweep(&reports));
    write_reports(&paths, &reports)
}

/// `--stagger-s`: a number of seconds within `coopscan_bench::MAX_STAGGER_S`.
fn parse_stagger_s(s: &str) -> Result<f64, String> {
    let seconds: f64 = s
        .trim()
        .parse()
        .map_err(|e| format!("{s:?} is not a number of seconds: {e}"))?;
    check_stagger_s(seconds).map_err(|e| e.to_string())
}

/// Most concurrent streams (one thread each) and queries per stream `bench` accepts:
/// far beyond the paper's 32 streams × 4 queries, low enough that a typo cannot spawn
/// millions of threads or plan billions of queries.
pub const MAX_STREAMS: usize = 1024;
pub const MAX_QUERIES_PER_STREAM: usize = 10_000;

fn overrides(args: &BenchArgs) -> anyhow::Result<Overrides> {
    if let Some(n) = args.streams {
        anyhow::ensure!(
            (1..=MAX_STREAMS).contains(&n),
            "--streams must be in 1..={MAX_STREAMS}"
        );
    }
    if let Some(n) = args.queries {
        anyhow::ensure!(
            (1..=MAX_QUERIES_PER_STREAM).contains(&n),
            "--queries must be in 1..={MAX_QUERIES_PER_STREAM}"
        );
    }
    let mix = args
        .mix
        .as_deref()
        .map(str::parse::<Mix>)
        .transpose()
        .map_err(|e| anyhow::anyhow!("--mix: {e}"))?;
    let policies = args
        .policies
        .as_ref()
        .map(|p| p.split(',').map(|s| s.trim().to_string()).collect());
    Ok(Overrides {
        streams: args.streams,
        queries_per_stream: args.queries,
        buffer_pct: args.buffer_pct,
        chunk_mb: args.chunk_mb,
        bandwidth_mb: args.bandwidth_mb,
        stagger_s: args.stagger_s,
        mix,
        seed: args.seed,
        policies,
        standalone_runs: args.standalone_runs,
        query_threads: args.query_threads,
        scan_workers: args.scan_workers,
        static_split: args.static_split.then_some(true),
        cpu_shares: args.cpu_shares.map(|s| s.to_string()),
        layout: args.layout.map(|l| l.to_string()),
        synthetic_rows: args.rows,
        in_order_pct: args.in_order_pct,
        refresh: args.refresh_every_s.map(|every_s| Refresh {
            every_s,
            per_mille: args.refresh_per_mille.unwrap_or(TPCH_REFRESH_PER_MILLE),
        }),
    })
}

/// A calibration replayed from a run of another experiment keeps that experiment's
/// balance (Table 2's 1.75 in a Table 3 run, say): allowed, but said.
fn warn_if_other_balance(c: &Calibration, params: &Params) {
    let (theirs, ours) = (
        c.input.slow_cpu_over_fast_read,
        params.slow_cpu_over_fast_read,
    );
    if (theirs - ours).abs() > BALANCE_TOLERANCE * ours {
        eprintln!(
            "warning: {}: the calibration recreates S-100 CPU = {theirs:.2} × F-100's read, \
             this preset's paper {ours:.2} ×",
            params.label
        );
    }
}

/// Relative difference between two balances that is still the same experiment.
const BALANCE_TOLERANCE: f64 = 0.01;

/// Says how long the whole preset should take before its first run starts (a rough
/// model, `coopscan_bench::estimate`, the stagger included); peers and extra regimes
/// repeat the workload.
fn announce_duration(
    runs: &[Params],
    bandwidth: Option<BandwidthMbS>,
    fast_bytes: u64,
    repeats: usize,
) {
    let Some(bandwidth) = bandwidth else {
        return;
    };
    let read_s = bandwidth.read_seconds(fast_bytes);
    let seconds = estimate::preset_seconds(runs, read_s) * repeats as f64;
    eprintln!(
        "{} run(s); expect roughly {} (a full read takes {read_s:.2} s at {bandwidth:.0} MB/s)",
        runs.len(),
        estimate::describe(seconds)
    );
}

/// The dataset directory's name (`tpch-sf1-pax-4mb`): the peers' cache key.
fn dataset_name(table_dir: &Path) -> String {
    table_dir.parent().and_then(|p| p.file_name()).map_or_else(
        || "dataset".to_string(),
        |n| n.to_string_lossy().into_owned(),
    )
}

/// Measures F-100 and S-100 with the table resident in a buffer of its own size (the
/// timed runs' CScan path, minus the loads), several times, and picks the bandwidth
/// that gives the paper's CPU/I/O balance.
fn calibrate_device(
    table: &Table,
    tokio: &Arc<tokio::runtime::Runtime>,
    shape: QueryShape,
    params: &Params,
    info: TableInfo,
) -> anyhow::Result<Calibration> {
    eprintln!("calibrating: F-100 and S-100 on the resident table, median of 3 after a warm-up …");
    let (engine, runtime) = resident_engine(table, Arc::clone(tokio), shape)?;
    let calibration = calibrate_measured(&engine, info, params.slow_cpu_over_fast_read)?;
    // The warm-up loads the table once; anything beyond was a load inside a measured
    // run, whose checksum work would then count as query CPU.
    let read = runtime.device_stats().bytes;
    if read > info.bytes {
        eprintln!(
            "warning: calibration read {read} bytes, more than the table's {}: the measured \
             runs were not all on resident data",
            info.bytes
        );
    }
    if let Some(s) = &calibration.samples {
        eprintln!(
            "calibration: F-100 CPU {} s (wall {}), S-100 CPU {} s (wall {}) -> {:.0} MB/s; {}",
            s.fast_cpu_s.describe(2),
            s.fast_wall_s.describe(2),
            s.slow_cpu_s.describe(2),
            s.slow_wall_s.describe(2),
            calibration.bandwidth_mb_s,
            calibration.note
        );
    }
    Ok(calibration)
}

/// Largest report `--calibration` reads: a sweep's report with every load and query
/// run is tens of MB; anything far larger is not one.
pub const MAX_CALIBRATION_FILE_BYTES: u64 = 512 << 20;

/// `--calibration FILE`: a previous run's calibration, used as it was. Read as the
/// manifest loader reads a manifest (`coopscan_storage::read_regular_file`): a regular
/// file, at most [`MAX_CALIBRATION_FILE_BYTES`]. Its length alone was checked before,
/// and `/dev/zero` (length 0) grew the process to 24 GB; a FIFO blocked forever.
fn replay_calibration(path: &Path) -> anyhow::Result<Calibration> {
    let context = || format!("reading the calibration {}", path.display());
    let bytes = coopscan_storage::read_regular_file(path, MAX_CALIBRATION_FILE_BYTES)
        .with_context(context)?;
    let json = String::from_utf8(bytes).with_context(context)?;
    let calibration = replay(&json, &path.display().to_string())?;
    eprintln!(
        "calibration: replayed from {}: {:.1} MB/s",
        path.display(),
        calibration.bandwidth_mb_s
    );
    Ok(calibration)
}

/// Where the JSON and HTML reports go.
pub struct ReportPaths {
    pub json: PathBuf,
    pub html: PathBuf,
}

/// Explicit --json/--html, else the report directory of the preset (created here).
pub fn report_paths(args: &BenchArgs) -> anyhow::Result<ReportPaths> {
    let dir = data_root().join("reports").join(&args.preset);
    if args.json.is_none() || args.html.is_none() {
        std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    Ok(ReportPaths {
        json: args
            .json
            .clone()
            .unwrap_or_else(|| dir.join(format!("{}.json", args.preset))),
        html: args
            .html
            .clone()
            .unwrap_or_else(|| dir.join(format!("{}.html", args.preset))),
    })
}

/// Opens `path` for appending (creating it if needed, removed again) without
/// changing an existing file: fails now if the report could not be written later.
pub fn check_writable(path: &Path) -> anyhow::Result<()> {
    let existed = path.exists();
    std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(path)
        .with_context(|| format!("cannot write the report {}", path.display()))?;
    if !existed {
        let _ = std::fs::remove_file(path);
    }
    Ok(())
}

fn write_reports(
    paths: &ReportPaths,
    reports: &[coopscan_bench::BenchReport],
) -> anyhow::Result<()> {
    let (json_path, html_path) = (&paths.json, &paths.html);
    std::fs::write(json_path, json::preset_to_json(reports)?)
        .with_context(|| format!("writing {}", json_path.display()))?;
    std::fs::write(html_path, html::render(reports))
        .with_context(|| format!("writing {}", html_path.display()))?;
    println!(
        "report: {}\njson:   {}",
        html_path.display(),
        json_path.display()
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Args;

    /// The help states the bounds the code enforces (clap's doc comments cannot
    /// interpolate the constants, so this keeps them together).
    #[test]
    fn the_help_states_every_bound() {
        let mut command = BenchArgs::augment_args(clap::Command::new("bench"));
        let help = command.render_long_help().to_string();
        let bounds = [
            ("--slow-extra", SLOW_EXTRA_MAX.to_string()),
            ("--stagger-s", coopscan_bench::MAX_STAGGER_S.to_string()),
            (
                "--bandwidth-mb",
                coopscan_bench::BANDWIDTH_MB_S_MIN.to_string(),
            ),
            (
                "--bandwidth-mb",
                coopscan_bench::BANDWIDTH_MB_S_MAX.to_string(),
            ),
            (
                "--calibration",
                format!("{} MiB", MAX_CALIBRATION_FILE_BYTES >> 20),
            ),
        ];
        for (flag, bound) in bounds {
            let text = help
                .split("\n\n")
                .find(|paragraph| paragraph.trim_start().starts_with(flag))
                .unwrap_or_else(|| panic!("no help for {flag}: {help}"));
            assert!(text.contains(&bound), "{flag} must state {bound}: {text}");
        }
    }

    /// The benchmark's bandwidth floor is the device's: a bandwidth the bench accepts
    /// always makes a device.
    #[test]
    fn the_benchs_bandwidth_floor_is_the_devices() {
        assert_eq!(
            coopscan_bench::BANDWIDTH_MB_S_MIN,
            coopscan_storage::device::BANDWIDTH_MB_S_MIN
        );
        for mb_s in [
            coopscan_bench::BANDWIDTH_MB_S_MIN,
            coopscan_bench::BANDWIDTH_MB_S_MAX,
        ] {
            let b = BandwidthMbS::new(mb_s).expect("in range");
            assert!(coopscan_storage::device::Bandwidth::mb_per_s(b.get()).is_ok());
        }
    }

    #[test]
    fn stagger_flags_parse_within_the_bound_only() {
        assert_eq!(parse_stagger_s("0"), Ok(0.0));
        assert_eq!(parse_stagger_s(" 3600 "), Ok(3600.0));
        for bad in ["3600.5", "1e12", "1e20", "-1", "NaN", "inf", "soon"] {
            assert!(parse_stagger_s(bad).is_err(), "{bad}");
        }
    }
}
