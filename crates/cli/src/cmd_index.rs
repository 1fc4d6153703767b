//! `coopscan index`: build secondary indexes of a table's integer, date or decimal
//! columns (what `CREATE INDEX` does in `coopscan sql`), remove them, or list a table's
//! indexes and whether each can be used.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::Context;
use coopscan_storage::device::Device;
use coopscan_storage::index::{build_index, check_indexable, index_path, SecondaryIndex};
use coopscan_storage::Table;

use crate::device_args::DeviceArgs;

#[derive(clap::Args, Debug)]
pub struct IndexArgs {
    /// The table directory.
    pub dir: PathBuf,
    /// A column to index (repeatable); without any, the table's indexes are listed.
    #[arg(long = "column", value_name = "NAME")]
    pub columns: Vec<String>,
    /// Remove the index of this column instead (repeatable).
    #[arg(long = "drop", value_name = "NAME", conflicts_with = "columns")]
    pub drop: Vec<String>,
    #[command(flatten)]
    pub device: DeviceArgs,
}

pub fn run(args: &IndexArgs) -> anyhow::Result<()> {
    let table = Table::open(&args.dir).with_context(|| format!("table {}", args.dir.display()))?;
    let device = Device::new(args.device.config()?);
    for name in &args.drop {
        let column = column_of(&table, name)?;
        let path = index_path(table.dir(), column);
        match std::fs::remove_file(&path) {
            Ok(()) => println!("{}: removed", path.display()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                anyhow::bail!("{name} has no index")
            }
            Err(e) => return Err(e).with_context(|| format!("removing {}", path.display())),
        }
    }
    if !args.drop.is_empty() {
        return Ok(());
    }
    if args.columns.is_empty() {
        list(&table, &device);
        return Ok(());
    }
    for name in &args.columns {
        let column = column_of(&table, name)?;
        let start = Instant::now();
        let path =
            build_index(&table, &device, column).with_context(|| format!("index of {name}"))?;
        let bytes = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
        println!(
            "{}: {} rows, {:.1} MB, {:.2} s",
            path.display(),
            table.rows(),
            bytes as f64 / 1e6,
            start.elapsed().as_secs_f64()
        );
    }
    Ok(())
}

/// The position of the column `name` of `table`.
fn column_of(table: &Table, name: &str) -> anyhow::Result<usize> {
    let columns = &table.schema().columns;
    columns
        .iter()
        .position(|c| c.name == name)
        .with_context(|| format!("{} has no column {name}", table.dir().display()))
}

/// A line per indexable column that has an index: usable (every leaf read and
/// checked), or why not.
fn list(table: &Table, device: &Device) {
    let mut any = false;
    for (c, def) in table.schema().columns.iter().enumerate() {
        if check_indexable(table, c).is_err() || !index_path(table.dir(), c).exists() {
            continue;
        }
        any = true;
        let checked = SecondaryIndex::open(table, c)
            .and_then(|index| index.map(|i| i.verify(device).map(|()| i)).transpose());
        match checked {
            Ok(Some(index)) => println!("{}: {} entries, usable", def.name, index.meta().entries),
            Ok(None) => {}
            Err(e) => println!("{}: not usable: {e}", def.name),
        }
    }
    if !any {
        println!("{}: no indexes", table.dir().display());
    }
}
