//! The 22 TPC-H queries (`queries/tpch/`, validation parameters with Q11's fraction
//! scaled to the SF) over all eight tables through one shared buffer give exactly the
//! rows of DataFusion over tpchgen's batches in memory — an independent path with no
//! coopscan storage — under every policy with the 22 running at once, as plain Scans,
//! as in-order Scans in the shared buffer, and on every layout; and seeded stream
//! parameters do too.
//!
//! `COOPSCAN_TPCH_TEST_SF` overrides the scale factor (default 0.1).

mod common;

use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

use coopscan_buffer::TableId;
use coopscan_exec::{query_session_config, CoopTable, ScanMode};
use coopscan_runtime::{PolicyKind, Runtime, RuntimeConfig};
use coopscan_storage::device::{Device, DeviceConfig, DirectMode};
use coopscan_storage::{Layout, Table};
use coopscan_tpch::answers::{compare_rows, rows_of, Tolerance};
use coopscan_tpch::{
    generate, import_table, stream_params, ImportOptions, Params, QueryId, TpchTable,
};
use datafusion::datasource::MemTable;
use datafusion::prelude::SessionContext;
use futures::future::join_all;

const DEFAULT_SF: f64 = 0.1;
/// Small chunks so lineitem spans dozens of them at SF 0.1.
const CHUNK_BYTES: u64 = 512 * 1024;
/// A buffer far smaller than the data: policies must evict and share across tables.
const FRAMES: u32 = 12;
const GEN_BATCH_ROWS: usize = 8192;
const LAYOUTS: [Layout; 4] = [Layout::Dsm, Layout::Nsm, Layout::Pax, Layout::Csm];

fn sf() -> f64 {
    std::env::var("COOPSCAN_TPCH_TEST_SF")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(DEFAULT_SF)
}

struct Database {
    _dir: tempfile::TempDir,
    /// Per layout, the eight tables' directories.
    layouts: Vec<(Layout, Vec<PathBuf>)>,
}

fn database() -> &'static Database {
    static DB: OnceLock<Database> = OnceLock::new();
    DB.get_or_init(|| {
        // A static's directory outlives the process (about 280 MB a run, which once
        // filled the disk): named by pid, removed by the next run (`fixture_dir`).
        let dir = common::fixture_dir();
        let layouts = LAYOUTS
            .iter()
            .map(|&layout| {
                let out_dir = dir.path().join(layout.to_string());
                let opts = ImportOptions {
                    sf: sf(),
                    layout,
                    chunk_bytes: CHUNK_BYTES,
                    out_dir: out_dir.clone(),
                    overwrite: true,
                    threads: 2,
                };
                let paths = TpchTable::ALL
                    .iter()
                    .map(|&t| {
                        import_table(t, &opts, &|_| {}).expect("import");
                        out_dir.join(t.name())
                    })
                    .collect();
                (layout, paths)
            })
            .collect();
        Database { _dir: dir, layouts }
    })
}

fn tables(layout: Layout) -> Vec<Table> {
    let (_, paths) = database()
        .layouts
        .iter()
        .find(|(l, _)| *l == layout)
        .expect("layout written");
    paths
        .iter()
        .map(|p| Table::open(p).expect("open"))
        .collect()
}

fn device() -> Arc<Device> {
    Arc::new(Device::new(DeviceConfig {
        direct: DirectMode::Off,
        ..DeviceConfig::default()
    }))
}

/// DataFusion over tpchgen's batches of the eight tables in memory.
fn reference() -> SessionContext {
    let ctx = SessionContext::new();
    for table in TpchTable::ALL {
        let batches: Vec<_> = generate(table, sf(), 1, 1, GEN_BATCH_ROWS)
            .map(|b| b.expect("generate"))
            .collect();
        let schema = batches[0].schema();
        let mem = MemTable::try_new(schema, vec![batches]).expect("memtable");
        ctx.register_table(table.name(), Arc::new(mem))
            .expect("register");
    }
    ctx
}

