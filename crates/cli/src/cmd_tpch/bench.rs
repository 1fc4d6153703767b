//! `coopscan bench --preset tpch-throughput | tpch-buffer | tpch-bandwidth |
//! tpch-streams`: the 2012 paper's TPC-H throughput run (§4.2) as defined in
//! `coopscan_paper::tpch_throughput`, on the real engine over a TPC-H database.
//!
//! First the calibration (`TpchCalibration`): the default streams with every piece
//! they touch buffered, unthrottled, give the volume all queries touch (the buffer is a
//! share of it) and the CPU-bound stream time; then LRU at the default buffer,
//! unthrottled, gives the bytes from which the device's bandwidth is set to the paper's
//! balance (unless `--bandwidth-mb` gives it). Then each point of the preset's axis
//! under each policy, every query's result compared with the first run's; OPT is
//! replayed on each run's references, and the single-point preset adds Figure 18's
//! sharing potential from the PBM run's references.

use std::path::{Path, PathBuf};

use anyhow::Context;
use coopscan_bench::bandwidth::{BandwidthMbS, BYTES_PER_MB};
use coopscan_bench::report::tpch;
use coopscan_bench::tpch_throughput::{
    median_round, CalibratedOn, TpchCalibration, TpchFailure, TpchPoint, TpchReport, TpchRun,
    TpchSharing,
};
use coopscan_lab::bench_cmd::{check_writable, report_paths, BenchArgs, Simulate};
use coopscan_lab::data_dir::{data_root, dataset_dir};
use coopscan_lab::table::table_bytes;
use coopscan_paper::tpch_throughput::{
    buffer_bytes, calibrated_bandwidth, TpchAxis, TpchExperiment, DEFAULT_BUFFER_PCT,
    DEFAULT_STREAMS, OPT_TRACE_POLICY, PAPER_BANDWIDTH_MB_S, POLICIES,
};
use coopscan_peers::tpch::TpchPeer;
use coopscan_runtime::Runtime;
use coopscan_storage::write::MIB;
use coopscan_storage::Layout;
use coopscan_tpch::{stream_params, ImportOptions, Params, TpchTable};

use super::peers::{parse_engines, Peers};
use super::sharing::sharing_of_trace;
use super::simulated::SimulatedStreams;
use super::throughput::{run_policy, tokio_runtime, Conditions, PolicyRun, Results, Setup};
use crate::cmd_gen::{default_threads, generate_database};
use crate::session_args::{parse_policy, SessionArgs, SqlPolicy};

/// The chunk size of a generated database (`coopscan gen`'s default).
const CHUNK_MB: u64 = 4;
/// Most rounds of every point and policy.
const MAX_ROUNDS: usize = 100;
/// Largest calibration file read (`--calibration`): a report is a few hundred KiB.
const MAX_CALIBRATION_FILE_BYTES: u64 = 64 << 20;
/// Queries per stream: all of TPC-H's.
const QUERIES: usize = 22;
/// The policy of the calibration's run with everything buffered (any policy reads
/// each touched piece once then).
const TOUCH_POLICY: &str = "relevance";

/// Whether `name` is one of the TPC-H throughput presets.
pub fn is_preset(name: &str) -> bool {
    coopscan_paper::tpch_throughput::by_name(name).is_some()
}

/// The settings of one preset run, from the bench's flags.
struct Plan {
    experiment: &'static TpchExperiment,
    policies: Vec<SqlPolicy>,
    /// The peers run after coopscan's policies in every round (`--engines`).
    peers: Vec<TpchPeer>,
    streams: usize,
    queries: usize,
    buffer_pct: f64,
    seed: u64,
    /// Runs of every point and policy (`--standalone-runs`); the median is reported.
    rounds: usize,
    /// The x values to run (the preset's axis, or one point when a flag fixes it).
    points: Vec<f64>,
    /// Whether the points run in the simulator too, or only there.
    simulate: Option<Simulate>,
}

pub fn run(args: &BenchArgs) -> anyhow::Result<()> {
    let result = run_preset(args);
    coopscan_peers::leftovers::wait_while_stopping();
    result
}

