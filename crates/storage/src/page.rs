//! The page: the unit of integrity checking in every layout.
//!
//! ```text
//!  0      4       6      7     8        12        16          24         28       32          40       44      48
//!  +------+-------+------+-----+--------+---------+-----------+----------+--------+-----------+--------+-------+---------+
//!  |magic |version|layout|flags|page_no |row_count| row_start |stored_len|raw_len | table_id  | column | crc32c| payload |
//!  +------+-------+------+-----+--------+---------+-----------+----------+--------+-----------+--------+-------+---------+
//! ```
//! All integers little-endian. `crc32c` covers bytes 0..44 and the stored payload.
//! The page is zero-padded to the table's page size, so page `i` of a file starts at
//! `i * page_bytes` and every page can be read with aligned direct I/O.
//!
//! A page names its place: table (`table_id`, random per table, also in the manifest),
//! column (the DSM or CSM column index, or [`ALL_COLUMNS`] for NSM/PAX pages), page number and
//! first row. A valid page of another table, another column or another position is
//! refused, so swapped or mixed files cannot decode as data.

use std::path::Path;

use crate::error::{Result, StorageError};
use crate::manifest::Layout;

pub const PAGE_MAGIC: u32 = u32::from_le_bytes(*b"CSPG");
/// Version 2 added `table_id` and `column`.
pub const PAGE_FORMAT_VERSION: u16 = 2;
pub const PAGE_HEADER_LEN: usize = 48;
const TABLE_ID_AT: usize = 32;
const COLUMN_AT: usize = 40;
const CRC_AT: usize = 44;
/// `column` of NSM and PAX pages, which hold every column.
pub const ALL_COLUMNS: u32 = u32::MAX;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PageHeader {
    pub layout: Layout,
    /// DSM/CSM: the page's codec, one bit ([`crate::codec::Codec::flag`]); 0 otherwise.
    pub flags: u8,
    pub page_no: u32,
    pub row_count: u32,
    pub row_start: u64,
    pub stored_len: u32,
    pub raw_len: u32,
    pub table_id: u64,
    /// DSM/CSM: the column index; NSM/PAX: [`ALL_COLUMNS`].
    pub column: u32,
}

impl PageHeader {
    /// Bytes a page with `stored_len` payload bytes needs.
    pub fn page_len(stored_len: usize) -> usize {
        PAGE_HEADER_LEN + stored_len
    }
}

fn layout_code(l: Layout) -> u8 {
    match l {
        Layout::Nsm => 0,
        Layout::Pax => 1,
        Layout::Dsm => 2,
        Layout::Csm => 3,
    }
}

/// Writes header and payload into `page` (which must be zeroed and large enough).
pub fn write_page(page: &mut [u8], header: &PageHeader, payload: &[u8]) {
    debug_assert_eq!(header.stored_len as usize, payload.len());
    debug_assert!(page.len() >= PageHeader::page_len(payload.len()));
    page[0..4].copy_from_slice(&PAGE_MAGIC.to_le_bytes());
    page[4..6].copy_from_slice(&PAGE_FORMAT_VERSION.to_le_bytes());
    page[6] = layout_code(header.layout);
    page[7] = header.flags;
    page[8..12].copy_from_slice(&header.page_no.to_le_bytes());
    page[12..16].copy_from_slice(&header.row_count.to_le_bytes());
    page[16..24].copy_from_slice(&header.row_start.to_le_bytes());
    page[24..28].copy_from_slice(&header.stored_len.to_le_bytes());
    page[28..32].copy_from_slice(&header.raw_len.to_le_bytes());
    page[TABLE_ID_AT..TABLE_ID_AT + 8].copy_from_slice(&header.table_id.to_le_bytes());
    page[COLUMN_AT..COLUMN_AT + 4].copy_from_slice(&header.column.to_le_bytes());
    page[PAGE_HEADER_LEN..PAGE_HEADER_LEN + payload.len()].copy_from_slice(payload);
    let crc = crc32c::crc32c_append(crc32c::crc32c(&page[..CRC_AT]), payload);
    page[CRC_AT..CRC_AT + 4].copy_from_slice(&crc.to_le_bytes());
}

fn le_u32(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

fn le_u64(b: &[u8], at: usize) -> u64 {
    let mut word = [0; 8];
    word.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(word)
}

/// Parses and verifies the page at `page` (read from `path` at `offset`): magic, format
/// version, layout, lengths, checksum and zero padding. Returns the header and the stored payload.
pub fn read_page<'a>(
    page: &'a [u8],
    path: &Path,
    offset: u64,
    layout: Layout,
) -> Result<(PageHeader, &'a [u8])> {
    read_page_with(page, path, offset, layout, PageChecks::Full)
}

