//! Shared test fixtures: SF 0.01 lineitem written in NSM, PAX and DSM once per test
//! binary, and the independent reference — DataFusion over tpchgen's own Arrow output
//! in memory, with `_rowid` added.
#![allow(dead_code)]

use std::ops::Range;
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

use coopscan_exec::ROWID_COLUMN;
use coopscan_storage::device::{Device, DeviceConfig, DirectMode};
use coopscan_storage::{Layout, Table};
use coopscan_tpch::{generate, import_table, ImportOptions, TpchTable};
use datafusion::arrow::array::{Int64Array, RecordBatch};
use datafusion::arrow::datatypes::{DataType, Field, Schema};
use datafusion::arrow::util::display::{ArrayFormatter, FormatOptions};
use datafusion::datasource::MemTable;
use datafusion::prelude::SessionContext;

pub const SF: f64 = 0.01;
/// Small chunks so SF 0.01 (about 8 MB) spans dozens of them.
pub const CHUNK_BYTES: u64 = 256 * 1024;
pub const LAYOUTS: [Layout; 3] = [Layout::Nsm, Layout::Pax, Layout::Dsm];
/// lineitem's stored columns, in order: what an `INSERT` names.
pub const LINEITEM_COLUMNS: &str = "l_orderkey, l_partkey, l_suppkey, l_linenumber, \
    l_quantity, l_extendedprice, l_discount, l_tax, l_returnflag, l_linestatus, l_shipdate, \
    l_commitdate, l_receiptdate, l_shipinstruct, l_shipmode, l_comment";
const GEN_BATCH_ROWS: usize = 8192;

struct Fixture {
    _dir: tempfile::TempDir,
    tables: Vec<(Layout, PathBuf)>,
}

#[path = "../../../storage/tests/common/fixture_dir.rs"]
mod fixture_dir;
pub use fixture_dir::fixture_dir;

fn fixture() -> &'static Fixture {
    static FIXTURE: OnceLock<Fixture> = OnceLock::new();
    FIXTURE.get_or_init(|| {
        let dir = fixture_dir();
        let tables = LAYOUTS
            .iter()
            .map(|&layout| {
                let out_dir = dir.path().join(layout.to_string());
                let opts = ImportOptions {
                    sf: SF,
                    layout,
                    chunk_bytes: CHUNK_BYTES,
                    out_dir: out_dir.clone(),
                    overwrite: true,
                    threads: 2,
                };
                import_table(TpchTable::Lineitem, &opts, &|_| {}).expect("import lineitem");
                (layout, out_dir.join("lineitem"))
            })
            .collect();
        Fixture { _dir: dir, tables }
    })
}

pub fn table(layout: Layout) -> Table {
    let (_, path) = fixture()
        .tables
        .iter()
        .find(|(l, _)| *l == layout)
        .expect("layout generated");
    Table::open(path).expect("open table")
}

/// Buffered reads: tests check results, not I/O timing, and tmp may be tmpfs.
pub fn device() -> Arc<Device> {
    Arc::new(Device::new(DeviceConfig {
        direct: DirectMode::Off,
        ..DeviceConfig::default()
    }))
}

/// lineitem from tpchgen as a `MemTable` of its own (one that DML may change).
pub fn lineitem_memtable() -> Arc<MemTable> {
    let batches: Vec<_> = generate(TpchTable::Lineitem, SF, 1, 1, GEN_BATCH_ROWS)
        .map(|b| b.expect("generate"))
        .collect();
    Arc::new(MemTable::try_new(batches[0].schema(), vec![batches]).expect("memtable"))
}

/// DataFusion over tpchgen's batches in memory, `_rowid` appended: the reference.
pub fn reference_context() -> SessionContext {
    static BATCHES: OnceLock<Vec<RecordBatch>> = OnceLock::new();
    let batches = BATCHES.get_or_init(|| {
        let mut next_row = 0i64;
        generate(TpchTable::Lineitem, SF, 1, 1, GEN_BATCH_ROWS)
            .map(|b| {
                let b = b.expect("generate");
                let n = b.num_rows() as i64;
                let ids = Int64Array::from_iter_values(next_row..next_row + n);
                next_row += n;
                let mut fields: Vec<Field> = b
                    .schema()
                    .fields()
                    .iter()
                    .map(|f| f.as_ref().clone())
                    .collect();
                fields.push(Field::new(ROWID_COLUMN, DataType::Int64, false));
                let mut columns = b.columns().to_vec();
                columns.push(Arc::new(ids));
                RecordBatch::try_new(Arc::new(Schema::new(fields)), columns).expect("batch")
            })
            .collect()
    });
    let schema = batches[0].schema();
    let mem = MemTable::try_new(schema, vec![batches.clone()]).expect("memtable");
    let ctx = SessionContext::new();
    ctx.register_table("lineitem", Arc::new(mem))
        .expect("register");
    ctx
}

