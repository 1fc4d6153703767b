//! Secondary indexes and fetching tuples by position: a lookup returns exactly the rows
//! whose key is in the range (against a scan of the column), the fetched tuples equal
//! those of a whole-table read, only the pages holding them are read, and a stale or
//! damaged index is refused with an error, never used.

mod common;

use std::ops::Bound;

use arrow_array::{Array, UInt64Array};
use coopscan_storage::device::{Device, DeviceConfig};
use coopscan_storage::index::{build_index, index_path, SecondaryIndex};
use coopscan_storage::{Layout, StorageError, Table, TableFiles};
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

use common::{read_all, sample_batch, sample_schema, write_table};

const PAGE_BYTES: u32 = 4096;
/// The date column (keys repeat: 2 500 distinct days) and the decimal one.
const DAY: usize = 2;
const PRICE: usize = 1;

fn table(dir: &std::path::Path, layout: Layout) -> Table {
    table_of_chunks(dir, layout, 8)
}

/// 8 400 tuples in chunks of `chunk_pages` pages.
fn table_of_chunks(dir: &std::path::Path, layout: Layout, chunk_pages: u64) -> Table {
    let batches: Vec<_> = (0..4).map(|i| sample_batch(i * 2100, 2100)).collect();
    write_table(
        dir,
        &sample_schema(),
        layout,
        PAGE_BYTES,
        chunk_pages,
        &batches,
    )
}

/// The index of `column` built over `table`, with the device and files it was read
/// through.
fn indexed(table: &Table, column: usize) -> (Device, TableFiles, SecondaryIndex) {
    let device = Device::new(DeviceConfig::default());
    let files = table.open_files(&device).expect("files");
    build_index(table, &device, column).expect("build");
    let index = SecondaryIndex::open(table, column)
        .expect("open")
        .expect("an index");
    (device, files, index)
}

fn stored_keys(table: &Table, column: usize) -> Vec<i64> {
    let array = &read_all(table, &[column])[0];
    let data = array.to_data();
    match array.data_type() {
        arrow_schema::DataType::Date32 => data
            .buffer::<i32>(0)
            .iter()
            .map(|&v| i64::from(v))
            .collect(),
        _ => data.buffer::<i128>(0).iter().map(|&v| v as i64).collect(),
    }
}

fn range(rng: &mut ChaCha8Rng, keys: &[i64]) -> (Bound<i64>, Bound<i64>) {
    let pick =
        |rng: &mut ChaCha8Rng| keys[rng.random_range(0..keys.len())] + rng.random_range(-1..=1);
    let (a, b) = (pick(rng), pick(rng));
    let (lo, hi) = (a.min(b), a.max(b));
    let bound = |rng: &mut ChaCha8Rng, v: i64| match rng.random_range(0..3) {
        0 => Bound::Included(v),
        1 => Bound::Excluded(v),
        _ => Bound::Unbounded,
    };
    // Mostly narrow ranges (what an index is for), sometimes open ones.
    if rng.random_bool(0.8) {
        let hi = lo + rng.random_range(0..3);
        (bound(rng, lo), Bound::Included(hi))
    } else {
        (bound(rng, lo), bound(rng, hi))
    }
}

#[test]
fn lookups_return_exactly_the_rows_in_range_and_fetches_equal_a_full_read() {
    for layout in Layout::ALL {
        let tmp = tempfile::tempdir().expect("tempdir");
        let table = table(tmp.path(), layout);
        let device = Device::new(DeviceConfig::default());
        let files = table.open_files(&device).expect("files");
        let everything: Vec<usize> = (0..table.schema().len()).collect();
        let whole = read_all(&table, &everything);
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        for column in [DAY, PRICE] {
            build_index(&table, &device, column).expect("build");
            let index = SecondaryIndex::open(&table, column)
                .expect("open")
                .expect("an index");
            let keys = stored_keys(&table, column);
            for case in 0..40 {
                let keys_in = range(&mut rng, &keys);
                let expected: Vec<u64> = (0..keys.len() as u64)
                    .filter(|&r| std::ops::RangeBounds::contains(&keys_in, &keys[r as usize]))
                    .collect();
                let rows = index.lookup(&device, &keys_in).expect("lookup");
                assert_eq!(
                    rows, expected,
                    "{layout:?} column {column} case {case} {keys_in:?}"
                );
                assert!(index.estimate(&keys_in) >= rows.len() as u64);
                // A projection in any order, with repeats of none.
                let mut projection = everything.clone();
                projection.retain(|_| rng.random_bool(0.6));
                if rng.random_bool(0.5) {
                    projection.reverse();
                }
                let got = table
                    .fetch_rows(&device, &files, index.page_map(), &rows, &projection)
                    .expect("fetch");
                assert_eq!(got.num_rows(), rows.len());
                let take = UInt64Array::from(rows.clone());
                for (i, &c) in projection.iter().enumerate() {
                    let want = arrow_select::take::take(&whole[c], &take, None).expect("take");
                    assert_eq!(
                        got.column(i).as_ref(),
                        want.as_ref(),
                        "{layout:?} column {c} case {case}"
                    );
                }
            }
        }
    }
}

