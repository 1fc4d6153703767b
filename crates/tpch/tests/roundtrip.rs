//! Every layout returns exactly the rows tpchgen produced: decoded chunks are compared
//! column by column against tpchgen's own Arrow output (the independent path).

use std::sync::Arc;

use arrow_array::{Array, ArrayRef, RecordBatch};
use arrow_schema::DataType;
use coopscan_storage::device::{Device, DeviceConfig};
use coopscan_storage::{Layout, Table};
use coopscan_tpch::{generate, import_table, ImportOptions, TpchTable};

/// SF 0.01 by default; the release-mode check runs `COOPSCAN_TEST_SF=1 cargo test
/// --release -p coopscan-tpch --test roundtrip lineitem` (see docs/performance.md).
fn sf() -> f64 {
    std::env::var("COOPSCAN_TEST_SF")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0.01)
}

/// tpchgen's output for the whole table, one array per column, strings as Utf8.
fn expected_columns(table: TpchTable) -> Vec<ArrayRef> {
    let batches: Vec<RecordBatch> = generate(table, sf(), 1, 1, 10_000)
        .map(|b| b.expect("tpchgen batch"))
        .collect();
    let ncols = batches[0].num_columns();
    (0..ncols)
        .map(|c| {
            let parts: Vec<ArrayRef> = batches
                .iter()
                .map(|b| {
                    let a = b.column(c);
                    if a.data_type() == &DataType::Utf8View {
                        arrow_cast::cast(a, &DataType::Utf8).expect("cast Utf8View")
                    } else {
                        Arc::clone(a)
                    }
                })
                .collect();
            let refs: Vec<&dyn Array> = parts.iter().map(|a| a.as_ref()).collect();
            arrow_select::concat::concat(&refs).expect("concat")
        })
        .collect()
}

fn import(table: TpchTable, layout: Layout, dir: &std::path::Path, chunk_bytes: u64) -> Table {
    let opts = ImportOptions {
        sf: sf(),
        layout,
        chunk_bytes,
        out_dir: dir.to_path_buf(),
        overwrite: false,
        threads: 2,
    };
    import_table(table, &opts, &|_| {}).expect("import");
    Table::open(&dir.join(table.name())).expect("open")
}

fn check_table(table: TpchTable, layout: Layout, chunk_bytes: u64) {
    let tmp = tempfile::tempdir().expect("tempdir");
    let t = import(table, layout, tmp.path(), chunk_bytes);
    let expected = expected_columns(table);
    assert_eq!(
        t.rows() as usize,
        expected[0].len(),
        "{table} {layout}: row count"
    );
    let device = Device::new(DeviceConfig::default());
    let files = t.open_files(&device).expect("open files");
    let all: Vec<usize> = (0..t.schema().len()).collect();
    let mut row = 0usize;
    for k in 0..t.chunk_count() {
        let batch = t
            .read_chunk_batch(&device, &files, k, &all, None)
            .expect("read chunk");
        assert_eq!(batch.num_rows() as u64, t.chunk(k).row_count);
        for (c, want) in expected.iter().enumerate() {
            let want = want.slice(row, batch.num_rows());
            assert_eq!(
                want.as_ref(),
                batch.column(c).as_ref(),
                "{table} {layout}: chunk {k} column {}",
                t.schema().columns[c].name
            );
        }
        row += batch.num_rows();
    }
    assert_eq!(row, expected[0].len());
}

#[test]
fn lineitem_round_trips_in_every_layout() {
    for layout in Layout::ALL {
        // 1 MiB chunks so SF 0.01 (about 8 MB) has several chunks.
        check_table(TpchTable::Lineitem, layout, 1 << 20);
    }
}

#[test]
fn every_tpch_table_round_trips_in_pax_and_dsm() {
    for table in TpchTable::ALL {
        for layout in [Layout::Pax, Layout::Dsm] {
            check_table(table, layout, 1 << 20);
        }
    }
}

#[test]
fn projection_and_tuple_range_return_exactly_those_values() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let expected = expected_columns(TpchTable::Lineitem);
    for layout in Layout::ALL {
        let dir = tmp.path().join(layout.to_string());
        let t = import(TpchTable::Lineitem, layout, &dir, 1 << 20);
        let device = Device::new(DeviceConfig::default());
        let files = t.open_files(&device).expect("open files");
        let projection = [15usize, 4, 10]; // l_comment, l_quantity, l_shipdate: out of order on purpose
        let k = t.chunk_count() / 2;
        let chunk = t.chunk(k).rows();
        let rows = chunk.start + 7..chunk.end - 5;
        let batch = t
            .read_chunk_batch(&device, &files, k, &projection, Some(rows.clone()))
            .expect("read");
        assert_eq!(batch.num_rows() as u64, rows.end - rows.start);
        for (i, &c) in projection.iter().enumerate() {
            let want = expected[c].slice(rows.start as usize, batch.num_rows());
            assert_eq!(
                want.as_ref(),
                batch.column(i).as_ref(),
                "{layout} column {c}"
            );
        }
    }
}

#[test]
fn scale_factors_outside_the_limit_are_refused_before_any_work() {
    // `gen --sf 1e12` used to abort allocating a channel per generator part.
    let tmp = tempfile::tempdir().expect("tempdir");
    for sf in [
        1e12,
        coopscan_tpch::MAX_SCALE_FACTOR * 2.0,
        0.0,
        -1.0,
        f64::NAN,
        f64::INFINITY,
    ] {
        let opts = ImportOptions {
            sf,
            layout: Layout::Pax,
            chunk_bytes: 1 << 20,
            out_dir: tmp.path().to_path_buf(),
            overwrite: false,
            threads: 2,
        };
        let err = import_table(TpchTable::Lineitem, &opts, &|_| {}).expect_err("refused");
        assert!(err.to_string().contains("scale factor"), "{sf}: {err}");
    }
    assert_eq!(
        std::fs::read_dir(tmp.path()).expect("dir").count(),
        0,
        "nothing written"
    );
}
