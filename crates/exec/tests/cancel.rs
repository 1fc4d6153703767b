//! Dropping a query's stream mid-scan cancels its CScan: the feeder thread stops, the
//! scan leaves the ABM, the runtime stays consistent, and the queries running beside it
//! still get exactly the in-memory answer.

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use coopscan_exec::{CoopTable, Query};
use coopscan_runtime::{PolicyKind, Runtime, RuntimeConfig};
use coopscan_storage::Layout;
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
