//! `coopscan gen`: TPC-H tables via tpchgen, or the 2007 paper's synthetic relation
//! of Table 4 (`--synthetic`), with a progress bar.

use std::path::{Path, PathBuf};

use anyhow::Context;
use coopscan_storage::write::{MAX_CHUNK_BYTES, MIB, MIN_CHUNK_BYTES};
use coopscan_storage::{Layout, Manifest};
use coopscan_tpch::{import_table, ImportOptions, TpchTable, MAX_SCALE_FACTOR, MAX_THREADS};

use crate::data_dir::{check_same_table, dataset_dir, rows_bar};
use crate::gen_synthetic::{ensure_synthetic, SyntheticSpec, SYNTHETIC_SEED};

#[derive(clap::Args, Debug)]
pub struct GenArgs {
    /// TPC-H scale factor (1 = 6 M lineitem rows, about 0.8 GB).
    #[arg(long, default_value_t = 1.0)]
    pub sf: f64,
    /// Storage layout: nsm, pax or dsm (default: pax; dsm with --synthetic).
    #[arg(long)]
    pub layout: Option<Layout>,
    /// Chunk size in MB (1-64): the unit of I/O and of scan scheduling.
    #[arg(long, default_value_t = 4)]
    pub chunk_mb: u64,
    /// Output directory (one sub-directory per table). Default: a cache directory.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Tables to generate: `lineitem`, `all`, or a comma-separated list.
    #[arg(long, default_value = "lineitem")]
    pub tables: String,
    /// Generator threads.
    #[arg(long, default_value_t = 2)]
    pub threads: usize,
    /// Replace tables that already exist.
    #[arg(long)]
    pub force: bool,
    /// Generate the synthetic relation of the 2007 paper's Table 4 (int64 attributes
    /// a, b, c, …) instead of TPC-H: table `synthetic` under --out.
    #[arg(long, conflicts_with_all = ["sf", "tables", "threads"])]
    pub synthetic: bool,
    /// Tuples of the synthetic relation.
    #[arg(long, default_value_t = coopscan_bench::presets::TABLE4_ROWS, requires = "synthetic")]
    pub rows: u64,
    /// Attributes of the synthetic relation (1-26).
    #[arg(long, default_value_t = coopscan_paper::table4::COLUMNS, requires = "synthetic")]
    pub columns: usize,
    /// Seed of the synthetic relation's values.
    #[arg(long, default_value_t = SYNTHETIC_SEED, requires = "synthetic")]
    pub seed: u64,
}

pub fn run(args: &GenArgs) -> anyhow::Result<()> {
    let chunk_bytes = args.chunk_mb.saturating_mul(MIB);
    anyhow::ensure!(
        (MIN_CHUNK_BYTES..=MAX_CHUNK_BYTES).contains(&chunk_bytes),
        "--chunk-mb must be between {} and {}",
        MIN_CHUNK_BYTES / MIB,
        MAX_CHUNK_BYTES / MIB
    );
    if args.synthetic {
        let spec = SyntheticSpec {
            rows: args.rows,
            columns: args.columns,
            seed: args.seed,
            layout: args.layout.unwrap_or(Layout::Dsm),
            chunk_mb: args.chunk_mb as f64,
        };
        let dir = ensure_synthetic(&spec, args.out.clone(), args.force)?;
        println!("{}", dir.display());
        return Ok(());
    }
    let layout = args.layout.unwrap_or(Layout::Pax);
    anyhow::ensure!(
        args.sf > 0.0 && args.sf <= MAX_SCALE_FACTOR,
        "--sf must be in (0, {MAX_SCALE_FACTOR}], got {}",
        args.sf
    );
    anyhow::ensure!(
        (1..=MAX_THREADS).contains(&args.threads),
        "--threads must be in 1..={MAX_THREADS}"
    );
    let tables = parse_tables(&args.tables)?;
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| dataset_dir(args.sf, layout, args.chunk_mb as f64));
    let opts = ImportOptions {
        sf: args.sf,
        layout,
        chunk_bytes,
        out_dir: out.clone(),
        overwrite: args.force,
        threads: args.threads,
    };
    for table in tables {
        if !args.force && has_table(&out, table) {
            check_reusable(&out, table, &opts)?;
            continue;
        }
        import_with_progress(table, &opts)?;
    }
    println!("{}", out.display());
    Ok(())
}

fn has_table(dir: &Path, table: TpchTable) -> bool {
    dir.join(table.name())
        .join(coopscan_storage::manifest::MANIFEST_FILE)
        .exists()
}

/// An existing table (without `--force`) is kept only if it is the one these options
/// would generate; otherwise the user asked for something else and must be told.
fn check_reusable(out: &Path, table: TpchTable, opts: &ImportOptions) -> anyhow::Result<()> {
    let dir = out.join(table.name());
    let wanted = coopscan_tpch::source(table, opts.sf);
    check_same_table(&dir, opts.layout, opts.chunk_bytes, &wanted)?;
    eprintln!("{table}: reusing the matching table in {}", dir.display());
    Ok(())
}

/// Generates one table with a progress bar and a one-line summary on stderr.
fn import_with_progress(table: TpchTable, opts: &ImportOptions) -> anyhow::Result<()> {
    let bar = rows_bar(table.estimated_rows(opts.sf), table.name())?;
    let summary = import_table(table, opts, &|rows| bar.set_position(rows))
        .with_context(|| format!("generating {table}"))?;
    bar.finish_and_clear();
    let m = &summary.manifest;
    eprintln!(
        "{table}: {} rows, {} chunks, {} layout, in {:.1} s -> {}",
        m.rows,
        m.chunks.len(),
        m.layout,
        summary.elapsed.as_secs_f64(),
        opts.out_dir.join(table.name()).display()
    );
    Ok(())
}

/// The default lineitem dataset for `sf`, `layout` and `chunk_mb` (fractions allowed,
/// down to one page, for the chunk-size sweep of Figure 8), generated into the cache
/// directory if it is not there yet. Returns the lineitem table directory.
pub fn ensure_dataset(sf: f64, layout: Layout, chunk_mb: f64) -> anyhow::Result<PathBuf> {
    anyhow::ensure!(
        chunk_mb > 0.0 && chunk_mb * MIB as f64 <= MAX_CHUNK_BYTES as f64,
        "chunk size {chunk_mb} MB outside (0, {}]",
        MAX_CHUNK_BYTES / MIB
    );
    let out = dataset_dir(sf, layout, chunk_mb);
    let dir = out.join(TpchTable::Lineitem.name());
    let present = has_table(&out, TpchTable::Lineitem);
    // The cache is ours: a table there that this build cannot read (an older format,
    // or damage) is regenerated rather than reported as the user's problem.
    let stale = present.then(|| Manifest::load(&dir).err()).flatten();
    if let Some(why) = &stale {
        eprintln!(
            "note: the cached dataset {} cannot be used ({why}); regenerating it",
            dir.display()
        );
    }
    if !present || stale.is_some() {
        let opts = ImportOptions {
            sf,
            layout,
            chunk_bytes: (chunk_mb * MIB as f64).round() as u64,
            out_dir: out.clone(),
            overwrite: stale.is_some(),
            threads: 2,
        };
        import_with_progress(TpchTable::Lineitem, &opts)?;
    }
    Ok(dir)
}

fn parse_tables(spec: &str) -> anyhow::Result<Vec<TpchTable>> {
    if spec.eq_ignore_ascii_case("all") {
        return Ok(TpchTable::ALL.to_vec());
    }
    spec.split(',')
        .map(|s| s.trim().parse::<TpchTable>().map_err(anyhow::Error::from))
        .collect()
}
