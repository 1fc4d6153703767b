//! The index file's bytes: leaf pages of sorted `(key, row)` entries from offset 0,
//! then the description (JSON) and a footer naming its length and checksum.
//!
//! ```text
//!   leaf 0 | leaf 1 | … | leaf n-1 | description (JSON) | footer (16 bytes)
//!   leaf:   magic "CSIL" | crc32c of the rest | entries (u32) | leaf number (u32)
//!           | entries × (key i64 LE, row u64 LE)
//!   footer: description length (u64 LE) | crc32c of the description | magic "CSIX"
//! ```
//!
//! Leaves are page aligned so a lookup reads a run of them with one direct request.

use std::path::Path;

use crate::error::{Result, StorageError};

/// Bytes of one leaf page (a multiple of the device's alignment).
pub const LEAF_BYTES: usize = 4096;
const LEAF_HEADER: usize = 16;
const ENTRY_BYTES: usize = 16;
/// Entries in a full leaf; every leaf but the last is full.
pub const ENTRIES_PER_LEAF: usize = (LEAF_BYTES - LEAF_HEADER) / ENTRY_BYTES;
const LEAF_MAGIC: &[u8; 4] = b"CSIL";
const FOOTER_MAGIC: &[u8; 4] = b"CSIX";
pub const FOOTER_BYTES: usize = 16;

/// One entry: a key and the row holding it.
pub type Entry = (i64, u64);

/// Leaf `number` holding `entries` (at most [`ENTRIES_PER_LEAF`]).
pub fn encode_leaf(number: u32, entries: &[Entry]) -> Vec<u8> {
    let mut page = vec![0u8; LEAF_BYTES];
    page[..4].copy_from_slice(LEAF_MAGIC);
    page[8..12].copy_from_slice(&(entries.len() as u32).to_le_bytes());
    page[12..16].copy_from_slice(&number.to_le_bytes());
    for (i, (key, row)) in entries.iter().enumerate() {
        let at = LEAF_HEADER + i * ENTRY_BYTES;
        page[at..at + 8].copy_from_slice(&key.to_le_bytes());
        page[at + 8..at + 16].copy_from_slice(&row.to_le_bytes());
    }
    let crc = crc32c::crc32c(&page[8..]);
    page[4..8].copy_from_slice(&crc.to_le_bytes());
    page
}

/// The entries of leaf `number` (its bytes `page`, read at `offset` of `path`): magic,
/// checksum, number and entry count (`expected`) checked.
pub fn decode_leaf(page: &[u8], path: &Path, number: u32, expected: usize) -> Result<Vec<Entry>> {
    let offset = u64::from(number) * LEAF_BYTES as u64;
    let corrupt = |reason: String| StorageError::Corrupt {
        path: path.to_path_buf(),
        offset,
        reason,
    };
    let page = page
        .get(..LEAF_BYTES)
        .ok_or_else(|| corrupt("a short leaf".into()))?;
    if &page[..4] != LEAF_MAGIC {
        return Err(corrupt("not an index leaf (bad magic)".into()));
    }
    let stored = u32_at(page, 4);
    let computed = crc32c::crc32c(&page[8..]);
    if stored != computed {
        return Err(StorageError::Checksum {
            path: path.to_path_buf(),
            offset,
            expected: stored,
            found: computed,
        });
    }
    let (count, found) = (u32_at(page, 8) as usize, u32_at(page, 12));
    if count != expected || found != number {
        return Err(corrupt(format!(
            "leaf {found} with {count} entries where leaf {number} with {expected} belongs"
        )));
    }
    Ok((0..count)
        .map(|i| {
            let at = LEAF_HEADER + i * ENTRY_BYTES;
            (i64_at(page, at), u64_at(page, at + 8))
        })
        .collect())
}

/// The footer after a description of `len` bytes with checksum `crc`.
pub fn encode_footer(description: &[u8]) -> [u8; FOOTER_BYTES] {
    let mut footer = [0u8; FOOTER_BYTES];
    footer[..8].copy_from_slice(&(description.len() as u64).to_le_bytes());
    footer[8..12].copy_from_slice(&crc32c::crc32c(description).to_le_bytes());
    footer[12..].copy_from_slice(FOOTER_MAGIC);
    footer
}

/// The description's length and checksum from the footer (`path` at `offset`).
pub fn decode_footer(footer: &[u8], path: &Path, offset: u64) -> Result<(u64, u32)> {
    if footer.len() != FOOTER_BYTES || &footer[12..] != FOOTER_MAGIC {
        return Err(StorageError::Corrupt {
            path: path.to_path_buf(),
            offset,
            reason: "not a coopscan index (no footer)".into(),
        });
    }
    Ok((u64_at(footer, 0), u32_at(footer, 8)))
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    let mut x = [0u8; 8];
    x.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(x)
}

fn i64_at(b: &[u8], at: usize) -> i64 {
    u64_at(b, at) as i64
}
