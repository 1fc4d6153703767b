//! Writes a DSM table whose string column is decompression bombs throughout: every
//! page an LZ4 block, checksum valid, declaring about 255 plain bytes per byte stored
//! (just within the per-page bound, `codec::MAX_EXPANSION`). What `coopscan sql` and
//! `coopscan verify` are measured on for the decode budget (docs/reliability.md).
//!
//! `cargo run --release -p coopscan-storage --example hostile_column -- DIR ROWS CHUNK_MB`

use std::path::Path;
use std::sync::Arc;

use arrow_array::{ArrayRef, Int64Array, RecordBatch, StringArray};
use coopscan_storage::codec::Codec;
use coopscan_storage::page::{read_page, write_page, PageHeader};
use coopscan_storage::{
    ColumnDef, ColumnType, Layout, Table, TableSchema, TableWriter, WriteOptions,
};

const BATCH_ROWS: u64 = 65_536;
/// Room a page header and checksum leave for the payload, rounded down.
const HEADER_ROOM: usize = 128;

type Result<T> = std::result::Result<T, Box<dyn std::error::Error>>;

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [dir, rows, chunk_mb] = args.as_slice() else {
        return Err("usage: hostile_column DIR ROWS CHUNK_MB".into());
    };
    let (dir, rows, chunk_mb): (&Path, u64, u64) = (dir.as_ref(), rows.parse()?, chunk_mb.parse()?);
    let schema = TableSchema::new(vec![
        ColumnDef {
            name: "id".into(),
            ty: ColumnType::Int64,
        },
        ColumnDef {
            name: "note".into(),
            ty: ColumnType::Utf8,
        },
    ])?;
    let opts = WriteOptions::new(Layout::Dsm).with_chunk_bytes(chunk_mb << 20);
    let mut writer = TableWriter::create(dir, "hostile", schema.clone(), opts)?;
    let mut start = 0;
    while start < rows {
        let n = BATCH_ROWS.min(rows - start);
        let ids: Vec<i64> = (start..start + n).map(|i| i as i64).collect();
        // Values that compress poorly, so the column takes many pages to bomb.
        let notes: Vec<String> = (start..start + n)
            .map(|i| format!("{:016x}", i.wrapping_mul(0x9e37_79b9_7f4a_7c15)))
            .collect();
        let columns: Vec<ArrayRef> = vec![
            Arc::new(Int64Array::from(ids)),
            Arc::new(StringArray::from(notes)),
        ];
        writer.write_batch(&RecordBatch::try_new(schema.arrow_schema(), columns)?)?;
        start += n;
    }
    writer.finish()?;
    let table = Table::open(dir)?;
    let file = dir.join(&table.manifest().files[1].name);
    let pages = bomb_every_page(&file, table.manifest().page_bytes as usize)?;
    println!(
        "{}: {pages} pages of column `note` rewritten as LZ4 bombs",
        dir.display()
    );
    Ok(())
}

/// Rewrites every page of `file` as an LZ4 block of the page's rows whose last value
/// is as long as the page's payload allows.
fn bomb_every_page(file: &Path, page_bytes: usize) -> Result<usize> {
    let mut bytes = std::fs::read(file)?;
    let mut count = 0;
    for page in bytes.chunks_mut(page_bytes) {
        let (header, _) = read_page(page, file, 0, Layout::Dsm)?;
        let rows = header.row_count as usize;
        let mut value = 1 << 10;
        let mut best = None;
        loop {
            let raw = minipage(rows, value);
            let block = lz4_flex::block::compress(&raw);
            if block.len() > page_bytes - HEADER_ROOM {
                break;
            }
            best = Some((raw.len(), block));
            value += value / 4;
        }
        let (raw_len, block) = best.ok_or("a page too small for any bomb")?;
        let header = PageHeader {
            flags: Codec::Lz4.flag(),
            stored_len: u32::try_from(block.len())?,
            raw_len: u32::try_from(raw_len)?,
            ..header
        };
        page.fill(0);
        write_page(page, &header, &block);
        count += 1;
    }
    std::fs::write(file, &bytes)?;
    Ok(count)
}

/// A varchar minipage of `rows` values, all empty but the last, `len` bytes of 'a'.
fn minipage(rows: usize, len: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(4 * (rows + 1) + len);
    out.extend(std::iter::repeat_n(0u32.to_le_bytes(), rows).flatten());
    out.extend_from_slice(&(len as u32).to_le_bytes());
    out.resize(out.len() + len, b'a');
    out
}
