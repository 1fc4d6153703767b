//! `coopscan sim`: run a simulation preset under several policies on virtual time and
//! print the paper-shaped table; optionally write JSON and the SVG timeline.
//!
//! ```text
//! coopscan sim --preset heterogeneous --svg hetero.svg
//! coopscan sim --preset table2 --seed 42 --json table2.json
//! coopscan sim --preset fig8 --policies relevance --out results/
//! coopscan sim --preset table4 --policies normal,relevance
//! coopscan sim --preset pbm-buffer --policies normal,pbm,relevance
//! coopscan sim --replay table2.json --table target/data/tpch-sf1-pax-4mb/lineitem
//! ```

use anyhow::Context;
use coopscan_buffer::{CpuShares, PolicyKind, Split};
use coopscan_sim::experiments::{
    bandwidth_points, buffer_points, defs, in_order_points, stream_points,
};
use coopscan_sim::{
    common_prefix, common_prefix_text, fig8, fig8_default_chunks, mixed_pool, mixed_pool_text,
    pbm_bandwidth, pbm_bandwidth_text, pbm_buffer, pbm_buffer_text, pbm_sharing, pbm_sharing_text,
    pbm_streams, pbm_streams_text, run_preset_shaped, run_sweep, svg, sweep_text, table4,
    table4_text, PresetName, QueryShape,
};
use std::path::{Path, PathBuf};

