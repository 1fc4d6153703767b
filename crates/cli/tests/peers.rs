//! `coopscan bench --engines coopscan,duckdb,postgres` end to end on a tiny dataset:
//! every query each peer runs (workload and standalone, both regimes) is checked
//! against DataFusion's in-order Scan over the same coopscan table — a peer that
//! loaded other rows, selected another row range or formatted a value differently
//! fails the run. Needs the peers: `.ci/run` installs them and sets
//! `COOPSCAN_REQUIRE_PEERS=1`, so there a missing peer fails; elsewhere the test says
//! loudly that it skipped.

use std::path::Path;
use std::process::{Command, Stdio};

fn python_has(module: &str) -> bool {
    Command::new("python3")
        .args(["-c", &format!("import {module}")])
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

fn duckdb_installed() -> bool {
    python_has("duckdb")
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
            "datafusion-parquet",
            python_has("datafusion"),
            "pip install datafusion",
        ),
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

/// The stream benchmark's peers among those available (DataFusion over Parquet runs
/// only the TPC-H presets).
fn stream_bench_peers() -> Vec<&'static str> {
    let mut peers = available_peers();
    peers.retain(|p| *p != "datafusion-parquet");
    peers
}

/// Held by each test that runs a bench with peers: a bench changes machine-wide state
/// (a disk's readahead, cgroups), so two at once would each see the other's change as
/// the machine's (the kill test then found `read_ahead_kb` at the other run's 0).
static MACHINE: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn machine() -> std::sync::MutexGuard<'static, ()> {
    MACHINE
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn make_traversable(dir: &Path) {
    use std::os::unix::fs::PermissionsExt;
    // The PostgreSQL server runs as the `postgres` user when we are root.
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755)).expect("chmod");
}

#[test]
fn peers_return_datafusions_results_for_every_query_in_both_regimes() {
    let _machine = machine();
    let peers = stream_bench_peers();
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

/// The changes a running bench has written down (`coopscan_peers::leftovers`), as JSON.
fn records(journal: &Path) -> Vec<serde_json::Value> {
    let Ok(dir) = std::fs::read_dir(journal) else {
        return Vec::new();
    };
    dir.filter_map(|e| e.ok())
        .filter(|e| e.path().extension().is_some_and(|x| x == "change"))
        .filter_map(|e| serde_json::from_slice(&std::fs::read(e.path()).ok()?).ok())
        .collect()
}

/// Whether `pid` still runs (a zombie does not).
fn running(pid: u64) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
        let state = s
            .rfind(')')
            .and_then(|i| s[i + 1..].split_whitespace().next());
        !matches!(state, Some("Z" | "X"))
    })
}

/// A bench stopped by SIGTERM (what `timeout` and CI send) undoes what it changed on
/// the machine before it exits; one killed by SIGKILL has it undone by the next run.
/// Either way no PostgreSQL server, DuckDB driver, cgroup or changed readahead is left
/// behind (all of them were, before: a DuckDB driver still running kept its cgroup).
#[test]
fn a_stopped_or_killed_bench_leaves_nothing_behind() {
    let _machine = machine();
    let peers = stream_bench_peers();
    // A run's process is journaled as a server (PostgreSQL) or, confined in a cgroup,
    // a driver (DuckDB; without cgroups it is not journaled, and waits for one time out).
    for (engine, kind) in [("postgres", "process"), ("duckdb", "driver")] {
        if peers.contains(&engine) {
            stop_or_kill_a_bench(engine, kind);
        }
    }
}

