//! The benchmark's datasets: TPC-H lineitem at a scale factor, layout and chunk size,
//! generated into the cache directory on first use (`data_dir`).

use std::path::{Path, PathBuf};

use anyhow::Context;
use coopscan_storage::write::{MAX_CHUNK_BYTES, MIB};
use coopscan_storage::{Layout, Manifest};
use coopscan_tpch::{import_table, ImportOptions, TpchTable};
use indicatif::MultiProgress;

use crate::data_dir::{dataset_dir, rows_bar};

/// Whether `dir` holds a complete table `table` (its manifest is written last).
pub fn has_table(dir: &Path, table: TpchTable) -> bool {
    dir.join(table.name())
        .join(coopscan_storage::manifest::MANIFEST_FILE)
        .exists()
}

/// Generates one table with a progress bar and a one-line summary on stderr.
pub fn import_with_progress(table: TpchTable, opts: &ImportOptions) -> anyhow::Result<()> {
    import_among(table, opts, &MultiProgress::new())
}

/// [`import_with_progress`] beside other tables' imports: its bar one of `bars`.
pub fn import_among(
    table: TpchTable,
    opts: &ImportOptions,
    bars: &MultiProgress,
) -> anyhow::Result<()> {
    let bar = bars.add(rows_bar(table.estimated_rows(opts.sf), table.name())?);
    let summary = import_table(table, opts, &|rows| bar.set_position(rows))
        .with_context(|| format!("generating {table}"))?;
    bar.finish_and_clear();
    bars.remove(&bar);
    let m = &summary.manifest;
    bars.suspend(|| {
        eprintln!(
            "{table}: {} rows, {} chunks, {} layout, in {:.1} s -> {}",
            m.rows,
            m.chunks.len(),
            m.layout,
            summary.elapsed.as_secs_f64(),
            opts.out_dir.join(table.name()).display()
        )
    });
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
