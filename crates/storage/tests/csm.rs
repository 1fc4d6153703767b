//! CSM tables (Clotho's A-pages placed for large direct reads): each chunk is one tile
//! of adjacent column runs, no page is shared between chunks, adjacent runs are read
//! with one request, and a manifest whose runs disagree with the pages is refused when
//! read. That CSM returns the same tuples as every other layout is checked with all
//! layouts in `roundtrip_prop.rs`, `filtered.rs` and the runtime's tests.

mod common;

use std::path::Path;

use coopscan_storage::page::read_page;
use coopscan_storage::read::page_codecs;
use coopscan_storage::{verify_chunk, Extent, Layout, StorageError, Table};
use serde_json::Value;

use common::{edit_manifest, read_all, sample_batch, sample_schema, try_read_all, write_table};

const PAGE_BYTES: u32 = 4096;

fn csm_table(dir: &Path) -> Table {
    let batches: Vec<_> = (0..5).map(|i| sample_batch(i * 1400, 1400)).collect();
    write_table(dir, &sample_schema(), Layout::Csm, PAGE_BYTES, 16, &batches)
}

/// (column, first row, row count) of every page of `extent`, read from the file.
fn pages_of(table: &Table, extent: Extent) -> Vec<(u32, u64, u64)> {
    let path = table.file_path(extent.file);
    let data = std::fs::read(&path).expect("read data file");
    let bytes = &data[extent.offset as usize..(extent.offset + extent.len) as usize];
    bytes
        .chunks(PAGE_BYTES as usize)
        .enumerate()
        .map(|(i, p)| {
            let at = extent.offset + (i * PAGE_BYTES as usize) as u64;
            let (h, _) = read_page(p, &path, at, Layout::Csm).expect("page");
            (h.column, h.row_start, u64::from(h.row_count))
        })
        .collect()
}

#[test]
fn each_chunk_is_a_tile_of_adjacent_runs_holding_exactly_its_tuples() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let table = csm_table(tmp.path());
    assert!(table.chunk_count() >= 3, "{} chunks", table.chunk_count());
    let page = u64::from(PAGE_BYTES);
    let mut next_page = 0;
    for k in 0..table.chunk_count() {
        let chunk = table.chunk(k);
        let (first, count) = chunk.pages.expect("a tile");
        assert_eq!(first, next_page, "chunk {k}: tiles follow one another");
        next_page = first + count;
        let mut at = first * page;
        for (c, col) in chunk.columns.iter().enumerate() {
            assert_eq!(col.extent.offset, at, "chunk {k} column {c} starts its run");
            at += col.extent.len;
            // Every page of the run names the column and the run covers exactly the
            // chunk's rows, in order: nothing is shared with a neighbour.
            let pages = pages_of(&table, col.extent);
            let mut row = chunk.row_start;
            for (column, start, rows) in pages {
                assert_eq!((column, start), (c as u32, row), "chunk {k} column {c}");
                row += rows;
            }
            assert_eq!(
                row,
                chunk.rows().end,
                "chunk {k} column {c} ends with the chunk"
            );
        }
        assert_eq!(at, next_page * page, "chunk {k}: the runs fill the tile");
    }
    assert_eq!(next_page, table.manifest().files[0].pages);
}

#[test]
fn adjacent_runs_are_one_request_and_every_column_is_the_whole_tile() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let table = csm_table(tmp.path());
    let page = u64::from(PAGE_BYTES);
    for k in 0..table.chunk_count() {
        let chunk = table.chunk(k);
        let run = |c: usize| chunk.columns[c].extent;
        let (first, count) = chunk.pages.expect("a tile");
        let tile = Extent {
            file: 0,
            offset: first * page,
            len: count * page,
        };
        assert_eq!(table.chunk_extents(k, &[0, 1, 2, 3, 4]), vec![tile]);
        assert_eq!(
            table.chunk_extents(k, &[4, 2, 0]),
            vec![run(0), run(2), run(4)]
        );
        let merged = Extent {
            len: run(1).len + run(2).len,
            ..run(1)
        };
        assert_eq!(table.chunk_extents(k, &[2, 1]), vec![merged]);
        assert_eq!(
            table.chunk_extents(k, &[3, 0, 1]),
            vec![
                Extent {
                    len: run(0).len + run(1).len,
                    ..run(0)
                },
                run(3)
            ]
        );
    }
}

