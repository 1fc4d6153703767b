//! Secondary (non-clustered) indexes: per indexed column, a file of `(key, row)`
//! entries sorted by key in page-sized leaves, with the first key of every leaf kept in
//! its description (the tree's upper level, read once when the index is opened). A
//! range lookup finds its first and last leaf there and reads the leaves between with
//! one direct request; the rows it returns are fetched by [`Table::fetch_rows`], page
//! by page: Clotho's SI-scan (§6.1) and the 2004 report's index selection (§4.2).
//!
//! An index belongs to one table version (the manifest's `table_id`): a table rewritten
//! since (a new generation, a checkpoint) makes it stale, and it is refused, never used.
//! Keys are the stored integers of integer, date and decimal columns.

mod build;
mod file;

use std::ops::{Bound, RangeBounds};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::device::Device;
use crate::error::{Result, StorageError};
use crate::manifest::MAX_EXTENT_BYTES;
use crate::read::{PageMap, Table};
use crate::types::Physical;

pub use build::{build_index, MAX_INDEX_ENTRIES};
pub use file::ENTRIES_PER_LEAF;
use file::{decode_footer, decode_leaf, FOOTER_BYTES, LEAF_BYTES};

/// The directory of a table's indexes.
pub const INDEX_DIR: &str = "index";
const FORMAT: &str = "coopscan-index";
const VERSION: u32 = 1;
/// Largest description read: a leaf's first key per 4 KiB of entries and a page map.
const MAX_DESCRIPTION_BYTES: u64 = 1 << 30;

/// What an index file says of itself (its JSON description).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct IndexMeta {
    pub format: String,
    pub version: u32,
    /// The table version indexed (`Manifest::table_id`).
    pub table_id: u64,
    pub column: u32,
    pub column_name: String,
    pub entries: u64,
    /// First key of every leaf, ascending.
    pub fences: Vec<i64>,
    /// Where every tuple's page is, for fetching them.
    pub page_map: PageMap,
}

/// An open index of one column of a table.
#[derive(Clone, Debug)]
pub struct SecondaryIndex {
    path: PathBuf,
    meta: IndexMeta,
}

/// The index file of column `column` of the table in `dir`.
pub fn index_path(dir: &Path, column: usize) -> PathBuf {
    dir.join(INDEX_DIR).join(format!("column-{column}.cidx"))
}

/// Whether column `column` of `table` can be indexed; why not otherwise.
pub fn check_indexable(table: &Table, column: usize) -> Result<()> {
    table.check_projection(&[column])?;
    let def = &table.schema().columns[column];
    match def.ty.physical() {
        Physical::I32 | Physical::I64 => Ok(()),
        _ => Err(StorageError::Invalid(format!(
            "column {} is {:?}: only integer, date and decimal columns can be indexed",
            def.name, def.ty
        ))),
    }
}

impl SecondaryIndex {
    /// Opens the index of `column` of `table`: `None` when there is none; an error when
    /// the file is damaged, or stale (built for another version of the table).
    pub fn open(table: &Table, column: usize) -> Result<Option<SecondaryIndex>> {
        let path = index_path(table.dir(), column);
        let file = match std::fs::File::open(&path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(StorageError::io(&path, e)),
        };
        let size = file
            .metadata()
            .map_err(|e| StorageError::io(&path, e))?
            .len();
        let (meta, description_at) = read_meta(&file, size, &path, description_limit(table))?;
        let stale = |why: String| {
            StorageError::Invalid(format!(
                "{}: {why}; rebuild it (`coopscan index`)",
                path.display()
            ))
        };
        if meta.table_id != table.manifest().table_id {
            return Err(stale("built for another version of the table".into()));
        }
        let leaves = meta.entries.div_ceil(ENTRIES_PER_LEAF as u64);
        let leaf_bytes = leaves.saturating_mul(LEAF_BYTES as u64);
        if meta.column as usize != column
            || meta.entries != table.rows()
            || meta.fences.len() as u64 != leaves
            || !meta.fences.windows(2).all(|w| w[0] <= w[1])
            || leaf_bytes != description_at
        {
            return Err(stale("its description does not fit the table".into()));
        }
        meta.page_map.check(table)?;
        Ok(Some(SecondaryIndex { path, meta }))
    }

