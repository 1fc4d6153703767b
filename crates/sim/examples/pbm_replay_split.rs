//! Where PBM's extra I/O over OPT comes from, on the `pbm-buffer` workload (docs/
//! simulation.md, section pbm-buffer): per buffer size, the PBM run's loads, PBM's rule
//! replayed on the run's trace with online knowledge (observed paces) and with exact
//! times for the scans already started, and OPT on the same trace. The differences:
//! run − rule is read-ahead and timing, rule − exact is wrong paces, exact − OPT is
//! the queries not yet started (which OPT sees and PBM cannot).
//!
//! ```text
//! cargo run -p coopscan-sim --release --example pbm_replay_split [-- SEED]
//! ```

use coopscan_buffer::trace::opt::replay_opt;
use coopscan_buffer::trace::pbm_replay::{replay_pbm_observed, Foresight};
use coopscan_buffer::{PolicyKind, ADMISSION_CHUNKS_PER_SCAN};
use coopscan_sim::experiments::table2_config;
use coopscan_sim::experiments::{buffer_points, defs};
use coopscan_sim::{pbm_buffer, pbm_buffer_workload, simulate, SimConfig};
use std::process::ExitCode;

fn main() -> ExitCode {
    let seed = match std::env::args().nth(1).map(|s| s.parse::<u64>()) {
        None => 42,
        Some(Ok(seed)) => seed,
        Some(Err(e)) => {
            eprintln!("pbm_replay_split: SEED: {e}");
            return ExitCode::FAILURE;
        }
    };
    match run(seed) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("pbm_replay_split: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run(seed: u64) -> Result<(), coopscan_sim::SimError> {
    // The preset's own buffer sizes in frames, so the runs are the preset's.
    let report = pbm_buffer(&[PolicyKind::Pbm], seed, &buffer_points(&defs::PBM_BUFFER)?)?;
    let base = SimConfig {
        record_timeline: false,
        record_trace: true,
        ..table2_config()
    };
    let workload = pbm_buffer_workload(&base, seed)?;
    println!(
        "{:>7} {:>7} {:>9} {:>10} {:>10} {:>9} {:>11} {:>11}",
        "buffer", "run", "PBM rule", "PBM exact", "OPT", "run-rule", "rule-exact", "exact-OPT"
    );
    for point in &report.points {
        let cfg = SimConfig {
            frames: point.frames.max(ADMISSION_CHUNKS_PER_SCAN),
            ..base.clone()
        };
        let run = simulate(&cfg, &workload, PolicyKind::Pbm)?;
        let trace = run.trace.unwrap_or_default();
        let capacity = cfg.chunk_bytes.saturating_mul(u64::from(cfg.frames));
        let replay = |f| replay_pbm_observed(&trace, capacity, f, |_, _| {}).loads;
        let (rule, exact) = (
            replay(Foresight::ObservedPace),
            replay(Foresight::ExactTimes),
        );
        let opt = replay_opt(&trace, capacity).loads;
        let diff = |a: u64, b: u64| a as i64 - b as i64;
        println!(
            "{:>6}% {:>7} {:>9} {:>10} {:>10} {:>9} {:>11} {:>11}",
            point.buffer_pct,
            run.chunk_loads,
            rule,
            exact,
            opt,
            diff(run.chunk_loads, rule),
            diff(rule, exact),
            diff(exact, opt)
        );
    }
    Ok(())
}
