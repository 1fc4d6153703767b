//! `coopscan verify DIR`: read every chunk through the device, verify every page and
//! every zonemap against the decoded data, and print the row count and a
//! layout-independent digest of the content.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::Context;
use coopscan_storage::device::Device;
use coopscan_storage::digest::ContentDigest;
use coopscan_storage::{DecodeBudget, Layout, Table};
use indicatif::{ProgressBar, ProgressStyle};
use serde_json::json;

use crate::device_args::DeviceArgs;
use coopscan_lab::data_dir::dataset_dir;

#[derive(clap::Args, Debug)]
pub struct VerifyArgs {
    /// Table directory. Default: lineitem of the default `gen` dataset.
    pub dir: Option<PathBuf>,
    /// The most MiB one decoded chunk may take (as `sql --decode-budget-mb`): verify
    /// refuses what a scan would refuse.
    #[arg(long, value_name = "MB", default_value_t = DecodeBudget::DEFAULT_MIB, value_parser = crate::session_args::parse_decode_budget)]
    pub decode_budget_mb: u64,
    #[command(flatten)]
    pub device: DeviceArgs,
}

pub fn run(args: &VerifyArgs) -> anyhow::Result<()> {
    let dir = args
        .dir
        .clone()
        .unwrap_or_else(|| dataset_dir(1.0, Layout::Pax, 4.0).join("lineitem"));
    // Arguments first: a bad flag is reported as such, whatever the directory holds.
    let device = Device::new(args.device.config()?);
    let budget = DecodeBudget::from_mib(args.decode_budget_mb).map_err(anyhow::Error::msg)?;
    let table = Table::open(&dir)?.with_decode_budget(budget);
    let files = table.open_files(&device)?;
    let all: Vec<usize> = (0..table.schema().len()).collect();
    let mut digest = ContentDigest::new(all.len());
    let bar = ProgressBar::new(table.chunk_count() as u64);
    bar.set_style(
        ProgressStyle::with_template("verify [{bar:40}] {pos}/{len} chunks eta {eta}")
            .context("progress template")?,
    );
    let start = Instant::now();
    for k in 0..table.chunk_count() {
        let batch = table
            .read_chunk_batch(&device, &files, k, &all, None)
            .with_context(|| format!("chunk {k}"))?;
        // Pages prove the data is what was written; this proves the manifest's
        // zonemaps (which prune chunks) describe that data.
        table.check_chunk_contents(k, &batch)?;
        digest.update(&batch)?;
        bar.inc(1);
    }
    bar.finish_and_clear();
    let stats = device.stats();
    let elapsed = start.elapsed().as_secs_f64();
    anyhow::ensure!(
        digest.rows() == table.rows(),
        "decoded {} rows, manifest says {}",
        digest.rows(),
        table.rows()
    );
    let report = json!({
        "dir": dir.display().to_string(),
        "layout": table.layout().to_string(),
        "rows": digest.rows(),
        "chunks": table.chunk_count(),
        "digest": format!("{:016x}", digest.finish()),
        "zonemaps_checked": true,
        "io_requests": stats.requests,
        "io_bytes": stats.bytes,
        "direct_io": stats.direct,
        "buffered_fallback": stats.buffered_fallback,
        "elapsed_s": elapsed,
        "read_mb_s": stats.bytes as f64 / 1e6 / elapsed.max(f64::EPSILON),
    });
    println!("{}", serde_json::to_string_pretty(&report)?);
    Ok(())
}
