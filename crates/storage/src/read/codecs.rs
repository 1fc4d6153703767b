//! Which codec each page of a DSM or CSM column was stored with, for `coopscan
//! inspect`: reads only the first bytes of every page header.

use std::collections::BTreeMap;
use std::os::unix::fs::FileExt;

use crate::codec::Codec;
use crate::error::{Result, StorageError};
use crate::manifest::Layout;
use crate::page::PAGE_MAGIC;
use crate::read::Table;

/// Pages of column `column` per codec name (`"unknown"` for flags no codec has): a
/// DSM column's file, a CSM column's runs; empty for NSM and PAX tables, whose pages
/// are not compressed.
pub fn page_codecs(table: &Table, column: usize) -> Result<BTreeMap<&'static str, u64>> {
    table.check_projection(&[column])?;
    let mut counts = BTreeMap::new();
    let m = table.manifest();
    let page_bytes = u64::from(m.page_bytes);
    let (file, offsets): (u32, Vec<u64>) = match table.layout() {
        Layout::Nsm | Layout::Pax => return Ok(counts),
        Layout::Dsm => {
            let pages = m.file_len(column) / page_bytes;
            let file = u32::try_from(column).unwrap_or(u32::MAX);
            (file, (0..pages).map(|p| p * page_bytes).collect())
        }
        Layout::Csm => {
            let runs = m.chunks.iter().map(|c| c.columns[column].extent);
            let offsets = runs
                .flat_map(|e| (0..e.len / page_bytes).map(move |p| e.offset + p * page_bytes))
                .collect();
            (0, offsets)
        }
    };
    let path = table.file_path(file);
    let file = std::fs::File::open(&path).map_err(|e| StorageError::io(&path, e))?;
    for offset in offsets {
        let mut head = [0u8; 8];
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
