//! `coopscan sim --replay REPORT --table DIR`: a `coopscan bench` run's own queries on
//! virtual time (`coopscan_sim::replay_workload`), so a comparison the real engine made
//! can be repeated deterministically. Reads the report's queries, buffer, bandwidth,
//! stagger and scan shape, its calibration's CPU costs (or another report's), and the
//! chunk boundaries of the table it ran over.
//!
//! ```text
//! coopscan sim --replay table2.json --table target/data/tpch-sf1-pax-4mb/lineitem \
//!     --policies relevance --scan-workers 2 --static-split
//! ```

use anyhow::{bail, Context};
use coopscan_bench::bandwidth::{BandwidthMbS, BYTES_PER_MB};
use coopscan_buffer::{CpuShares, PolicyKind, Split, NICE_STEP_WEIGHT};
use coopscan_sim::presets::run_policies;
use coopscan_sim::{
    replay_workload, shaped_run, LoaderCpu, PresetReport, QueryShape, ReplayQuery, ReplaySetup,
};
use coopscan_storage::chunk_map::chunk_range;
use coopscan_storage::device::FEEDER_NICER_BY;
use coopscan_storage::Table;
use serde_json::Value;
use std::path::Path;

/// Largest report `--replay` and `--calibration` read: a Table 2 report is ~150 KB.
const MAX_REPORT_BYTES: u64 = 64 << 20;

/// What the replay takes from the command line besides the report.
pub struct ReplayArgs<'a> {
    pub report: &'a Path,
    pub table: &'a Path,
    pub calibration: Option<&'a Path>,
    pub policies: &'a [PolicyKind],
    /// `None`: the report's.
    pub scan_workers: Option<u16>,
    pub static_split: bool,
    /// `None`: the report's.
    pub cpu_shares: Option<CpuShares>,
    pub cores: u32,
    /// `None`: the report's.
    pub bandwidth_mb: Option<f64>,
    /// Multiplies every query's CPU per byte.
    pub cpu_scale: f64,
    /// The loader's turn on a core after each load (`None`: it needs none).
    pub loader_cpu_ms: Option<f64>,
}

/// The longest `--loader-cpu-ms` takes: far beyond any read of a chunk.
const MAX_LOADER_CPU_MS: f64 = 1000.0;

/// The engine's loader as the simulator's: `ms` of a core per load, at the weight CFS
/// gives it beside feeders `FEEDER_NICER_BY` nice levels lower.
fn loader_cpu(ms: f64) -> anyhow::Result<LoaderCpu> {
    if !(0.0..=MAX_LOADER_CPU_MS).contains(&ms) {
        bail!("--loader-cpu-ms {ms}: milliseconds in 0..={MAX_LOADER_CPU_MS}");
    }
    Ok(LoaderCpu {
        s_per_load: ms / 1e3,
        weight: NICE_STEP_WEIGHT.powi(FEEDER_NICER_BY),
    })
}

/// The widest `--cpu-scale` takes: beyond it the run is no longer the report's.
const CPU_SCALE: std::ops::RangeInclusive<f64> = 0.01..=100.0;

/// The replayed run, as the simulator's preset report ("replay").
pub fn replay(args: &ReplayArgs) -> anyhow::Result<PresetReport> {
    let report = read_json(args.report)?;
    let calibration = match args.calibration {
        Some(path) => read_json(path)?,
        None => report.clone(),
    };
    let table = Table::open(args.table)
        .with_context(|| format!("opening the table {}", args.table.display()))?;
    if !CPU_SCALE.contains(&args.cpu_scale) {
        bail!(
            "--cpu-scale {}: a factor in {}..={}",
            args.cpu_scale,
            CPU_SCALE.start(),
            CPU_SCALE.end()
        );
    }
    let loader = args.loader_cpu_ms.map(loader_cpu).transpose()?;
    let (mut setup, mut queries) = replay_input(&report, &calibration, &table, args.cores)?;
    if let Some(mb_s) = args.bandwidth_mb {
        setup.bytes_per_s = BandwidthMbS::new(mb_s)?.get() * BYTES_PER_MB;
    }
    for q in &mut queries {
        q.cpu_s_per_byte *= args.cpu_scale;
    }
    let shape = shape(
        &report,
        args.scan_workers,
        args.static_split,
        args.cpu_shares,
    )?;
    let (cfg, workload) = replay_workload(&setup, &queries)?;
    let (mut cfg, workload) = shaped_run(cfg, workload, shape);
    cfg.cpu.loader = loader;
    Ok(run_policies(
        "replay",
        0,
        &cfg,
        &workload,
        args.policies,
        true,
    )?)
}