/// The eight tables of `layout` through one runtime under `policy` (or plain Scans);
/// with `in_order`, every cooperative table read by in-order Scans in that buffer.
fn coopscan_with(
    layout: Layout,
    policy: Option<PolicyKind>,
    in_order: bool,
) -> (Option<Arc<Runtime>>, SessionContext) {
    let ctx = SessionContext::new_with_config(query_session_config(2));
    let device = device();
    let tables = tables(layout);
    let (runtime, providers): (_, Vec<CoopTable>) = match policy {
        None => (
            None,
            tables
                .into_iter()
                .map(|t| CoopTable::new(t, Arc::clone(&device), ScanMode::Scan).expect("scan"))
                .collect(),
        ),
        Some(policy) => {
            let runtime = Arc::new(
                Runtime::with_tables(tables, device, RuntimeConfig::new(FRAMES, policy))
                    .expect("runtime"),
            );
            let providers = (0..TpchTable::ALL.len() as u32)
                .map(|i| CoopTable::cooperative_of(Arc::clone(&runtime), TableId(i)).expect("p"))
                .map(|p| if in_order { p.in_order() } else { p })
                .collect();
            (Some(runtime), providers)
        }
    };
    for (table, provider) in TpchTable::ALL.iter().zip(providers) {
        ctx.register_table(table.name(), Arc::new(provider))
            .expect("register");
    }
    (runtime, ctx)
}

fn coopscan(layout: Layout, policy: Option<PolicyKind>) -> (Option<Arc<Runtime>>, SessionContext) {
    coopscan_with(layout, policy, false)
}

async fn run(ctx: &SessionContext, params: &Params) -> Result<Vec<Vec<String>>, String> {
    let sql = params.sql().map_err(|e| e.to_string())?;
    let batches = ctx
        .sql(&sql)
        .await
        .map_err(|e| format!("plan: {e}"))?
        .collect()
        .await
        .map_err(|e| format!("run: {e}"))?;
    rows_of(&batches).map_err(|e| e.to_string())
}

fn validation_params() -> Vec<Params> {
    QueryId::all()
        .map(|q| Params::validation(q, sf()))
        .collect()
}

/// The reference rows of each of `params`, computed once per parameter set.
async fn expected(params: &[Params]) -> Vec<Vec<Vec<String>>> {
    let reference = reference();
    let mut out = Vec::with_capacity(params.len());
    for p in params {
        let rows = run(&reference, p)
            .await
            .unwrap_or_else(|e| panic!("reference {}: {e}", p.query()));
        out.push(rows);
    }
    out
}

/// Runs all of `params` at once on `ctx` and checks each against `expected`.
async fn check_all(
    label: &str,
    ctx: &SessionContext,
    params: &[Params],
    expected: &[Vec<Vec<String>>],
) {
    let results = join_all(params.iter().map(|p| run(ctx, p))).await;
    let mut failures = Vec::new();
    for ((p, result), want) in params.iter().zip(results).zip(expected) {
        match result {
            Err(e) => failures.push(format!("{} ({}): {e}", p.query(), p.describe())),
            Ok(rows) => {
                if let Err(m) = compare_rows(want, &rows, |_| Tolerance::ENGINES) {
                    failures.push(format!("{} ({}): {m}", p.query(), p.describe()));
                }
            }
        }
    }
    assert!(failures.is_empty(), "{label}:\n{}", failures.join("\n"));
}

fn tokio() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio")
}

#[test]
fn every_policy_answers_the_22_queries_at_once_as_the_reference_does() {
    tokio().block_on(async {
        let params = validation_params();
        let want = expected(&params).await;
        assert!(
            want.iter().all(|rows| !rows.is_empty()),
            "every query has rows"
        );
        let (_, scan) = coopscan(Layout::Dsm, None);
        check_all("scan", &scan, &params, &want).await;
        for policy in PolicyKind::ALL {
            let (runtime, ctx) = coopscan(Layout::Dsm, Some(policy));
            check_all(&format!("{policy}"), &ctx, &params, &want).await;
            drop(ctx);
            let runtime = runtime.expect("cooperative");
            runtime
                .check_invariants()
                .expect("invariants after the run");
        }
    });
}

#[test]
fn every_layout_and_seeded_streams_answer_as_the_reference_does() {
    tokio().block_on(async {
        let params = validation_params();
        let want = expected(&params).await;
        // CSM under relevance: loads of page schemas, the tile's runs in one request.
        for layout in [Layout::Nsm, Layout::Pax, Layout::Csm] {
            let (_, ctx) = coopscan(layout, Some(PolicyKind::Relevance));
            check_all(&format!("{layout} relevance"), &ctx, &params, &want).await;
        }
        // Every table by in-order Scans in the shared buffer (the small-table fallback).
        let (_, ctx) = coopscan_with(Layout::Dsm, Some(PolicyKind::Relevance), true);
        check_all("in-order Scans in the buffer", &ctx, &params, &want).await;
        // Two streams' own parameters, in their stream order.
        let streams: Vec<Params> = (1..=2).flat_map(|s| stream_params(42, s, sf())).collect();
        let want = expected(&streams).await;
        let (_, ctx) = coopscan(Layout::Dsm, Some(PolicyKind::Pbm));
        check_all("streams 1-2 under pbm", &ctx, &streams, &want).await;
    });
}