/// Rows rendered as text (decimals exactly as their scaled digits), sorted, so results
/// compare independently of order and of Utf8 vs Utf8View.
pub fn canonical(batches: &[RecordBatch]) -> Vec<Vec<String>> {
    let options = FormatOptions::default().with_null("NULL");
    let mut rows = Vec::new();
    for b in batches {
        let formatters: Vec<ArrayFormatter> = b
            .columns()
            .iter()
            .map(|c| ArrayFormatter::try_new(c.as_ref(), &options).expect("formatter"))
            .collect();
        for r in 0..b.num_rows() {
            rows.push(formatters.iter().map(|f| f.value(r).to_string()).collect());
        }
    }
    rows.sort();
    rows
}

pub async fn run(ctx: &SessionContext, sql: &str) -> Vec<Vec<String>> {
    let batches = ctx
        .sql(sql)
        .await
        .unwrap_or_else(|e| panic!("plan {sql}: {e}"))
        .collect()
        .await
        .unwrap_or_else(|e| panic!("run {sql}: {e}"));
    canonical(&batches)
}

/// A statement through `coopscan sql`'s planner (queries, changes, BEGIN/COMMIT/ROLLBACK),
/// its rows as [`canonical`] gives them, or the error's text.
pub async fn statement(ctx: &SessionContext, sql: &str) -> Result<Vec<Vec<String>>, String> {
    let frame = coopscan_exec::plan_read_or_change(ctx, sql)
        .await
        .map_err(|e| e.to_string())?;
    Ok(canonical(
        &frame.collect().await.map_err(|e| e.to_string())?,
    ))
}

/// [`run`] of each of `sqls` in turn, their results in order.
pub async fn run_each(ctx: &SessionContext, sqls: &[String]) -> Vec<Vec<Vec<String>>> {
    let mut out = Vec::new();
    for sql in sqls {
        out.push(run(ctx, sql).await);
    }
    out
}

/// The tuple ranges every query runs over: the full table, 10% from a
/// pseudo-random start, and a middle range spanning several chunks.
pub fn test_ranges(rows: u64, seed: u64) -> Vec<Option<Range<u64>>> {
    let tenth = rows / 10;
    // xorshift: a fixed, reproducible "random" start.
    let mut x = seed.max(1);
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    let start = x % (rows - tenth);
    vec![
        None,
        Some(start..start + tenth),
        Some(rows / 3..rows / 3 + rows / 4),
    ]
}

/// Runs `sql`; `Err` carries the error's text (for queries that may fail on purpose).
pub async fn try_run(ctx: &SessionContext, sql: &str) -> Result<Vec<Vec<String>>, String> {
    let frame = ctx.sql(sql).await.map_err(|e| e.to_string())?;
    let batches = frame.collect().await.map_err(|e| e.to_string())?;
    Ok(canonical(&batches))
}

/// Waits for a query under injected faults (a watchdog fails a stall) and checks it:
/// the reference's answer (`true`) or an error naming the damaged read of `file`
/// (`false`).
pub async fn await_right_or_clear_failure(
    task: tokio::task::JoinHandle<Result<Vec<Vec<String>>, String>>,
    want: &[Vec<String>],
    file: &str,
    deadline: std::time::Duration,
    what: &str,
) -> bool {
    let got = tokio::time::timeout(deadline, task)
        .await
        .unwrap_or_else(|_| panic!("{what}: watchdog: query hung"))
        .expect("query task");
    match got {
        Ok(got) => {
            assert_eq!(got, want, "{what}");
            true
        }
        Err(msg) => {
            assert!(
                msg.contains("loading chunk") && msg.contains(file),
                "{what}: {msg}"
            );
            false
        }
    }
}

/// Waits until every scan of `provider` has stopped, then checks that the runtime is
/// consistent and holds nothing (no scan registered or queued, no chunk pinned).
pub async fn assert_all_released(
    provider: &coopscan_exec::CoopTable,
    runtime: &coopscan_runtime::Runtime,
    deadline: std::time::Duration,
    what: &str,
) {
    let started = std::time::Instant::now();
    while provider.counters().running > 0 {
        assert!(started.elapsed() < deadline, "{what}: a scan never stopped");
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    runtime.check_invariants().expect("invariants");
    assert_eq!(
        runtime.holdings(),
        coopscan_runtime::Holdings::default(),
        "{what}: leaked"
    );
}

/// The name of the table's first data file: what an error about a damaged read names.
pub fn first_data_file(table: &Table) -> String {
    table
        .file_path(0)
        .file_name()
        .expect("name")
        .to_string_lossy()
        .into_owned()
}

/// A Runtime of `frames` under `policy` on a buffered device that injects `faults`,
/// and a cooperative provider over it.
pub fn faulty_runtime(
    table: &Table,
    faults: Arc<coopscan_storage::device::SeededFaults>,
    frames: u32,
    policy: coopscan_runtime::PolicyKind,
) -> (
    Arc<coopscan_runtime::Runtime>,
    Arc<coopscan_exec::CoopTable>,
) {
    let config = DeviceConfig {
        direct: DirectMode::Off,
        ..DeviceConfig::default()
    };
    let device = Arc::new(Device::with_faults(config, faults));
    let runtime = Arc::new(
        coopscan_runtime::Runtime::new(
            table.clone(),
            device,
            coopscan_runtime::RuntimeConfig::new(frames, policy),
        )
        .expect("runtime"),
    );
    let provider = Arc::new(coopscan_exec::CoopTable::cooperative(Arc::clone(&runtime)));
    (runtime, provider)
}