fn read_json(path: &Path) -> anyhow::Result<Value> {
    let len = std::fs::metadata(path)
        .with_context(|| format!("reading {}", path.display()))?
        .len();
    if len > MAX_REPORT_BYTES {
        bail!(
            "{}: {len} bytes, more than a report's {MAX_REPORT_BYTES}",
            path.display()
        );
    }
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    serde_json::from_str(&text).with_context(|| format!("{} is not JSON", path.display()))
}

/// The setup and queries of `report` over `table`, with `calibration`'s CPU costs.
fn replay_input(
    report: &Value,
    calibration: &Value,
    table: &Table,
    cores: u32,
) -> anyhow::Result<(ReplaySetup, Vec<ReplayQuery>)> {
    let params = &report["parameters"];
    if params["layout"].as_str() == Some("dsm") {
        bail!("--replay takes NSM/PAX runs (Table 2's); this report ran over DSM");
    }
    let layout = params["layout"].as_str().unwrap_or("pax");
    if layout != table.layout().to_string() {
        bail!(
            "the report ran over a {layout} table; {} is {} (its chunks differ)",
            table.dir().display(),
            table.layout()
        );
    }
    let rows = number(&report["table"]["rows"], "table.rows")? as u64;
    if rows != table.rows() {
        bail!(
            "the report ran over a table of {rows} rows; {} has {}",
            table.dir().display(),
            table.rows()
        );
    }
    let cpu = CpuCosts::from_calibration(calibration)?;
    let starts = table.chunk_row_starts();
    let setup = ReplaySetup {
        chunk_count: u32::try_from(starts.len()).context("more chunks than a replay takes")?,
        table_bytes: number(&report["table"]["bytes"], "table.bytes")? as u64,
        buffer_pct: number(&params["buffer_pct"], "parameters.buffer_pct")?,
        bytes_per_s: number(&report["bandwidth_mb_s"], "bandwidth_mb_s")? * BYTES_PER_MB,
        stagger_s: number(&report["stagger_s"], "stagger_s")?,
        cores,
    };
    let queries = first_policy(report)?["query_runs"]
        .as_array()
        .context("the report has no query_runs")?
        .iter()
        .map(|run| replay_query(run, &cpu, starts, rows))
        .collect::<anyhow::Result<Vec<_>>>()?;
    Ok((setup, queries))
}

/// The queries of any policy: a report's policies all ran the same workload.
fn first_policy(report: &Value) -> anyhow::Result<&Value> {
    let policies = report["policies"]
        .as_object()
        .context("the report has no policies (is it a `coopscan bench` JSON report?)")?;
    policies.values().next().context("the report ran no policy")
}

