//! The table manifest: `manifest.json` in the table directory.
//!
//! It is the map from logical data (rows, chunks, columns) to bytes on disk: the
//! schema, the layout, the chunk definitions and, per chunk and column, the byte
//! extent to read, the encoded size and a min/max zonemap. It is versioned; a reader
//! refuses any version it does not know. Written atomically (temp file + rename),
//! last, so a table directory with a manifest is complete.

use std::path::{Path, PathBuf};
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::error::{Result, StorageError};
use crate::types::TableSchema;
use crate::zonemap::Zonemap;

pub const MANIFEST_FILE: &str = "manifest.json";
pub const MANIFEST_FORMAT: &str = "coopscan-table";
pub const MANIFEST_VERSION: u32 = 1;

/// How a table's rows are laid out on disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Layout {
    /// N-ary storage model: pages of whole rows.
    Nsm,
    /// Partition attributes across: pages of a row range, one minipage per column.
    Pax,
    /// Decomposed storage model: one file per column of LZ4-compressed pages; chunks
    /// are logical tuple ranges whose boundaries do not align with pages.
    Dsm,
}

impl Layout {
    pub const ALL: [Layout; 3] = [Layout::Nsm, Layout::Pax, Layout::Dsm];
}

impl std::fmt::Display for Layout {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Layout::Nsm => "nsm",
            Layout::Pax => "pax",
            Layout::Dsm => "dsm",
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
            other => Err(StorageError::Invalid(format!(
                "unknown layout {other:?} (expected nsm, pax or dsm)"
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
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ColumnChunk {
    /// What to read for this column of this chunk. In NSM/PAX every column of a chunk
    /// has the same extent (the chunk's pages); in DSM it is the column's pages that
    /// hold the chunk's tuples (possibly shared with the neighbouring chunks).
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
    /// NSM/PAX: the chunk's first page and page count in the data file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pages: Option<(u64, u64)>,
    pub columns: Vec<ColumnChunk>,
}

impl ChunkMeta {
    pub fn rows(&self) -> std::ops::Range<u64> {
        self.row_start..self.row_start + self.row_count
    }

    /// Bytes read to load this chunk with every column (DSM extents of different
    /// columns are distinct; NSM/PAX columns share the chunk's pages).
    pub fn extent_bytes(&self, layout: Layout) -> u64 {
        match layout {
            Layout::Dsm => self.columns.iter().map(|c| c.extent.len).sum(),
            Layout::Nsm | Layout::Pax => self.columns.first().map_or(0, |c| c.extent.len),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Manifest {
    pub format: String,
    pub version: u32,
    pub name: String,
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

    /// Reads and validates `DIR/manifest.json`.
    pub fn load(dir: &Path) -> Result<Manifest> {
        let path = Manifest::path(dir);
        let text = std::fs::read_to_string(&path).map_err(|e| StorageError::io(&path, e))?;
        let bad = |reason: String| StorageError::Manifest {
            path: path.clone(),
            reason,
        };
        // Check format and version before the full parse, so that a newer manifest
        // reports its version instead of whatever field it renamed.
        let value: serde_json::Value =
            serde_json::from_str(&text).map_err(|e| bad(e.to_string()))?;
        let format = value.get("format").and_then(|v| v.as_str());
        if format != Some(MANIFEST_FORMAT) {
            return Err(bad(format!(
                "format is {format:?}, expected {MANIFEST_FORMAT:?}"
            )));
        }
        let version = value.get("version").and_then(|v| v.as_u64()).unwrap_or(0);
        if version != u64::from(MANIFEST_VERSION) {
            return Err(StorageError::Version {
                path,
                offset: 0,
                found: u32::try_from(version).unwrap_or(u32::MAX),
                expected: MANIFEST_VERSION,
            });
        }
        let manifest: Manifest = serde_json::from_value(value).map_err(|e| bad(e.to_string()))?;
        manifest.validate().map_err(bad)?;
        Ok(manifest)
    }

    /// Writes the manifest atomically.
    pub fn save(&self, dir: &Path) -> Result<()> {
        let path = Manifest::path(dir);
        let tmp = dir.join(format!("{MANIFEST_FILE}.tmp"));
        let text = serde_json::to_string_pretty(self).map_err(|e| StorageError::Manifest {
            path: path.clone(),
            reason: e.to_string(),
        })?;
        std::fs::write(&tmp, text).map_err(|e| StorageError::io(&tmp, e))?;
        std::fs::rename(&tmp, &path).map_err(|e| StorageError::io(&path, e))
    }

    /// Structural consistency: chunks tile `0..rows`, extents lie inside their files,
    /// every chunk describes every column.
    pub fn validate(&self) -> std::result::Result<(), String> {
        if self.page_bytes == 0
            || !(self.page_bytes as usize).is_multiple_of(crate::device::IO_ALIGN)
        {
            return Err(format!(
                "page_bytes {} is not a positive multiple of {}",
                self.page_bytes,
                crate::device::IO_ALIGN
            ));
        }
        let want_files = match self.layout {
            Layout::Dsm => self.schema.len(),
            Layout::Nsm | Layout::Pax => 1,
        };
        if self.files.len() != want_files {
            return Err(format!(
                "{} layout needs {want_files} data files, manifest lists {}",
                self.layout,
                self.files.len()
            ));
        }
        let mut next_row = 0u64;
        for (k, chunk) in self.chunks.iter().enumerate() {
            if chunk.row_start != next_row || chunk.row_count == 0 {
                return Err(format!(
                    "chunk {k} covers rows {:?}, expected to start at {next_row}",
                    chunk.rows()
                ));
            }
            next_row = chunk.rows().end;
            if chunk.columns.len() != self.schema.len() {
                return Err(format!(
                    "chunk {k} describes {} columns, schema has {}",
                    chunk.columns.len(),
                    self.schema.len()
                ));
            }
            for (c, col) in chunk.columns.iter().enumerate() {
                self.validate_extent(&col.extent)
                    .map_err(|e| format!("chunk {k} column {c}: {e}"))?;
            }
        }
        if next_row != self.rows {
            return Err(format!(
                "chunks cover {next_row} rows, manifest says {}",
                self.rows
            ));
        }
        for f in &self.files {
            if self.layout == Layout::Dsm
                && (f.page_row_starts.len() as u64 != f.pages || !f.page_row_starts.is_sorted())
            {
                return Err(format!(
                    "{}: page directory does not match its {} pages",
                    f.name, f.pages
                ));
            }
        }
        Ok(())
    }

    fn validate_extent(&self, e: &Extent) -> std::result::Result<(), String> {
        let file = self
            .files
            .get(e.file as usize)
            .ok_or_else(|| format!("extent names file {}", e.file))?;
        let page = u64::from(self.page_bytes);
        if !e.offset.is_multiple_of(page) || !e.len.is_multiple_of(page) || e.len == 0 {
            return Err(format!("extent {}+{} is not page aligned", e.offset, e.len));
        }
        if e.offset + e.len > file.pages * page {
            return Err(format!(
                "extent {}+{} runs past the end of {}",
                e.offset, e.len, file.name
            ));
        }
        Ok(())
    }

    /// Expected size of data file `i`.
    pub fn file_len(&self, i: usize) -> u64 {
        self.files[i].pages * u64::from(self.page_bytes)
    }
}
