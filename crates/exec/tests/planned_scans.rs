//! The scans read off a plan before it runs (`planned_scans`, what a simulation of a
//! SQL workload replays) are the scans the runtime then serves: checked against the
//! runtime's own trace of the run — per table, the chunks and columns consumed.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use coopscan_buffer::{ColumnMask, TableId};
use coopscan_exec::{planned_scans, query_session, query_session_config, CoopTable};
use coopscan_runtime::{PolicyKind, Runtime, RuntimeConfig};
use coopscan_storage::Layout;
use datafusion::physical_plan::collect;

use common::*;

const FRAMES: u32 = 8;

/// Per table: the chunks and the columns its scans consumed.
type Consumed = BTreeMap<u32, (BTreeSet<u32>, ColumnMask)>;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plans_scans_are_the_scans_the_runtime_serves() {
    // The same lineitem twice, as two tables of one buffer.
    let tables = vec![table(Layout::Dsm), table(Layout::Dsm)];
    let config = RuntimeConfig::new(FRAMES, PolicyKind::Relevance);
    let runtime = Arc::new(Runtime::with_tables(tables, device(), config).expect("runtime"));
    let ctx = query_session(query_session_config(2));
    for (i, name) in ["a", "b"].into_iter().enumerate() {
        let provider = CoopTable::cooperative_of(Arc::clone(&runtime), TableId(i as u32));
        ctx.register_table(name, Arc::new(provider.expect("provider")))
            .expect("register");
    }
    let rows = runtime.table().rows();
    let sql = format!(
        "SELECT sum(l_quantity) AS x FROM a WHERE _rowid >= {} AND _rowid < {} \
         UNION ALL SELECT sum(l_extendedprice + l_discount) FROM b WHERE _rowid < {}",
        rows / 4,
        rows / 2,
        rows / 3
    );
    let plan = ctx.sql(&sql).await.expect("sql");
    let plan = plan.create_physical_plan().await.expect("plan");
    let planned = planned_scans(&plan);
    assert_eq!(planned.len(), 2, "{planned:?}");
    assert_eq!(
        (planned[0].table, planned[1].table),
        (TableId(0), TableId(1))
    );
    assert!(planned.iter().all(|s| !s.in_order && s.workers >= 1));
    let mut expected = Consumed::new();
    for scan in &planned {
        let geometry = runtime.geometry(scan.table).expect("geometry");
        let chunks = geometry.chunk_ranges(&scan.ranges).expect("chunks");
        let chunks: BTreeSet<u32> = chunks.iter().map(|c| c.0).collect();
        expected.insert(scan.table.0, (chunks, ColumnMask::of(&scan.columns)));
    }
    runtime.record_trace();
    collect(plan, ctx.task_ctx()).await.expect("run");
    let mut consumed = Consumed::new();
    for r in runtime.take_trace() {
        let table = r.piece.table.0;
        let entry = consumed
            .entry(table)
            .or_insert((BTreeSet::new(), ColumnMask(0)));
        entry.0.insert(r.piece.chunk.0);
        entry.1 = ColumnMask(entry.1 .0 | r.piece.columns.0);
    }
    assert_eq!(consumed, expected);
    // The first scan loads one column, the second two.
    assert_eq!(expected[&0].1 .0.count_ones(), 1);
    assert_eq!(expected[&1].1 .0.count_ones(), 2);
}