#[test]
fn a_csm_table_reads_the_same_values_as_a_pax_table_of_the_same_rows() {
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let csm = csm_table(a.path());
    let batches: Vec<_> = (0..5).map(|i| sample_batch(i * 1400, 1400)).collect();
    let pax = write_table(b.path(), &sample_schema(), Layout::Pax, 8192, 8, &batches);
    for projection in [vec![0, 1, 2, 3, 4], vec![4], vec![3, 1], vec![2]] {
        assert_eq!(
            read_all(&csm, &projection),
            read_all(&pax, &projection),
            "{projection:?}"
        );
    }
}

#[test]
fn verifying_a_tile_checks_that_each_page_belongs_to_its_run() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let table = csm_table(tmp.path());
    let (first, count) = table.chunk(1).pages.expect("a tile");
    let page = u64::from(PAGE_BYTES);
    let tile = Extent {
        file: 0,
        offset: first * page,
        len: count * page,
    };
    let data = std::fs::read(table.file_path(0)).expect("read");
    let bytes = data[tile.offset as usize..(tile.offset + tile.len) as usize].to_vec();
    verify_chunk(&table, &[(tile, &bytes)]).expect("a whole tile verifies");
    // A manifest that moves the boundary between columns 3 and 4 by one page leaves
    // a page of one column inside the other's run: refused, naming the offset.
    let shift = |m: &mut Value| {
        let cols = &mut m["chunks"][1]["columns"];
        let len3 = cols[3]["extent"]["len"].as_u64().unwrap();
        let len4 = cols[4]["extent"]["len"].as_u64().unwrap();
        let off4 = cols[4]["extent"]["offset"].as_u64().unwrap();
        cols[3]["extent"]["len"] = (len3 + page).into();
        cols[4]["extent"]["offset"] = (off4 + page).into();
        cols[4]["extent"]["len"] = (len4 - page).into();
    };
    let run4 = table.chunk(1).columns[4].extent;
    assert!(
        run4.len > page,
        "column 4's run needs two pages for this test"
    );
    edit_manifest(tmp.path(), true, shift);
    let moved = Table::open(tmp.path()).expect("a consistent-looking manifest opens");
    // Column 4's first page now lies in column 3's run: refused at its offset.
    let misplaced = "page holds column 4, expected column 3";
    for err in [
        verify_chunk(&moved, &[(tile, &bytes)]).expect_err("verify: a misplaced page"),
        try_read_all(&moved).expect_err("decoding refuses it too"),
    ] {
        match &err {
            StorageError::Corrupt {
                path,
                offset,
                reason,
            } => {
                assert!(path.ends_with("data.csm"), "{err}");
                assert_eq!(*offset, run4.offset, "{err}");
                assert!(reason.contains(misplaced), "{err}");
            }
            other => panic!("not a corruption error: {other:?}"),
        }
    }
}

#[test]
fn a_manifest_whose_runs_leave_a_gap_or_overlap_is_refused_on_open() {
    for (what, edit) in [("gap", 1i64), ("overlap", -1i64)] {
        let tmp = tempfile::tempdir().expect("tempdir");
        csm_table(tmp.path());
        edit_manifest(tmp.path(), true, |m| {
            let e = &mut m["chunks"][0]["columns"][2]["extent"]["offset"];
            let off = e.as_u64().unwrap() as i64 + edit * i64::from(PAGE_BYTES as i32);
            *e = off.into();
        });
        let err = Table::open(tmp.path()).expect_err(what);
        assert!(err.to_string().contains("column 2"), "{what}: {err}");
    }
}

