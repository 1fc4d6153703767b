//! Helpers shared by the runtime tests: a small table on disk, a reference read that
//! bypasses the runtime, scan threads joined under a deadline, and a seeded generator.
#![allow(dead_code)]

use std::ops::Range;
use std::path::Path;
use std::sync::mpsc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use arrow_array::{Array, Int64Array, RecordBatch};
use coopscan_runtime::{CScan, Runtime, RuntimeConfig, RuntimeError};
use coopscan_storage::device::{Device, DeviceConfig};
use coopscan_storage::{
    ColumnDef, ColumnType, Layout, Table, TableSchema, TableWriter, WriteOptions,
};

pub const PAGE_BYTES: u32 = 4096;
pub const CHUNK_PAGES: u64 = 2;
/// Column 0 is the row number `k`, column 1 a value `v` derived from it.
pub const K: usize = 0;
pub const V: usize = 1;
/// No scan thread may take longer than this: a hang is a failure, not a stuck test.
pub const DEADLINE: Duration = Duration::from_secs(20);

pub fn value_of(k: i64) -> i64 {
    (k * 7919) % 1000 - 500
}

pub fn schema() -> TableSchema {
    let col = |name: &str| ColumnDef {
        name: name.into(),
        ty: ColumnType::Int64,
    };
    TableSchema::new(vec![col("k"), col("v")]).expect("schema")
}

/// Writes `rows` rows in `layout` with small pages and chunks; returns the open table.
pub fn write_table(dir: &Path, layout: Layout, rows: i64) -> Table {
    write_image(dir, layout, &rows_batch(0..rows, value_of), false)
}

/// Rows `keys` of [`schema`]: `k`, and `v = value(k)`.
pub fn rows_batch(keys: Range<i64>, value: impl Fn(i64) -> i64) -> RecordBatch {
    let k: Vec<i64> = keys.collect();
    let v: Vec<i64> = k.iter().map(|&k| value(k)).collect();
    let columns = vec![
        Arc::new(Int64Array::from(k)) as _,
        Arc::new(Int64Array::from(v)) as _,
    ];
    RecordBatch::try_new(schema().arrow_schema(), columns).expect("batch")
}

/// Writes `batch` as the table in `dir` with small pages and chunks; `overwrite`
/// replaces a table there, staged and swapped in as a checkpoint's image is.
pub fn write_image(dir: &Path, layout: Layout, batch: &RecordBatch, overwrite: bool) -> Table {
    let mut opts = WriteOptions::new(layout);
    opts.page_bytes = PAGE_BYTES;
    opts.chunk_bytes = u64::from(PAGE_BYTES) * CHUNK_PAGES;
    opts.overwrite = overwrite;
    let mut w = TableWriter::create(dir, "t", schema(), opts).expect("create");
    w.write_batch(batch).expect("write");
    w.finish().expect("finish");
    Table::open(dir).expect("open")
}

pub fn device() -> Arc<Device> {
    Arc::new(Device::new(DeviceConfig::default()))
}

/// What a scan computes: row count, sum of `v`, sum of `k`, chunks seen.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Totals {
    pub rows: u64,
    pub sum_v: i64,
    pub sum_k: i64,
    pub chunks: u64,
}

/// The reference: decode every chunk in order without the runtime, keep column `v`.
pub fn sequential_values(table: &Table) -> Vec<i64> {
    let device = device();
    let files = table.open_files(&device).expect("files");
    let mut values = Vec::new();
    for k in 0..table.chunk_count() {
        let batch = table
            .read_chunk_batch(&device, &files, k, &[V], None)
            .expect("reference read");
        values.extend(int64(&batch, 0).values().iter().copied());
    }
    values
}

/// Totals of `ranges` (merged like the runtime does) computed from the reference.
pub fn expected(values: &[i64], table: &Table, ranges: &[Range<u64>]) -> Totals {
    let mut in_scan = vec![false; values.len()];
    for r in ranges {
        for k in r.clone() {
            in_scan[k as usize] = true;
        }
    }
    let mut t = Totals::default();
    for (k, (&v, &yes)) in values.iter().zip(&in_scan).enumerate() {
        if yes {
            t.rows += 1;
            t.sum_v += v;
            t.sum_k += k as i64;
        }
    }
    t.chunks = (0..table.chunk_count())
        .filter(|&c| {
            let rows = table.chunk(c).rows();
            (rows.start..rows.end).any(|k| in_scan[k as usize])
        })
        .count() as u64;
    t
}

pub fn int64(batch: &RecordBatch, i: usize) -> &Int64Array {
    batch
        .column(i)
        .as_any()
        .downcast_ref::<Int64Array>()
        .expect("int64 column")
}

/// Consumes `scan` (projection must be `[K, V]`), or stops after `limit` chunks.
pub fn consume(scan: &mut CScan, limit: Option<u64>) -> Result<Totals, RuntimeError> {
    let mut t = Totals::default();
    while let Some(chunk) = scan.next_chunk()? {
        let batch = chunk.batch()?;
        let (k, v) = (int64(&batch, 0), int64(&batch, 1));
        assert_eq!(k.null_count() + v.null_count(), 0);
        t.rows += batch.num_rows() as u64;
        t.sum_k += k.values().iter().sum::<i64>();
        t.sum_v += v.values().iter().sum::<i64>();
        t.chunks += 1;
        if limit.is_some_and(|l| t.chunks >= l) {
            break;
        }
    }
    Ok(t)
}

