//! Where generated data lives by default (a cache directory, never the git tree),
//! whether a directory there already holds the table wanted, and the progress bar of
//! generating one.

use std::path::{Path, PathBuf};

use anyhow::Context;
use coopscan_storage::write::MIB;
use coopscan_storage::{Layout, Manifest};
use indicatif::{ProgressBar, ProgressStyle};

/// `$COOPSCAN_DATA`, else `$XDG_CACHE_HOME/coopscan`, else `~/.cache/coopscan`, else
/// `target/coopscan-data`.
pub fn data_root() -> PathBuf {
    if let Some(dir) = std::env::var_os("COOPSCAN_DATA") {
        return PathBuf::from(dir);
    }
    if let Some(dir) = std::env::var_os("XDG_CACHE_HOME") {
        return PathBuf::from(dir).join("coopscan");
    }
    if let Some(home) = std::env::var_os("HOME") {
        return PathBuf::from(home).join(".cache").join("coopscan");
    }
    PathBuf::from("target").join("coopscan-data")
}

/// The default dataset directory for a scale factor and layout.
pub fn dataset_dir(sf: f64, layout: Layout, chunk_mb: f64) -> PathBuf {
    data_root().join(format!("tpch-sf{sf}-{layout}-{chunk_mb}mb"))
}

/// Fails unless the table in `dir` has this layout, chunk size and source (what
/// generated it): a different table there is the user's, not ours to replace.
pub fn check_same_table(
    dir: &Path,
    layout: Layout,
    chunk_bytes: u64,
    wanted: &str,
) -> anyhow::Result<()> {
    let force = "use --force to replace it";
    let m = Manifest::load(dir)
        .with_context(|| format!("{} holds a damaged or old table; {force}", dir.display()))?;
    let same =
        m.layout == layout && m.chunk_bytes == chunk_bytes && m.source.as_deref() == Some(wanted);
    anyhow::ensure!(
        same,
        "{} already holds a different table ({}, {} layout, {} MB chunks), not {wanted}, {} layout, {} MB chunks; {force}",
        dir.display(),
        m.source.as_deref().unwrap_or("unknown source"),
        m.layout,
        m.chunk_bytes as f64 / MIB as f64,
        layout,
        chunk_bytes as f64 / MIB as f64,
    );
    Ok(())
}

/// A progress bar of `rows` generated rows, labelled `prefix`.
pub fn rows_bar(rows: u64, prefix: &str) -> anyhow::Result<ProgressBar> {
    let bar = ProgressBar::new(rows);
    bar.set_style(
        ProgressStyle::with_template(
            "{prefix:>9} [{bar:40}] {human_pos}/{human_len} rows {per_sec} eta {eta}",
        )
        .context("progress template")?
        .progress_chars("=> "),
    );
    bar.set_prefix(prefix.to_string());
    Ok(bar)
}
