//! DSM string pages rewritten by an attacker, checksum recomputed: what a scan and
//! `coopscan verify` (both decode through `Table::read_chunk_batch`) must refuse, with
//! the file and byte offset named, before allocating what the page claims.
//!
//! The story: a 3 KB zstd frame with a valid checksum may declare a decoded size of up
//! to 64 MiB (the reader's cap on a varchar page), and decoded to it; 1.4 MB of such
//! pages drove one scan to 4.2 GB RSS and `verify` passed. Now a page may decode to at
//! most `MAX_EXPANSION` bytes per byte stored (`codec/mod.rs`). Invalid UTF-8 in such a
//! page surfaced as "arrow: … non UTF-8 data" with no file, offset or column.
#![allow(clippy::unwrap_used)]

mod common;

use std::alloc::{GlobalAlloc, Layout as AllocLayout, System};
use std::cell::Cell;
use std::path::Path;

use coopscan_storage::codec::{Codec, MAX_EXPANSION};
use coopscan_storage::page::{read_page, write_page, PageHeader};
use coopscan_storage::{DecodeBudget, Layout, StorageError, Table};

/// Counts the largest single allocation, and the peak of bytes held, of the thread
/// that asks for it (frees by other threads are not seen: the tests decode on one).
struct Tracking;

thread_local! {
    static TRACKING: Cell<bool> = const { Cell::new(false) };
    static LARGEST: Cell<usize> = const { Cell::new(0) };
    static LIVE: Cell<isize> = const { Cell::new(0) };
    static PEAK: Cell<isize> = const { Cell::new(0) };
}

