//! The 2007 paper's synthetic relation (§6.3.1, Table 4): `columns` 8-byte integer
//! attributes A, B, C, … (named `a`, `b`, `c`, … in SQL) over `rows` tuples. Each value
//! is a seeded hash of its (row, column), uniform in `0..2^32`: nothing a codec can
//! shrink much (as the paper's uncompressed columns), and sums of any range fit an
//! `i64`. [`value`] is public so a test can compute any answer without the table.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use arrow_array::{ArrayRef, Int64Array, RecordBatch};
use coopscan_storage::{ColumnDef, ColumnType, TableSchema};
use coopscan_storage::{Layout, Manifest, TableWriter, WriteOptions};

use crate::import::GEN_BATCH_ROWS;
use crate::{Result, TpchError};

/// The table's directory name, and the name queries use.
pub const SYNTHETIC_TABLE: &str = "synthetic";
/// Most attributes: one per letter.
pub const MAX_SYNTHETIC_COLUMNS: usize = 26;
/// Most tuples: 50× the paper's 200 M, far more than a machine here can hold.
pub const MAX_SYNTHETIC_ROWS: u64 = 10_000_000_000;
/// Values are below this, so that a sum over [`MAX_SYNTHETIC_ROWS`] tuples fits an i64.
const VALUE_BOUND_BITS: u32 = 32;

#[derive(Debug, Clone)]
pub struct SyntheticOptions {
    pub rows: u64,
    pub columns: usize,
    pub seed: u64,
    pub layout: Layout,
    pub chunk_bytes: u64,
    /// The table goes to `out_dir/synthetic`.
    pub out_dir: PathBuf,
    pub overwrite: bool,
}

#[derive(Debug, Clone)]
pub struct SyntheticSummary {
    pub manifest: Manifest,
    pub elapsed: Duration,
}

pub use coopscan_paper::table4::attribute_name as column_name;

/// The value of (`row`, `column`) in the table generated with `seed`: SplitMix64's
/// finalizer over the three, cut to [`VALUE_BOUND_BITS`] bits.
pub fn value(seed: u64, row: u64, column: usize) -> i64 {
    let mut z = seed
        ^ row.wrapping_mul(0x9E37_79B9_7F4A_7C15)
        ^ (column as u64).wrapping_mul(0xD1B5_4A32_D192_ED03);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^= z >> 31;
    // At most 32 bits: the cast cannot wrap.
    (z >> (u64::BITS - VALUE_BOUND_BITS)) as i64
}

/// The manifest's `source`: what generated the table, to recognise it later.
pub fn synthetic_source(rows: u64, columns: usize, seed: u64) -> String {
    format!("synthetic rows={rows} columns={columns} seed={seed}")
}

/// The schema: `columns` Int64 attributes `a`, `b`, ….
pub fn synthetic_schema(columns: usize) -> Result<TableSchema> {
    let defs = (0..columns)
        .map(|c| ColumnDef {
            name: column_name(c),
            ty: ColumnType::Int64,
        })
        .collect();
    Ok(TableSchema::new(defs)?)
}

fn check(opts: &SyntheticOptions) -> Result<()> {
    if !(1..=MAX_SYNTHETIC_COLUMNS).contains(&opts.columns) {
        return Err(TpchError::Invalid(format!(
            "columns must be in 1..={MAX_SYNTHETIC_COLUMNS}, got {}",
            opts.columns
        )));
    }
    if !(1..=MAX_SYNTHETIC_ROWS).contains(&opts.rows) {
        return Err(TpchError::Invalid(format!(
            "rows must be in 1..={MAX_SYNTHETIC_ROWS}, got {}",
            opts.rows
        )));
    }
    Ok(())
}

