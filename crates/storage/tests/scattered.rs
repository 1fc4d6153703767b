//! A scattered load (the 2004 report's scatter-readv): some pages of an NSM/PAX chunk
//! read with one request, the pages between them dropped. Each run decodes (whole, as
//! its parts' rows, and filtered) to exactly the tuples a decode of the whole chunk
//! gives for the same rows; the device reads the span once; bad runs are refused.
// Test code: an unwrap that fails is a failed test; lists of page runs, some of one
// run, are what these tests pass.
#![allow(clippy::unwrap_used, clippy::single_range_in_vec_init)]

mod common;

use std::ops::Range;

use arrow_array::RecordBatch;
use coopscan_storage::device::{Device, DeviceConfig};
use coopscan_storage::filter::RowFilter;
use coopscan_storage::{
    decode_chunk_with, decode_part_filtered, decode_part_with, Layout, PageChecks, Table,
};
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

use common::{sample_batch, sample_schema, write_table};

const PAGE_BYTES: u32 = 4096;
const CHUNK_PAGES: u64 = 16;

fn written(dir: &std::path::Path, layout: Layout) -> Table {
    let batches: Vec<_> = (0..4).map(|i| sample_batch(i * 2100, 2100)).collect();
    write_table(
        dir,
        &sample_schema(),
        layout,
        PAGE_BYTES,
        CHUNK_PAGES,
        &batches,
    )
}

/// Ascending, disjoint runs of pages below `pages`, at least one.
fn random_runs(rng: &mut ChaCha8Rng, pages: u32) -> Vec<Range<u32>> {
    let mut runs = Vec::new();
    let mut at = rng.random_range(0..pages);
    while at < pages {
        let end = rng.random_range(at + 1..=pages.min(at + 3));
        runs.push(at..end);
        at = end + rng.random_range(1..6);
    }
    runs
}

#[test]
fn scattered_runs_decode_to_the_whole_chunks_tuples() {
    let mut rng = ChaCha8Rng::seed_from_u64(0x5ca7);
    for layout in [Layout::Nsm, Layout::Pax] {
        let dir = tempfile::tempdir().unwrap();
        let table = written(dir.path(), layout);
        let device = Device::new(DeviceConfig::default());
        let files = table.open_files(&device).unwrap();
        let all: Vec<usize> = (0..table.schema().len()).collect();
        for k in 0..table.chunk_count() {
            let whole = table.read_chunk(&device, &files, k, &all).unwrap();
            let whole_views = whole.views();
            assert_eq!(
                table.loaded_parts(k, &whole_views).unwrap(),
                None,
                "a whole chunk"
            );
            let pages = u32::try_from(table.chunk(k).columns[0].extent.len / u64::from(PAGE_BYTES))
                .unwrap();
            for _ in 0..6 {
                let runs = random_runs(&mut rng, pages);
                let before = device.stats();
                let (bytes, done) = table
                    .read_chunk_pages_early(&device, &files, k, &runs)
                    .unwrap();
                done.wait();
                let after = device.stats();
                let span =
                    u64::from(runs.last().unwrap().end - runs[0].start) * u64::from(PAGE_BYTES);
                assert_eq!(
                    after.requests - before.requests,
                    1,
                    "{layout:?} {runs:?}: one request"
                );
                assert_eq!(
                    after.bytes - before.bytes,
                    span.min(table.chunk(k).columns[0].extent.len)
                );
                let kept: u64 = runs.iter().map(|r| u64::from(r.end - r.start)).sum::<u64>()
                    * u64::from(PAGE_BYTES);
                assert_eq!(bytes.bytes(), kept, "only the runs kept");
                let views = bytes.views();
                coopscan_storage::verify_chunk(&table, &views).unwrap();
                let parts = table
                    .loaded_parts(k, &views)
                    .unwrap()
                    .expect("parts of a scattered load");
                assert_eq!(parts.len(), runs.len());
                for part in &parts {
                    let rows = part.rows();
                    let got =
                        decode_part_with(&table, (k, part), &all, None, &views, PageChecks::Full)
                            .unwrap();
                    let want = decode_chunk_with(
                        &table,
                        k,
                        &all,
                        Some(rows.clone()),
                        &whole_views,
                        PageChecks::Full,
                    )
                    .unwrap();
                    assert_eq!(got, want, "{layout:?} chunk {k} rows {rows:?}");
                    // A scan's span inside the part, with a filter that keeps every tuple.
                    let inner = rows.start + (rows.end - rows.start) / 3..rows.end;
                    let selected = decode_part_filtered(
                        &table,
                        (k, part),
                        &all,
                        Some(inner.clone()),
                        &views,
                        PageChecks::Full,
                        &RowFilter::default(),
                    )
                    .unwrap();
                    let want: RecordBatch = decode_chunk_with(
                        &table,
                        k,
                        &all,
                        Some(inner.clone()),
                        &whole_views,
                        PageChecks::Full,
                    )
                    .unwrap();
                    assert_eq!(selected.batch, want);
                    assert_eq!(selected.rows, inner.collect::<Vec<u64>>());
                }
            }
        }
    }
}

#[test]
fn runs_outside_a_chunk_or_not_ascending_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let table = written(dir.path(), Layout::Nsm);
    let device = Device::new(DeviceConfig::default());
    let files = table.open_files(&device).unwrap();
    let pages = u32::try_from(CHUNK_PAGES).unwrap();
    for runs in [vec![pages..pages + 1], vec![3..3], vec![4..6, 2..3], vec![]] {
        let e = table.read_chunk_pages_early(&device, &files, 0, &runs);
        assert!(e.is_err(), "{runs:?}");
    }
    let dsm_dir = tempfile::tempdir().unwrap();
    let dsm = written(dsm_dir.path(), Layout::Dsm);
    let files = dsm.open_files(&device).unwrap();
    let Err(e) = dsm.read_chunk_pages_early(&device, &files, 0, &[0..1]) else {
        panic!("pages of a DSM chunk read alone");
    };
    let e = e.to_string();
    assert!(e.contains("only NSM/PAX"), "{e}");
}
