//! The DSM variants under pressure (docs/simulation.md, "DSM choices"): the `table4`
//! workload under relevance with columns of unequal widths (0.25-2 MB per piece, the
//! pattern 1, 2, 4, 8, 1, 2, 4, 8, 1, 2 × 250 kB) and buffers of 4, 6 and 8 "chunks"
//! instead of 12, summed over the five families:
//!
//! ```text
//! cargo run --release -p coopscan-sim --example dsm_variants_tight [-- SEED]
//! ```

use coopscan_buffer::PolicyKind;
use coopscan_sim::{table4_config, table4_on, SimConfig, SimError, VARIANTS};

const WIDTHS: [u64; 10] = [1, 2, 4, 8, 1, 2, 4, 8, 1, 2];
const WIDTH_UNIT: u64 = 250_000;
const FRAMES: [u32; 3] = [4, 6, 8];

fn main() -> Result<(), SimError> {
    let seed = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(42);
    println!("frames eviction  column order      MB read  stream (s)  norm lat  needed evicted");
    for frames in FRAMES {
        for (eviction, column_order) in VARIANTS {
            let cfg = SimConfig {
                frames,
                column_bytes: WIDTHS.iter().map(|w| w * WIDTH_UNIT).collect(),
                eviction,
                column_order,
                ..table4_config()
            };
            let report = table4_on(&cfg, &[PolicyKind::Relevance], seed)?;
            let rows = &report.rows;
            let families = rows.len().max(1) as f64;
            // Table4Row::pieces counts 1 MB units: here, megabytes read.
            let mb: u64 = rows.iter().map(|r| r.pieces).sum();
            let stream = rows.iter().map(|r| r.avg_stream_time_s).sum::<f64>() / families;
            let norm = rows.iter().map(|r| r.avg_normalized_latency).sum::<f64>() / families;
            let needed: u64 = rows.iter().map(|r| r.evictions - r.spare_evictions).sum();
            println!(
                "{frames:>6} {eviction:<9} {column_order:<16} {mb:>8} {stream:>11.3} {norm:>9.3} {needed:>15}"
            );
        }
    }
    Ok(())
}
