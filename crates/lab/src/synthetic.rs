//! `coopscan gen --synthetic`: the 2007 paper's synthetic relation of Table 4, into the
//! cache (for `bench --preset table4`) or a given directory, reused when it matches.

use std::path::PathBuf;

use anyhow::Context;
use coopscan_storage::manifest::MANIFEST_FILE;
use coopscan_storage::write::{MAX_CHUNK_BYTES, MIB};
use coopscan_storage::Layout;
use coopscan_tpch::synthetic::{
    synthetic_source, write_synthetic, SyntheticOptions, SYNTHETIC_TABLE,
};

use crate::data_dir::{check_same_table, data_root, rows_bar};

/// The synthetic relation's default seed (the paper's year).
pub const SYNTHETIC_SEED: u64 = 2007;

/// The synthetic relation to generate or reuse.
#[derive(Clone, Copy, Debug)]
pub struct SyntheticSpec {
    pub rows: u64,
    pub columns: usize,
    pub seed: u64,
    pub layout: Layout,
    /// As for lineitem: a DSM chunk holds the tuples of a PAX chunk this large.
    pub chunk_mb: f64,
}

/// The synthetic relation of `spec` in `out` (default: the cache), generated unless a
/// matching one is there (a different one is an error without `force`). Returns the
/// table directory.
pub fn ensure_synthetic(
    spec: &SyntheticSpec,
    out: Option<PathBuf>,
    force: bool,
) -> anyhow::Result<PathBuf> {
    anyhow::ensure!(
        spec.chunk_mb > 0.0 && spec.chunk_mb * MIB as f64 <= MAX_CHUNK_BYTES as f64,
        "chunk size {} MB outside (0, {}]",
        spec.chunk_mb,
        MAX_CHUNK_BYTES / MIB
    );
    let out = out.unwrap_or_else(|| {
        data_root().join(format!(
            "synthetic-{}x{}-seed{}-{}-{}mb",
            spec.rows, spec.columns, spec.seed, spec.layout, spec.chunk_mb
        ))
    });
    let dir = out.join(SYNTHETIC_TABLE);
    let opts = SyntheticOptions {
        rows: spec.rows,
        columns: spec.columns,
        seed: spec.seed,
        layout: spec.layout,
        chunk_bytes: (spec.chunk_mb * MIB as f64).round() as u64,
        out_dir: out,
        overwrite: force,
    };
    if !force && dir.join(MANIFEST_FILE).exists() {
        let wanted = synthetic_source(spec.rows, spec.columns, spec.seed);
        check_same_table(&dir, opts.layout, opts.chunk_bytes, &wanted)?;
        return Ok(dir);
    }
    let bar = rows_bar(spec.rows, SYNTHETIC_TABLE)?;
    let summary = write_synthetic(&opts, &|rows| bar.set_position(rows))
        .context("generating the synthetic relation")?;
    bar.finish_and_clear();
    eprintln!(
        "{SYNTHETIC_TABLE}: {} rows × {} columns, {} chunks, {} layout, in {:.1} s -> {}",
        summary.manifest.rows,
        spec.columns,
        summary.manifest.chunks.len(),
        spec.layout,
        summary.elapsed.as_secs_f64(),
        dir.display()
    );
    Ok(dir)
}