/// Runs one thread per scan spec (`register` + `consume`) and collects the results in
/// spec order, failing the test if any thread misses the deadline.
pub fn run_scans(
    runtime: &Arc<Runtime>,
    specs: Vec<Vec<Range<u64>>>,
) -> Vec<Result<Totals, RuntimeError>> {
    let (tx, rx) = mpsc::channel();
    let n = specs.len();
    for (i, ranges) in specs.into_iter().enumerate() {
        let tx = tx.clone();
        let runtime = Arc::clone(runtime);
        std::thread::spawn(move || {
            let result = runtime
                .register(ranges, vec![K, V])
                .and_then(|mut scan| consume(&mut scan, None));
            let _ = tx.send((i, result));
        });
    }
    collect(rx, n)
}

pub fn collect<T>(rx: mpsc::Receiver<(usize, T)>, n: usize) -> Vec<T> {
    let deadline = Instant::now() + DEADLINE;
    let mut out: Vec<Option<T>> = (0..n).map(|_| None).collect();
    for _ in 0..n {
        let left = deadline.saturating_duration_since(Instant::now());
        let (i, r) = rx
            .recv_timeout(left)
            .expect("a scan thread hung or panicked (deadline passed)");
        out[i] = Some(r);
    }
    out.into_iter()
        .map(|r| r.expect("every scan reported"))
        .collect()
}

/// A tiny seeded xorshift generator: reproducible ranges without a rand dependency.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    /// One to three random row ranges (possibly overlapping) inside `0..rows`.
    pub fn ranges(&mut self, rows: u64) -> Vec<Range<u64>> {
        let count = 1 + self.below(3);
        (0..count)
            .map(|_| {
                let a = self.below(rows);
                let b = self.below(rows + 1);
                a.min(b)..a.max(b)
            })
            .collect()
    }
}

pub fn config(frames: u32, policy: coopscan_runtime::PolicyKind) -> RuntimeConfig {
    RuntimeConfig::new(frames, policy)
}

/// Rows of `0..rows` that `ranges` select (overlaps count once).
pub fn selected(rows: u64, ranges: &[Range<u64>]) -> Vec<bool> {
    let mut in_scan = vec![false; rows as usize];
    for r in ranges {
        for k in r.clone() {
            in_scan[k as usize] = true;
        }
    }
    in_scan
}

/// Totals of the selected rows from the generator's formula alone (no storage code):
/// the independent reference of the fault and stress tests. `chunks` is left 0.
pub fn expected_from_formula(in_scan: &[bool]) -> Totals {
    let mut t = Totals::default();
    for (k, _) in in_scan.iter().enumerate().filter(|(_, &yes)| yes) {
        t.rows += 1;
        t.sum_k += k as i64;
        t.sum_v += value_of(k as i64);
    }
    t
}

/// Consumes `scan` (projection `[K, V]`) checking every tuple as it arrives: selected by
/// the scan, not seen before, and `v` = `value_of(k)`. A wrong tuple panics the scan
/// thread (the test then fails on its deadline or join), so a silently wrong byte can
/// never pass. Stops after `limit` chunks (a cancellation) if given.
pub fn consume_checked(
    scan: &mut CScan,
    in_scan: &[bool],
    limit: Option<u64>,
) -> Result<Totals, RuntimeError> {
    let mut seen = vec![false; in_scan.len()];
    let mut t = Totals::default();
    while let Some(chunk) = scan.next_chunk()? {
        let batch = chunk.batch()?;
        let (k, v) = (int64(&batch, 0), int64(&batch, 1));
        assert_eq!(
            k.null_count() + v.null_count(),
            0,
            "nulls in non-null columns"
        );
        for (&k, &v) in k.values().iter().zip(v.values()) {
            let i = usize::try_from(k).expect("row number");
            assert!(in_scan.get(i) == Some(&true), "row {k} not selected");
            assert!(!std::mem::replace(&mut seen[i], true), "row {k} twice");
            assert_eq!(v, value_of(k), "wrong value for row {k}");
            t.rows += 1;
            t.sum_k += k;
            t.sum_v += v;
        }
        t.chunks += 1;
        if limit.is_some_and(|l| t.chunks >= l) {
            break;
        }
    }
    Ok(t)
}

/// The watchdog of the fault and stress tests: `n` results from `rx` before `deadline`,
/// or the test fails naming how many arrived (a hang is a failure, not a stuck run).
pub fn collect_by<T>(rx: mpsc::Receiver<(usize, T)>, n: usize, deadline: Instant) -> Vec<T> {
    let mut out: Vec<Option<T>> = (0..n).map(|_| None).collect();
    for got in 0..n {
        let left = deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok((i, r)) => out[i] = Some(r),
            Err(e) => panic!("watchdog: {got} of {n} scans reported before the deadline ({e})"),
        }
    }
    out.into_iter()
        .map(|r| r.expect("every scan reported"))
        .collect()
}
