//! `coopscan read-cost DIR…`: what reading the first 1, 2, … columns of whole tables
//! costs on the device: requests, bytes and seconds, the median of `--repeat` rounds.
//! Clotho's projectivity measurement (2004 paper §7.2.1, Figure 7a) asked of the
//! storage alone: give it the same rows in NSM, PAX, DSM and CSM
//! (`coopscan gen --synthetic --columns 15 --layout …`). With `--selected-pct`, the
//! 2004 report's Figure 7 instead (`fetch`): fetching only the pages holding a share of
//! the tuples, page by page, against reading the same chunks whole.

mod fetch;

use std::path::PathBuf;

use anyhow::Context;
use coopscan_bench::samples::Samples;
use coopscan_storage::device::{Device, DirectMode};
use coopscan_storage::{Table, TableFiles};
use indicatif::{ProgressBar, ProgressStyle};
use serde_json::json;

use crate::device_args::DeviceArgs;

/// Most rounds: each reads every table once per column count.
const MAX_REPEAT: u32 = 100;

#[derive(clap::Args, Debug)]
pub struct ReadCostArgs {
    /// Table directories: the same rows in different layouts, to compare them.
    #[arg(required = true)]
    pub dirs: Vec<PathBuf>,
    /// Column counts to read, each as the table's first columns, e.g. `1,2,4,8,15`
    /// (default: 1, 2, … up to every column of the narrowest table).
    #[arg(long, value_delimiter = ',')]
    pub columns: Vec<usize>,
    /// Rounds (1 to 100); each table and column count is reported by its median.
    #[arg(long, default_value_t = 3)]
    pub repeat: u32,
    /// Print JSON instead of a text table.
    #[arg(long)]
    pub json: bool,
    /// Index fetches instead of scans: per percentage (e.g. `0.001,0.01,0.1,1,10`), each
    /// tuple selected with that probability (seeded), and the pages holding the selected
    /// tuples of the columns read one synchronous request each, in tuple order; the
    /// cost is also shown ÷ reading the same chunks whole. At most 2^25 tuples selected
    /// per percentage.
    #[arg(long, value_delimiter = ',')]
    pub selected_pct: Vec<f64>,
    /// With `--selected-pct`: fetch from this many chunks, spread evenly over each table
    /// (default: all).
    #[arg(long)]
    pub chunks: Option<usize>,
    /// With `--selected-pct`: the seed of the selections.
    #[arg(long, default_value_t = 2004)]
    pub seed: u64,
    #[command(flatten)]
    pub device: DeviceArgs,
}

/// One table's measurements of one column count.
struct Cell {
    requests: u64,
    bytes: u64,
    seconds: Samples,
}

pub fn run(args: &ReadCostArgs) -> anyhow::Result<()> {
    anyhow::ensure!(
        (1..=MAX_REPEAT).contains(&args.repeat),
        "--repeat must be in 1..={MAX_REPEAT}"
    );
    let mut config = args.device.config()?;
    if !args.device.buffered {
        // Through the page cache the second round would read memory, not the device.
        config.direct = DirectMode::Required;
    }
    let device = Device::new(config);
    let tables = args
        .dirs
        .iter()
        .map(|d| Table::open(d).with_context(|| format!("{}", d.display())))
        .collect::<anyhow::Result<Vec<Table>>>()?;
    let narrowest = tables.iter().map(|t| t.schema().len()).min().unwrap_or(0);
    let counts: Vec<usize> = if args.columns.is_empty() {
        (1..=narrowest).collect()
    } else {
        args.columns.clone()
    };
    anyhow::ensure!(
        counts.iter().all(|k| (1..=narrowest).contains(k)),
        "--columns must each be in 1..={narrowest} (the narrowest table's columns)"
    );
    let files = tables
        .iter()
        .map(|t| t.open_files(&device))
        .collect::<Result<Vec<TableFiles>, _>>()?;
    if !args.selected_pct.is_empty() {
        return fetch::run(args, &counts, &tables, &files, &device);
    }
    let cells = measure(args.repeat, &counts, &tables, &files, &device)?;
    if args.json {
        print_json(&args.dirs, &tables, &counts, &cells)
    } else {
        print_text(&tables, &counts, &cells);
        Ok(())
    }
}

/// `cells[i][t]`: table `t` read with its first `counts[i]` columns, every round.
/// Within a round the tables take turns for each column count, so a noisy moment hits
/// all alike.
fn measure(
    repeat: u32,
    counts: &[usize],
    tables: &[Table],
    files: &[TableFiles],
    device: &Device,
) -> anyhow::Result<Vec<Vec<Cell>>> {
    let total = u64::from(repeat) * (counts.len() * tables.len()) as u64;
    let bar = ProgressBar::new(total);
    bar.set_style(
        ProgressStyle::with_template("read-cost [{bar:40}] {pos}/{len} passes eta {eta}")
            .context("progress template")?,
    );
    let mut cells: Vec<Vec<Cell>> = counts
        .iter()
        .map(|_| {
            (0..tables.len())
                .map(|_| Cell {
                    requests: 0,
                    bytes: 0,
                    seconds: Samples::default(),
                })
                .collect()
        })
        .collect();
    for _ in 0..repeat {
        for (&k, row) in counts.iter().zip(cells.iter_mut()) {
            let projection: Vec<usize> = (0..k).collect();
            for ((table, files), cell) in tables.iter().zip(files).zip(row.iter_mut()) {
                let cost = table
                    .read_cost(device, files, &projection)
                    .with_context(|| format!("{}", table.dir().display()))?;
                cell.requests = cost.requests;
                cell.bytes = cost.bytes;
                cell.seconds.0.push(cost.elapsed.as_secs_f64());
                bar.inc(1);
            }
        }
    }
    bar.finish_and_clear();
    Ok(cells)
}

fn print_text(tables: &[Table], counts: &[usize], cells: &[Vec<Cell>]) {
    let names: Vec<String> = tables.iter().map(|t| t.layout().to_string()).collect();
    print!("{:>7}", "columns");
    for n in &names {
        print!(" | {:>28}", format!("{n}: s, MB, requests"));
    }
    println!();
    for (k, row) in counts.iter().zip(cells) {
        print!("{k:>7}");
        for cell in row {
            let text = format!(
                "{:.3}, {:.1}, {}",
                cell.seconds.median(),
                cell.bytes as f64 / 1e6,
                cell.requests
            );
            print!(" | {text:>28}");
        }
        println!();
    }
}

fn print_json(
    dirs: &[PathBuf],
    tables: &[Table],
    counts: &[usize],
    cells: &[Vec<Cell>],
) -> anyhow::Result<()> {
    let rows: Vec<serde_json::Value> = counts
        .iter()
        .zip(cells)
        .flat_map(|(&k, row)| {
            row.iter().zip(tables).zip(dirs).map(move |((cell, t), d)| {
                json!({
                    "dir": d.display().to_string(),
                    "layout": t.layout().to_string(),
                    "columns": k,
                    "requests": cell.requests,
                    "bytes": cell.bytes,
                    "seconds_median": cell.seconds.median(),
                    "seconds": cell.seconds.0,
                })
            })
        })
        .collect();
    println!("{}", serde_json::to_string_pretty(&rows)?);
    Ok(())
}