#[derive(Debug, Clone, clap::Args)]
pub struct SimArgs {
    /// Experiment: homogeneous, heterogeneous (2004 report Figs. 3-4), table2 (2007 paper
    /// Table 2), table3 (its DSM twin, 2007 paper Table 3), fig8 (scheduling cost vs
    /// number of chunks), table4 (DSM column overlap, 2007 paper Table 4), pbm-buffer
    /// (2012 paper Figure 11: I/O against the buffer size, OPT replayed on the PBM run's
    /// trace), pbm-bandwidth (Figure 12: against the disk's bandwidth), pbm-streams
    /// (Figure 13: against the number of streams), pbm-sharing (Figure 17: data wanted
    /// by 1, 2, 3, ≥ 4 scans), mixed-pool (Scans and CScans in one pool; runs its own
    /// policies) or common-prefix (2012 §2.1: scans of snapshots that share 90 % of
    /// their chunks, against one snapshot and disjoint versions).
    #[arg(long, default_value = "heterogeneous")]
    pub preset: PresetName,
    /// Policies to compare, comma separated.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "normal,attach,elevator,relevance,pbm,pbm-lru"
    )]
    pub policies: Vec<PolicyKind>,
    /// Write the results as JSON to this file.
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// Write the chunk × time timeline picture to this SVG file.
    #[arg(long)]
    pub svg: Option<PathBuf>,
    /// Write <preset>.json (and <preset>.svg) into this directory.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Seed of the random workload (table2, fig8).
    #[arg(long, default_value_t = 42)]
    pub seed: u64,
    /// Scenario presets (homogeneous, heterogeneous, table2): write each policy's
    /// piece-reference trace to DIR/<preset>-<policy>.trace, for `coopscan opt`.
    #[arg(long, value_name = "DIR")]
    pub trace: Option<PathBuf>,
    /// fig8 only: chunk counts to sweep, comma separated.
    #[arg(long, value_delimiter = ',')]
    pub chunks: Vec<u32>,
    /// table2, table3 and --replay only: workers of each query's scan, 1 to 64 (default
    /// 1, the papers' one per query; --replay: the report's), as `bench --scan-workers`
    /// runs them on the engine.
    #[arg(long)]
    pub scan_workers: Option<u16>,
    /// With --scan-workers: the 2012 paper's static split (each worker its own scan of
    /// a fixed run of chunks) instead of one scan whose workers take any ready chunk.
    #[arg(long)]
    pub static_split: bool,
    /// table2, table3 and --replay only: equal | short-first, how the queries share
    /// the cores (default equal, the papers' model; --replay: the report's); as
    /// `bench --cpu-shares` runs them on the engine.
    #[arg(long)]
    pub cpu_shares: Option<CpuShares>,
    /// Instead of a preset: replay a `coopscan bench` JSON report's own workload (Table
    /// 2's mixes over NSM/PAX) on virtual time — its queries, streams, stagger, buffer
    /// and bandwidth, with the CPU costs its calibration measured — over the chunks of
    /// --table, under --policies, with the report's scan shape unless --scan-workers or
    /// --static-split is given. Writes --json; no timeline picture.
    #[arg(long, value_name = "REPORT", requires = "table", conflicts_with_all = ["preset", "svg", "trace", "seed", "chunks", "checkpoint_every_s"])]
    pub replay: Option<PathBuf>,
    /// With --replay: the table directory the report's run read (its chunk boundaries).
    #[arg(long, value_name = "DIR", requires = "replay")]
    pub table: Option<PathBuf>,
    /// With --replay: take the CPU costs from this report's calibration (a run with
    /// --bandwidth-mb has none of its own).
    #[arg(long, value_name = "REPORT", requires = "replay")]
    pub calibration: Option<PathBuf>,
    /// With --replay: cores the simulated queries share (the report does not say how
    /// many the run had).
    #[arg(long, default_value_t = 2, requires = "replay")]
    pub cores: u32,
    /// With --replay: the device's bandwidth in MB/s instead of the report's (what the
    /// run would have done on a disk that delivers this much).
    #[arg(long, value_name = "MB_S", requires = "replay")]
    pub bandwidth_mb: Option<f64>,
    /// With --replay: every query's CPU per byte times this (0.01 to 100; default 1, the
    /// calibration's: concurrent queries may cost more than one measured alone).
    #[arg(
        long,
        value_name = "FACTOR",
        default_value_t = 1.0,
        requires = "replay"
    )]
    pub cpu_scale: f64,
    /// With --replay: milliseconds of a core the loader runs after each load before the
    /// scans see it and the device reads again, at the weight the engine's loader has
    /// beside its feeders (default none: the papers' loader, which needs no CPU).
    #[arg(long, value_name = "MS", requires = "replay")]
    pub loader_cpu_ms: Option<f64>,
    /// table2 and table3 only: checkpoint the table every SECONDS of simulated time
    /// (2012 paper §2.1, case (iv)): queries arriving from then on read a new version
    /// that shares no page with the old, which is freed once its last scan leaves.
    #[arg(long, value_name = "SECONDS")]
    pub checkpoint_every_s: Option<f64>,
}

/// Largest chunk count `--chunks` accepts: 4× Figure 8's largest point. The simulator
/// allocates per-chunk state for every scan, so the count must be bounded before it
/// runs (4294967295 used to abort on allocation).
pub const MAX_SIM_CHUNKS: u32 = 4 * 16_384;

