//! The table manifest: `manifest.json` in the table directory.
//!
//! It is the map from logical data (rows, chunks, columns) to bytes on disk: the
//! schema, the layout, the chunk definitions and, per chunk and column, the byte
//! extent to read, the encoded size and a min/max zonemap. It is versioned; a reader
//! refuses any version it does not know. Written atomically (temp file + fsync +
//! rename), last, so a table directory with a manifest is complete.
//!
//! * `file`: reading (size-limited, checksummed) and writing (durable) `manifest.json`.
//! * `validate`: everything a manifest promises, checked on load exactly as on write.

mod file;
mod validate;

pub use file::{read_regular_file, MAX_MANIFEST_BYTES};
pub(crate) use file::{require_regular_file, sync_dir, write_atomically};
pub use validate::{MAX_EXTENT_BYTES, MAX_FILE_NAME_BYTES, MAX_PAGE_BYTES};

use std::str::FromStr;

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::{Result, StorageError};
use crate::types::TableSchema;
use crate::zonemap::Zonemap;

pub const MANIFEST_FILE: &str = "manifest.json";
pub const MANIFEST_FORMAT: &str = "coopscan-table";
/// Version 2 added the checksum, the table id and page headers that name their table
/// and column; version 1 tables must be regenerated.
pub const MANIFEST_VERSION: u32 = 2;

/// How a table's rows are laid out on disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Layout {
    /// N-ary storage model: pages of whole rows.
    Nsm,
    /// Partition attributes across: pages of a row range, one minipage per column.
    Pax,
    /// Decomposed storage model: one file per column of compressed pages (each with its
    /// own codec, see [`crate::codec`]); chunks
    /// are logical tuple ranges whose boundaries do not align with pages.
    Dsm,
    /// Clotho's storage model (A-pages, 2004 paper §3.1, §5) adapted to a device read in
    /// large direct requests: one file of tiles, a tile per chunk holding all its
    /// attributes as one run of compressed DSM-style pages per column, the runs adjacent
    /// in column order and never shared with another chunk. Any set of columns of a
    /// chunk is read with at most one request per column, all of them with one.
    Csm,
}

impl Layout {
    pub const ALL: [Layout; 4] = [Layout::Nsm, Layout::Pax, Layout::Dsm, Layout::Csm];

    /// Whether a chunk's columns are stored apart (DSM, CSM), so a load can read only
    /// the columns a scan needs; NSM and PAX pages hold every column.
    pub fn columnar(self) -> bool {
        matches!(self, Layout::Dsm | Layout::Csm)
    }
}

impl std::fmt::Display for Layout {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Layout::Nsm => "nsm",
            Layout::Pax => "pax",
            Layout::Dsm => "dsm",
            Layout::Csm => "csm",
        })
    }
}

impl FromStr for Layout {
    type Err = StorageError;
    fn from_str(s: &str) -> Result<Self> {
        match s.to_ascii_lowercase().as_str() {
            "nsm" => Ok(Layout::Nsm),
            "pax" => Ok(Layout::Pax),
            "dsm" => Ok(Layout::Dsm),
            "csm" => Ok(Layout::Csm),
            other => Err(StorageError::Invalid(format!(
                "unknown layout {other:?} (expected nsm, pax, dsm or csm)"
            ))),
        }
    }
}

/// A contiguous byte range of one data file: one I/O request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Extent {
    /// Index into [`Manifest::files`].
    pub file: u32,
    pub offset: u64,
    pub len: u64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DataFile {
    pub name: String,
    pub pages: u64,
    /// DSM only: first row of every page, ascending (page `i` is at `i * page_bytes`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub page_row_starts: Vec<u64>,
    /// DSM integer, date and decimal columns: every page's smallest and largest stored
    /// value, one pair per page (empty: not kept, as in tables written before them). A
    /// scan's comparisons rule out whole pages by them, not only whole chunks by the
    /// chunk zonemaps (`crate::read::page_bounds`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub page_bounds: Vec<[i64; 2]>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ColumnChunk {
    /// What to read for this column of this chunk. In NSM/PAX every column of a chunk
    /// has the same extent (the chunk's pages); in DSM it is the column's pages that
    /// hold the chunk's tuples (possibly shared with the neighbouring chunks); in CSM
    /// the column's run inside the chunk's tile (never shared).
    pub extent: Extent,
    /// Encoded (uncompressed) bytes of this column's values in this chunk.
    pub bytes: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub zonemap: Option<Zonemap>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChunkMeta {
    pub row_start: u64,
    pub row_count: u64,
    /// NSM/PAX/CSM: the chunk's first page and page count in the data file (CSM: its
    /// tile, the column runs one after another).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pages: Option<(u64, u64)>,
    pub columns: Vec<ColumnChunk>,
}

impl ChunkMeta {
    /// The chunk's tuples. Saturates instead of wrapping; a validated manifest never
    /// needs it to.
    pub fn rows(&self) -> std::ops::Range<u64> {
        self.row_start..self.row_start.saturating_add(self.row_count)
    }

    /// Bytes read to load this chunk with every column (DSM and CSM extents of
    /// different columns are distinct; NSM/PAX columns share the chunk's pages).
    pub fn extent_bytes(&self, layout: Layout) -> u64 {
        match layout {
            Layout::Dsm | Layout::Csm => self
                .columns
                .iter()
                .fold(0u64, |sum, c| sum.saturating_add(c.extent.len)),
            Layout::Nsm | Layout::Pax => self.columns.first().map_or(0, |c| c.extent.len),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Manifest {
    pub format: String,
    pub version: u32,
    /// Random at creation; every page of the table carries it, so pages of another
    /// table (an older generation, a copied file) are refused.
    pub table_id: u64,
    pub name: String,
    /// What produced the table (e.g. `tpch lineitem sf=1`), so a tool can tell whether
    /// an existing table is the one it would generate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    pub layout: Layout,
    pub page_bytes: u32,
    pub chunk_bytes: u64,
    pub rows: u64,
    pub schema: TableSchema,
    pub files: Vec<DataFile>,
    pub chunks: Vec<ChunkMeta>,
}

impl Manifest {
    pub fn path(dir: &Path) -> PathBuf {
        dir.join(MANIFEST_FILE)
    }

    /// [`Manifest::validate`], its failure named as the manifest of the table in `dir`.
    pub fn validate_for(&self, dir: &Path) -> Result<()> {
        self.validate().map_err(|reason| StorageError::Manifest {
            path: Manifest::path(dir),
            reason,
        })
    }

    /// Expected size of data file `i` (0 if there is no such file; saturating, which a
    /// validated manifest never needs).
    pub fn file_len(&self, i: usize) -> u64 {
        self.files
            .get(i)
            .map_or(0, |f| f.pages.saturating_mul(u64::from(self.page_bytes)))
    }
}
