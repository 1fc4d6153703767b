//! `decode_chunk_filtered` against an independent path: the whole chunk decoded by
//! `decode_chunk_with`, the comparisons evaluated on its Arrow arrays by hand, the
//! passing tuples taken with Arrow's `filter`. Seeded random chunks, projections, row
//! ranges and conjunctions of 1-3 comparisons on integer, decimal and date columns,
//! for every layout (DSM with pages small enough that many hold no selected tuple).

mod common;

use arrow_array::cast::AsArray;
use arrow_array::types::{Date32Type, Decimal128Type, Int64Type};
use arrow_array::{Array, BooleanArray, RecordBatch};
use arrow_schema::DataType;
use coopscan_storage::column::ColumnValues;
use coopscan_storage::device::{Device, DeviceConfig};
use coopscan_storage::filter::{CmpOp, Comparison, RowFilter};
use coopscan_storage::packed_chars;
use coopscan_storage::{
    decode_chunk_filtered, decode_chunk_values, decode_chunk_with, Layout, PageChecks, Table,
    Tuples, ValueColumns,
};
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

const SEED: u64 = 0xf117;
const CASES: usize = 150;
const ROWS: usize = 5000;
/// The sample schema's integer-valued columns: `k` (ascending), `price`, `day`.
const NUMERIC: [usize; 3] = [0, 1, 2];
const OPS: [CmpOp; 5] = [CmpOp::Eq, CmpOp::Lt, CmpOp::LtEq, CmpOp::Gt, CmpOp::GtEq];

/// Value `i` of an integer, decimal or date array, in stored units.
fn stored(array: &dyn Array, i: usize) -> i64 {
    match array.data_type() {
        DataType::Int64 => array.as_primitive::<Int64Type>().value(i),
        DataType::Date32 => i64::from(array.as_primitive::<Date32Type>().value(i)),
        DataType::Decimal128(..) => {
            i64::try_from(array.as_primitive::<Decimal128Type>().value(i)).expect("fits")
        }
        other => panic!("not a numeric column: {other}"),
    }
}

/// The expected selection: the whole wanted part of chunk `k`, every column, filtered.
fn expected(batch: &RecordBatch, filter: &[Comparison]) -> Vec<bool> {
    (0..batch.num_rows())
        .map(|i| {
            filter.iter().all(|c| {
                c.op.holds(stored(batch.column(c.column).as_ref(), i), c.value)
            })
        })
        .collect()
}

fn comparison(rng: &mut ChaCha8Rng, batch: &RecordBatch) -> Comparison {
    let column = NUMERIC[rng.random_range(0..NUMERIC.len())];
    // A value of the data (so `=` can match) or near it.
    let i = rng.random_range(0..batch.num_rows().max(1));
    let base = if batch.num_rows() == 0 {
        0
    } else {
        stored(batch.column(column).as_ref(), i)
    };
    Comparison {
        column,
        op: OPS[rng.random_range(0..OPS.len())],
        value: base + rng.random_range(-3..=3),
    }
}

fn check_layout(layout: Layout, rng: &mut ChaCha8Rng) {
    check_table(layout, rng, common::sample_batch(0, ROWS), 16);
}

fn check_table(layout: Layout, rng: &mut ChaCha8Rng, batch: RecordBatch, chunk_pages: u64) {
    let dir = tempfile::tempdir().expect("tempdir");
    let schema = common::sample_schema();
    let page_bytes = 4096;
    let table: Table = common::write_table(
        dir.path(),
        &schema,
        layout,
        page_bytes,
        chunk_pages,
        &[batch],
    );
    let device = Device::new(DeviceConfig::default());
    let files = table.open_files(&device).expect("files");
    let all: Vec<usize> = (0..schema.len()).collect();
    let (mut empty, mut partial) = (0, 0);
    for case in 0..CASES {
        let k = rng.random_range(0..table.chunk_count());
        let chunk = table.chunk(k).rows();
        let rows = rng.random_bool(0.5).then(|| {
            let a = rng.random_range(chunk.start..chunk.end);
            let b = rng.random_range(a..=chunk.end);
            a..b
        });
        let mut projection: Vec<usize> = all
            .iter()
            .copied()
            .filter(|_| rng.random_bool(0.5))
            .collect();
        if projection.is_empty() {
            projection.push(rng.random_range(0..all.len()));
        }
        let bytes = table.read_chunk(&device, &files, k, &all).expect("read");
        let views = bytes.views();
        let whole = decode_chunk_with(&table, k, &all, rows.clone(), &views, PageChecks::Full)
            .expect("decode");
        let conjuncts: Vec<Comparison> = (0..rng.random_range(1..=3))
            .map(|_| comparison(rng, &whole))
            .collect();
        let keep = expected(&whole, &conjuncts);
        let want =
            arrow_select::filter::filter_record_batch(&whole, &BooleanArray::from(keep.clone()))
                .expect("filter")
                .project(&projection)
                .expect("project");
        let start = rows
            .clone()
            .map_or(chunk.start, |r| r.start.max(chunk.start));
        let want_rows: Vec<u64> = keep
            .iter()
            .enumerate()
            .filter(|(_, &k)| k)
            .map(|(i, _)| start + i as u64)
            .collect();
        let filter = RowFilter::new(&schema, conjuncts.clone()).expect("filter");
        let got = decode_chunk_filtered(
            &table,
            k,
            &projection,
            rows.clone(),
            &views,
            PageChecks::Full,
            &filter,
        )
        .expect("filtered decode");
        let what =
            format!("{layout:?} case {case}: chunk {k} rows {rows:?} {conjuncts:?} {projection:?}");
        assert_eq!(got.batch, want, "{what}");
        assert_eq!(got.rows, want_rows, "{what}");
        // Reading only the projection and the filter's columns gives the same.
        let only =
            table.read_chunk_selected(&device, &files, k, &projection, rows.clone(), &filter);
        assert_eq!(
            only.expect("read selected").batch,
            want,
            "{what}: read_chunk_selected"
        );
        check_values(
            &table,
            k,
            &projection,
            rows,
            &views,
            &filter,
            &want,
            &want_rows,
        );
        if want_rows.is_empty() {
            empty += 1;
        } else if want_rows.len() < whole.num_rows() {
            partial += 1;
        }
    }
    assert!(
        empty > 10 && partial > 10,
        "{layout:?}: {empty} empty, {partial} partial"
    );
}