fn stop_or_kill_a_bench(engine: &str, process_kind: &str) {
    let tmp = tempfile::tempdir().expect("tempdir");
    make_traversable(tmp.path());
    let journal = tmp.path().join("leftovers");
    let bench = |args: &[&str]| {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_coopscan"));
        cmd.arg("bench")
            .args(args)
            .env("COOPSCAN_DATA", tmp.path())
            .stdin(Stdio::null());
        cmd
    };
    let engines = format!("coopscan,{engine}");
    let run = [
        "--sf",
        "0.01",
        "--chunk-mb",
        "1",
        "--streams",
        "2",
        "--queries",
        "2",
        "--policies",
        "relevance",
        "--engines",
        &engines,
        "--regimes",
        "io",
    ];
    let cgroups_work = std::path::Path::new("/sys/fs/cgroup").exists() && is_root();
    for signal in ["TERM", "KILL"] {
        let mut child = bench(&run)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start bench");
        // Wait until the run has started its peer's process and, where cgroups work,
        // confined it (a machine without cgroups records none: after a while a server
        // alone will do; a driver is journaled only when confined).
        let start = std::time::Instant::now();
        let (give_up, cgroup_wait) = (
            std::time::Duration::from_secs(240),
            std::time::Duration::from_secs(40),
        );
        let changes = loop {
            let changes = records(&journal);
            let process = changes.iter().any(|c| c["kind"] == process_kind);
            let group = changes.iter().any(|c| c["kind"] == "cgroup");
            if process && (group || start.elapsed() > cgroup_wait) {
                break changes;
            }
            if !cgroups_work && process_kind == "driver" && start.elapsed() > cgroup_wait {
                let _ = child.kill();
                let _ = child.wait();
                return;
            }
            assert!(
                child.try_wait().expect("poll").is_none(),
                "{engine}: the bench ended before its {process_kind} started"
            );
            assert!(
                start.elapsed() < give_up,
                "no {process_kind} within {give_up:?}"
            );
            std::thread::sleep(std::time::Duration::from_millis(100));
        };
        let killed = Command::new("kill")
            .args([&format!("-{signal}"), &child.id().to_string()])
            .status()
            .expect("kill");
        assert!(killed.success());
        let status = child.wait().expect("wait");
        if signal == "TERM" {
            assert_eq!(
                status.code(),
                Some(128 + 15),
                "{engine} {signal}: {status:?}"
            );
        } else {
            // The next bench undoes the killed one's changes first, whatever it runs.
            let next = bench(&["--preset", "no-such-preset"])
                .output()
                .expect("next bench");
            let stderr = String::from_utf8_lossy(&next.stderr);
            assert!(stderr.contains("a previous run's leftover"), "{stderr}");
        }
        for change in &changes {
            match change["kind"].as_str() {
                Some("process" | "driver") => {
                    let pid = change["pid"].as_u64().expect("pid");
                    // Reparented and reaped once the bench is gone; give it a moment.
                    let until = std::time::Instant::now() + std::time::Duration::from_secs(30);
                    while running(pid) && std::time::Instant::now() < until {
                        std::thread::sleep(std::time::Duration::from_millis(100));
                    }
                    assert!(!running(pid), "{engine} {signal}: {pid} still runs");
                }
                Some("cgroup") => {
                    let dir = change["dir"].as_str().expect("dir");
                    assert!(
                        !Path::new(dir).exists(),
                        "{engine} {signal}: cgroup {dir} left"
                    );
                }
                Some("setting") => {
                    let control = change["control"].as_str().expect("control");
                    let now = std::fs::read_to_string(control).unwrap_or_default();
                    assert_eq!(
                        now.trim(),
                        change["original"].as_str().unwrap_or(""),
                        "{control}"
                    );
                }
                other => panic!("unknown change {other:?}"),
            }
        }
        assert!(
            records(&journal).is_empty(),
            "{engine} {signal}: records left"
        );
    }
}

/// Whether this test runs as root (cgroups need it).
fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status").is_ok_and(|s| {
        s.lines()
            .find(|l| l.starts_with("Uid:"))
            .and_then(|l| l.split_whitespace().nth(1))
            == Some("0")
    })
}