pub fn run(args: &SimArgs) -> anyhow::Result<()> {
    if args.policies.is_empty() {
        anyhow::bail!("--policies needs at least one policy");
    }
    let scan_workers = args.scan_workers.unwrap_or(1);
    if !(1..=coopscan_buffer::MAX_WORKERS).contains(&scan_workers) {
        anyhow::bail!(
            "--scan-workers {scan_workers}: a scan has 1 to {} workers",
            coopscan_buffer::MAX_WORKERS
        );
    }
    if let Some(report) = &args.replay {
        return replay(args, report);
    }
    if args.checkpoint_every_s.is_some() && !args.preset.takes_query_shape() {
        anyhow::bail!(
            "--checkpoint-every-s: only table2 and table3 take checkpoints, not {}",
            args.preset.name()
        );
    }
    let shaped = scan_workers != 1 || args.static_split || args.cpu_shares.is_some();
    if shaped && !args.preset.takes_query_shape() {
        anyhow::bail!(
            "--scan-workers, --static-split, --cpu-shares: only table2 and table3 run their queries with several workers or CPU shares, not {}",
            args.preset.name()
        );
    }
    if let Some(bad) = args.chunks.iter().find(|&&c| c == 0 || c > MAX_SIM_CHUNKS) {
        anyhow::bail!("--chunks {bad}: each count must be in 1..={MAX_SIM_CHUNKS}");
    }
    if !args.chunks.is_empty() && args.preset != PresetName::Fig8 {
        anyhow::bail!(
            "--chunks: only the fig8 preset sweeps chunk counts; {} has its own table",
            args.preset.name()
        );
    }
    if args.trace.is_some()
        && matches!(
            args.preset,
            PresetName::Fig5
                | PresetName::Fig6
                | PresetName::Fig7
                | PresetName::Fig8
                | PresetName::Table4
                | PresetName::PbmBuffer
                | PresetName::PbmBandwidth
                | PresetName::PbmStreams
                | PresetName::PbmSharing
                | PresetName::MixedPool
        )
    {
        anyhow::bail!(
            "--trace: only the scenario presets (homogeneous, heterogeneous, table2) record traces"
        );
    }
    let (json_path, svg_path) = output_paths(args)?;
    let (text, json, picture) = if args.preset == PresetName::Fig8 {
        let counts = if args.chunks.is_empty() {
            fig8_default_chunks()?
        } else {
            args.chunks.clone()
        };
        let mut text = String::new();
        let mut reports = Vec::new();
        for &policy in &args.policies {
            let report = fig8(&counts, policy, args.seed)?;
            text.push_str(&report.to_text());
            reports.push(report);
        }
        (text, serde_json::to_string_pretty(&reports)?, None)
    } else if args.preset == PresetName::PbmBuffer {
        without_picture(
            &pbm_buffer(
                &args.policies,
                args.seed,
                &buffer_points(&defs::PBM_BUFFER)?,
            )?,
            pbm_buffer_text,
        )?
    } else if args.preset == PresetName::PbmBandwidth {
        without_picture(
            &pbm_bandwidth(
                &args.policies,
                args.seed,
                &bandwidth_points(&defs::PBM_BANDWIDTH)?.1,
            )?,
            pbm_bandwidth_text,
        )?
    } else if args.preset == PresetName::PbmStreams {
        without_picture(
            &pbm_streams(
                &args.policies,
                args.seed,
                &stream_points(&defs::PBM_STREAMS),
            )?,
            pbm_streams_text,
        )?
    } else if args.preset == PresetName::CommonPrefix {
        without_picture(&common_prefix(&args.policies)?, common_prefix_text)?
    } else if args.preset == PresetName::PbmSharing {
        without_picture(&pbm_sharing(&args.policies, args.seed)?, pbm_sharing_text)?
    } else if args.preset == PresetName::MixedPool {
        // Its own fixed policies: the mixed pool against all-Scans-under-PBM and
        // all-CScans-under-relevance on the same queries.
        let report = mixed_pool(
            args.seed,
            &buffer_points(&defs::MIXED_POOL)?,
            &in_order_points(&defs::MIXED_POOL),
        )?;
        without_picture(&report, mixed_pool_text)?
    } else if matches!(
        args.preset,
        PresetName::Fig5 | PresetName::Fig6 | PresetName::Fig7
    ) {
        let experiment = defs::by_name(args.preset.name())
            .with_context(|| format!("{} has no definition", args.preset))?;
        without_picture(
            &run_sweep(experiment, &args.policies, args.seed)?,
            sweep_text,
        )?
    } else if args.preset == PresetName::Table4 {
        without_picture(&table4(&args.policies, args.seed)?, table4_text)?
    } else {
        let shape = QueryShape {
            workers: scan_workers,
            split: match args.static_split {
                true => Split::Static,
                false => Split::Dynamic,
            },
            cpu_shares: args.cpu_shares.unwrap_or_default(),
        };
        let traced = args.trace.is_some();
        let every = args.checkpoint_every_s;
        let report =
            run_preset_shaped(args.preset, &args.policies, args.seed, traced, shape, every)?;
        if let Some(dir) = &args.trace {
            write_traces(dir, &report)?;
        }
        (
            report.to_text(),
            serde_json::to_string_pretty(&report)?,
            Some(svg::timeline_svg(&report)),
        )
    };
    println!("{text}");
    if let Some(path) = json_path {
        write(&path, &json)?;
    }
    match (svg_path, picture) {
        (Some(path), Some(picture)) => write(&path, &picture)?,
        (Some(_), None) => eprintln!(
            "note: {} has no timeline picture; --svg ignored",
            args.preset
        ),
        _ => {}
    }
    Ok(())
}

