//! Building an index: every row's key read from the table, sorted with its row, written
//! as leaves and a description to a temporary file that replaces the old index only
//! once it is complete and on disk.

use std::io::Write;
use std::path::PathBuf;

use arrow_array::cast::AsArray;
use arrow_array::types::{Date32Type, Decimal128Type, Int32Type, Int64Type};
use arrow_array::{Array, ArrayRef};
use arrow_schema::DataType;

use super::file::{encode_footer, encode_leaf, Entry, ENTRIES_PER_LEAF};
use super::{check_indexable, index_path, IndexMeta, FORMAT, VERSION};
use crate::device::Device;
use crate::error::{Result, StorageError};
use crate::manifest::{sync_dir, Manifest};
use crate::read::{PageMap, Table};
use crate::write::lock::TableLock;

/// Most rows an index is built for: its entries are sorted in memory (16 bytes each).
pub const MAX_INDEX_ENTRIES: u64 = 1 << 28;

/// Builds (or rebuilds) the index of column `column` of `table`, reading the table
/// through `device`; returns the index file's path. Holds the table writer's lock
/// meanwhile (a writer replacing the table would leave the index behind with the old
/// files), so it fails at once, like a second writer, while the table is being written.
pub fn build_index(table: &Table, device: &Device, column: usize) -> Result<PathBuf> {
    check_indexable(table, column)?;
    let _lock = TableLock::of_table(table.dir())?;
    if Manifest::load(table.dir())?.table_id != table.manifest().table_id {
        return Err(StorageError::Invalid(format!(
            "{} was rewritten since it was opened: open it again to index it",
            table.dir().display()
        )));
    }
    if table.rows() > MAX_INDEX_ENTRIES {
        return Err(StorageError::Invalid(format!(
            "{} rows: an index is built for at most {MAX_INDEX_ENTRIES}",
            table.rows()
        )));
    }
    let files = table.open_files(device)?;
    let mut entries: Vec<Entry> = Vec::with_capacity(table.rows() as usize);
    for k in 0..table.chunk_count() {
        let batch = table.read_chunk_batch(device, &files, k, &[column], None)?;
        let first = table.chunk(k).row_start;
        for (i, key) in keys(batch.column(0))?.into_iter().enumerate() {
            entries.push((key, first + i as u64));
        }
    }
    entries.sort_unstable();
    let meta = IndexMeta {
        format: FORMAT.into(),
        version: VERSION,
        table_id: table.manifest().table_id,
        column: column as u32,
        column_name: table.schema().columns[column].name.clone(),
        entries: entries.len() as u64,
        fences: entries.chunks(ENTRIES_PER_LEAF).map(|l| l[0].0).collect(),
        page_map: PageMap::read(table, device, &files)?,
    };
    let path = index_path(table.dir(), column);
    write_atomically(&path, &entries, &meta)?;
    Ok(path)
}

/// The stored integers of an integer, date or decimal column.
fn keys(array: &ArrayRef) -> Result<Vec<i64>> {
    Ok(match array.data_type() {
        DataType::Int32 => array
            .as_primitive::<Int32Type>()
            .values()
            .iter()
            .map(|&v| i64::from(v))
            .collect(),
        DataType::Date32 => array
            .as_primitive::<Date32Type>()
            .values()
            .iter()
            .map(|&v| i64::from(v))
            .collect(),
        DataType::Int64 => array.as_primitive::<Int64Type>().values().to_vec(),
        DataType::Decimal128(..) => array
            .as_primitive::<Decimal128Type>()
            .values()
            .iter()
            .map(|&v| {
                i64::try_from(v).map_err(|_| {
                    StorageError::Invalid(format!("decimal {v} is not stored as 64 bits"))
                })
            })
            .collect::<Result<_>>()?,
        other => {
            return Err(StorageError::Invalid(format!(
                "a column of {other} cannot be indexed"
            )))
        }
    })
}

/// Writes the index to a temporary file beside `path`, syncs it, and renames
/// it over `path`: a crash leaves the old index or the new one, never a part (and a
/// temporary file, removed here when writing fails).
fn write_atomically(path: &std::path::Path, entries: &[Entry], meta: &IndexMeta) -> Result<()> {
    let dir = path.parent().unwrap_or(path);
    std::fs::create_dir_all(dir).map_err(|e| StorageError::io(dir, e))?;
    // The table's lock is held: a temporary file left here is a killed builder's.
    let tmp = path.with_extension("cidx.tmp");
    let _ = std::fs::remove_file(&tmp);
    let written = write_file(&tmp, entries, meta)
        .and_then(|()| std::fs::rename(&tmp, path).map_err(|e| StorageError::io(path, e)));
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written?;
    sync_dir(dir)
}

/// The index's bytes in a new file `tmp`, synced.
fn write_file(tmp: &std::path::Path, entries: &[Entry], meta: &IndexMeta) -> Result<()> {
    let io = |e| StorageError::io(tmp, e);
    let file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(tmp);
    let mut out = std::io::BufWriter::new(file.map_err(io)?);
    for (n, leaf) in entries.chunks(ENTRIES_PER_LEAF).enumerate() {
        let number =
            u32::try_from(n).map_err(|_| StorageError::Invalid("too many index leaves".into()))?;
        out.write_all(&encode_leaf(number, leaf)).map_err(io)?;
    }
    let description = serde_json::to_vec(meta)
        .map_err(|e| StorageError::Invalid(format!("index description: {e}")))?;
    out.write_all(&description).map_err(io)?;
    out.write_all(&encode_footer(&description)).map_err(io)?;
    let file = out.into_inner().map_err(|e| io(e.into_error()))?;
    file.sync_all().map_err(io)
}