/// Writes the relation to `opts.out_dir/synthetic`; `progress` gets the rows written
/// so far after every batch.
pub fn write_synthetic(
    opts: &SyntheticOptions,
    progress: &dyn Fn(u64),
) -> Result<SyntheticSummary> {
    check(opts)?;
    let start = Instant::now();
    let dir = opts.out_dir.join(SYNTHETIC_TABLE);
    let mut wo = WriteOptions::new(opts.layout).with_chunk_bytes(opts.chunk_bytes);
    wo.overwrite = opts.overwrite;
    wo.source = Some(synthetic_source(opts.rows, opts.columns, opts.seed));
    let schema = synthetic_schema(opts.columns)?;
    let arrow = schema.arrow_schema();
    let mut writer = TableWriter::create(&dir, SYNTHETIC_TABLE, schema, wo)?;
    let mut row = 0u64;
    while row < opts.rows {
        let n = (opts.rows - row).min(GEN_BATCH_ROWS as u64);
        let rows = row..row + n;
        let arrays: Vec<ArrayRef> = (0..opts.columns)
            .map(|c| {
                let values = rows.clone().map(|r| value(opts.seed, r, c));
                Arc::new(Int64Array::from_iter_values(values)) as ArrayRef
            })
            .collect();
        let batch = RecordBatch::try_new(Arc::clone(&arrow), arrays)
            .map_err(|e| TpchError::Generator(e.to_string()))?;
        writer.write_batch(&batch)?;
        row += n;
        progress(row);
    }
    Ok(SyntheticSummary {
        manifest: writer.finish()?,
        elapsed: start.elapsed(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use coopscan_storage::device::{Device, DeviceConfig, DirectMode};
    use coopscan_storage::Table;

    #[test]
    fn values_are_deterministic_bounded_and_differ_by_row_column_and_seed() {
        assert_eq!(value(1, 5, 2), value(1, 5, 2));
        let all: Vec<i64> = (0..1000).map(|r| value(1, r, 0)).collect();
        assert!(all.iter().all(|&v| (0..1i64 << 32).contains(&v)));
        let distinct: std::collections::BTreeSet<i64> = all.iter().copied().collect();
        assert!(distinct.len() > 990, "{}", distinct.len());
        assert_ne!(value(1, 5, 2), value(1, 5, 3));
        assert_ne!(value(1, 5, 2), value(2, 5, 2));
        // Uniform enough: the mean of 1000 values is near 2^31.
        let mean = all.iter().map(|&v| v as f64).sum::<f64>() / 1000.0;
        assert!((mean / 2f64.powi(31) - 1.0).abs() < 0.1, "{mean}");
    }

    #[test]
    fn the_written_table_holds_exactly_the_values() {
        let dir = tempfile::tempdir().unwrap();
        let opts = SyntheticOptions {
            rows: 40_000,
            columns: 3,
            seed: 7,
            layout: Layout::Dsm,
            chunk_bytes: coopscan_storage::write::MIB,
            out_dir: dir.path().to_path_buf(),
            overwrite: false,
        };
        let summary = write_synthetic(&opts, &|_| {}).unwrap();
        assert_eq!(summary.manifest.rows, 40_000);
        let table = Table::open(&dir.path().join(SYNTHETIC_TABLE)).unwrap();
        assert_eq!(table.schema().index_of("c"), Some(2));
        let device = Device::new(DeviceConfig {
            direct: DirectMode::Off,
            ..DeviceConfig::default()
        });
        let files = table.open_files(&device).unwrap();
        let mut row = 0u64;
        for k in 0..table.chunk_count() {
            let batch = table
                .read_chunk_batch(&device, &files, k, &[0, 1, 2], None)
                .unwrap();
            for r in 0..batch.num_rows() {
                for c in 0..3 {
                    let col = batch
                        .column(c)
                        .as_any()
                        .downcast_ref::<Int64Array>()
                        .unwrap();
                    assert_eq!(col.value(r), value(7, row, c), "row {row} column {c}");
                }
                row += 1;
            }
        }
        assert_eq!(row, 40_000);
    }

    #[test]
    fn bad_sizes_are_refused() {
        let opts = SyntheticOptions {
            rows: 0,
            columns: 3,
            seed: 1,
            layout: Layout::Dsm,
            chunk_bytes: coopscan_storage::write::MIB,
            out_dir: PathBuf::from("/nonexistent"),
            overwrite: false,
        };
        assert!(write_synthetic(&opts, &|_| {}).is_err());
        let opts = SyntheticOptions {
            rows: 1,
            columns: 27,
            ..opts
        };
        assert!(write_synthetic(&opts, &|_| {}).is_err());
    }
}