/// One query run of the report, its rows mapped to the chunks of a table of `rows` rows
/// whose chunks start at `starts`.
fn replay_query(
    run: &Value,
    cpu: &CpuCosts,
    starts: &[u64],
    rows: u64,
) -> anyhow::Result<ReplayQuery> {
    let kind = run["query_type"]
        .as_str()
        .context("a query run without query_type")?;
    if run["in_order"].as_bool() == Some(true) {
        bail!("--replay takes CScans only; the report has in-order Scans (--in-order-pct)");
    }
    let cpu_s_per_byte = match kind.split_once('-') {
        Some(("F", _)) => cpu.fast_s_per_byte,
        Some(("S", _)) => cpu.slow_s_per_byte,
        _ => bail!("--replay takes FAST and SLOW queries (Table 2's mixes), not {kind}"),
    };
    let index = |key: &str| -> anyhow::Result<u64> {
        run[key]
            .as_u64()
            .with_context(|| format!("a query run without {key}"))
    };
    let read = index("row_start")?..index("row_end")?;
    if read.is_empty() || read.end > rows {
        bail!("a query run reads rows {read:?} of a table of {rows}");
    }
    let chunks = chunk_range(starts, rows, read);
    Ok(ReplayQuery {
        stream: index("stream")? as usize,
        index: index("index")? as usize,
        kind: kind.to_string(),
        // Within `starts.len()`, which fits a u32 (checked by the caller).
        chunks: chunks.start as u32..chunks.end as u32,
        cpu_s_per_byte,
    })
}

/// One core's CPU seconds per byte of the table, FAST (Q6) and SLOW (Q1 and more), as
/// the bench's calibration measured them.
struct CpuCosts {
    fast_s_per_byte: f64,
    slow_s_per_byte: f64,
}

impl CpuCosts {
    fn from_calibration(doc: &Value) -> anyhow::Result<CpuCosts> {
        let input = &doc["calibration"]["input"];
        if input.is_null() {
            bail!(
                "the report has no calibration (a run with --bandwidth-mb): give \
                 --calibration with a calibrated report of the same table"
            );
        }
        let bytes = number(
            &input["fast_read_bytes"],
            "calibration.input.fast_read_bytes",
        )?;
        let fast = number(&input["fast_cpu_s"], "calibration.input.fast_cpu_s")?;
        let slow = number(&input["slow_cpu_s"], "calibration.input.slow_cpu_s")?;
        if bytes <= 0.0 {
            bail!("calibration.input.fast_read_bytes: {bytes}");
        }
        Ok(CpuCosts {
            fast_s_per_byte: fast / bytes,
            slow_s_per_byte: slow / bytes,
        })
    }
}

/// The report's scan shape, unless the command line gives one.
fn shape(
    report: &Value,
    scan_workers: Option<u16>,
    static_split: bool,
    cpu_shares: Option<CpuShares>,
) -> anyhow::Result<QueryShape> {
    let params = &report["parameters"];
    let workers = match scan_workers {
        Some(w) => w,
        None => params["scan_workers"]
            .as_u64()
            .and_then(|w| u16::try_from(w).ok())
            .unwrap_or(1),
    };
    let given_split = scan_workers.is_some() || static_split;
    let split = match given_split {
        true => static_split,
        false => params["static_split"].as_bool().unwrap_or(false),
    };
    if !(1..=coopscan_buffer::MAX_WORKERS).contains(&workers) {
        bail!(
            "{workers} scan workers: a scan has 1 to {}",
            coopscan_buffer::MAX_WORKERS
        );
    }
    // Reports from before the engine shared its cores otherwise have no `cpu_shares`.
    let cpu_shares = match (cpu_shares, params["cpu_shares"].as_str()) {
        (Some(given), _) => given,
        (None, Some(name)) => name.parse()?,
        (None, None) => CpuShares::Equal,
    };
    Ok(QueryShape {
        workers,
        split: if split { Split::Static } else { Split::Dynamic },
        cpu_shares,
    })
}

