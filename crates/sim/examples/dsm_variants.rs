//! Prints `table4` (normal and relevance, the paper's choices) and the DSM variant
//! comparison of docs/simulation.md ("DSM choices"):
//!
//! ```text
//! cargo run --release -p coopscan-sim --example dsm_variants [-- SEED]
//! ```

use coopscan_buffer::PolicyKind;
use coopscan_sim::{table4, table4_text, table4_variants, variants_text};

fn main() -> Result<(), coopscan_sim::SimError> {
    let seed = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(42);
    let paper = table4(&[PolicyKind::Normal, PolicyKind::Relevance], seed)?;
    println!("{}", table4_text(&paper));
    let reports = table4_variants(seed)?;
    print!("{}", variants_text(&reports));
    Ok(())
}