    pub fn meta(&self) -> &IndexMeta {
        &self.meta
    }

    pub fn column(&self) -> usize {
        self.meta.column as usize
    }

    pub fn page_map(&self) -> &PageMap {
        &self.meta.page_map
    }

    /// The leaves that may hold keys in `keys`.
    fn leaves(&self, keys: &impl RangeBounds<i64>) -> std::ops::Range<u64> {
        if inclusive(keys).is_none() {
            return 0..0;
        }
        let fences = &self.meta.fences;
        // A key equal to a leaf's first key may also end the leaf before it.
        let first = match keys.start_bound() {
            Bound::Included(&lo) => fences.partition_point(|&f| f < lo),
            Bound::Excluded(&lo) => fences.partition_point(|&f| f <= lo),
            Bound::Unbounded => 0,
        }
        .saturating_sub(1);
        let end = match keys.end_bound() {
            Bound::Included(&hi) => fences.partition_point(|&f| f <= hi),
            Bound::Excluded(&hi) => fences.partition_point(|&f| f < hi),
            Bound::Unbounded => fences.len(),
        };
        first as u64..(end as u64).max(first as u64)
    }

    /// At most how many rows hold keys in `keys`: the entries of the leaves a lookup
    /// would read (what a planner may know without reading them).
    pub fn estimate(&self, keys: &impl RangeBounds<i64>) -> u64 {
        let leaves = self.leaves(keys);
        (leaves.end - leaves.start)
            .saturating_mul(ENTRIES_PER_LEAF as u64)
            .min(self.meta.entries)
    }

    /// The rows whose key is in `keys`, ascending: their leaves read through `device`
    /// (one request per run of up to [`MAX_EXTENT_BYTES`]), every leaf checked.
    pub fn lookup(&self, device: &Device, keys: &impl RangeBounds<i64>) -> Result<Vec<u64>> {
        let leaves = self.leaves(keys);
        let file = device.open(&self.path)?;
        let per_read = (MAX_EXTENT_BYTES / LEAF_BYTES as u64).max(1);
        let mut rows = Vec::new();
        let mut at = leaves.start;
        while at < leaves.end {
            let n = per_read.min(leaves.end - at);
            let len = usize::try_from(n * LEAF_BYTES as u64).unwrap_or(usize::MAX);
            let bytes = device.read(&file, at * LEAF_BYTES as u64, len)?;
            for (i, page) in bytes.chunks(LEAF_BYTES).enumerate() {
                let number = at + i as u64;
                let entries = self.leaf(page, number)?;
                rows.extend(
                    entries
                        .iter()
                        .filter(|(k, _)| keys.contains(k))
                        .map(|e| e.1),
                );
            }
            at += n;
        }
        rows.sort_unstable();
        if let Some(w) = rows.windows(2).find(|w| w[0] == w[1]) {
            return Err(self.corrupt(format!("row {} is indexed twice", w[0])));
        }
        Ok(rows)
    }

    /// Reads and checks every leaf (what `coopscan index` does before it calls an index
    /// usable): a damaged leaf is found here rather than by the query that needs it.
    pub fn verify(&self, device: &Device) -> Result<()> {
        self.lookup(device, &..).map(|_| ())
    }