fn run_preset(args: &BenchArgs) -> anyhow::Result<()> {
    let plan = plan(args)?;
    if !plan.peers.is_empty() {
        // What a killed run left (cgroups, a disk's readahead) is undone first; this
        // run's own changes are undone on SIGINT and SIGTERM too.
        for line in coopscan_peers::leftovers::init(&data_root().join("leftovers"))? {
            eprintln!("note: a previous run's leftover: {line}");
        }
        coopscan_lab::signals::undo_on_signal()?;
    }
    let paths = report_paths(args)?;
    check_writable(&paths.json)?;
    check_writable(&paths.html)?;
    let db = database(args)?;
    let session = SessionArgs::for_database(&db, &session_flags(args))?;
    let open = session.open_tables()?;
    if plan.simulate.is_some() {
        SimulatedStreams::check_layouts(&open)?;
    }
    // Q11's fraction and the parameters' domains follow the data, not --sf's default.
    let sf = super::database_sf(&open)?;
    let whole: u64 = open.tables.iter().map(table_bytes).sum();
    let least = Runtime::least_buffer_bytes(&open.tables)?;
    // Before the peers' setup reads every table through this process.
    let idle_rss_bytes = coopscan_bench::memory::rss_bytes();
    let peers = match plan.peers.is_empty() {
        true => None,
        false => Some(Peers::prepare(plan.peers.clone(), &open, &db)?),
    };
    let most_streams = most_streams(&plan);
    let setup = Setup {
        session: &session,
        open,
        streams: (1..=most_streams)
            .map(|s| stream_queries(plan.seed, s, sf, plan.queries))
            .collect(),
        trace: None,
        idle_rss_bytes,
    };
    let tokio = tokio_runtime()?;
    let mut results = Results::default();
    let calibration = calibrate(
        &setup,
        &plan,
        (whole, least, sf),
        args,
        &mut results,
        &tokio,
    )?;
    let simulated = match plan.simulate {
        Some(_) => Some(SimulatedStreams::measure(
            &setup,
            calibration.touched_bytes.max(least),
            &tokio,
        )?),
        None => None,
    };
    let mut points = Vec::with_capacity(plan.points.len());
    let mut sharing = None;
    let ran = Ran {
        setup: &setup,
        plan: &plan,
        peers: peers.as_ref(),
        simulated: simulated.as_ref(),
        tokio: &tokio,
    };
    for &x in &plan.points {
        let (point, its_sharing) = ran.point(&calibration, x, &mut results)?;
        points.push(point);
        sharing = sharing.or(its_sharing);
    }
    let (x_label, x_key) = plan.experiment.axis.label();
    let report = TpchReport {
        preset: plan.experiment.name.to_string(),
        source: plan.experiment.source.to_string(),
        finding: plan.experiment.finding.to_string(),
        x_label: x_label.to_string(),
        x_key: x_key.to_string(),
        sf,
        seed: plan.seed,
        queries_per_stream: plan.queries,
        calibration,
        points,
        results_checked: results.checked(),
        sharing,
    };
    print!("{}", tpch::text(&report));
    write_reports(&report, &paths.json, &paths.html)
}

/// What every point of a preset run shares.
struct Ran<'a> {
    setup: &'a Setup<'a>,
    plan: &'a Plan,
    peers: Option<&'a Peers>,
    /// The simulator's side (`--simulate`).
    simulated: Option<&'a SimulatedStreams>,
    tokio: &'a tokio::runtime::Runtime,
}

impl Ran<'_> {
    /// Point `x` under every policy, `--standalone-runs` rounds of each, the policies'
    /// order rotated per round and the peers after them (their results are checked
    /// against coopscan's); with Figure 18 from the PBM run on the single point.
    fn point(
        &self,
        calibration: &TpchCalibration,
        x: f64,
        results: &mut Results,
    ) -> anyhow::Result<(TpchPoint, Option<TpchSharing>)> {
        let (plan, policies) = (self.plan, &self.plan.policies);
        let (streams, conditions) = point_conditions(plan, calibration, x)?;
        eprintln!(
            "[point {x}] {streams} streams, buffer {:.1} MB, {:.1} MB/s",
            conditions.buffer_bytes.unwrap_or(0) as f64 / BYTES_PER_MB,
            conditions.bandwidth_mb_s.unwrap_or(0.0)
        );
        let peers = self.peers.map_or(0, |p| p.peers().len());
        let mut rounds: Vec<Vec<PolicyRun>> = policies.iter().map(|_| Vec::new()).collect();
        let mut peer_rounds: Vec<Vec<PolicyRun>> = (0..peers).map(|_| Vec::new()).collect();
        let mut failures = Vec::new();
        // `--simulate only`: no real run at the point.
        let real_rounds = match plan.simulate {
            Some(Simulate::Only) => 0,
            _ => plan.rounds,
        };
        for round in 0..real_rounds {
            let mut most_memory = conditions.buffer_bytes.unwrap_or(0);
            for i in 0..policies.len() {
                let p = (i + round) % policies.len();
                let done = run_policy(
                    self.setup,
                    streams,
                    policies[p],
                    conditions,
                    results,
                    self.tokio,
                )?;
                super::throughput::print_run(&done.run);
                most_memory = most_memory.max(done.run.memory_bytes.unwrap_or(0));
                rounds[p].push(done);
            }
            let peers_round = self.peers_round(round, streams, conditions, most_memory, results);
            for (i, outcome) in peers_round.into_iter().enumerate() {
                match outcome {
                    Ok(done) => peer_rounds[i].push(done),
                    Err(failure) => failures.push(failure),
                }
            }
        }
        let mut runs = Vec::with_capacity(policies.len());
        let mut sharing = None;
        for (policy, done) in policies.iter().zip(rounds) {
            let Some(median) = median_of(done) else {
                continue;
            };
            let wants_sharing =
                plan.experiment.axis == TpchAxis::None && policy.to_string() == OPT_TRACE_POLICY;
            if let (true, Some(trace)) = (wants_sharing, &median.trace) {
                sharing = Some(sharing_of_trace(
                    trace,
                    &median.registered,
                    OPT_TRACE_POLICY,
                ));
            }
            runs.push(median.run);
        }
        runs.extend(peer_rounds.into_iter().filter_map(median_of).map(|m| m.run));
        runs.extend(self.simulated_runs(streams, conditions)?);
        let point = TpchPoint {
            x,
            streams,
            buffer_bytes: conditions.buffer_bytes.unwrap_or(0),
            bandwidth_mb_s: conditions.bandwidth_mb_s.unwrap_or(0.0),
            runs,
            failures,
        };
        Ok((point, sharing))
    }
}

