//! `coopscan bench --engines coopscan,duckdb,postgres` end to end on a tiny dataset:
//! every query each peer runs (workload and standalone, both regimes) is checked
//! against DataFusion's in-order Scan over the same coopscan table — a peer that
//! loaded other rows, selected another row range or formatted a value differently
//! fails the run. Needs the peers: `.ci/run` installs them and sets
//! `COOPSCAN_REQUIRE_PEERS=1`, so there a missing peer fails; elsewhere the test says
//! loudly that it skipped.

use std::path::Path;
use std::process::{Command, Stdio};

fn duckdb_installed() -> bool {
    Command::new("python3")
        .args(["-c", "import duckdb"])
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

fn postgres_installed() -> bool {
    let in_lib = std::fs::read_dir("/usr/lib/postgresql")
        .map(|d| {
            d.filter_map(|e| e.ok())
                .any(|e| e.path().join("bin/initdb").is_file())
        })
        .unwrap_or(false);
    in_lib
        || Command::new("initdb")
            .arg("--version")
            .stdout(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
}

/// Which peers can run; fails when CI requires them, else skips loudly.
fn available_peers() -> Vec<&'static str> {
    let required = std::env::var_os("COOPSCAN_REQUIRE_PEERS").is_some();
    let mut peers = Vec::new();
    for (name, present, install) in [
        ("duckdb", duckdb_installed(), "pip install duckdb"),
        (
            "postgres",
            postgres_installed(),
            "apt-get install -y postgresql",
        ),
    ] {
        if present {
            peers.push(name);
        } else {
            assert!(
                !required,
                "{name} is required (COOPSCAN_REQUIRE_PEERS) but missing: {install}"
            );
            eprintln!("\n*** SKIPPING the {name} peer: not installed here ({install})\n");
        }
    }
    peers
}

fn make_traversable(dir: &Path) {
    use std::os::unix::fs::PermissionsExt;
    // The PostgreSQL server runs as the `postgres` user when we are root.
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755)).expect("chmod");
}

#[test]
fn peers_return_datafusions_results_for_every_query_in_both_regimes() {
    let peers = available_peers();
    if peers.is_empty() {
        return;
    }
    let tmp = tempfile::tempdir().expect("tempdir");
    make_traversable(tmp.path());
    let json = tmp.path().join("out.json");
    let html = tmp.path().join("out.html");
    let engines = format!("coopscan,{}", peers.join(","));
    let out = Command::new(env!("CARGO_BIN_EXE_coopscan"))
        .args([
            "bench",
            "--sf",
            "0.01",
            "--chunk-mb",
            "1",
            "--streams",
            "3",
            "--queries",
            "3",
            "--policies",
            "relevance",
            "--engines",
            &engines,
            "--regimes",
            "io,cached",
            "--json",
            json.to_str().expect("utf8"),
            "--html",
            html.to_str().expect("utf8"),
        ])
        .env("COOPSCAN_DATA", tmp.path())
        .stdin(Stdio::null())
        .output()
        .expect("run coopscan");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "bench failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&json).expect("json")).expect("parse");
    let runs = report["runs"].as_array().expect("two regimes, two runs");
    assert_eq!(runs.len(), 2);
    for run in runs {
        for engine in std::iter::once("relevance").chain(peers.iter().copied()) {
            let p = &run["policies"][engine];
            assert_eq!(
                p["results_checked"], 9,
                "{engine}: 3 streams × 3 queries checked: {p}"
            );
            assert!(
                p["avg_stream_time_s"].as_f64().is_some_and(|t| t > 0.0),
                "{engine}"
            );
            assert!(
                p["cpu_use"].as_f64().is_some_and(|c| c > 0.0),
                "{engine}: peer CPU counted"
            );
            assert!(
                p["io_bytes"].as_u64().is_some_and(|b| b > 0),
                "{engine}: reads counted"
            );
        }
    }
    // The I/O-bound regime checked the device for every engine.
    for engine in peers.iter().chain(std::iter::once(&"coopscan")) {
        assert!(
            stdout
                .lines()
                .any(|l| l.trim_start().starts_with(engine) && l.contains("cold F-100")),
            "no device check line for {engine}:\n{stdout}"
        );
    }
    let page = std::fs::read_to_string(&html).expect("html");
    for engine in &peers {
        assert!(
            page.contains(engine),
            "{engine} missing from the HTML report"
        );
    }
}
