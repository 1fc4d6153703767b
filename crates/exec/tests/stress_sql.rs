//! SQL stress (issue "Reliability", Done means): at least 200 scans at once through
//! DataFusion — self-joins, unions and Q6s over small random ranges, some queries
//! cancelled midway, half the sessions one core per query — on a 4-frame buffer,
//! under every policy, on a device that injects faults. Every query returns the
//! in-memory reference's answer or an error naming the damaged read; a watchdog fails
//! the test on a stall; afterwards no scan is registered and nothing is pinned.
//!
//! `COOPSCAN_SQL_STRESS_GROUPS=N` runs N groups of 5 scans per policy (default 40, so
//! 200 scans); `COOPSCAN_FAULT_SEED=N` another seed.

mod common;

use std::sync::Arc;
use std::time::Duration;

use coopscan_exec::{query_session_config, CoopTable, Query};
use coopscan_runtime::PolicyKind;
use coopscan_storage::device::{FaultRates, SeededFaults};
use coopscan_storage::Layout;
use datafusion::prelude::{SessionConfig, SessionContext};
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

use common::*;

const FRAMES: u32 = 4;
const DEFAULT_GROUPS: usize = 40;
/// Scans per group: a self-join (2), a union of two ranges (2) and a Q6 (1).
const SCANS_PER_GROUP: usize = 5;
/// Rows one query's range covers: a chunk or two, so 200 scans finish in seconds.
const RANGE_ROWS: u64 = 3_000;
const DEADLINE: Duration = Duration::from_secs(300);
/// A cancelled query is dropped this long after it started.
const CANCEL_AFTER: Duration = Duration::from_millis(2);

fn rates() -> FaultRates {
    FaultRates {
        error: 0.002,
        short: 0.002,
        corrupt: 0.004,
        delay: 0.02,
        max_delay: Duration::from_millis(2),
    }
}

fn env_or(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

/// One group's three queries over random small ranges.
fn group(rng: &mut ChaCha8Rng, rows: u64) -> [String; 3] {
    let mut start = || rng.random_range(0..rows.saturating_sub(RANGE_ROWS).max(1));
    let (a, b, c, d) = (start(), start(), start(), start());
    let r = RANGE_ROWS;
    [
        format!(
            "select count(*), sum(x.l_quantity) from lineitem x join lineitem y \
             on x.l_orderkey = y.l_orderkey and x.l_linenumber = y.l_linenumber \
             where x._rowid >= {a} and x._rowid < {a} + {r} \
             and y._rowid >= {b} and y._rowid < {b} + {r}"
        ),
        format!(
            "select count(*), sum(l_extendedprice) from (\
             select l_extendedprice from lineitem where _rowid >= {c} and _rowid < {c} + {r} \
             union all \
             select l_extendedprice from lineitem where _rowid >= {d} and _rowid < {d} + {r})"
        ),
        Query::Fast.sql("lineitem", Some(c..c + r)),
    ]
}

/// A session over `provider`: even-numbered ones one core per query.
fn session(provider: &Arc<CoopTable>, i: usize) -> SessionContext {
    let config = if i.is_multiple_of(2) {
        query_session_config(1)
    } else {
        SessionConfig::new()
    };
    let ctx = SessionContext::new_with_config(config);
    ctx.register_table("lineitem", provider.clone())
        .expect("register");
    ctx
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_hundred_sql_scans_under_faults_are_right_or_fail_clearly() {
    let table = table(Layout::Pax);
    let file = first_data_file(&table);
    let groups = env_or("COOPSCAN_SQL_STRESS_GROUPS", DEFAULT_GROUPS as u64) as usize;
    let base = env_or("COOPSCAN_FAULT_SEED", 0x57e5);
    let mut rng = ChaCha8Rng::seed_from_u64(base);
    let queries: Vec<String> = (0..groups)
        .flat_map(|_| group(&mut rng, table.rows()))
        .collect();
    assert!(groups * SCANS_PER_GROUP >= 200 || groups < DEFAULT_GROUPS);
    let reference = reference_context();
    let mut want = Vec::with_capacity(queries.len());
    for sql in &queries {
        want.push(run(&reference, sql).await);
    }
    let (mut right, mut failed, mut cancelled) = (0, 0, 0);
    for (p, policy) in PolicyKind::ALL.into_iter().enumerate() {
        let seed = base ^ p as u64;
        let faults = Arc::new(SeededFaults::new(seed, rates()));
        let (runtime, provider) = faulty_runtime(&table, faults, FRAMES, policy);
        // Every query at once; every seventh is cancelled shortly after it starts.
        let tasks: Vec<_> = queries
            .iter()
            .enumerate()
            .map(|(i, sql)| {
                let (ctx, sql) = (session(&provider, i), sql.clone());
                let task = tokio::spawn(async move { try_run(&ctx, &sql).await });
                (i % 7 == 3, task)
            })
            .collect();
        let what = format!("{policy}, seed {seed}");
        for (((cancel, task), sql), want) in tasks.into_iter().zip(&queries).zip(&want) {
            if cancel {
                tokio::time::sleep(CANCEL_AFTER).await;
                task.abort();
                cancelled += 1;
                continue;
            }
            let what = format!("{what}: {sql}");
            if await_right_or_clear_failure(task, want, &file, DEADLINE, &what).await {
                right += 1;
            } else {
                failed += 1;
            }
        }
        assert_all_released(&provider, &runtime, DEADLINE, &what).await;
    }
    eprintln!("{right} right, {failed} failed clearly, {cancelled} cancelled");
    assert!(right > 0, "no query succeeded: tune the fault rates");
}