#[test]
fn codecs_are_counted_per_column_run() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let table = csm_table(tmp.path());
    for c in 0..table.schema().len() {
        let pages: u64 = table
            .manifest()
            .chunks
            .iter()
            .map(|k| k.columns[c].extent.len / u64::from(PAGE_BYTES))
            .sum();
        let counted: u64 = page_codecs(&table, c).expect("codecs").values().sum();
        assert_eq!(counted, pages, "column {c}");
        assert!(!page_codecs(&table, c).unwrap().contains_key("unknown"));
    }
    assert!(page_codecs(&table, 99).is_err());
}

#[test]
fn a_value_larger_than_a_page_is_an_error_not_a_panic() {
    use coopscan_storage::write::WriteOptions;
    use coopscan_storage::{ColumnDef, ColumnType, TableSchema, TableWriter};
    let schema = TableSchema::new(vec![ColumnDef {
        name: "note".into(),
        ty: ColumnType::Utf8,
    }])
    .expect("schema");
    // Incompressible: a seeded byte soup of printable characters, 3 pages long.
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    let big: String = (0..3 * PAGE_BYTES as usize)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            char::from(b'!' + (x % 90) as u8)
        })
        .collect();
    let batch = arrow_array::RecordBatch::try_new(
        schema.arrow_schema(),
        vec![std::sync::Arc::new(arrow_array::StringArray::from(vec![
            "small".to_string(),
            big,
        ]))],
    )
    .expect("batch");
    for layout in [Layout::Dsm, Layout::Csm] {
        let tmp = tempfile::tempdir().expect("tempdir");
        let mut opts = WriteOptions::new(layout);
        opts.page_bytes = PAGE_BYTES;
        opts.chunk_bytes = 16 * u64::from(PAGE_BYTES);
        let mut w = TableWriter::create(tmp.path(), "t", schema.clone(), opts).expect("create");
        let err = w
            .write_batch(&batch)
            .and_then(|()| w.finish().map(|_| ()))
            .expect_err("an oversized value");
        assert!(
            err.to_string().contains("does not fit a page"),
            "{layout}: {err}"
        );
    }
}

#[test]
fn a_tile_larger_than_one_read_buffer_is_refused_on_open() {
    let tmp = tempfile::tempdir().expect("tempdir");
    csm_table(tmp.path());
    edit_manifest(tmp.path(), true, |m| {
        let pages = &mut m["chunks"][0]["pages"];
        pages[1] = (1u64 << 40).into();
    });
    let err = Table::open(tmp.path()).expect_err("an oversized tile");
    assert!(err.to_string().contains("over the"), "{err}");
}

#[test]
fn a_tile_read_fills_one_buffer_per_run_with_one_request_per_adjacent_group() {
    use coopscan_storage::device::{Device, DeviceConfig};
    let tmp = tempfile::tempdir().expect("tempdir");
    let table = csm_table(tmp.path());
    let data = std::fs::read(table.file_path(0)).expect("read");
    let device = Device::new(DeviceConfig::default());
    let files = table.open_files(&device).expect("files");
    let k = 2;
    let (pieces, done) = table
        .read_tile_pieces_early(&device, &files, k, &[4, 0, 1])
        .expect("tile read");
    done.wait();
    // Columns 0 and 1 are adjacent runs: one request; column 4 another.
    assert_eq!(device.stats().requests, 2);
    for (piece, c) in pieces.iter().zip([4, 0, 1]) {
        let run = table.chunk(k).columns[c].extent;
        let (extent, bytes) = &piece.extents[0];
        assert_eq!((piece.chunk, *extent), (k, run), "column {c}");
        let at = run.offset as usize..(run.offset + run.len) as usize;
        assert!(bytes[..] == data[at], "column {c}: the run's bytes");
        verify_chunk(&table, &piece.views()).expect("a run verifies alone");
    }
    let twice = table.read_tile_pieces_early(&device, &files, k, &[1, 1]);
    assert!(twice.is_err(), "a column asked for twice");
}