impl Ran<'_> {
    /// Every cooperative policy of the plan at the point in the simulator, when asked.
    fn simulated_runs(
        &self,
        streams: usize,
        conditions: Conditions,
    ) -> anyhow::Result<Vec<TpchRun>> {
        let Some(simulated) = self.simulated else {
            return Ok(Vec::new());
        };
        let mut runs = Vec::new();
        for policy in &self.plan.policies {
            if let SqlPolicy::Cooperative(kind) = *policy {
                let run = simulated.run(streams, kind, conditions)?;
                super::throughput::print_run(&run);
                runs.push(run);
            }
        }
        Ok(runs)
    }

    /// Every peer once at the point, given at most `most_memory` (what coopscan's runs
    /// of the round used: buffer and operators): its run, or its failure, which is
    /// reported while coopscan's runs stand.
    fn peers_round(
        &self,
        round: usize,
        streams: usize,
        conditions: Conditions,
        most_memory: u64,
        results: &mut Results,
    ) -> Vec<Result<PolicyRun, TpchFailure>> {
        let Some(peers) = self.peers else {
            return Vec::new();
        };
        let mut outcomes = Vec::with_capacity(peers.peers().len());
        for &peer in peers.peers() {
            let run = peers.run(peer, self.setup, streams, conditions, most_memory, results);
            outcomes.push(match run {
                Ok(done) => {
                    super::throughput::print_run(&done.run);
                    Ok(done)
                }
                Err(e) => {
                    eprintln!("*** {} FAILED (round {}): {e:#}", peer.name(), round + 1);
                    Err(TpchFailure {
                        engine: peer.name().to_string(),
                        round,
                        error: format!("{e:#}"),
                    })
                }
            });
        }
        outcomes
    }
}

/// The round with the median average stream time, with every round's.
fn median_of(mut done: Vec<PolicyRun>) -> Option<PolicyRun> {
    let runs: Vec<TpchRun> = done.iter().map(|d| d.run.clone()).collect();
    let all: Vec<f64> = runs.iter().map(|r| r.avg_stream_s).collect();
    let mut median = done.swap_remove(median_round(&runs)?);
    median.run.rounds_avg_stream_s = all;
    Some(median)
}