/// How much of a page to verify when reading it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PageChecks {
    /// Everything, checksum and zero padding included: for bytes just read from disk.
    Full,
    /// Everything but the checksum and the padding: for bytes verified when they were loaded and
    /// immutable since (a buffer manager's resident chunk). Lengths and positions are
    /// still checked, so a decoder never reads out of bounds.
    SkipChecksum,
}

/// [`read_page`] with a choice of checks.
pub fn read_page_with<'a>(
    page: &'a [u8],
    path: &Path,
    offset: u64,
    layout: Layout,
    checks: PageChecks,
) -> Result<(PageHeader, &'a [u8])> {
    let corrupt = |reason: String| StorageError::Corrupt {
        path: path.to_path_buf(),
        offset,
        reason,
    };
    if page.len() < PAGE_HEADER_LEN {
        return Err(StorageError::Truncated {
            path: path.to_path_buf(),
            offset,
            expected: PAGE_HEADER_LEN as u64,
            found: page.len() as u64,
        });
    }
    let magic = le_u32(page, 0);
    if magic != PAGE_MAGIC {
        return Err(StorageError::Magic {
            path: path.to_path_buf(),
            offset,
            expected: PAGE_MAGIC,
            found: magic,
        });
    }
    let version = u16::from_le_bytes([page[4], page[5]]);
    if version != PAGE_FORMAT_VERSION {
        return Err(StorageError::Version {
            path: path.to_path_buf(),
            offset,
            found: u32::from(version),
            expected: u32::from(PAGE_FORMAT_VERSION),
        });
    }
    if page[6] != layout_code(layout) {
        return Err(corrupt(format!(
            "page layout code {} where {layout} was expected",
            page[6]
        )));
    }
    let stored_len = le_u32(page, 24);
    let end = PAGE_HEADER_LEN.saturating_add(stored_len as usize);
    if end > page.len() {
        return Err(corrupt(format!(
            "payload of {stored_len} bytes does not fit a page of {} bytes",
            page.len()
        )));
    }
    let payload = &page[PAGE_HEADER_LEN..end];
    let expected = le_u32(page, CRC_AT);
    if checks == PageChecks::Full {
        verify_checksum(page, payload, path, offset, expected)?;
        // The checksum covers header and payload only; the writer zero-pads the rest,
        // so a flipped bit there is damage too (nothing reads it, but a disk that flips
        // one byte may flip others).
        if let Some(at) = page[end..].iter().position(|&b| b != 0) {
            return Err(corrupt(format!(
                "non-zero byte in the zero padding after the payload, {} bytes into the page",
                end + at
            )));
        }
    }
    let header = PageHeader {
        layout,
        flags: page[7],
        page_no: le_u32(page, 8),
        row_count: le_u32(page, 12),
        row_start: le_u64(page, 16),
        stored_len,
        raw_len: le_u32(page, 28),
        table_id: le_u64(page, TABLE_ID_AT),
        column: le_u32(page, COLUMN_AT),
    };
    Ok((header, payload))
}

/// Checks that a page belongs to table `table_id` and column `column` (a DSM column
/// index or [`ALL_COLUMNS`]); the caller adds file and offset to the reason.
pub fn check_identity(header: &PageHeader, table_id: u64, column: u32) -> Result<(), String> {
    if header.table_id != table_id {
        return Err(format!(
            "page belongs to table {:016x}, this table is {table_id:016x} (a file of another table or generation)",
            header.table_id
        ));
    }
    if header.column != column {
        let name = |c: u32| match c {
            ALL_COLUMNS => "all columns".to_string(),
            c => format!("column {c}"),
        };
        return Err(format!(
            "page holds {}, expected {} (files swapped?)",
            name(header.column),
            name(column)
        ));
    }
    Ok(())
}

fn verify_checksum(
    page: &[u8],
    payload: &[u8],
    path: &Path,
    offset: u64,
    expected: u32,
) -> Result<()> {
    let found = crc32c::crc32c_append(crc32c::crc32c(&page[..CRC_AT]), payload);
    if found != expected {
        return Err(StorageError::Checksum {
            path: path.to_path_buf(),
            offset,
            expected,
            found,
        });
    }
    Ok(())
}
