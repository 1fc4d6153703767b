//! `coopscan gen`: TPC-H tables via tpchgen, or the 2007 paper's synthetic relation
//! of Table 4 (`--synthetic`), with a progress bar.

use std::path::{Path, PathBuf};

use anyhow::Context;
use coopscan_storage::write::{MAX_CHUNK_BYTES, MIB, MIN_CHUNK_BYTES};
use coopscan_storage::{add_database_tables, Layout};
use coopscan_tpch::{ImportOptions, TpchTable, MAX_SCALE_FACTOR, MAX_THREADS};

use coopscan_lab::data_dir::{check_same_table, dataset_dir};
use coopscan_lab::dataset::{has_table, import_among};
use coopscan_lab::synthetic::{ensure_synthetic, SyntheticSpec, SYNTHETIC_SEED};
use indicatif::MultiProgress;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

/// Generator threads one table's import keeps busy beside its writer (`--threads`
/// beyond this go to other tables at once).
const THREADS_PER_TABLE: usize = 2;

#[derive(clap::Args, Debug)]
pub struct GenArgs {
    /// TPC-H scale factor (1 = 6 M lineitem rows, about 0.8 GB).
    #[arg(long, default_value_t = 1.0)]
    pub sf: f64,
    /// Storage layout: nsm, pax, dsm or csm (default: pax; dsm with --synthetic).
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
    /// Generator threads: two per table, tables generated at once when there are
    /// more (`all` with 16: 8 tables at once). Default: twice the machine's cores
    /// (on 2 cores, `all` at SF 1 took 10.7 s with 4 against 13.9 s with 2).
    #[arg(long)]
    pub threads: Option<usize>,
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
    let threads = args.threads.unwrap_or_else(default_threads);
    anyhow::ensure!(
        (1..=MAX_THREADS).contains(&threads),
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
        threads,
    };
    generate_database(&tables, &opts)?;
    println!("{}", out.display());
    Ok(())
}

/// Writes `tables` into the database directory `opts.out_dir`: a table already there
/// is kept if it is the one `opts` would write (unless `opts.overwrite`), the others
/// are generated, and the directory lists them all (`sql --db`).
pub fn generate_database(tables: &[TpchTable], opts: &ImportOptions) -> anyhow::Result<()> {
    let out = &opts.out_dir;
    let mut todo = Vec::with_capacity(tables.len());
    for &table in tables {
        if !opts.overwrite && has_table(out, table) {
            check_reusable(out, table, opts)?;
            continue;
        }
        todo.push(table);
    }
    import_all(todo, opts)?;
    let names: Vec<&str> = tables.iter().map(|t| t.name()).collect();
    add_database_tables(out, &names)
        .with_context(|| format!("listing the tables of {}", out.display()))
}

/// Twice the machine's cores: each table keeps two generator threads and its writer
/// busy, and the writer's page packing waits on the generators part of the time.
pub fn default_threads() -> usize {
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    cores.saturating_mul(THREADS_PER_TABLE).min(MAX_THREADS)
}

/// Generates `tables`, several at once when `--threads` allows: a table's import keeps
/// [`THREADS_PER_TABLE`] generator threads and its writer busy, and a table has one
/// writer, so more threads than that go to other tables. The largest start first, so
/// the small ones fill in beside lineitem.
fn import_all(mut tables: Vec<TpchTable>, opts: &ImportOptions) -> anyhow::Result<()> {
    let workers = (opts.threads / THREADS_PER_TABLE).clamp(1, tables.len().max(1));
    let each = ImportOptions {
        threads: (opts.threads / workers).max(1),
        ..opts.clone()
    };
    tables.sort_by_key(|t| std::cmp::Reverse(t.estimated_rows(opts.sf)));
    let queue = Mutex::new(VecDeque::from(tables));
    let bars = MultiProgress::new();
    let failed = AtomicBool::new(false);
    std::thread::scope(|scope| {
        let importers: Vec<_> = (0..workers)
            .map(|_| {
                scope.spawn(|| -> anyhow::Result<()> {
                    // A failed table stops every worker after its current table.
                    while !failed.load(Ordering::Relaxed) {
                        let Some(table) = queue.lock().map_or(None, |mut q| q.pop_front()) else {
                            break;
                        };
                        import_among(table, &each, &bars).inspect_err(|_| {
                            failed.store(true, Ordering::Relaxed);
                        })?;
                    }
                    Ok(())
                })
            })
            .collect();
        importers
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(anyhow::anyhow!("a table's import panicked")))
            })
            .collect::<anyhow::Result<Vec<()>>>()
    })?;
    Ok(())
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

fn parse_tables(spec: &str) -> anyhow::Result<Vec<TpchTable>> {
    if spec.eq_ignore_ascii_case("all") {
        return Ok(TpchTable::ALL.to_vec());
    }
    spec.split(',')
        .map(|s| s.trim().parse::<TpchTable>().map_err(anyhow::Error::from))
        .collect()
}
