//! Valid pages in the wrong place: files swapped between columns, a file from another
//! table, a manifest declaring another type than the data holds. Each page passes its
//! checksum, so only the page's identity and exact lengths can catch these; each must
//! be an error naming the file, never wrong answers.

mod common;

use std::sync::Arc;

use arrow_array::{Int64Array, RecordBatch};
use coopscan_storage::{ColumnDef, ColumnType, Layout, StorageError, Table, TableSchema};
use serde_json::json;

use common::{edit_manifest, sample_batch, sample_schema, try_read_all, write_table};

const PAGE_BYTES: u32 = 4096;
const ROWS: usize = 3000;

/// Two int64 columns of incompressible values: LZ4 output size then depends only on
/// the input length, so both columns get the same page directory.
fn twin_columns(dir: &std::path::Path) -> Table {
    let schema = TableSchema::new(vec![
        ColumnDef {
            name: "a".into(),
            ty: ColumnType::Int64,
        },
        ColumnDef {
            name: "b".into(),
            ty: ColumnType::Int64,
        },
    ])
    .expect("schema");
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x as i64
    };
    let a: Vec<i64> = (0..ROWS).map(|_| next()).collect();
    let b: Vec<i64> = (0..ROWS).map(|_| next()).collect();
    let batch = RecordBatch::try_new(
        schema.arrow_schema(),
        vec![Arc::new(Int64Array::from(a)), Arc::new(Int64Array::from(b))],
    )
    .expect("batch");
    write_table(dir, &schema, Layout::Dsm, PAGE_BYTES, 2, &[batch])
}

#[test]
fn swapped_dsm_column_files_with_equal_directories_are_refused() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let t = twin_columns(tmp.path());
    let files = &t.manifest().files;
    assert_eq!(
        files[0].page_row_starts, files[1].page_row_starts,
        "precondition"
    );
    let (a, b) = (t.file_path(0), t.file_path(1));
    let tmp_name = tmp.path().join("swap");
    std::fs::rename(&a, &tmp_name).expect("rename");
    std::fs::rename(&b, &a).expect("rename");
    std::fs::rename(&tmp_name, &b).expect("rename");
    let err = try_read_all(&Table::open(tmp.path()).expect("open")).expect_err("swapped");
    assert!(matches!(err, StorageError::Corrupt { .. }), "{err:?}");
    assert!(err.to_string().contains("files swapped"), "{err}");
}

#[test]
fn a_data_file_of_another_table_is_refused() {
    // Same rows, same options, two writes: only the table id tells them apart.
    for layout in Layout::ALL {
        let tmp = tempfile::tempdir().expect("tempdir");
        let (one, two) = (tmp.path().join("one"), tmp.path().join("two"));
        let batches = [sample_batch(0, 1500)];
        let t1 = write_table(&one, &sample_schema(), layout, PAGE_BYTES, 2, &batches);
        let t2 = write_table(&two, &sample_schema(), layout, PAGE_BYTES, 2, &batches);
        std::fs::copy(t2.file_path(0), t1.file_path(0)).expect("copy");
        let err = try_read_all(&t1).expect_err("foreign file");
        assert!(err.to_string().contains("another table"), "{layout}: {err}");
    }
}

#[test]
fn a_declared_type_that_does_not_match_the_data_is_refused() {
    // The case: `k` (int64) declared int32, with sizes and checksum adjusted to
    // match, so that only the data can tell.
    for layout in Layout::ALL {
        let tmp = tempfile::tempdir().expect("tempdir");
        write_table(
            tmp.path(),
            &sample_schema(),
            layout,
            PAGE_BYTES,
            2,
            &[sample_batch(0, 1500)],
        );
        edit_manifest(tmp.path(), true, |m| {
            m["schema"]["columns"][0]["type"] = json!({"kind": "int32"});
            for chunk in m["chunks"].as_array_mut().expect("chunks") {
                let rows = chunk["row_count"].as_u64().expect("rows");
                chunk["columns"][0]["bytes"] = json!(4 * rows);
            }
        });
        let t = Table::open(tmp.path()).expect("the manifest alone is consistent");
        let err = try_read_all(&t).expect_err("int32 over int64 data");
        assert!(
            matches!(err, StorageError::Corrupt { .. }),
            "{layout}: {err:?}"
        );
        // NSM rows shift, so the walk runs off the page before the length check.
        let msg = err.to_string();
        assert!(
            msg.contains("does not match the data") || msg.contains("runs past"),
            "{layout}: {msg}"
        );
    }
}
