//! Which codec each page of a DSM column was stored with, for `coopscan inspect`:
//! reads only the first bytes of every page header.

use std::collections::BTreeMap;
use std::os::unix::fs::FileExt;

use crate::codec::Codec;
use crate::error::{Result, StorageError};
use crate::manifest::Layout;
use crate::page::PAGE_MAGIC;
use crate::read::Table;

/// Pages of DSM column `column` per codec name (`"unknown"` for flags no codec has);
/// empty for NSM and PAX tables, whose pages are not compressed.
pub fn page_codecs(table: &Table, column: usize) -> Result<BTreeMap<&'static str, u64>> {
    let mut counts = BTreeMap::new();
    if table.layout() != Layout::Dsm {
        return Ok(counts);
    }
    let m = table.manifest();
    let path = table.file_path(u32::try_from(column).unwrap_or(u32::MAX));
    let file = std::fs::File::open(&path).map_err(|e| StorageError::io(&path, e))?;
    let page_bytes = u64::from(m.page_bytes);
    for page in 0..m.file_len(column) / page_bytes {
        let mut head = [0u8; 8];
        let offset = page * page_bytes;
        file.read_exact_at(&mut head, offset)
            .map_err(|e| StorageError::io(&path, e))?;
        let magic = u32::from_le_bytes([head[0], head[1], head[2], head[3]]);
        let name = match Codec::from_flags(head[7]) {
            Some(c) if magic == PAGE_MAGIC => c.name(),
            _ => "unknown",
        };
        *counts.entry(name).or_insert(0) += 1;
    }
    Ok(counts)
}
