//! `coopscan opt`: replay a piece-reference trace under Belady's OPT, LRU and PBM's
//! eviction rule at several buffer sizes (the 2012 paper's way of placing OPT beside
//! PBM). The PBM replay knows only what the online policy knows at each reference
//! (each scan's remaining pieces, its observed pace; `coopscan_buffer::trace::pbm_replay`), so
//! PBM − OPT on the same trace is the rule's prediction error, and a PBM run's own
//! loads − the PBM replay of its trace is what read-ahead and timing add.
//!
//! ```text
//! coopscan sim --preset table2 --policies pbm --trace traces/     (simulated run)
//! coopscan bench --policies pbm --trace traces/                    (real run)
//! coopscan opt traces/table2-pbm.trace --buffer-pct 10,25,50,100
//! ```
//!
//! One line per size: loads and bytes loaded under each replay; then the share of the
//! consumed bytes another scan consumed shortly before (`trace::reuse`: what sharing
//! decoded pieces between scans could save at most).

use anyhow::Context;
use coopscan_buffer::trace::opt::{distinct_bytes, replay_lru, replay_opt, Replay};
use coopscan_buffer::trace::pbm_replay::replay_pbm;
use coopscan_buffer::trace::reuse::reuse_within;
use coopscan_buffer::Nanos;
use std::path::PathBuf;

#[derive(Debug, Clone, clap::Args)]
pub struct OptArgs {
    /// A trace file (`coopscan sim --trace DIR` and `coopscan bench --trace DIR` write
    /// them; format in crates/buffer/src/trace/mod.rs).
    pub trace: PathBuf,
    /// Buffer sizes as % of the distinct bytes the trace references, comma separated.
    #[arg(long, value_delimiter = ',', default_value = "10,20,40,60,80,100")]
    pub buffer_pct: Vec<u32>,
}

pub fn run(args: &OptArgs) -> anyhow::Result<()> {
    if let Some(bad) = args.buffer_pct.iter().find(|&&p| p == 0 || p > 100) {
        anyhow::bail!("--buffer-pct {bad}: each size must be in 1..=100");
    }
    let file = std::fs::File::open(&args.trace)
        .with_context(|| format!("opening {}", args.trace.display()))?;
    let trace = coopscan_buffer::read_trace(std::io::BufReader::new(file))
        .with_context(|| format!("reading {}", args.trace.display()))?;
    let distinct = distinct_bytes(&trace);
    println!(
        "{}: {} references, {} distinct bytes",
        args.trace.display(),
        trace.len(),
        distinct
    );
    println!(
        "{:>7} {:>14} {:>9} {:>14} {:>9} {:>14} {:>9} {:>14}",
        "buffer",
        "bytes",
        "OPT loads",
        "OPT bytes",
        "LRU loads",
        "LRU bytes",
        "PBM loads",
        "PBM bytes"
    );
    for &pct in &args.buffer_pct {
        let capacity = (u128::from(distinct) * u128::from(pct) / 100) as u64;
        let replays = [replay_opt, replay_lru, replay_pbm].map(|replay| replay(&trace, capacity));
        println!("{:>6}% {:>14}{}", pct, capacity, columns(&replays));
    }
    println!("{}", reuse_line(&trace));
    Ok(())
}

/// Windows in which a piece another scan consumed counts as shareable once decoded.
const REUSE_WINDOWS_MS: [u64; 4] = [10, 100, 1_000, 10_000];

/// Of the bytes consumed, the share another scan consumed within each window before:
/// what decoding a resident piece once for several scans could save at most.
fn reuse_line(trace: &[coopscan_buffer::Reference]) -> String {
    let shares: Vec<String> = REUSE_WINDOWS_MS
        .iter()
        .map(|&ms| {
            let reuse = reuse_within(trace, Nanos(ms.saturating_mul(1_000_000)));
            format!("{:.1} % within {ms} ms", reuse.fraction() * 100.0)
        })
        .collect();
    format!(
        "consumed bytes another scan consumed just before: {}",
        shares.join(", ")
    )
}

/// Loads and bytes loaded of each replay, as the table's columns.
fn columns(replays: &[Replay]) -> String {
    replays
        .iter()
        .map(|r| format!(" {:>9} {:>14}", r.loads, r.bytes_loaded))
        .collect()
}
