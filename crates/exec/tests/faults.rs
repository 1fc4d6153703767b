//! SQL under injected device faults (issue "Reliability": fault injection and stress):
//! a self-join, a union of two scans of one table and Q6 run together on a small buffer,
//! under every policy, on a device that injects read errors, short reads, flipped bytes
//! and delays from a seed. Each query returns the in-memory reference's answer or an
//! error naming the damaged read; nothing hangs (watchdog); afterwards no scan is
//! registered and no chunk pinned.
//!
//! `COOPSCAN_FAULT_SEED=N` runs another seed.

mod common;

use std::sync::Arc;
use std::time::Duration;

use coopscan_exec::Query;
use coopscan_runtime::PolicyKind;
use coopscan_storage::device::{FaultRates, SeededFaults};
use coopscan_storage::Layout;
use datafusion::prelude::SessionContext;

use common::*;

/// The self-join needs both sides admitted at once: 2 chunks each (docs/reliability.md).
const FRAMES: u32 = 4;
const DEADLINE: Duration = Duration::from_secs(240);

fn rates() -> FaultRates {
    FaultRates {
        error: 0.003,
        short: 0.003,
        corrupt: 0.006,
        delay: 0.03,
        max_delay: Duration::from_millis(3),
    }
}

fn queries() -> Vec<String> {
    vec![
        "select count(*), sum(a.l_quantity) from lineitem a join lineitem b \
         on a.l_orderkey = b.l_orderkey and a.l_linenumber = b.l_linenumber"
            .into(),
        "select count(*), sum(l_extendedprice) from (\
         select l_extendedprice from lineitem where _rowid < 40000 \
         union all select l_extendedprice from lineitem where _rowid >= 20000)"
            .into(),
        Query::Fast.sql("lineitem", None),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn queries_under_injected_faults_are_right_or_fail_clearly() {
    let table = table(Layout::Pax);
    let file = first_data_file(&table);
    let queries = queries();
    let reference = reference_context();
    let mut want = Vec::new();
    for sql in &queries {
        want.push(run(&reference, sql).await);
    }
    let base = std::env::var("COOPSCAN_FAULT_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0xFA17u64);
    let (mut right, mut failed, mut damaging) = (0, 0, 0);
    for (p, policy) in PolicyKind::ALL.into_iter().enumerate() {
        let seed = base ^ p as u64;
        let faults = Arc::new(SeededFaults::new(seed, rates()));
        let (runtime, provider) = faulty_runtime(&table, faults.clone(), FRAMES, policy);
        let ctx = SessionContext::new();
        ctx.register_table("lineitem", provider.clone())
            .expect("register");
        let tasks: Vec<_> = queries
            .iter()
            .map(|sql| {
                let (ctx, sql) = (ctx.clone(), sql.clone());
                tokio::spawn(async move { try_run(&ctx, &sql).await })
            })
            .collect();
        let what = format!("{policy}, seed {seed}");
        for ((task, sql), want) in tasks.into_iter().zip(&queries).zip(&want) {
            let what = format!("{what}: {sql}");
            if await_right_or_clear_failure(task, want, &file, DEADLINE, &what).await {
                right += 1;
            } else {
                failed += 1;
            }
        }
        assert_all_released(&provider, &runtime, DEADLINE, &what).await;
        damaging += faults.counts().damaging();
    }
    eprintln!("{right} queries right, {failed} failed clearly, {damaging} damaging faults");
    // Which query a fault hits depends on timing; over the run both must happen.
    assert!(
        right > 0 && damaging > 0,
        "{right} right, {damaging} faults: tune the rates"
    );
}