    /// Leaf `number`'s entries, checked against the description.
    fn leaf(&self, page: &[u8], number: u64) -> Result<Vec<file::Entry>> {
        let full = ENTRIES_PER_LEAF as u64;
        let expected = self.meta.entries.saturating_sub(number * full).min(full) as usize;
        let n = u32::try_from(number).map_err(|_| self.corrupt("too many leaves".into()))?;
        let entries = decode_leaf(page, &self.path, n, expected)?;
        let sorted = entries.windows(2).all(|w| w[0] < w[1]);
        let fence = self.meta.fences.get(number as usize).copied();
        if !sorted || entries.first().map(|e| e.0) != fence {
            return Err(self.corrupt(format!("leaf {number} is out of order")));
        }
        if let Some(e) = entries.iter().find(|e| e.1 >= self.meta.entries) {
            return Err(self.corrupt(format!("leaf {number} names row {}", e.1)));
        }
        Ok(entries)
    }

    fn corrupt(&self, reason: String) -> StorageError {
        StorageError::Corrupt {
            path: self.path.clone(),
            offset: 0,
            reason,
        }
    }
}

/// `keys` as an inclusive range of integers; `None` when it holds none.
fn inclusive(keys: &impl RangeBounds<i64>) -> Option<(i64, i64)> {
    let lo = match keys.start_bound() {
        Bound::Included(&a) => a,
        Bound::Excluded(&a) => a.checked_add(1)?,
        Bound::Unbounded => i64::MIN,
    };
    let hi = match keys.end_bound() {
        Bound::Included(&b) => b,
        Bound::Excluded(&b) => b.checked_sub(1)?,
        Bound::Unbounded => i64::MAX,
    };
    (lo <= hi).then_some((lo, hi))
}

/// The most bytes the description of an index of `table` can take: a first key per
/// leaf and a first row per page of the table, each at most 21 characters of JSON,
/// and a list per chunk and column, with room to spare. A larger one is refused before
/// it is read or parsed.
fn description_limit(table: &Table) -> u64 {
    const PER_NUMBER: u64 = 24;
    let leaves = table.rows().div_ceil(ENTRIES_PER_LEAF as u64);
    let pages: u64 = table.manifest().files.iter().map(|f| f.pages).sum();
    let lists = (table.chunk_count() as u64).saturating_mul(table.schema().len() as u64 + 1);
    PER_NUMBER
        .saturating_mul(leaves.saturating_add(pages).saturating_add(lists))
        .saturating_add(64 << 10)
        .min(MAX_DESCRIPTION_BYTES)
}

/// The description at the end of the index file `file` of `size` bytes (at most
/// `limit`), and where it starts.
fn read_meta(file: &std::fs::File, size: u64, path: &Path, limit: u64) -> Result<(IndexMeta, u64)> {
    use std::os::unix::fs::FileExt;
    let read = |at: u64, len: usize| {
        let mut buf = vec![0u8; len];
        file.read_exact_at(&mut buf, at)
            .map_err(|e| StorageError::io(path, e))
            .map(|()| buf)
    };
    let footer_at = size
        .checked_sub(FOOTER_BYTES as u64)
        .ok_or_else(|| StorageError::Corrupt {
            path: path.to_path_buf(),
            offset: 0,
            reason: "too short for an index".into(),
        })?;
    let (len, crc) = decode_footer(&read(footer_at, FOOTER_BYTES)?, path, footer_at)?;
    let start = footer_at
        .checked_sub(len)
        .filter(|_| len <= limit)
        .ok_or_else(|| StorageError::Corrupt {
            path: path.to_path_buf(),
            offset: footer_at,
            reason: format!("a description of {len} bytes does not fit the file"),
        })?;
    let description = &read(start, len as usize)?;
    let computed = crc32c::crc32c(description);
    if computed != crc {
        return Err(StorageError::Checksum {
            path: path.to_path_buf(),
            offset: start,
            expected: crc,
            found: computed,
        });
    }
    let meta: IndexMeta =
        serde_json::from_slice(description).map_err(|e| StorageError::Corrupt {
            path: path.to_path_buf(),
            offset: start,
            reason: format!("unreadable description: {e}"),
        })?;
    if meta.format != FORMAT || meta.version != VERSION {
        return Err(StorageError::Version {
            path: path.to_path_buf(),
            offset: start,
            found: meta.version,
            expected: VERSION,
        });
    }
    Ok((meta, start))
}
