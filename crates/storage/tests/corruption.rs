//! Damage on disk gives an error naming the file, the offset and what was expected —
//! never a panic, never wrong data.

mod common;

use std::path::{Path, PathBuf};

use coopscan_storage::device::{Device, DeviceConfig};
use coopscan_storage::manifest::MANIFEST_VERSION;
use coopscan_storage::page::{PAGE_FORMAT_VERSION, PAGE_HEADER_LEN};
use coopscan_storage::{decode_chunk_with, verify_chunk, Layout, PageChecks, StorageError, Table};

use common::{sample_batch, sample_schema, write_table};

const PAGE_BYTES: u32 = 4096;

/// A table of several chunks; returns its directory.
fn table(dir: &Path, layout: Layout) -> Table {
    let batches: Vec<_> = (0..4).map(|i| sample_batch(i * 500, 500)).collect();
    write_table(dir, &sample_schema(), layout, PAGE_BYTES, 2, &batches)
}

fn read_everything(dir: &Path) -> Result<(), StorageError> {
    let table = Table::open(dir)?;
    let device = Device::new(DeviceConfig::default());
    let files = table.open_files(&device)?;
    let all: Vec<usize> = (0..table.schema().len()).collect();
    for k in 0..table.chunk_count() {
        table.read_chunk_batch(&device, &files, k, &all, None)?;
    }
    Ok(())
}

fn patch(path: &Path, offset: u64, f: impl FnOnce(&mut u8)) {
    let mut data = std::fs::read(path).expect("read");
    f(&mut data[offset as usize]);
    std::fs::write(path, data).expect("write");
}

/// The first data file with two pages or more, and the offset of its second page. (A
/// DSM column of consecutive keys compresses into one page; the comments take several.)
fn second_page(t: &Table) -> (PathBuf, u64) {
    let files = t.manifest().files.len() as u32;
    let path = (0..files)
        .map(|f| t.file_path(f))
        .find(|p| std::fs::metadata(p).expect("stat").len() >= 2 * u64::from(PAGE_BYTES))
        .expect("a file of two pages");
    (path, u64::from(PAGE_BYTES))
}

#[test]
fn a_flipped_payload_byte_is_a_checksum_error_naming_file_and_page() {
    for layout in Layout::ALL {
        let tmp = tempfile::tempdir().expect("tempdir");
        let t = table(tmp.path(), layout);
        let (path, page) = second_page(&t);
        patch(&path, page + PAGE_HEADER_LEN as u64 + 3, |b| *b ^= 0x40);
        match read_everything(tmp.path()) {
            Err(StorageError::Checksum {
                path: p,
                offset,
                expected,
                found,
            }) => {
                assert_eq!((p, offset), (path.clone(), page), "{layout}");
                assert_ne!(expected, found);
            }
            other => panic!("{layout}: expected a checksum error, got {other:?}"),
        }
    }
}

#[test]
fn a_wrong_magic_is_reported_as_such() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let t = table(tmp.path(), Layout::Pax);
    let (path, page) = second_page(&t);
    patch(&path, page, |b| *b = b'X');
    let err = read_everything(tmp.path()).expect_err("bad magic must fail");
    assert!(
        matches!(&err, StorageError::Magic { path: p, offset, .. } if *p == path && *offset == page),
        "{err:?}"
    );
    let msg = err.to_string();
    assert!(
        msg.contains("bad magic") && msg.contains(&page.to_string()) && msg.contains("data.pax"),
        "{msg}"
    );
}

#[test]
fn an_unknown_page_version_is_refused() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let t = table(tmp.path(), Layout::Dsm);
    let (path, page) = second_page(&t);
    patch(&path, page + 4, |b| *b = 9);
    let err = read_everything(tmp.path()).expect_err("unknown version must fail");
    assert!(
        matches!(err, StorageError::Version { found: 9, expected, offset, .. } if offset == page && expected == u32::from(PAGE_FORMAT_VERSION)),
        "{err:?}"
    );
}

#[test]
fn a_truncated_data_file_is_reported_with_its_expected_size() {
    for layout in Layout::ALL {
        let tmp = tempfile::tempdir().expect("tempdir");
        let t = table(tmp.path(), layout);
        let path = t.file_path(0);
        let full = std::fs::metadata(&path).expect("stat").len();
        let file = std::fs::OpenOptions::new()
            .write(true)
            .open(&path)
            .expect("open");
        file.set_len(full - 100).expect("truncate");
        match Table::open(tmp.path()) {
            Err(StorageError::Truncated {
                path: p,
                expected,
                found,
                ..
            }) => {
                assert_eq!(
                    (p, expected, found),
                    (path.clone(), full, full - 100),
                    "{layout}"
                );
            }
            other => panic!("{layout}: expected truncation, got {other:?}"),
        }
    }
}

