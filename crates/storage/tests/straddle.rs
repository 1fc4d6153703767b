//! DSM pieces read with their boundary pages copied from a neighbour: byte-equal to the
//! piece read whole, with exactly the copied pages not read, and a wrong copy caught by
//! page verification.

mod common;

use coopscan_storage::device::{AlignedBuf, Device, DeviceConfig};
use coopscan_storage::{verify_chunk, ChunkBytes, Layout, PageCopies, Table};

use common::{sample_batch, sample_schema, write_table};

const PAGE: u32 = 4096;

/// The sample table in DSM with small chunks: compressed pages hold more tuples than a
/// chunk, so most boundaries fall inside a page.
fn table(dir: &std::path::Path) -> Table {
    let batches: Vec<_> = (0..4).map(|i| sample_batch(i * 5000, 5000)).collect();
    write_table(dir, &sample_schema(), Layout::Dsm, PAGE, 2, &batches)
}

/// The piece read whole, the old way (one request for its whole extent).
fn whole(table: &Table, device: &Device, k: usize, c: usize) -> ChunkBytes {
    let files = table.open_files(device).expect("files");
    table.read_chunk(device, &files, k, &[c]).expect("read")
}

/// Whether chunks `a` and `a + 1` share a page of column `c`, from their extents alone
/// (independent of the page directory the storage code uses).
fn extents_overlap(table: &Table, a: usize, c: usize) -> bool {
    let (x, y) = (
        table.chunk(a).columns[c].extent,
        table.chunk(a + 1).columns[c].extent,
    );
    y.offset < x.offset + x.len
}

#[test]
fn a_piece_assembled_from_copies_equals_the_piece_read_whole() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let table = table(tmp.path());
    let device = Device::new(DeviceConfig::default());
    let files = table.open_files(&device).expect("files");
    let page = u64::from(PAGE);
    let (n, mut shared) = (table.chunk_count(), 0);
    for c in 0..table.schema().len() {
        for k in 0..n {
            let pages = table.column_pages(k, c).expect("pages");
            assert_eq!(
                pages.head_shared,
                k > 0 && extents_overlap(&table, k - 1, c)
            );
            assert_eq!(
                pages.tail_shared,
                k + 1 < n && extents_overlap(&table, k, c)
            );
            shared += u32::from(pages.head_shared);
            let reference = whole(&table, &device, k, c);
            let prev = (k > 0).then(|| whole(&table, &device, k - 1, c));
            let next = (k + 1 < n).then(|| whole(&table, &device, k + 1, c));
            for (use_head, use_tail) in [(false, false), (true, false), (false, true), (true, true)]
            {
                let copies = PageCopies {
                    head: prev.as_ref().filter(|_| use_head),
                    tail: next.as_ref().filter(|_| use_tail),
                };
                let before = device.stats().bytes;
                let got = table
                    .read_piece_early(&device, &files, k, c, copies)
                    .expect("read piece");
                got.done.wait();
                let len = pages.extent.len;
                let head = use_head && pages.head_shared;
                let tail = use_tail && pages.tail_shared && !(head && len == page);
                let expected_read = len - page * (u64::from(head) + u64::from(tail));
                let what = format!("chunk {k} column {c} head {use_head} tail {use_tail}");
                assert_eq!(got.read_bytes, expected_read, "{what}");
                assert_eq!(device.stats().bytes - before, expected_read, "{what}");
                assert_eq!(got.bytes.views(), reference.views(), "{what}");
                verify_chunk(&table, &got.bytes.views()).expect("verified");
            }
        }
    }
    assert!(
        shared > 10,
        "the table must have pages on chunk boundaries: {shared}"
    );
}

#[test]
fn a_wrong_copy_fails_verification() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let table = table(tmp.path());
    let device = Device::new(DeviceConfig::default());
    let files = table.open_files(&device).expect("files");
    let (k, c) = (1..table.chunk_count())
        .flat_map(|k| (0..table.schema().len()).map(move |c| (k, c)))
        .find(|&(k, c)| table.column_pages(k, c).expect("pages").head_shared)
        .expect("a shared head page");
    // The neighbour's extent with another column's page in it: a copy from the wrong
    // place, as a bug in the loader would make.
    let mut prev = whole(&table, &device, k - 1, c);
    let (extent, _) = prev.extents[0];
    let other = table.chunk(k).columns[(c + 1) % table.schema().len()].extent;
    let wrong = device
        .read(files.file(other.file), other.offset, PAGE as usize)
        .expect("read");
    let mut buf = AlignedBuf::zeroed(extent.len as usize);
    let last = buf.len() - PAGE as usize;
    buf[last..].copy_from_slice(&wrong);
    prev.extents[0].1 = buf;
    let copies = PageCopies {
        head: Some(&prev),
        tail: None,
    };
    let got = table
        .read_piece_early(&device, &files, k, c, copies)
        .expect("read");
    let err = verify_chunk(&table, &got.bytes.views()).expect_err("a wrong page");
    assert!(err.to_string().contains("page"), "{err}");
}