// SAFETY: forwards every call to `System` unchanged; only records sizes.
#[allow(unsafe_code)]
unsafe impl GlobalAlloc for Tracking {
    unsafe fn alloc(&self, layout: AllocLayout) -> *mut u8 {
        note(layout.size());
        held(layout.size() as isize);
        // SAFETY: the caller's guarantees for `alloc` hold for `System.alloc`.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: AllocLayout) {
        held(-(layout.size() as isize));
        // SAFETY: `ptr` came from `System` with this layout.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: AllocLayout, new_size: usize) -> *mut u8 {
        note(new_size);
        held(new_size as isize - layout.size() as isize);
        // SAFETY: the caller's guarantees for `realloc` hold for `System.realloc`.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

fn note(size: usize) {
    let _ = TRACKING.try_with(|on| {
        if on.get() {
            let _ = LARGEST.try_with(|l| l.set(l.get().max(size)));
        }
    });
}

fn held(change: isize) {
    let _ = TRACKING.try_with(|on| {
        if on.get() {
            let _ = LIVE.try_with(|live| {
                live.set(live.get() + change);
                let _ = PEAK.try_with(|p| p.set(p.get().max(live.get())));
            });
        }
    });
}

#[global_allocator]
static ALLOCATOR: Tracking = Tracking;

/// `f`'s result and the most bytes this thread held at once during it, beyond what it
/// held before.
fn peak_held<T>(f: impl FnOnce() -> T) -> (T, usize) {
    LIVE.with(|l| l.set(0));
    PEAK.with(|p| p.set(0));
    TRACKING.with(|on| on.set(true));
    let out = f();
    TRACKING.with(|on| on.set(false));
    (out, PEAK.with(Cell::get).max(0) as usize)
}

/// `f`'s result and the largest single allocation this thread made during it.
fn largest_allocation<T>(f: impl FnOnce() -> T) -> (T, usize) {
    LARGEST.with(|l| l.set(0));
    TRACKING.with(|on| on.set(true));
    let out = f();
    TRACKING.with(|on| on.set(false));
    (out, LARGEST.with(Cell::get))
}

const PAGE_BYTES: u32 = 8192;
/// The sample schema's `comment` column (Utf8), stored in `c004_comment.dsm`.
const COMMENT: &str = "c004_comment.dsm";

fn sample_dsm(dir: &Path) -> Table {
    let batch = common::sample_batch(0, 300);
    let schema = common::sample_schema();
    common::write_table(dir, &schema, Layout::Dsm, PAGE_BYTES, 4, &[batch])
}

/// Replaces page 0 of `file` with `payload` under `codec`, claiming `raw_len` decoded
/// bytes; every other header field as written, the checksum recomputed. Returns the
/// page's row count.
fn rewrite_first_page(dir: &Path, file: &str, codec: Codec, payload: &[u8], raw_len: u32) -> u32 {
    let path = dir.join(file);
    let mut bytes = std::fs::read(&path).unwrap();
    let page = &mut bytes[..PAGE_BYTES as usize];
    let (header, _) = read_page(page, &path, 0, Layout::Dsm).unwrap();
    let header = PageHeader {
        flags: codec.flag(),
        stored_len: payload.len() as u32,
        raw_len,
        ..header
    };
    page.fill(0);
    write_page(page, &header, payload);
    std::fs::write(&path, &bytes).unwrap();
    header.row_count
}

/// A varchar minipage: `rows` values, all empty but the last, which is `last`.
fn minipage(rows: u32, last: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(4 * (rows as usize + 1) + last.len());
    out.extend_from_slice(&0u32.to_le_bytes());
    for _ in 1..rows {
        out.extend_from_slice(&0u32.to_le_bytes());
    }
    out.extend_from_slice(&(last.len() as u32).to_le_bytes());
    out.extend_from_slice(last);
    out
}

fn corrupt_at(err: StorageError) -> (String, u64, String) {
    match err {
        StorageError::Corrupt {
            path,
            offset,
            reason,
        } => (path.display().to_string(), offset, reason),
        other => panic!("expected a page error naming file and offset, got {other}"),
    }
}

#[test]
fn a_zstd_bomb_is_refused_before_it_is_decoded() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t");
    sample_dsm(&path);
    let rows = rewrite_first_page(&path, COMMENT, Codec::Zstd, b"", 0);
    // 60 MiB of 'a' in one value (under the old 64 MiB cap), valid UTF-8 and framed
    // exactly: before, it decoded and `verify` passed.
    let raw = minipage(rows, &vec![b'a'; 60 << 20]);
    let frame = zstd::bulk::compress(&raw, 19).unwrap();
    assert!(frame.len() < 8000, "the frame fits a page: {}", frame.len());
    rewrite_first_page(&path, COMMENT, Codec::Zstd, &frame, raw.len() as u32);
    drop(raw);
    let table = Table::open(&path).unwrap();
    let (result, largest) = largest_allocation(|| common::try_read_all(&table));
    let (file, offset, reason) = corrupt_at(result.unwrap_err());
    assert!(file.ends_with(COMMENT), "{file}");
    assert_eq!(offset, 0);
    assert!(
        reason.contains(&format!("more than {MAX_EXPANSION} per byte stored")),
        "{reason}"
    );
    assert!(largest < 4 << 20, "largest allocation {largest} bytes");
}

#[test]
fn pdict_codes_cannot_multiply_a_long_entry_past_the_page_size() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t");
    sample_dsm(&path);
    let rows = rewrite_first_page(&path, COMMENT, Codec::Pdict, b"", 0);
    // One entry of 4000 bytes, every row coded 0: rows × 4000 bytes of values from a
    // page of about 4 KB, whose header claims the bound's worth of plain bytes.
    let mut payload = Vec::new();
    payload.extend_from_slice(&1u32.to_le_bytes()); // entries
    payload.push(0); // code width: 0 bits
    payload.extend_from_slice(&0u32.to_le_bytes());
    payload.extend_from_slice(&4000u32.to_le_bytes());
    payload.extend_from_slice(&[b'x'; 4000]);
    let claimed = 4 * (rows + 1) + 4000;
    rewrite_first_page(&path, COMMENT, Codec::Pdict, &payload, claimed);
    let table = Table::open(&path).unwrap();
    let (file, offset, reason) = corrupt_at(common::try_read_all(&table).unwrap_err());
    assert!(file.ends_with(COMMENT), "{file}");
    assert_eq!(offset, 0);
    assert!(reason.contains("more than the page's"), "{reason}");
}

