//! The DSM writer keeps every string page within the reader's bound on a page's plain
//! size (`MAX_VARCHAR_PAGE_RAW`): values that compress extremely well used to fill one
//! page with more plain bytes than the reader accepts, so the writer produced a table
//! it could not read back.

mod common;

use std::sync::Arc;

use arrow_array::{Array, ArrayRef, RecordBatch, StringArray};
use coopscan_storage::write::MAX_VARCHAR_PAGE_RAW;
use coopscan_storage::{ColumnDef, ColumnType, Layout, TableSchema};

use common::{read_all, write_table};

#[test]
fn long_compressible_strings_are_split_into_pages_the_reader_accepts() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let schema = TableSchema::new(vec![ColumnDef {
        name: "s".into(),
        ty: ColumnType::Utf8,
    }])
    .expect("schema");
    // 100 values of 1 MiB of one letter: LZ4 stores each in about 4 KiB, so a 1 MiB
    // page could take all of them: 100 MiB plain, well over the reader's 64 MiB.
    let value = "a".repeat(1 << 20);
    let rows = 100;
    assert!(rows * value.len() > MAX_VARCHAR_PAGE_RAW);
    let array: ArrayRef = Arc::new(StringArray::from(vec![value.as_str(); rows]));
    let batch =
        RecordBatch::try_new(schema.arrow_schema(), vec![Arc::clone(&array)]).expect("batch");
    let table = write_table(tmp.path(), &schema, Layout::Dsm, 1 << 20, 64, &[batch]);
    let read = read_all(&table, &[0]);
    assert_eq!(read[0].len(), rows);
    assert_eq!(read[0].as_ref(), array.as_ref());
}
