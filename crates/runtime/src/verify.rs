//! Page verification on load, before a chunk becomes resident.
//!
//! A buffer manager checks what it reads before it shares it (PostgreSQL verifies page
//! checksums in `ReadBuffer`): a damaged page then fails the load, and the error goes to
//! exactly the scans that needed the chunk through the ABM's `load_failed` path, instead
//! of being rediscovered by every scan that decodes the chunk. Checking headers and
//! crc32c is cheap next to the I/O; decoding stays with the scans.

use coopscan_storage::page::read_page;
use coopscan_storage::{ChunkBytes, StorageError, Table};

/// Verifies every page of every extent of `bytes` (magic, version, layout, checksum and
/// position), or returns the first error, naming the file and byte offset.
pub(crate) fn verify_chunk(table: &Table, bytes: &ChunkBytes) -> Result<(), StorageError> {
    let page_bytes = table.manifest().page_bytes as usize;
    for (extent, data) in bytes.views() {
        let path = table.file_path(extent.file);
        let data = data.get(..extent.len as usize).unwrap_or(data);
        for (i, page) in data.chunks(page_bytes).enumerate() {
            let offset = extent.offset + (i * page_bytes) as u64;
            let (header, _) = read_page(page, &path, offset, table.layout())?;
            if u64::from(header.page_no) * page_bytes as u64 != offset {
                return Err(StorageError::Corrupt {
                    path,
                    offset,
                    reason: format!("page says it is page {}", header.page_no),
                });
            }
        }
    }
    Ok(())
}
