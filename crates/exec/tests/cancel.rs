//! Dropping a query's stream mid-scan cancels its CScan: the feeder thread stops, the
//! scan leaves the ABM, the runtime stays consistent, and the queries running beside it
//! still get exactly the in-memory answer.

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use coopscan_exec::{CoopTable, Query};
use coopscan_runtime::{PolicyKind, Runtime, RuntimeConfig};
use coopscan_storage::Layout;
use datafusion::physical_plan::execute_stream;
use datafusion::prelude::SessionContext;
use futures::StreamExt;

use common::*;

const FRAMES: u32 = 4;
const BATCHES_BEFORE_DROP: usize = 2;
const UNREGISTER_TIMEOUT: Duration = Duration::from_secs(30);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropped_stream_unregisters_and_others_are_unaffected() {
    let table = table(Layout::Pax);
    let slow = Query::Slow { extra: 2 }.sql("lineitem", None);
    let fast = Query::Fast.sql("lineitem", Some(1_000..50_000));
    let want_slow = run(&reference_context(), &slow).await;
    let want_fast = run(&reference_context(), &fast).await;
    for policy in PolicyKind::ALL {
        let runtime = Arc::new(
            Runtime::new(table.clone(), device(), RuntimeConfig::new(FRAMES, policy))
                .expect("runtime"),
        );
        let provider = Arc::new(CoopTable::cooperative(Arc::clone(&runtime)));
        let ctx = SessionContext::new();
        ctx.register_table("lineitem", provider.clone())
            .expect("register");

        // The victim: a full scan whose consumer walks away after two batches.
        let mut victim = ctx
            .sql("SELECT l_orderkey, l_quantity FROM lineitem")
            .await
            .expect("plan")
            .execute_stream()
            .await
            .expect("execute");
        let others = {
            let ctx = ctx.clone();
            let (slow, fast) = (slow.clone(), fast.clone());
            tokio::spawn(async move { (run(&ctx, &slow).await, run(&ctx, &fast).await) })
        };
        for _ in 0..BATCHES_BEFORE_DROP {
            victim.next().await.expect("a batch").expect("no error");
        }
        drop(victim);

        let (got_slow, got_fast) = others.await.expect("other queries");
        assert_eq!(
            got_slow, want_slow,
            "{policy}: slow beside a cancelled scan"
        );
        assert_eq!(
            got_fast, want_fast,
            "{policy}: fast beside a cancelled scan"
        );

        let started = Instant::now();
        while provider.counters().running > 0 {
            assert!(
                started.elapsed() < UNREGISTER_TIMEOUT,
                "{policy}: scan never stopped"
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        runtime.check_invariants().expect("invariants after cancel");
        // The ABM is free again: a new query is admitted and answers correctly.
        assert_eq!(run(&ctx, &fast).await, want_fast, "{policy}: after cancel");
        runtime.check_invariants().expect("invariants at the end");
    }
}

/// Regression (issue "Reliability", item 1): a self-join runs two CScans of one table in
/// one query; the hash join reads its build side to the end before it reads the probe
/// side. The probe side's feeder used to hold its chunk's pin while blocked handing the
/// chunk over, and under elevator (whose window cannot move past a pinned chunk) the
/// build side then waited forever for a load. The feeder now releases the chunk before
/// it waits. Every policy must finish, with the in-memory answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_self_join_finishes_under_every_policy() {
    const SELF_JOIN_FRAMES: u32 = 4;
    const DEADLINE: Duration = Duration::from_secs(120);
    let table = table(Layout::Pax);
    assert!(table.chunk_count() > 2 * SELF_JOIN_FRAMES as usize);
    let sql = "select count(*) from lineitem a join lineitem b \
               on a.l_orderkey = b.l_orderkey and a.l_linenumber = b.l_linenumber";
    let want = run(&reference_context(), sql).await;
    for policy in PolicyKind::ALL {
        let config = RuntimeConfig::new(SELF_JOIN_FRAMES, policy);
        let runtime = Arc::new(Runtime::new(table.clone(), device(), config).expect("runtime"));
        let ctx = SessionContext::new();
        ctx.register_table("lineitem", Arc::new(CoopTable::cooperative(runtime)))
            .expect("register");
        let got = tokio::time::timeout(DEADLINE, run(&ctx, sql))
            .await
            .unwrap_or_else(|_| panic!("{policy}: self-join hung"));
        assert_eq!(got, want, "{policy}");
    }
}

/// Regression (issue "Reliability", item 1, on buffers that admit one scan at a time):
/// DataFusion executes a plan tree eagerly — a `RepartitionExec` executes its input at
/// once, and a plan's partitions race to do it — so a join's probe-side CScan is often
/// executed before its build side, but read only after the build side is finished.
/// `execute` used to register the CScan at once: the probe side took the only
/// admission slot and the build side, another scan of the same table, waited for it
/// forever (`coopscan sql --frames 2 --policy relevance` hung on a three-way self-join
/// about one run in three). A CScan now registers when its stream is first polled.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scan_executed_first_but_read_last_does_not_block_the_other() {
    const ONE_SCAN_FRAMES: u32 = 2;
    const DEADLINE: Duration = Duration::from_secs(60);
    let table = table(Layout::Pax);
    let rows = table.rows() as usize;
    let sql = "select l_orderkey from lineitem";
    for policy in PolicyKind::ALL {
        let config = RuntimeConfig::new(ONE_SCAN_FRAMES, policy);
        let runtime = Arc::new(Runtime::new(table.clone(), device(), config).expect("runtime"));
        let ctx = SessionContext::new();
        ctx.register_table("lineitem", Arc::new(CoopTable::cooperative(runtime)))
            .expect("register");
        let plan = || async {
            ctx.sql(sql)
                .await
                .expect("plan")
                .create_physical_plan()
                .await
                .expect("physical plan")
        };
        let (probe_plan, build_plan) = (plan().await, plan().await);
        // Executed in the order DataFusion may execute them, read in the join's order.
        let probe = execute_stream(probe_plan, ctx.task_ctx()).expect("execute probe");
        let build = execute_stream(build_plan, ctx.task_ctx()).expect("execute build");
        let build_rows = tokio::time::timeout(DEADLINE, count_rows(build))
            .await
            .unwrap_or_else(|_| panic!("{policy}: the scan read first waited for the other"));
        let probe_rows = tokio::time::timeout(DEADLINE, count_rows(probe))
            .await
            .unwrap_or_else(|_| panic!("{policy}: the scan read last hung"));
        assert_eq!((build_rows, probe_rows), (rows, rows), "{policy}");
    }
}

async fn count_rows(mut stream: datafusion::execution::SendableRecordBatchStream) -> usize {
    let mut rows = 0;
    while let Some(batch) = stream.next().await {
        rows += batch.expect("no error").num_rows();
    }
    rows
}
