//! SIGINT and SIGTERM stop a benchmark only after it has undone what it changed on the
//! machine (`coopscan_peers::leftovers`): a signal skips every `Drop`, which used to be
//! the only cleanup, so a server, cgroups and a disk's readahead outlived the run.

use signal_hook::consts::{SIGINT, SIGTERM};
use signal_hook::iterator::Signals;

/// The exit status of a process ended by signal `n`, as a shell reports it.
const SIGNAL_EXIT_BASE: i32 = 128;

/// Starts the thread that waits for SIGINT or SIGTERM, undoes this process's recorded
/// changes, and exits with 128 + the signal.
pub fn undo_on_signal() -> anyhow::Result<()> {
    let mut signals = Signals::new([SIGINT, SIGTERM])?;
    std::thread::Builder::new()
        .name("signals".into())
        .spawn(move || {
            if let Some(signal) = signals.forever().next() {
                eprintln!("stopping on signal {signal}; undoing this run's changes to the machine");
                for line in coopscan_peers::leftovers::undo_own() {
                    eprintln!("  {line}");
                }
                std::process::exit(SIGNAL_EXIT_BASE + signal);
            }
        })?;
    Ok(())
}
