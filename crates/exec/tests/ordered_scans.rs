//! The plan picks Scan or CScan per query over one shared buffer (2012 paper §2.3): a
//! query that needs `_rowid` order gets an in-order scan through the same Runtime
//! (`PooledScanExec`, no sort), any other query a CScan. Checked on the plans, on the
//! order of the output, and against in-memory DataFusion, with ordered and unordered
//! queries running at once under every policy.

mod common;

use std::sync::Arc;

use coopscan_exec::{query_session_config, CoopTable, InOrderHint, Query, ROWID_COLUMN};
use coopscan_runtime::{PolicyKind, Runtime, RuntimeConfig};
use coopscan_storage::Layout;
use datafusion::arrow::array::{Array, Int64Array, RecordBatch};
use datafusion::physical_plan::displayable;
use datafusion::prelude::{SessionConfig, SessionContext};
use futures::future::join_all;

use common::*;

/// Few frames relative to the table's chunks, so scans must share and evict.
const FRAMES: u32 = 6;

fn ordered_sql(rows: std::ops::Range<u64>) -> String {
    format!(
        "SELECT _rowid, l_orderkey, l_quantity FROM lineitem \
         WHERE _rowid >= {} AND _rowid < {} ORDER BY _rowid",
        rows.start, rows.end
    )
}

fn context(runtime: &Arc<Runtime>, config: SessionConfig) -> SessionContext {
    let ctx = SessionContext::new_with_config(config);
    let provider = CoopTable::cooperative(Arc::clone(runtime));
    ctx.register_table("lineitem", Arc::new(provider))
        .expect("register");
    ctx
}

fn runtime(layout: Layout, policy: PolicyKind) -> Arc<Runtime> {
    let config = RuntimeConfig::new(FRAMES, policy);
    Arc::new(Runtime::new(table(layout), device(), config).expect("runtime"))
}

async fn physical_plan(ctx: &SessionContext, sql: &str) -> String {
    let df = ctx.sql(sql).await.expect("plan");
    let plan = df.create_physical_plan().await.expect("physical plan");
    let text = displayable(plan.as_ref()).indent(true).to_string();
    text
}

/// Every `_rowid` of the output, in output order.
fn rowids(batches: &[RecordBatch]) -> Vec<i64> {
    let mut out = Vec::new();
    for b in batches {
        let index = b.schema().index_of(ROWID_COLUMN).expect("_rowid projected");
        let col = b.column(index).as_any().downcast_ref::<Int64Array>();
        let col = col.expect("_rowid is Int64");
        out.extend((0..col.len()).map(|i| col.value(i)));
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_query_needing_rowid_order_gets_an_ordered_scan_and_no_sort() {
    for layout in [Layout::Pax, Layout::Dsm] {
        let rt = runtime(layout, PolicyKind::Relevance);
        for threads in [1, 2] {
            let ctx = context(&rt, query_session_config(threads));
            let rows = rt.table().rows();
            let plan = physical_plan(&ctx, &ordered_sql(rows / 5..rows / 2)).await;
            assert!(
                plan.contains("PooledScanExec"),
                "{layout} × {threads}:\n{plan}"
            );
            assert!(!plan.contains("SortExec"), "{layout} × {threads}:\n{plan}");
            assert!(!plan.contains("CScanExec"), "{layout} × {threads}:\n{plan}");
            let unordered = physical_plan(&ctx, &Query::Fast.sql("lineitem", None)).await;
            assert!(unordered.contains("CScanExec"), "{unordered}");
            // Descending order is not table order: the CScan stays and so does the sort.
            let desc = ordered_sql(0..rows).replace("ORDER BY _rowid", "ORDER BY _rowid DESC");
            let plan = physical_plan(&ctx, &desc).await;
            assert!(
                plan.contains("CScanExec") && plan.contains("SortExec"),
                "{plan}"
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ordered_and_unordered_queries_share_the_buffer_under_every_policy() {
    let reference = reference_context();
    for layout in [Layout::Pax, Layout::Dsm] {
        let rows = table(layout).rows();
        let ordered: Vec<String> = [0..rows, rows / 3..rows / 3 + rows / 4]
            .into_iter()
            .map(ordered_sql)
            .collect();
        let unordered: Vec<String> = test_ranges(rows, 7)
            .into_iter()
            .map(|r| Query::Fast.sql("lineitem", r))
            .collect();
        let mut want = Vec::new();
        for sql in ordered.iter().chain(&unordered) {
            want.push(run(&reference, sql).await);
        }
        for policy in PolicyKind::ALL {
            let rt = runtime(layout, policy);
            let ctx = context(&rt, query_session_config(1));
            let all: Vec<&String> = ordered.iter().chain(&unordered).collect();
            let got = join_all(all.iter().map(|sql| async {
                ctx.sql(sql)
                    .await
                    .expect("plan")
                    .collect()
                    .await
                    .expect("run")
            }))
            .await;
            for ((sql, batches), want) in all.iter().zip(&got).zip(&want) {
                assert_eq!(&canonical(batches), want, "{layout} {policy}: {sql}");
            }
            for (sql, batches) in ordered.iter().zip(&got) {
                let ids = rowids(batches);
                assert!(
                    ids.windows(2).all(|w| w[0] < w[1]),
                    "{layout} {policy}: {sql} out of order"
                );
            }
        }
    }
}

/// The chunks a lone scan consumed, in the order it consumed them (a DSM chunk is
/// referenced once per column read: counted once).
fn consumed_chunks(rt: &Runtime) -> Vec<u32> {
    let mut chunks: Vec<u32> = rt.take_trace().iter().map(|r| r.piece.chunk.0).collect();
    chunks.dedup();
    chunks
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_with_the_in_order_hint_reads_in_table_order_and_gets_the_same_rows() {
    let reference = reference_context();
    for layout in [Layout::Pax, Layout::Dsm] {
        let rt = runtime(layout, PolicyKind::Relevance);
        let rows = rt.table().rows();
        let whole = Query::Fast.sql("lineitem", None);
        let want = run(&reference, &whole).await;
        // Fills the buffer with chunks of the table's second half: a CScan of the whole
        // table then starts with those (relevance serves a resident chunk first), an
        // in-order scan with chunk 0.
        let warm = Query::Fast.sql("lineitem", Some(rows / 2..rows));
        rt.record_trace();
        let mut consumed = Vec::new();
        for hinted in [false, true] {
            run(&context(&rt, query_session_config(1)), &warm).await;
            rt.take_trace();
            let mut config = query_session_config(1);
            if hinted {
                config = config.with_extension(Arc::new(InOrderHint));
            }
            let got = run(&context(&rt, config), &whole).await;
            assert_eq!(got, want, "{layout}, hinted {hinted}");
            let chunks = consumed_chunks(&rt);
            let ascending = chunks.windows(2).all(|w| w[0] < w[1]);
            assert_eq!(ascending, hinted, "{layout}, hinted {hinted}: {chunks:?}");
            let mut set = chunks.clone();
            set.sort_unstable();
            set.dedup();
            assert_eq!(set.len(), chunks.len(), "{layout}: a chunk consumed twice");
            consumed.push(set);
        }
        // Both read the same chunks, many more than the buffer holds.
        assert_eq!(consumed[0], consumed[1], "{layout}");
        assert!(consumed[0].len() > 2 * FRAMES as usize, "{layout}");
    }
}