/// The preset, its policies and points, with the flags' overrides; anything the preset
/// cannot honour is an error before any work.
fn plan(args: &BenchArgs) -> anyhow::Result<Plan> {
    let experiment = coopscan_paper::tpch_throughput::by_name(&args.preset)
        .with_context(|| format!("no TPC-H preset {}", args.preset))?;
    let engines = parse_engines(&args.engines)?;
    let names: Vec<&str> = match &args.policies {
        Some(list) => list.split(',').map(str::trim).collect(),
        None => POLICIES.to_vec(),
    };
    let policies = names
        .iter()
        .map(|p| parse_policy(p).map_err(anyhow::Error::msg))
        .collect::<anyhow::Result<Vec<_>>>()
        .context("--policies")?;
    anyhow::ensure!(
        args.simulate != Some(Simulate::Only) || engines.peers.is_empty(),
        "--simulate only runs no engine: leave out --engines' peers"
    );
    let queries = args.queries.unwrap_or(QUERIES);
    anyhow::ensure!(
        (1..=QUERIES).contains(&queries),
        "--queries: 1 to {QUERIES} per stream"
    );
    let streams = args.streams.unwrap_or(DEFAULT_STREAMS);
    anyhow::ensure!(
        (1..=usize::from(super::MAX_STREAMS)).contains(&streams),
        "--streams: 1 to {}",
        super::MAX_STREAMS
    );
    anyhow::ensure!(
        (1..=MAX_ROUNDS).contains(&args.standalone_runs.unwrap_or(1)),
        "--standalone-runs: 1 to {MAX_ROUNDS} rounds of every point and policy"
    );
    let buffer_pct = args.buffer_pct.unwrap_or(DEFAULT_BUFFER_PCT);
    anyhow::ensure!(
        buffer_pct > 0.0 && buffer_pct <= 1000.0,
        "--buffer-pct must be in (0, 1000]"
    );
    // A flag that fixes the swept quantity leaves one point, as in the other presets.
    let fixed = match experiment.axis {
        TpchAxis::None => true,
        TpchAxis::BufferPct(_) => args.buffer_pct.is_some(),
        TpchAxis::BandwidthMbS(_) => args.bandwidth_mb.is_some(),
        TpchAxis::Streams(_) => args.streams.is_some(),
    };
    let points = match fixed {
        true => vec![default_x(experiment.axis, buffer_pct, streams)],
        false => experiment.axis.points(),
    };
    Ok(Plan {
        experiment,
        policies,
        peers: engines.peers,
        streams,
        queries,
        buffer_pct,
        seed: args.seed.unwrap_or(1),
        rounds: args.standalone_runs.unwrap_or(1),
        points,
        simulate: args.simulate,
    })
}

/// The default point's value on `axis`.
fn default_x(axis: TpchAxis, buffer_pct: f64, streams: usize) -> f64 {
    match axis {
        TpchAxis::BufferPct(_) => buffer_pct,
        TpchAxis::BandwidthMbS(_) => PAPER_BANDWIDTH_MB_S,
        TpchAxis::Streams(_) => streams as f64,
        TpchAxis::None => buffer_pct,
    }
}

fn most_streams(plan: &Plan) -> usize {
    match plan.experiment.axis {
        TpchAxis::Streams(_) => plan
            .points
            .iter()
            .fold(plan.streams, |m, &x| m.max(x as usize)),
        _ => plan.streams,
    }
}

/// Stream `stream`'s first `queries` queries, in its order, with its parameters.
fn stream_queries(seed: u64, stream: usize, sf: f64, queries: usize) -> Vec<Params> {
    stream_params(seed, stream, sf)
        .into_iter()
        .take(queries)
        .collect()
}

/// `--db`, or the cache's database at `--sf` in `--layout` (DSM), generated if any of
/// its tables is missing.
fn database(args: &BenchArgs) -> anyhow::Result<PathBuf> {
    match &args.db {
        Some(db) => Ok(db.clone()),
        None => generated_database(args.sf, args.layout.unwrap_or(Layout::Dsm)),
    }
}

/// The cache's TPC-H database at `sf` in `layout`, its missing tables generated.
pub(super) fn generated_database(sf: f64, layout: Layout) -> anyhow::Result<PathBuf> {
    let opts = ImportOptions {
        sf,
        layout,
        chunk_bytes: CHUNK_MB.saturating_mul(MIB),
        out_dir: dataset_dir(sf, layout, CHUNK_MB as f64),
        overwrite: false,
        threads: default_threads(),
    };
    generate_database(&TpchTable::ALL, &opts).context("generating the TPC-H database")?;
    Ok(opts.out_dir)
}

/// The bench flags a session takes: cores per query, scan workers and CPU shares (the
/// bench's default, equal, passed too: a session's own default is short-first).
fn session_flags(args: &BenchArgs) -> Vec<String> {
    let mut flags = Vec::new();
    if let Some(t) = args.query_threads {
        flags.extend(["--threads".to_string(), t.to_string()]);
    }
    if let Some(w) = args.scan_workers {
        flags.extend(["--scan-workers".to_string(), w.to_string()]);
    }
    if args.static_split {
        flags.push("--static-split".to_string());
    }
    let shares = args.cpu_shares.unwrap_or_default();
    flags.extend(["--cpu-shares".to_string(), shares.to_string()]);
    flags
}