/// `bench --preset tpch-throughput --engines coopscan,duckdb,datafusion-parquet` on an
/// SF 0.01 database: each peer runs the same streams' statements on its own copy of
/// the rows, and every one of its results is checked against coopscan's (a peer that
/// loaded other rows or answered otherwise fails the run); its runs are reported
/// beside coopscan's with the memory it was given.
#[test]
fn tpch_peers_run_the_same_streams_with_checked_results() {
    let _machine = machine();
    let mut peers = available_peers();
    peers.retain(|p| *p != "postgres");
    if !peers.contains(&"duckdb") {
        // DuckDB writes the Parquet files too.
        return;
    }
    let tmp = tempfile::tempdir().expect("tempdir");
    let db = tmp.path().join("db");
    let coopscan = |args: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_coopscan"))
            .args(args)
            .env("COOPSCAN_DATA", tmp.path())
            .stdin(Stdio::null())
            .output()
            .expect("run coopscan");
        assert!(
            out.status.success(),
            "{args:?} failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let db_arg = db.to_str().expect("utf8");
    coopscan(&[
        "gen",
        "--sf",
        "0.01",
        "--tables",
        "all",
        "--layout",
        "dsm",
        "--chunk-mb",
        "1",
        "--out",
        db_arg,
    ]);
    let json = tmp.path().join("r.json");
    let html = tmp.path().join("r.html");
    let engines = format!("coopscan,{}", peers.join(","));
    let out = coopscan(&[
        "bench",
        "--preset",
        "tpch-throughput",
        "--db",
        db_arg,
        "--streams",
        "2",
        "--queries",
        "22",
        "--policies",
        "relevance",
        "--bandwidth-mb",
        "400",
        "--engines",
        &engines,
        "--json",
        json.to_str().expect("utf8"),
        "--html",
        html.to_str().expect("utf8"),
    ]);
    let report: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&json).expect("json")).expect("parse");
    let runs = report["points"][0]["runs"].as_array().expect("runs");
    let names: Vec<&str> = runs.iter().filter_map(|r| r["policy"].as_str()).collect();
    let mut expected = vec!["relevance"];
    expected.extend(peers.iter().copied());
    assert_eq!(names, expected);
    assert!(
        runs[0]["memory_bytes"].as_u64().is_some(),
        "coopscan's memory is measured"
    );
    let buffer = report["points"][0]["buffer_bytes"]
        .as_u64()
        .expect("buffer");
    for run in &runs[1..] {
        assert_eq!(run["stream_s"].as_array().map(Vec::len), Some(2), "{run}");
        assert!(run["cpu_s"].as_f64().is_some_and(|c| c > 0.0), "{run}");
        assert!(run["engine_version"].as_str().is_some(), "{run}");
    }
    let duckdb = &runs[1];
    assert!(
        duckdb["memory_bytes"].as_u64().is_some_and(|m| m >= buffer),
        "DuckDB's memory_limit is at least the point's buffer: {duckdb}"
    );
    // 2 streams × 22 queries, each checked for coopscan's calibration run and each peer.
    assert_eq!(report["results_checked"], 44);
    assert!(out.contains("peers: duckdb"), "{out}");
    assert!(
        out.contains("coopscan's best (relevance) ÷ duckdb"),
        "{out}"
    );
    // The copy is made once: a second run finds it.
    let again = Command::new(env!("CARGO_BIN_EXE_coopscan"))
        .args(["bench", "--preset", "tpch-throughput", "--db", db_arg])
        .args([
            "--streams",
            "1",
            "--queries",
            "2",
            "--policies",
            "relevance",
        ])
        .args(["--bandwidth-mb", "400", "--engines", "coopscan,duckdb"])
        .args(["--json", json.to_str().expect("utf8")])
        .args(["--html", html.to_str().expect("utf8")])
        .env("COOPSCAN_DATA", tmp.path())
        .stdin(Stdio::null())
        .output()
        .expect("run coopscan");
    assert!(again.status.success());
    let copy = tmp.path().join("peers/tpch");
    assert_eq!(
        std::fs::read_dir(&copy).expect("the peers' copies").count(),
        1,
        "one copy of one database"
    );
}