#[test]
fn an_unknown_manifest_version_is_refused() {
    let tmp = tempfile::tempdir().expect("tempdir");
    table(tmp.path(), Layout::Nsm);
    let path = tmp.path().join("manifest.json");
    let current = format!("\"version\": {MANIFEST_VERSION}");
    let text = std::fs::read_to_string(&path).expect("read");
    assert!(text.contains(&current), "{text}");
    std::fs::write(&path, text.replace(&current, "\"version\": 7")).expect("write");
    let err = Table::open(tmp.path()).expect_err("must refuse");
    assert!(
        matches!(&err, StorageError::Version { found: 7, expected: MANIFEST_VERSION, path: p, .. } if *p == path),
        "{err:?}"
    );
}

#[test]
fn a_garbled_or_inconsistent_manifest_is_refused() {
    let tmp = tempfile::tempdir().expect("tempdir");
    table(tmp.path(), Layout::Pax);
    let path = tmp.path().join("manifest.json");
    let good = std::fs::read_to_string(&path).expect("read");
    std::fs::write(&path, &good[..good.len() / 2]).expect("write");
    assert!(matches!(
        Table::open(tmp.path()),
        Err(StorageError::Manifest { .. })
    ));
    // Rows that do not match the chunks, with a recomputed checksum: validation, not
    // only the checksum, refuses it.
    std::fs::write(&path, &good).expect("write");
    common::edit_manifest(tmp.path(), true, |m| {
        let rows = m["rows"].as_u64().expect("rows");
        m["rows"] = (rows + 1).into();
    });
    let err = Table::open(tmp.path()).expect_err("must refuse");
    assert!(err.to_string().contains("chunks cover"), "{err}");
}

#[test]
fn a_page_swapped_with_another_is_detected() {
    // A page with a valid checksum in the wrong place must not be decoded as data.
    let tmp = tempfile::tempdir().expect("tempdir");
    let t = table(tmp.path(), Layout::Pax);
    let path = t.file_path(0);
    let mut data = std::fs::read(&path).expect("read");
    let p = PAGE_BYTES as usize;
    let (a, b) = data.split_at_mut(p);
    a.swap_with_slice(&mut b[..p]);
    std::fs::write(&path, data).expect("write");
    let err = read_everything(tmp.path()).expect_err("swapped pages must fail");
    assert!(matches!(err, StorageError::Corrupt { .. }), "{err:?}");
}

#[test]
fn verify_chunk_finds_damage_that_skip_checksum_decoding_deliberately_trusts() {
    // The runtime verifies a chunk once on load (`verify_chunk`) and then decodes the
    // resident bytes with `SkipChecksum`; the two together must still catch damage.
    let tmp = tempfile::tempdir().expect("tempdir");
    let t = table(tmp.path(), Layout::Pax);
    let (path, page) = second_page(&t);
    patch(&path, page + PAGE_HEADER_LEN as u64 + 3, |b| *b ^= 0x40);
    let device = Device::new(DeviceConfig::default());
    let files = t.open_files(&device).expect("files");
    let all: Vec<usize> = (0..t.schema().len()).collect();
    let k = (0..t.chunk_count())
        .find(|&k| {
            let e = t.chunk_extents(k, &all)[0];
            (e.offset..e.offset + e.len).contains(&page)
        })
        .expect("chunk of the damaged page");
    let bytes = t.read_chunk(&device, &files, k, &all).expect("read");
    let err = verify_chunk(&t, &bytes.views()).expect_err("verify must see the flipped byte");
    assert!(
        matches!(err, StorageError::Checksum { offset, .. } if offset == page),
        "{err:?}"
    );
    // Structure is still checked without checksums: a bad magic fails either way.
    patch(&path, page, |b| *b = b'X');
    let bytes = t.read_chunk(&device, &files, k, &all).expect("read");
    let err = decode_chunk_with(&t, k, &all, None, &bytes.views(), PageChecks::SkipChecksum)
        .expect_err("bad magic");
    assert!(matches!(err, StorageError::Magic { .. }), "{err:?}");
}