/// A finite number at `value`, or an error naming `key`.
fn number(value: &Value, key: &str) -> anyhow::Result<f64> {
    value
        .as_f64()
        .filter(|x| x.is_finite())
        .with_context(|| format!("the report has no number {key}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn report() -> Value {
        json!({
            "parameters": {"layout": "pax", "buffer_pct": 25.0, "scan_workers": 2, "static_split": false, "cpu_shares": "short-first"},
            "table": {"rows": 1000, "bytes": 4000},
            "bandwidth_mb_s": 400.0,
            "stagger_s": 0.3,
            "calibration": {"input": {"fast_read_bytes": 4000.0, "fast_cpu_s": 0.004, "slow_cpu_s": 0.04}},
            "policies": {"relevance": {"query_runs": [
                {"stream": 0, "index": 0, "query_type": "S-10", "row_start": 10, "row_end": 110, "in_order": false},
                {"stream": 1, "index": 0, "query_type": "F-100", "row_start": 0, "row_end": 1000, "in_order": false}
            ]}}
        })
    }

    /// The report's table: ten chunks of 100 rows.
    const STARTS: [u64; 10] = [0, 100, 200, 300, 400, 500, 600, 700, 800, 900];

    fn query(run: &Value, cpu: &CpuCosts) -> anyhow::Result<ReplayQuery> {
        replay_query(run, cpu, &STARTS, 1000)
    }

    #[test]
    fn queries_take_their_kind_s_cpu_cost_and_the_chunks_of_their_rows() {
        let cpu = CpuCosts::from_calibration(&report()).unwrap();
        let runs = report()["policies"]["relevance"]["query_runs"].clone();
        let slow = query(&runs[0], &cpu).unwrap();
        // Rows 10..110 lie in chunks 0 (rows 0-99) and 1 (100-199).
        assert_eq!((slow.stream, slow.index, slow.chunks), (0, 0, 0..2));
        assert_eq!(slow.cpu_s_per_byte, 0.04 / 4000.0);
        let fast = query(&runs[1], &cpu).unwrap();
        assert_eq!(
            (fast.kind.as_str(), fast.chunks, fast.cpu_s_per_byte),
            ("F-100", 0..10, 0.004 / 4000.0)
        );
    }

    #[test]
    fn the_shape_is_the_report_s_unless_given() {
        let r = report();
        let two = QueryShape {
            workers: 2,
            split: Split::Dynamic,
            cpu_shares: CpuShares::ShortFirst,
        };
        assert_eq!(shape(&r, None, false, None).unwrap(), two);
        let split = shape(&r, None, true, None).unwrap();
        assert_eq!((split.workers, split.split), (2, Split::Static));
        assert_eq!(shape(&r, Some(4), false, None).unwrap().workers, 4);
        assert!(shape(&r, Some(0), false, None).is_err());
        let equal = shape(&r, None, false, Some(CpuShares::Equal)).unwrap();
        assert_eq!(equal.cpu_shares, CpuShares::Equal);
        let mut old = report();
        old["parameters"]
            .as_object_mut()
            .unwrap()
            .remove("cpu_shares");
        assert_eq!(
            shape(&old, None, false, None).unwrap().cpu_shares,
            CpuShares::Equal
        );
        old["parameters"]["cpu_shares"] = "fair".into();
        assert!(shape(&old, None, false, None).is_err());
    }

    #[test]
    fn reports_it_cannot_replay_are_refused_with_the_reason() {
        let cpu = CpuCosts::from_calibration(&report()).unwrap();
        let columns =
            json!({"stream": 0, "index": 0, "query_type": "ABC-40", "row_start": 0, "row_end": 5});
        let err = query(&columns, &cpu).unwrap_err().to_string();
        assert!(err.contains("FAST and SLOW"), "{err}");
        let ordered = json!({"stream": 0, "index": 0, "query_type": "F-01", "row_start": 0, "row_end": 5, "in_order": true});
        assert!(query(&ordered, &cpu).is_err());
        for (start, end) in [(900, 1001), (5, 5)] {
            let rows = json!({"stream": 0, "index": 0, "query_type": "F-01", "row_start": start, "row_end": end});
            let err = query(&rows, &cpu).unwrap_err().to_string();
            assert!(err.contains("of a table of 1000"), "{err}");
        }
        let mut uncalibrated = report();
        uncalibrated["calibration"] = Value::Null;
        let err = CpuCosts::from_calibration(&uncalibrated)
            .err()
            .unwrap()
            .to_string();
        assert!(err.contains("--calibration"), "{err}");
        assert!(first_policy(&json!({"runs": []})).is_err());
    }
}
