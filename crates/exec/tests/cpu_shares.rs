//! How a CScan's feeder shares the cores (`CpuShares`, a session extension), read back
//! from the kernel (/proc) while the scan runs: a test binary of its own, so no other
//! test's feeders are alive meanwhile.
#![cfg(target_os = "linux")]

mod common;

use std::sync::Arc;

use coopscan_buffer::CpuShares;
use coopscan_exec::{query_session_config, CoopTable};
use coopscan_runtime::{PolicyKind, Runtime, RuntimeConfig};
use coopscan_storage::device::FEEDER_NICER_BY;
use coopscan_storage::Layout;
use datafusion::prelude::SessionContext;
use futures::StreamExt;

use common::*;

/// The thread name `CScanExec`'s feeders run under.
const FEEDER: &str = "coopscan-cscan";

/// The nice value in a /proc `stat` line: the 19th field, the 17th after the command
/// name's closing parenthesis (a name may hold spaces).
fn nice_of(stat: &str) -> i32 {
    let after = &stat[stat.rfind(')').expect("stat has a name") + 1..];
    after
        .split_whitespace()
        .nth(16)
        .expect("nice field")
        .parse()
        .expect("a number")
}

/// The nice values of this process's feeder threads.
fn feeder_nices() -> Vec<i32> {
    let tasks = std::fs::read_dir("/proc/self/task").expect("tasks");
    tasks
        .filter_map(|t| {
            let dir = t.ok()?.path();
            let name = std::fs::read_to_string(dir.join("comm")).ok()?;
            let stat = std::fs::read_to_string(dir.join("stat")).ok()?;
            (name.trim() == FEEDER).then(|| nice_of(&stat))
        })
        .collect()
}

/// Starts a full scan under `shares`, takes its first batch (the feeder has registered
/// and is now waiting on its consumer), and reads the feeder's nice value.
async fn nice_of_a_full_scan(shares: CpuShares) -> (Vec<i32>, u32) {
    let table = table(Layout::Pax);
    let chunks = table.chunk_count();
    let runtime = Runtime::new(
        table,
        device(),
        RuntimeConfig::new(64, PolicyKind::Relevance),
    )
    .expect("runtime");
    let config = query_session_config(1).with_extension(Arc::new(shares));
    let ctx = SessionContext::new_with_config(config);
    let provider = CoopTable::cooperative(Arc::new(runtime));
    ctx.register_table("lineitem", Arc::new(provider))
        .expect("register");
    let frame = ctx
        .sql("SELECT l_orderkey FROM lineitem")
        .await
        .expect("sql");
    let mut stream = frame.execute_stream().await.expect("execute");
    let first = stream.next().await.expect("a batch").expect("no error");
    assert!(first.num_rows() > 0);
    let nices = feeder_nices();
    while let Some(batch) = stream.next().await {
        batch.expect("no error");
    }
    (nices, u32::try_from(chunks).expect("few chunks"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_feeder_gives_way_by_the_chunks_its_scan_reads() {
    let base = nice_of(&std::fs::read_to_string("/proc/thread-self/stat").expect("stat"));
    let (equal, _) = nice_of_a_full_scan(CpuShares::Equal).await;
    assert_eq!(equal, vec![(base + FEEDER_NICER_BY).min(19)]);
    let (short_first, chunks) = nice_of_a_full_scan(CpuShares::ShortFirst).await;
    assert!(chunks >= 2, "a table of {chunks} chunks shows nothing");
    // One level per doubling of the chunks: ⌊log2⌋ by counting halvings.
    let mut levels = 0;
    while chunks >> (levels + 1) > 0 {
        levels += 1;
    }
    assert_eq!(
        short_first,
        vec![(base + FEEDER_NICER_BY + levels).min(19)],
        "{chunks} chunks"
    );
}
