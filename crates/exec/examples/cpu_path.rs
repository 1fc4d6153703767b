//! Where a resident query's CPU goes: the same FAST (Q6) and SLOW statements run
//! (1) through coopscan's CScan with the whole table resident in the buffer, in a
//! coopscan session (`query_session`: DataFusion plus our decimal rule), and over the
//! same rows already decoded into Arrow arrays in memory (a `MemTable`) by
//! (2) plain DataFusion and (3) the coopscan session. All run on one core (one
//! partition, the benchmark's setting). (1) ÷ (3) is what coopscan's scan adds per
//! query (decoding pages into Arrow, the operator and its hand-over); (2) ÷ (3) is
//! what the decimal rule saves DataFusion's own operators.
//!
//! ```sh
//! cargo run --release -p coopscan-exec --example cpu_path -- TABLE_DIR [REPS]
//! ```
//!
//! Prints each statement's median wall time over REPS runs (default 7) per path.
//! The three paths' results are compared and must be equal.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use coopscan_exec::datafusion::arrow::array::RecordBatch;
use coopscan_exec::datafusion::arrow::util::pretty::pretty_format_batches;
use coopscan_exec::datafusion::datasource::MemTable;
use coopscan_exec::datafusion::prelude::SessionContext;
use coopscan_exec::{
    query_session, query_session_config, run_sql, CoopTable, Query, SLOW_EXTRA_DEFAULT,
};
use coopscan_runtime::{PolicyKind, Runtime, RuntimeConfig};
use coopscan_storage::device::{Bandwidth, Device, DeviceConfig, DirectMode};
use coopscan_storage::Table;

/// Repetitions per statement and path when not given.
const DEFAULT_REPS: usize = 7;
/// Buffer frames: more than any of our SF1 tables has chunks, so it stays resident.
const RESIDENT_FRAMES: u32 = 4096;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let dir = PathBuf::from(args.next().ok_or("usage: cpu_path TABLE_DIR [REPS]")?);
    let reps: usize = match args.next() {
        Some(r) => r.parse()?,
        None => DEFAULT_REPS,
    };
    let tokio = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    tokio.block_on(compare(dir, reps.max(1)))
}

async fn compare(dir: PathBuf, reps: usize) -> Result<(), Box<dyn std::error::Error>> {
    let table = Table::open(&dir)?;
    let device = Arc::new(Device::new(DeviceConfig {
        direct: DirectMode::Off,
        bandwidth: Some(Bandwidth::mb_per_s(100_000.0)?),
        ..DeviceConfig::default()
    }));
    let runtime = Runtime::new(
        table,
        device,
        RuntimeConfig::new(RESIDENT_FRAMES, PolicyKind::Normal),
    )?;
    let coop = query_session(query_session_config(1));
    coop.register_table(
        "lineitem",
        Arc::new(CoopTable::cooperative(Arc::new(runtime))),
    )?;

    let columns = "SELECT l_quantity, l_extendedprice, l_discount, l_tax, l_returnflag, \
                   l_linestatus, l_shipdate, _rowid FROM lineitem";
    let batches = run_sql(&coop, columns).await?;
    let schema = batches.first().ok_or("empty table")?.schema();
    let memory = Arc::new(MemTable::try_new(schema, vec![batches])?);
    let plain = SessionContext::new_with_config(query_session_config(1));
    plain.register_table("lineitem", Arc::clone(&memory) as _)?;
    let ours_in_memory = query_session(query_session_config(1));
    ours_in_memory.register_table("lineitem", memory)?;

    println!(
        "median of {reps}   (1) coopscan resident   (2) DataFusion in memory   \
         (3) coopscan session in memory"
    );
    let queries = [
        ("FAST", Query::Fast),
        (
            "SLOW",
            Query::Slow {
                extra: SLOW_EXTRA_DEFAULT,
            },
        ),
    ];
    for (name, query) in queries {
        let sql = query.sql("lineitem", None);
        let mut times = Vec::new();
        let mut results = Vec::new();
        for ctx in [&coop, &plain, &ours_in_memory] {
            let (time, out) = median_time(ctx, &sql, reps).await?;
            times.push(time.as_secs_f64());
            results.push(pretty_format_batches(&out)?.to_string());
        }
        if results.iter().any(|r| *r != results[0]) {
            return Err(format!("{name}: the paths' results differ").into());
        }
        println!(
            "{name:<12}  {:>18.3} s   {:>22.3} s   {:>26.3} s",
            times[0], times[1], times[2]
        );
    }
    Ok(())
}

/// Runs `sql` once to warm up, then `reps` times; the median wall time and a result.
async fn median_time(
    ctx: &SessionContext,
    sql: &str,
    reps: usize,
) -> Result<(Duration, Vec<RecordBatch>), Box<dyn std::error::Error>> {
    let result = run_sql(ctx, sql).await?;
    let mut times = Vec::with_capacity(reps);
    for _ in 0..reps {
        let start = Instant::now();
        run_sql(ctx, sql).await?;
        times.push(start.elapsed());
    }
    times.sort();
    Ok((times[times.len() / 2], result))
}
