//! `coopscan checkpoint`: merge each table's committed changes (its delta log) into a
//! new stable image of the table, which replaces the old one and its log (2012 paper
//! §2.1, "PDT Checkpoints"). Scans then read the changed tuples like any other, with
//! zonemaps that know them, and no merge.

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context;
use coopscan_exec::delta::checkpoint::checkpoint;
use coopscan_storage::device::Device;
use coopscan_storage::{database_tables, Table};

use crate::device_args::DeviceArgs;

#[derive(clap::Args, Debug)]
pub struct CheckpointArgs {
    /// Table directories to checkpoint.
    pub dirs: Vec<PathBuf>,
    /// A database directory: checkpoint every table it lists.
    #[arg(long)]
    pub db: Option<PathBuf>,
    #[command(flatten)]
    pub device: DeviceArgs,
}

pub fn run(args: &CheckpointArgs) -> anyhow::Result<()> {
    let device = Arc::new(Device::new(args.device.config()?));
    let mut dirs = args.dirs.clone();
    if let Some(db) = &args.db {
        let tables = database_tables(db).with_context(|| format!("--db {}", db.display()))?;
        dirs.extend(tables.into_iter().map(|(_, dir)| dir));
    }
    if dirs.is_empty() {
        anyhow::bail!("no table given: name table directories or --db DIR");
    }
    let tokio = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the tokio runtime")?;
    for dir in dirs {
        let table = Table::open(&dir)?;
        let done = tokio
            .block_on(checkpoint(table, Arc::clone(&device)))
            .with_context(|| format!("checkpoint of {}", dir.display()))?;
        for lost in &done.lost_indexes {
            eprintln!("warning: {}: {lost}", dir.display());
        }
        if done.changes == 0 {
            println!("{}: no changes", dir.display());
        } else {
            println!(
                "{}: {} changes merged, {} rows before, {} after, {:.2} s",
                dir.display(),
                done.changes,
                done.rows_before,
                done.rows_after,
                done.elapsed.as_secs_f64()
            );
        }
    }
    Ok(())
}