#[test]
fn invalid_utf8_in_a_string_page_names_file_offset_and_column() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t");
    sample_dsm(&path);
    let rows = rewrite_first_page(&path, COMMENT, Codec::Lz4, b"", 0);
    let raw = minipage(rows, b"ok \xff\xfe not utf-8");
    let block = lz4_flex::block::compress(&raw);
    rewrite_first_page(&path, COMMENT, Codec::Lz4, &block, raw.len() as u32);
    let table = Table::open(&path).unwrap();
    let (file, offset, reason) = corrupt_at(common::try_read_all(&table).unwrap_err());
    assert!(file.ends_with(COMMENT), "{file}");
    assert_eq!(offset, 0);
    assert!(reason.contains("\"comment\""), "{reason}");
    assert!(reason.contains("UTF-8"), "{reason}");
    // The bad value is the page's last (`minipage`), and the page starts the table.
    let row = format!("row {} ", rows - 1);
    assert!(reason.contains(&row), "{reason}");
}

/// Every page of a string column a bomb within the per-page bound (an LZ4 block
/// declaring about 255 bytes per byte stored, valid checksums): each page alone is
/// plausible, so only the batch's decode budget stops a chunk of them from decoding
/// to hundreds of times its size. Refused naming the file and the page where the
/// budget ran out, holding at most twice the budget meanwhile (vectors grow by
/// doubling) plus one page's decompression scratch.
#[test]
fn a_column_of_bombs_is_refused_within_the_decode_budget() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t");
    let batch = common::sample_batch(0, 20_000);
    let schema = common::sample_schema();
    common::write_table(&path, &schema, Layout::Dsm, PAGE_BYTES, 256, &[batch]);
    let pages = bomb_every_page(&path, COMMENT);
    let budget = 6 << 20;
    let table = Table::open(&path)
        .unwrap()
        .with_decode_budget(DecodeBudget::from_bytes(budget));
    assert!(table.chunk_count() < pages / 4, "several bombs a chunk");
    let (result, peak) = peak_held(|| common::try_read_all(&table));
    match result.unwrap_err() {
        StorageError::OverBudget {
            path,
            offset,
            needed,
            budget: b,
            what,
        } => {
            assert!(path.ends_with(COMMENT), "{}", path.display());
            assert_eq!(offset % u64::from(PAGE_BYTES), 0);
            assert!(needed > b && b == budget, "{needed} {b}");
            assert!(what.contains("\"comment\""), "{what}");
        }
        other => panic!("expected the decode budget's error, got {other}"),
    }
    let scratch = 2 << 20;
    assert!(
        peak as u64 <= 2 * budget + scratch,
        "held {peak} bytes at once for a budget of {budget}"
    );
    // A budget the bombs fit in decodes them (the pages are otherwise valid).
    let roomy = Table::open(&path)
        .unwrap()
        .with_decode_budget(DecodeBudget::from_mib(1024).unwrap());
    common::try_read_all(&roomy).unwrap();
}

/// Rewrites every page of `file` as an LZ4 block of the page's rows whose last value
/// is as long as the page's stored bytes allow; returns the number of pages.
fn bomb_every_page(dir: &Path, file: &str) -> usize {
    let path = dir.join(file);
    let mut bytes = std::fs::read(&path).unwrap();
    let mut count = 0;
    for page in bytes.chunks_mut(PAGE_BYTES as usize) {
        let (header, _) = read_page(page, &path, 0, Layout::Dsm)
            .map(|(h, p)| (h, p.len()))
            .unwrap_or_else(|e| panic!("{e}"));
        let raw = minipage(header.row_count, &vec![b'a'; 1_900_000]);
        let block = lz4_flex::block::compress(&raw);
        assert!(
            raw.len() <= block.len() * MAX_EXPANSION,
            "within the page bound"
        );
        let header = PageHeader {
            flags: Codec::Lz4.flag(),
            stored_len: block.len() as u32,
            raw_len: raw.len() as u32,
            ..header
        };
        page.fill(0);
        write_page(page, &header, &block);
        count += 1;
    }
    std::fs::write(&path, &bytes).unwrap();
    count
}