/// `--replay`: a bench report's workload under the policies, printed (and `--json`).
fn replay(args: &SimArgs, report: &Path) -> anyhow::Result<()> {
    let table = args.table.as_deref().context("--replay needs --table")?;
    let replayed = crate::sim_replay::replay(&crate::sim_replay::ReplayArgs {
        report,
        table,
        calibration: args.calibration.as_deref(),
        policies: &args.policies,
        scan_workers: args.scan_workers,
        static_split: args.static_split,
        cpu_shares: args.cpu_shares,
        cores: args.cores,
        bandwidth_mb: args.bandwidth_mb,
        cpu_scale: args.cpu_scale,
        loader_cpu_ms: args.loader_cpu_ms,
    })?;
    println!("{}", replayed.to_text());
    let json = args
        .json
        .clone()
        .or_else(|| args.out.as_ref().map(|dir| dir.join("replay.json")));
    if let Some(path) = json {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        }
        write(&path, &serde_json::to_string_pretty(&replayed)?)?;
    }
    Ok(())
}

/// The text and JSON of a preset that draws no timeline picture.
fn without_picture<R: serde::Serialize>(
    report: &R,
    text: fn(&R) -> String,
) -> anyhow::Result<(String, String, Option<String>)> {
    Ok((text(report), serde_json::to_string_pretty(report)?, None))
}

/// Explicit --json/--svg win; --out DIR fills in the ones not given.
fn output_paths(args: &SimArgs) -> anyhow::Result<(Option<PathBuf>, Option<PathBuf>)> {
    let mut json = args.json.clone();
    let mut svg = args.svg.clone();
    if let Some(dir) = &args.out {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        json.get_or_insert_with(|| dir.join(format!("{}.json", args.preset)));
        if !matches!(
            args.preset,
            PresetName::Fig5
                | PresetName::Fig6
                | PresetName::Fig7
                | PresetName::Fig8
                | PresetName::Table4
                | PresetName::PbmBuffer
                | PresetName::PbmBandwidth
                | PresetName::PbmStreams
                | PresetName::PbmSharing
                | PresetName::MixedPool
        ) {
            svg.get_or_insert_with(|| dir.join(format!("{}.svg", args.preset)));
        }
    }
    Ok((json, svg))
}

fn write(path: &Path, contents: &str) -> anyhow::Result<()> {
    std::fs::write(path, contents).with_context(|| format!("writing {}", path.display()))?;
    eprintln!("wrote {}", path.display());
    Ok(())
}

/// DIR/<preset>-<policy>.trace for every run of `report`.
fn write_traces(dir: &Path, report: &coopscan_sim::PresetReport) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    for run in &report.runs {
        let Some(trace) = &run.trace else { continue };
        let path = dir.join(format!("{}-{}.trace", report.preset, run.policy));
        let file =
            std::fs::File::create(&path).with_context(|| format!("creating {}", path.display()))?;
        coopscan_buffer::write_trace(std::io::BufWriter::new(file), trace)
            .with_context(|| format!("writing {}", path.display()))?;
        eprintln!("wrote {} ({} references)", path.display(), trace.len());
    }
    Ok(())
}