/// The volume the default streams touch and their CPU-bound time; then the device.
fn calibrate(
    setup: &Setup,
    plan: &Plan,
    (whole, least, sf): (u64, u64, f64),
    args: &BenchArgs,
    results: &mut Results,
    tokio: &tokio::runtime::Runtime,
) -> anyhow::Result<TpchCalibration> {
    if let Some(path) = &args.calibration {
        let context = || format!("reading the calibration {}", path.display());
        let bytes = coopscan_storage::read_regular_file(path, MAX_CALIBRATION_FILE_BYTES)
            .with_context(context)?;
        let json = String::from_utf8(bytes).with_context(context)?;
        let on = CalibratedOn {
            sf,
            seed: plan.seed,
            queries_per_stream: plan.queries,
        };
        let saved = TpchCalibration::replay(&json, &path.display().to_string(), on)
            .map_err(anyhow::Error::msg)?;
        eprintln!("[calibration] replayed from {}", path.display());
        // The least buffer is these tables' own, whatever the saved run's were.
        return Ok(TpchCalibration {
            least_buffer_bytes: least,
            ..saved
        });
    }
    let everything = Conditions {
        buffer_bytes: Some(whole.max(least)),
        bandwidth_mb_s: None,
    };
    let touch = parse_policy(TOUCH_POLICY).map_err(anyhow::Error::msg)?;
    eprintln!("[calibration] every touched piece buffered, unthrottled");
    let all = run_policy(setup, plan.streams, touch, everything, results, tokio)?.run;
    let touched = all.bytes_read.max(1);
    if let Some(given) = args.bandwidth_mb {
        return Ok(TpchCalibration {
            touched_bytes: touched,
            cpu_bound_stream_s: all.avg_stream_s,
            lru_bytes: None,
            bandwidth_mb_s: given.get(),
            bandwidth_given: true,
            least_buffer_bytes: least,
        });
    }
    let lru = Conditions {
        buffer_bytes: Some(buffer_bytes(touched, plan.buffer_pct).max(least)),
        bandwidth_mb_s: None,
    };
    eprintln!("[calibration] LRU at the default buffer, unthrottled");
    let normal = parse_policy("normal").map_err(anyhow::Error::msg)?;
    let lru_run: TpchRun = run_policy(setup, plan.streams, normal, lru, results, tokio)?.run;
    let rate = calibrated_bandwidth(lru_run.bytes_read, all.avg_stream_s)
        .context("the calibration runs read nothing or took no time: is the database empty?")?;
    let mb_s = BandwidthMbS::new(rate / BYTES_PER_MB)
        .map_err(|e| anyhow::anyhow!("the calibrated bandwidth: {e}"))?;
    Ok(TpchCalibration {
        touched_bytes: touched,
        cpu_bound_stream_s: all.avg_stream_s,
        lru_bytes: Some(lru_run.bytes_read),
        bandwidth_mb_s: mb_s.get(),
        bandwidth_given: false,
        least_buffer_bytes: least,
    })
}

/// A point's streams, buffer and device.
fn point_conditions(
    plan: &Plan,
    calibration: &TpchCalibration,
    x: f64,
) -> anyhow::Result<(usize, Conditions)> {
    let (mut streams, mut pct, mut paper_mb_s) =
        (plan.streams, plan.buffer_pct, PAPER_BANDWIDTH_MB_S);
    match plan.experiment.axis {
        TpchAxis::BufferPct(_) => pct = x,
        TpchAxis::BandwidthMbS(_) => paper_mb_s = x,
        TpchAxis::Streams(_) => streams = x as usize,
        TpchAxis::None => {}
    }
    // The ratio first: at the paper's own bandwidth it is exactly 1, so the point runs
    // at exactly the calibrated bandwidth (`x * 600 / 600` is not always `x`).
    let mb_s = calibration.bandwidth_mb_s * (paper_mb_s / PAPER_BANDWIDTH_MB_S);
    let mb_s = BandwidthMbS::new(mb_s).map_err(|e| anyhow::anyhow!("point {x}: {e}"))?;
    Ok((
        streams,
        Conditions {
            buffer_bytes: Some(
                buffer_bytes(calibration.touched_bytes, pct).max(calibration.least_buffer_bytes),
            ),
            bandwidth_mb_s: Some(mb_s.get()),
        },
    ))
}

fn write_reports(report: &TpchReport, json: &Path, html: &Path) -> anyhow::Result<()> {
    let text = serde_json::to_string_pretty(report)?;
    std::fs::write(json, text).with_context(|| format!("writing {}", json.display()))?;
    std::fs::write(html, tpch::html(report))
        .with_context(|| format!("writing {}", html.display()))?;
    eprintln!("reports: {} and {}", json.display(), html.display());
    Ok(())
}