/// `decode_chunk_values` (the aggregating scan's path) selects the same tuples, with
/// the `CHAR(1)` flag, where projected, as packed words.
#[allow(clippy::too_many_arguments)]
fn check_values(
    table: &Table,
    k: usize,
    projection: &[usize],
    rows: Option<std::ops::Range<u64>>,
    views: &[(coopscan_storage::Extent, &[u8])],
    filter: &RowFilter,
    want: &RecordBatch,
    want_rows: &[u64],
) {
    const FLAG: usize = 3;
    let packed: Vec<usize> = projection.iter().copied().filter(|&c| c == FLAG).collect();
    let wanted = ValueColumns {
        columns: projection,
        packed: &packed,
    };
    let got = decode_chunk_values(table, k, wanted, rows, views, PageChecks::Full, filter)
        .expect("values");
    // The selected tuples' positions among the held ones.
    let (held_rows, at): (Vec<u64>, Vec<usize>) = match &got.tuples {
        Tuples::Selected(rows) => (rows.clone(), (0..rows.len()).collect()),
        Tuples::Marked { first, keep } => keep
            .iter()
            .enumerate()
            .filter(|(_, &k)| k)
            .map(|(i, _)| (first + i as u64, i))
            .unzip(),
    };
    assert_eq!(held_rows, want_rows, "chunk {k}: the selected rows");
    let Some(flag_at) = projection.iter().position(|&c| c == FLAG) else {
        return;
    };
    let ColumnValues::I64(words) = &got.columns[flag_at] else {
        panic!("chunk {k}: the flag not packed");
    };
    let flags = want.column(flag_at).as_string::<i32>();
    for (j, &i) in at.iter().enumerate() {
        let word = packed_chars::pack(flags.value(j).as_bytes(), 1).expect("packs");
        assert_eq!(words[i] as u64, word, "chunk {k}: tuple {j}'s flag");
    }
}

#[test]
fn filtered_decoding_keeps_exactly_the_passing_tuples_in_every_layout() {
    let mut rng = ChaCha8Rng::seed_from_u64(SEED);
    for layout in Layout::ALL {
        check_layout(layout, &mut rng);
    }
}

/// The sample table with `k` ascending in steps of up to 64 and `price` and `day`
/// scattered: each spans several DSM pages per chunk, so page bounds rule pages of a
/// loaded chunk out (`k`'s narrowly, the others' rarely) and a column is decoded with
/// pages skipped.
fn paged_batch(rows: usize) -> RecordBatch {
    let mix = |i: i64| (i * 2_654_435_761) % 100_000;
    let ints: Vec<i64> = (0..rows as i64).collect();
    let schema = common::sample_schema();
    let column = |c: usize, values: Vec<i64>| common::array_for(schema.columns[c].ty, &values, &[]);
    let base = common::sample_batch(0, rows);
    let mut columns = base.columns().to_vec();
    columns[0] = column(0, ints.iter().map(|&i| i * 64 + mix(i) % 64).collect());
    columns[1] = column(1, ints.iter().map(|&i| mix(i)).collect());
    columns[2] = column(2, ints.iter().map(|&i| 8000 + mix(i) % 2500).collect());
    RecordBatch::try_new(base.schema(), columns).expect("batch")
}

#[test]
fn filtered_decoding_with_dsm_page_bounds_keeps_exactly_the_passing_tuples() {
    let rows = 80_000;
    let dir = tempfile::tempdir().expect("tempdir");
    let schema = common::sample_schema();
    let t = common::write_table(
        dir.path(),
        &schema,
        Layout::Dsm,
        4096,
        256,
        &[paged_batch(rows)],
    );
    let pages_per_chunk = |c: usize| t.manifest().files[c].pages as usize / t.chunk_count();
    let pages = (pages_per_chunk(0), pages_per_chunk(1), t.chunk_count());
    assert!(
        pages.0 >= 3 && pages.1 >= 3 && pages.2 >= 3,
        "pages per chunk, chunks: {pages:?}"
    );
    let mut rng = ChaCha8Rng::seed_from_u64(SEED ^ 0x9a9e);
    check_table(Layout::Dsm, &mut rng, paged_batch(rows), 256);
}