#[test]
fn a_fetch_reads_only_the_pages_holding_its_tuples() {
    for layout in Layout::ALL {
        let tmp = tempfile::tempdir().expect("tempdir");
        // Chunks of many pages per column, so that a page is less than a chunk's run.
        let table = table_of_chunks(tmp.path(), layout, 64);
        let (device, files, index) = indexed(&table, DAY);
        let before = device.stats();
        // Three tuples far apart, in different chunks.
        let rows = [5u64, 4000, 8000];
        let projection = [0usize, DAY, 4];
        table
            .fetch_rows(&device, &files, index.page_map(), &rows, &projection)
            .expect("fetch");
        let after = device.stats();
        let read = (after.requests - before.requests, after.bytes - before.bytes);
        // The pages holding them, from the page headers themselves: per column (all
        // columns share NSM/PAX pages), each page holding one of the tuples.
        let mut pages = std::collections::HashSet::new();
        for k in 0..table.chunk_count() {
            let columns = table
                .page_rows(&device, &files, k, &projection)
                .expect("pages");
            for (c, list) in columns.iter().enumerate() {
                for p in list
                    .iter()
                    .filter(|p| rows.iter().any(|r| p.rows.contains(r)))
                {
                    let group = if matches!(layout, Layout::Nsm | Layout::Pax) {
                        0
                    } else {
                        c
                    };
                    pages.insert((group, p.page.file, p.page.offset));
                }
            }
        }
        let n = pages.len() as u64;
        assert_eq!(read, (n, n * u64::from(PAGE_BYTES)), "{layout:?}");
        let chunks: u64 = (0..table.chunk_count())
            .filter(|&k| rows.iter().any(|r| table.chunk(k).rows().contains(r)))
            .map(|k| {
                table
                    .chunk_extents(k, &projection)
                    .iter()
                    .map(|e| e.len)
                    .sum::<u64>()
            })
            .sum();
        assert!(
            read.1 < chunks,
            "{layout:?}: {} bytes fetched, {chunks} in the chunks",
            read.1
        );
    }
}

#[test]
fn a_stale_or_damaged_index_is_refused() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("t");
    let table = table(&dir, Layout::Csm);
    let device = Device::new(DeviceConfig::default());
    assert!(SecondaryIndex::open(&table, DAY)
        .expect("no index")
        .is_none());
    let path = build_index(&table, &device, DAY).expect("build");
    assert_eq!(path, index_path(&dir, DAY));
    let keys: (Bound<i64>, Bound<i64>) = (Bound::Unbounded, Bound::Unbounded);

    // A damaged leaf: the lookup names the file and the checksum.
    let good = std::fs::read(&path).expect("read");
    let mut bad = good.clone();
    bad[100] ^= 0x40;
    std::fs::write(&path, &bad).expect("write");
    let index = SecondaryIndex::open(&table, DAY)
        .expect("open")
        .expect("an index");
    let err = index.lookup(&device, &keys).expect_err("damaged leaf");
    assert!(matches!(err, StorageError::Checksum { .. }), "{err}");
    assert!(index.verify(&device).is_err(), "verify reads every leaf");
    // A lookup that does not reach the damaged leaf still answers.
    let last = index.meta().fences.last().copied().expect("leaves");
    assert!(index.lookup(&device, &(last..)).is_ok());

    // A damaged or cut description: refused on open.
    for cut in [good.len() - 3, good.len() / 2, 5] {
        std::fs::write(&path, &good[..cut]).expect("write");
        let err = SecondaryIndex::open(&table, DAY).expect_err("cut");
        assert!(err.to_string().contains("column-2.cidx"), "{err}");
    }
    let mut bad = good.clone();
    let at = good.len() - 40;
    bad[at] ^= 0x01;
    std::fs::write(&path, &bad).expect("write");
    assert!(SecondaryIndex::open(&table, DAY).is_err());

    // A table rewritten since: stale.
    std::fs::write(&path, &good).expect("write");
    std::fs::remove_dir_all(dir.join("index")).ok();
    std::fs::create_dir_all(dir.join("index")).expect("mkdir");
    let other = tmp.path().join("u");
    let rewritten = table_at(&other);
    build_index(&rewritten, &device, DAY).expect("build");
    std::fs::copy(index_path(&other, DAY), index_path(&dir, DAY)).expect("copy");
    let err = SecondaryIndex::open(&table, DAY).expect_err("stale");
    assert!(err.to_string().contains("another version"), "{err}");

    // While a writer holds the table (replacing it), no index is built into it.
    let mut options = coopscan_storage::WriteOptions::new(Layout::Csm);
    options.overwrite = true;
    let writer = coopscan_storage::TableWriter::create(&dir, "t", sample_schema(), options)
        .expect("a writer");
    let err = build_index(&table, &device, DAY).expect_err("locked");
    assert!(matches!(err, StorageError::Locked { .. }), "{err}");
    drop(writer);
    build_index(&table, &device, DAY).expect("unlocked again");

    // Strings are not indexed.
    let err = build_index(&table, &device, 4).expect_err("a string column");
    assert!(err.to_string().contains("only integer"), "{err}");
}

fn table_at(dir: &std::path::Path) -> Table {
    table(dir, Layout::Csm)
}

#[test]
fn fetching_rows_out_of_order_or_range_is_an_error() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let table = table(tmp.path(), Layout::Pax);
    let (device, files, index) = indexed(&table, DAY);
    let map = index.page_map();
    for rows in [vec![3u64, 3], vec![9, 2], vec![table.rows()]] {
        assert!(
            table.fetch_rows(&device, &files, map, &rows, &[0]).is_err(),
            "{rows:?}"
        );
    }
    let none = table
        .fetch_rows(&device, &files, map, &[], &[0, 4])
        .expect("none");
    assert_eq!((none.num_rows(), none.num_columns()), (0, 2));
    let count = table
        .fetch_rows(&device, &files, map, &[1, 2, 3], &[])
        .expect("count");
    assert_eq!(count.num_rows(), 3);
    // A column named twice gets its values twice.
    let twice = table
        .fetch_rows(&device, &files, map, &[1, 5000], &[DAY, 0, DAY])
        .expect("twice");
    assert_eq!(twice.column(0).as_ref(), twice.column(2).as_ref());
    assert_eq!(twice.column(0).len(), 2);
}
