//! Property tests: random schemas and values round-trip through every layout, and DSM
//! extents for random tuple ranges cover exactly those tuples.

mod common;

use arrow_array::{ArrayRef, RecordBatch};
use coopscan_storage::page::{read_page, PAGE_HEADER_LEN};
use coopscan_storage::{ColumnDef, ColumnType, Layout, TableSchema};
use proptest::prelude::*;

use common::{array_for, read_all, write_table};

const PAGE_BYTES: u32 = 4096;

fn column_type() -> impl Strategy<Value = ColumnType> {
    prop_oneof![
        Just(ColumnType::Int32),
        Just(ColumnType::Int64),
        Just(ColumnType::Date32),
        (1u8..=18, 0i8..=4).prop_map(|(p, s)| ColumnType::Decimal {
            precision: p.max(s as u8 + 1),
            scale: s
        }),
        (1u16..=30).prop_map(|len| ColumnType::Char { len }),
        Just(ColumnType::Utf8),
    ]
}

/// Values for one column: integers in range of the type, strings that fit it.
fn column_values(ty: ColumnType, rows: usize) -> BoxedStrategy<(Vec<i64>, Vec<String>)> {
    match ty {
        ColumnType::Int32 | ColumnType::Date32 => {
            proptest::collection::vec(any::<i32>().prop_map(i64::from), rows)
                .prop_map(|v| (v, vec![]))
                .boxed()
        }
        ColumnType::Int64 => proptest::collection::vec(any::<i64>(), rows)
            .prop_map(|v| (v, vec![]))
            .boxed(),
        ColumnType::Decimal { precision, .. } => {
            let max = 10i64.pow(u32::from(precision)) - 1;
            proptest::collection::vec(-max..=max, rows)
                .prop_map(|v| (v, vec![]))
                .boxed()
        }
        ColumnType::Char { len } => proptest::collection::vec(
            proptest::string::string_regex(&format!("[a-zA-Z0-9 ]{{0,{len}}}")).expect("regex"),
            rows,
        )
        .prop_map(|v| (vec![], v))
        .boxed(),
        ColumnType::Utf8 => proptest::collection::vec(
            proptest::string::string_regex("[a-zé€ ]{0,300}").expect("regex"),
            rows,
        )
        .prop_map(|v| (vec![], v))
        .boxed(),
    }
}

#[derive(Debug, Clone)]
struct Case {
    schema: TableSchema,
    columns: Vec<ArrayRef>,
    batch_rows: usize,
    chunk_pages: u64,
}

fn case() -> impl Strategy<Value = Case> {
    (
        proptest::collection::vec(column_type(), 1..6),
        0usize..2500,
        1usize..700,
        1u64..4,
    )
        .prop_flat_map(|(types, rows, batch_rows, chunk_pages)| {
            let values: Vec<_> = types.iter().map(|&t| column_values(t, rows)).collect();
            (Just(types), values, Just(batch_rows), Just(chunk_pages)).prop_map(
                |(types, values, batch_rows, chunk_pages)| {
                    let schema = TableSchema::new(
                        types
                            .iter()
                            .enumerate()
                            .map(|(i, &ty)| ColumnDef {
                                name: format!("c{i}"),
                                ty,
                            })
                            .collect(),
                    )
                    .expect("schema");
                    let columns = types
                        .iter()
                        .zip(&values)
                        .map(|(&ty, (ints, strs))| array_for(ty, ints, strs))
                        .collect();
                    Case {
                        schema,
                        columns,
                        batch_rows,
                        chunk_pages,
                    }
                },
            )
        })
}

fn batches(case: &Case) -> Vec<RecordBatch> {
    let rows = case.columns[0].len();
    (0..rows)
        .step_by(case.batch_rows)
        .map(|start| {
            let n = case.batch_rows.min(rows - start);
            let cols = case.columns.iter().map(|c| c.slice(start, n)).collect();
            RecordBatch::try_new(case.schema.arrow_schema(), cols).expect("batch")
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn random_tables_round_trip_in_every_layout(case in case()) {
        let input = batches(&case);
        for layout in Layout::ALL {
            let tmp = tempfile::tempdir().expect("tempdir");
            let table = write_table(tmp.path(), &case.schema, layout, PAGE_BYTES, case.chunk_pages, &input);
            prop_assert_eq!(table.rows() as usize, case.columns[0].len());
            let all: Vec<usize> = (0..case.schema.len()).collect();
            let got = read_all(&table, &all);
            for (c, (want, got)) in case.columns.iter().zip(&got).enumerate() {
                // Strings come back as Utf8 whatever they went in as; compare values.
                prop_assert_eq!(want.as_ref(), got.as_ref(), "{} column {}", layout, c);
            }
        }
    }

    #[test]
    fn dsm_extents_cover_exactly_the_requested_tuples(case in case(), a in 0.0f64..1.0, len in 0.0f64..1.0) {
        let input = batches(&case);
        let tmp = tempfile::tempdir().expect("tempdir");
        let table = write_table(tmp.path(), &case.schema, Layout::Dsm, PAGE_BYTES, case.chunk_pages, &input);
        let rows = table.rows();
        let start = (a * rows as f64) as u64;
        let end = (start + (len * rows as f64) as u64).min(rows);
        for c in 0..case.schema.len() {
            let extents = table.column_extents_for_rows(c, start..end);
            if start >= end {
                prop_assert!(extents.is_empty());
                continue;
            }
            prop_assert_eq!(extents.len(), 1);
            let e = extents[0];
            let path = table.file_path(e.file);
            let data = std::fs::read(&path).expect("read column file");
            let bytes = &data[e.offset as usize..(e.offset + e.len) as usize];
            let pages: Vec<(u64, u64)> = bytes
                .chunks(PAGE_BYTES as usize)
                .enumerate()
                .map(|(i, p)| {
                    let (h, _) = read_page(p, &path, e.offset + (i * PAGE_BYTES as usize) as u64, Layout::Dsm).expect("page");
                    (h.row_start, h.row_start + u64::from(h.row_count))
                })
                .collect();
            // Contiguous, covering [start, end), and minimal: first and last page both
            // hold requested tuples.
            for w in pages.windows(2) {
                prop_assert_eq!(w[0].1, w[1].0);
            }
            let (first, last) = (pages[0], pages[pages.len() - 1]);
            prop_assert!(first.0 <= start && start < first.1, "first page {:?} for start {}", first, start);
            prop_assert!(last.0 < end && end <= last.1, "last page {:?} for end {}", last, end);
            prop_assert!(PAGE_HEADER_LEN < PAGE_BYTES as usize);
        }
    }
}
