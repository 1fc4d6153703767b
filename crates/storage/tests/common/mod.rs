//! Helpers shared by the storage integration tests.
#![allow(dead_code)]

pub mod fixture_dir;

use std::sync::Arc;

use arrow_array::{
    Array, ArrayRef, Date32Array, Decimal128Array, Int32Array, Int64Array, RecordBatch, StringArray,
};
use coopscan_storage::device::{Device, DeviceConfig};
use coopscan_storage::write::WriteOptions;
use coopscan_storage::{ColumnDef, ColumnType, Layout, Table, TableSchema, TableWriter};

/// One column of test data, as the Arrow array the writer receives.
pub fn array_for(ty: ColumnType, ints: &[i64], strs: &[String]) -> ArrayRef {
    match ty {
        ColumnType::Int32 => Arc::new(Int32Array::from(
            ints.iter().map(|&x| x as i32).collect::<Vec<_>>(),
        )),
        ColumnType::Date32 => Arc::new(Date32Array::from(
            ints.iter().map(|&x| x as i32).collect::<Vec<_>>(),
        )),
        ColumnType::Int64 => Arc::new(Int64Array::from(ints.to_vec())),
        ColumnType::Decimal { precision, scale } => Arc::new(
            Decimal128Array::from(ints.iter().map(|&x| i128::from(x)).collect::<Vec<_>>())
                .with_precision_and_scale(precision, scale)
                .expect("decimal"),
        ),
        ColumnType::Char { .. } | ColumnType::Utf8 => Arc::new(StringArray::from(strs.to_vec())),
    }
}

/// Writes `batches` as a table in `dir`.
pub fn write_table(
    dir: &std::path::Path,
    schema: &TableSchema,
    layout: Layout,
    page_bytes: u32,
    chunk_pages: u64,
    batches: &[RecordBatch],
) -> Table {
    let mut opts = WriteOptions::new(layout);
    opts.page_bytes = page_bytes;
    opts.chunk_bytes = u64::from(page_bytes) * chunk_pages;
    let mut w = TableWriter::create(dir, "t", schema.clone(), opts).expect("create");
    for b in batches {
        w.write_batch(b).expect("write batch");
    }
    w.finish().expect("finish");
    Table::open(dir).expect("open")
}

/// Reads every chunk with `projection` and concatenates each column.
pub fn read_all(table: &Table, projection: &[usize]) -> Vec<ArrayRef> {
    let device = Device::new(DeviceConfig::default());
    let files = table.open_files(&device).expect("open files");
    let batches: Vec<RecordBatch> = (0..table.chunk_count())
        .map(|k| {
            table
                .read_chunk_batch(&device, &files, k, projection, None)
                .expect("read chunk")
        })
        .collect();
    (0..projection.len())
        .map(|i| {
            let cols: Vec<&dyn Array> = batches.iter().map(|b| b.column(i).as_ref()).collect();
            if cols.is_empty() {
                return arrow_array::new_empty_array(
                    &table.schema().columns[projection[i]].ty.arrow_type(),
                );
            }
            arrow_select::concat::concat(&cols).expect("concat")
        })
        .collect()
}

/// A small fixed table: an int64 key, a decimal, a date, a CHAR(1) flag and a comment.
pub fn sample_schema() -> TableSchema {
    TableSchema::new(vec![
        ColumnDef {
            name: "k".into(),
            ty: ColumnType::Int64,
        },
        ColumnDef {
            name: "price".into(),
            ty: ColumnType::Decimal {
                precision: 15,
                scale: 2,
            },
        },
        ColumnDef {
            name: "day".into(),
            ty: ColumnType::Date32,
        },
        ColumnDef {
            name: "flag".into(),
            ty: ColumnType::Char { len: 1 },
        },
        ColumnDef {
            name: "comment".into(),
            ty: ColumnType::Utf8,
        },
    ])
    .expect("schema")
}

pub fn sample_batch(start: i64, rows: usize) -> RecordBatch {
    let schema = sample_schema();
    let ints: Vec<i64> = (start..start + rows as i64).collect();
    let flags: Vec<String> = ints
        .iter()
        .map(|i| ["A", "N", "R"][(i % 3) as usize].to_string())
        .collect();
    let comments: Vec<String> = ints
        .iter()
        .map(|i| format!("comment number {i} {}", "x".repeat((i % 40) as usize)))
        .collect();
    let cols = vec![
        array_for(ColumnType::Int64, &ints, &[]),
        array_for(
            schema.columns[1].ty,
            &ints.iter().map(|i| i * 7 % 100_000).collect::<Vec<_>>(),
            &[],
        ),
        array_for(
            ColumnType::Date32,
            &ints.iter().map(|i| 8000 + i % 2500).collect::<Vec<_>>(),
            &[],
        ),
        array_for(schema.columns[3].ty, &[], &flags),
        array_for(ColumnType::Utf8, &[], &comments),
    ];
    RecordBatch::try_new(schema.arrow_schema(), cols).expect("batch")
}

/// Edits `dir/manifest.json` as JSON. With `reseal`, the checksum is recomputed, as a
/// careful attacker (or a buggy tool) would: the edit must then be caught by
/// validation alone. Without, the stale checksum stays.
pub fn edit_manifest(
    dir: &std::path::Path,
    reseal: bool,
    edit: impl FnOnce(&mut serde_json::Value),
) {
    use coopscan_storage::Manifest;
    let path = dir.join("manifest.json");
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).expect("read")).expect("json");
    edit(&mut v);
    if reseal {
        v.as_object_mut().expect("object").remove("checksum");
        let m: Manifest = serde_json::from_value(v.clone()).expect("still a manifest");
        v["checksum"] = m.checksum().expect("checksum").into();
    }
    std::fs::write(&path, serde_json::to_string_pretty(&v).expect("json")).expect("write");
}

/// Reads and decodes every chunk, all columns; the first error.
pub fn try_read_all(table: &Table) -> Result<(), coopscan_storage::StorageError> {
    let device = Device::new(DeviceConfig::default());
    let files = table.open_files(&device)?;
    let all: Vec<usize> = (0..table.schema().len()).collect();
    for k in 0..table.chunk_count() {
        table.read_chunk_batch(&device, &files, k, &all, None)?;
    }
    Ok(())
}
