//! Where generated data lives by default: a cache directory, never the git tree.

use std::path::PathBuf;

use coopscan_storage::Layout;

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
