//! FAST (Q6) and SLOW (Q1 + extra arithmetic) over tuple ranges give exactly the
//! in-memory DataFusion answer, through Scan and through CScan under every policy with
//! concurrent queries sharing one Runtime, on NSM, PAX and DSM.

mod common;

use std::sync::Arc;

use coopscan_exec::{CoopTable, Query, ScanMode};
use coopscan_runtime::{PolicyKind, Runtime, RuntimeConfig};
use datafusion::prelude::SessionContext;
use futures::future::join_all;

use common::*;

const SEED: u64 = 0x5eed_c00b;
/// Few frames relative to the table's chunks, so policies must evict and share.
const FRAMES: u32 = 6;
const SLOW: Query = Query::Slow { extra: 3 };

fn queries(rows: u64) -> Vec<String> {
    test_ranges(rows, SEED)
        .into_iter()
        .flat_map(|r| {
            [
                Query::Fast.sql("lineitem", r.clone()),
                SLOW.sql("lineitem", r),
            ]
        })
        .collect()
}

async fn expected(sqls: &[String]) -> Vec<Vec<Vec<String>>> {
    let reference = reference_context();
    let mut out = Vec::new();
    for sql in sqls {
        out.push(run(&reference, sql).await);
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scan_matches_in_memory() {
    for layout in LAYOUTS {
        let table = table(layout);
        let sqls = queries(table.rows());
        let want = expected(&sqls).await;
        let provider = CoopTable::new(table, device(), ScanMode::Scan).expect("provider");
        let ctx = SessionContext::new();
        ctx.register_table("lineitem", Arc::new(provider))
            .expect("register");
        for (sql, want) in sqls.iter().zip(&want) {
            assert!(!want.is_empty());
            assert_eq!(&run(&ctx, sql).await, want, "{layout}: {sql}");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_cscans_match_in_memory_under_every_policy() {
    for layout in LAYOUTS {
        let table = table(layout);
        assert!(
            table.chunk_count() > 2 * FRAMES as usize,
            "{layout}: too few chunks"
        );
        let sqls = queries(table.rows());
        let want = expected(&sqls).await;
        for policy in PolicyKind::ALL {
            let runtime = Arc::new(
                Runtime::new(table.clone(), device(), RuntimeConfig::new(FRAMES, policy))
                    .expect("runtime"),
            );
            let ctx = SessionContext::new();
            let provider = CoopTable::cooperative(Arc::clone(&runtime));
            ctx.register_table("lineitem", Arc::new(provider))
                .expect("register");
            // All six queries at once, sharing the one ABM.
            let got = join_all(sqls.iter().map(|sql| run(&ctx, sql))).await;
            for ((sql, got), want) in sqls.iter().zip(&got).zip(&want) {
                assert_eq!(got, want, "{layout} {policy}: {sql}");
            }
            runtime.check_invariants().expect("invariants");
        }
    }
}
