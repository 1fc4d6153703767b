//! A directory for a test fixture that lives in a static for the whole test process.
//! A static's destructor never runs, so a plain `TempDir` there outlives the process:
//! every run of a test binary left its fixture in /tmp (the TPC-H one, ~280 MB a run,
//! filled a disk). Each process names its directory with its pid and removes those of
//! processes that are gone. Shared by the test crates through `#[path]`.

use std::path::Path;

/// Names the fixture directories: the prefix, then the pid of the test process.
const FIXTURE_PREFIX: &str = "coopscan-test-fixture-";

/// A fresh directory named after this process; those of processes gone removed first.
pub fn fixture_dir() -> tempfile::TempDir {
    remove_stale_fixtures(&std::env::temp_dir());
    tempfile::Builder::new()
        .prefix(&format!("{FIXTURE_PREFIX}{}-", std::process::id()))
        .tempdir()
        .expect("tempdir")
}

fn remove_stale_fixtures(parent: &Path) {
    let Ok(entries) = std::fs::read_dir(parent) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(rest) = name.to_str().and_then(|n| n.strip_prefix(FIXTURE_PREFIX)) else {
            continue;
        };
        let Some(pid) = rest.split('-').next().and_then(|p| p.parse::<u32>().ok()) else {
            continue;
        };
        if !Path::new("/proc").join(pid.to_string()).exists() {
            // Another process may be removing it too: failure is fine.
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}
