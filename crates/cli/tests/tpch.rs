//! `coopscan tpch` end to end on an SF 0.01 database: the 22 queries run and are timed,
//! the SQL printed is the queries', streams run at once under several policies, and
//! what cannot work (the SF 1 answer set on other data, a query that does not exist)
//! is a clear error.

#[path = "../../storage/tests/common/fixture_dir.rs"]
mod fixture_dir;

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;

fn coopscan(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_coopscan"))
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("run coopscan")
}

fn stdout(out: &Output) -> String {
    assert!(
        out.status.success(),
        "failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Generates all eight tables at SF 0.01 in DSM (1 MB chunks) into `out` on `threads`.
fn generate(out: &Path, threads: &str) {
    generate_in(out, threads, "dsm");
}

/// All eight tables at SF 0.01 in `layout` (1 MB chunks) into `out` on `threads`.
fn generate_in(out: &Path, threads: &str, layout: &str) {
    let out = out.to_str().expect("utf8");
    stdout(&coopscan(&[
        "gen",
        "--sf",
        "0.01",
        "--tables",
        "all",
        "--layout",
        layout,
        "--chunk-mb",
        "1",
        "--threads",
        threads,
        "--out",
        out,
    ]));
}

/// An SF 0.01 DSM database with all eight tables, once per test binary, generated one
/// table at a time on one thread.
fn database() -> &'static Path {
    static DB: OnceLock<tempfile::TempDir> = OnceLock::new();
    DB.get_or_init(|| {
        let dir = fixture_dir::fixture_dir();
        generate(dir.path(), "1");
        dir
    })
    .path()
}

fn db() -> &'static str {
    database().to_str().expect("utf8")
}

#[test]
fn the_22_queries_run_timed_and_their_sql_is_printed() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let json = tmp.path().join("power.json");
    let json_arg = json.to_str().expect("utf8");
    let out = stdout(&coopscan(&["tpch", "--db", db(), "--json", json_arg]));
    let lines: Vec<&str> = out.lines().filter(|l| l.starts_with('Q')).collect();
    assert_eq!(lines.len(), 22, "{out}");
    let runs: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&json).expect("json")).expect("parse");
    let runs = runs.as_array().expect("an array");
    let numbers: Vec<u64> = runs.iter().filter_map(|r| r["query"].as_u64()).collect();
    assert_eq!(numbers, (1..=22).collect::<Vec<u64>>());
    assert!(runs
        .iter()
        .all(|r| r["correct"].is_null() && r["rows"].as_u64() > Some(0)));
    assert!(
        lines[10].contains("FRACTION=0.01"),
        "Q11 scaled to SF 0.01: {}",
        lines[10]
    );
    assert!(out.lines().any(|l| l.starts_with("total")), "{out}");
    let sql = stdout(&coopscan(&[
        "tpch",
        "--db",
        db(),
        "--print-sql",
        "--queries",
        "6,1",
    ]));
    let headers: Vec<&str> = sql.lines().filter(|l| l.starts_with("-- Q")).collect();
    assert_eq!(headers, ["-- Q1", "-- Q6"]);
    assert!(sql.contains("l_quantity < 24"), "{sql}");
    // Stream 1's own order begins with Q21 (Appendix A).
    let stream = stdout(&coopscan(&[
        "tpch",
        "--db",
        db(),
        "--stream",
        "1",
        "--print-sql",
    ]));
    assert_eq!(
        stream.lines().find(|l| l.starts_with("-- Q")),
        Some("-- Q21")
    );
}

#[test]
fn streams_run_at_once_under_each_policy() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let json = tmp.path().join("runs.json");
    let traces = tmp.path().join("traces");
    let out = stdout(&coopscan(&[
        "tpch",
        "--db",
        db(),
        "--streams",
        "2",
        "--policies",
        "relevance,scan,pbm",
        "--frames",
        "8",
        "--json",
        json.to_str().expect("utf8"),
        "--trace",
        traces.to_str().expect("utf8"),
    ]));
    for policy in ["relevance", "scan", "pbm"] {
        let line = out
            .lines()
            .find(|l| l.starts_with(policy))
            .unwrap_or_else(|| panic!("no line for {policy}: {out}"));
        // Policy, average, maximum, CPU, MB read, pieces, OPT's, one time per stream.
        assert_eq!(line.split_whitespace().count(), 9, "{line}");
    }
    let runs: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&json).expect("json")).expect("parse");
    let runs = runs.as_array().expect("an array");
    assert_eq!(runs.len(), 3);
    for run in runs {
        assert_eq!(run["stream_s"].as_array().map(Vec::len), Some(2), "{run}");
        let (loads, opt) = (&run["piece_loads"], &run["opt_piece_loads"]);
        if run["policy"] == "scan" {
            assert!(loads.is_null() && opt.is_null(), "{run}");
        } else {
            let (loads, opt) = (loads.as_u64().expect("loads"), opt.as_u64().expect("opt"));
            assert!(0 < opt && opt <= loads, "OPT never loads more: {run}");
            let name = run["policy"].as_str().expect("name");
            let trace = traces.join(format!("tpch-{name}.trace"));
            assert!(
                trace.metadata().is_ok_and(|m| m.len() > 0),
                "{}",
                trace.display()
            );
        }
    }
}

#[test]
fn impossible_requests_are_clear_errors() {
    let answers = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../queries/tpch/answers-sf1");
    let out = coopscan(&[
        "tpch",
        "--db",
        db(),
        "--answers",
        answers.to_str().expect("utf8"),
    ]);
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("answer set is for SF 1"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // A wrong answer directory fails before any query runs.
    let out = coopscan(&[
        "tpch",
        "--db",
        db(),
        "--sf",
        "1",
        "--answers",
        "/nonexistent",
    ]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("/nonexistent/q01.out"));
    assert!(
        !String::from_utf8_lossy(&out.stdout).contains("Q1 "),
        "no query ran"
    );
    let out = coopscan(&["tpch", "--db", db(), "--sf", "1e300"]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("got 1e300"));
    for bad in [["--queries", "23"], ["--queries", "x"], ["--streams", "0"]] {
        let out = coopscan(&["tpch", "--db", db(), bad[0], bad[1]]);
        assert_eq!(out.status.code(), Some(2), "{bad:?}: usage error");
    }
}

/// Runs `bench --preset PRESET` on the test database with `flags`; its JSON report.
fn throughput_preset(preset: &str, flags: &[&str]) -> (String, serde_json::Value, String) {
    let tmp = tempfile::tempdir().expect("tempdir");
    let (json, html) = (tmp.path().join("r.json"), tmp.path().join("r.html"));
    let mut args = vec!["bench", "--preset", preset, "--db", db(), "--streams", "2"];
    args.extend_from_slice(flags);
    args.extend(["--json", json.to_str().expect("utf8")]);
    args.extend(["--html", html.to_str().expect("utf8")]);
    let out = stdout(&coopscan(&args));
    let report = serde_json::from_slice(&std::fs::read(&json).expect("json")).expect("parse");
    (out, report, std::fs::read_to_string(&html).expect("html"))
}

#[test]
fn the_buffer_sweep_runs_every_point_under_every_policy_with_checked_results() {
    let (out, report, html) = throughput_preset(
        "tpch-buffer",
        &["--queries", "3", "--policies", "normal,relevance"],
    );
    let points = report["points"].as_array().expect("points");
    let xs: Vec<f64> = points.iter().map(|p| p["x"].as_f64().expect("x")).collect();
    assert_eq!(xs, [10.0, 20.0, 30.0, 40.0, 60.0, 80.0, 100.0]);
    let calibration = &report["calibration"];
    let touched = calibration["touched_bytes"].as_u64().expect("touched");
    let least = calibration["least_buffer_bytes"].as_u64().expect("least");
    assert!(
        touched > 0 && calibration["lru_bytes"].as_u64().is_some(),
        "{calibration}"
    );
    let mut last = 0;
    for point in points {
        let buffer = point["buffer_bytes"].as_u64().expect("buffer");
        let pct = point["x"].as_f64().expect("x");
        // The share of the touched volume, or the least the buffer manager accepts.
        let share = (touched as f64 * pct / 100.0).round() as u64;
        assert_eq!(buffer, share.max(least), "{point}");
        assert!(buffer >= last, "the buffer grows along the sweep");
        last = buffer;
        assert_eq!(point["bandwidth_mb_s"], calibration["bandwidth_mb_s"]);
        let runs = point["runs"].as_array().expect("runs");
        let names: Vec<&str> = runs
            .iter()
            .map(|r| r["policy"].as_str().expect("policy"))
            .collect();
        assert_eq!(names, ["normal", "relevance"]);
        for run in runs {
            assert!(run["bytes_read"].as_u64().expect("bytes") > 0, "{run}");
            assert_eq!(run["stream_s"].as_array().map(Vec::len), Some(2));
        }
    }
    // Both streams' three queries were compared across the runs.
    assert_eq!(report["results_checked"], 6);
    assert!(
        report["sharing"].is_null(),
        "Figure 18 belongs to tpch-throughput"
    );
    assert!(
        out.contains("paper: ") && out.contains("ours:  at buffer_pct 10 ÷ LRU: relevance"),
        "{out}"
    );
    assert!(
        html.contains("<svg") && html.contains("Figure 14"),
        "a chart per metric"
    );
}

#[test]
fn the_single_point_adds_figure_18_and_a_flag_fixes_the_swept_quantity() {
    let (out, report, html) = throughput_preset(
        "tpch-throughput",
        &[
            "--queries",
            "4",
            "--policies",
            "pbm,relevance",
            "--bandwidth-mb",
            "500",
        ],
    );
    assert_eq!(report["points"].as_array().map(Vec::len), Some(1));
    assert_eq!(report["calibration"]["bandwidth_given"], true);
    assert!(
        report["calibration"]["lru_bytes"].is_null(),
        "no LRU calibration run"
    );
    assert_eq!(report["points"][0]["bandwidth_mb_s"], 500.0);
    let sharing = &report["sharing"];
    assert_eq!(sharing["policy"], "pbm", "OPT's trace, the PBM run's");
    let fraction = sharing["shared_fraction"].as_f64().expect("fraction");
    assert!((0.0..=1.0).contains(&fraction), "{sharing}");
    assert!(!sharing["moments"].as_array().expect("moments").is_empty());
    assert!(
        out.contains("Figure 18, sharing potential of the pbm run"),
        "{out}"
    );
    assert!(html.contains("Figure 18"));
    let (_, report, _) =
        throughput_preset("tpch-streams", &["--queries", "2", "--policies", "normal"]);
    let points = report["points"].as_array().expect("points");
    assert_eq!(points.len(), 1, "--streams fixes Figure 16's axis");
    assert_eq!(points[0]["x"], 2.0);
}

#[test]
fn the_simulator_runs_the_same_streams_at_every_point() {
    let (out, report, _) = throughput_preset(
        "tpch-buffer",
        &[
            "--queries",
            "3",
            "--policies",
            "normal,relevance",
            "--simulate",
            "only",
        ],
    );
    let touched = report["calibration"]["touched_bytes"]
        .as_u64()
        .expect("touched");
    let points = report["points"].as_array().expect("points");
    assert_eq!(points.len(), 7);
    for point in points {
        let runs = point["runs"].as_array().expect("runs");
        let names: Vec<&str> = runs
            .iter()
            .map(|r| r["policy"].as_str().expect("policy"))
            .collect();
        assert_eq!(names, ["sim:normal", "sim:relevance"], "no real run");
        for run in runs {
            assert_eq!(run["stream_s"].as_array().map(Vec::len), Some(2));
            assert!(run["avg_stream_s"].as_f64().expect("avg") > 0.0, "{run}");
            // Every piece the real run touched (measured by the calibration, on the
            // real engine) is in some planned scan, which the simulator reads.
            let bytes = run["bytes_read"].as_u64().expect("bytes");
            assert!(bytes >= touched, "{bytes} < {touched}: {run}");
        }
    }
    assert!(out.contains("sim:relevance"), "{out}");
    // With a buffer that holds everything each piece is read once: the simulator reads
    // the planned scans' pieces, the engine those its queries touched — fewer where a
    // join's runtime filter pruned chunks while the query ran (1.4 × here).
    let (_, report, _) = throughput_preset(
        "tpch-throughput",
        &[
            "--queries",
            "3",
            "--policies",
            "relevance",
            "--buffer-pct",
            "1000",
            "--bandwidth-mb",
            "1000",
            "--simulate",
        ],
    );
    let runs = report["points"][0]["runs"].as_array().expect("runs");
    let bytes = |i: usize| runs[i]["bytes_read"].as_u64().expect("bytes");
    assert_eq!(runs[1]["policy"], "sim:relevance", "{runs:?}");
    assert!(bytes(0) <= bytes(1) && bytes(1) <= 2 * bytes(0), "{runs:?}");
    // The simulator's tables are DSM: another layout is refused before any run.
    let pax = tempfile::tempdir().expect("tempdir");
    generate_in(pax.path(), "2", "pax");
    let dir = pax.path().to_str().expect("utf8");
    let out = coopscan(&[
        "bench",
        "--preset",
        "tpch-throughput",
        "--db",
        dir,
        "--simulate",
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && err.contains("needs a DSM database"),
        "{err}"
    );
    assert!(
        !err.contains("[calibration]"),
        "failed after starting: {err}"
    );
}

#[test]
fn impossible_throughput_runs_are_clear_errors_before_any_work() {
    for (flags, says) in [
        (
            &["--simulate", "only", "--engines", "coopscan,duckdb"][..],
            "--simulate only runs no engine",
        ),
        (&["--engines", "duckdb"][..], "need coopscan"),
        (&["--engines", "coopscan,postgres"][..], "unknown engine"),
        (&["--queries", "23"][..], "--queries: 1 to 22"),
        (&["--policies", "normal,nonsense"][..], "--policies"),
        (&["--buffer-pct", "0"][..], "--buffer-pct"),
    ] {
        let mut args = vec!["bench", "--preset", "tpch-buffer", "--db", db()];
        args.extend_from_slice(flags);
        let out = coopscan(&args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            !out.status.success() && err.contains(says),
            "{flags:?}: {err}"
        );
        assert!(
            !err.contains("[calibration]"),
            "{flags:?}: failed after starting"
        );
    }
}

#[test]
fn clotho_figure_9_runs_each_query_over_the_four_layouts_with_checked_answers() {
    let data = fixture_dir::fixture_dir();
    let json = data.path().join("fig9.json");
    let run = |extra: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_coopscan"))
            .env("COOPSCAN_DATA", data.path())
            .args(["bench", "--preset", "clotho-tpch", "--sf", "0.01"])
            .args(extra)
            .stdin(Stdio::null())
            .output()
            .expect("run coopscan")
    };
    let out = run(&["--db", db()]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("--db and --layout do not apply"));
    let json_arg = json.to_str().expect("utf8");
    let text = stdout(&run(&[
        "--standalone-runs",
        "2",
        "--bandwidth-mb",
        "1000",
        "--json",
        json_arg,
    ]));
    assert!(
        text.contains("paper: ") && text.contains("ours:  pax ÷ NSM"),
        "{text}"
    );
    let report: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&json).expect("json")).expect("parse");
    assert_eq!(report["kit_answers"], false, "the kit's answers are SF 1's");
    let cells = report["cells"].as_array().expect("cells");
    assert_eq!(cells.len(), 16, "4 queries × 4 layouts");
    let cell = |q: u64, layout: &str| {
        (cells.iter())
            .find(|c| c["query"] == q && c["layout"] == layout)
            .unwrap_or_else(|| panic!("no Q{q} on {layout}"))
    };
    for q in [1, 6, 12, 14] {
        assert_eq!(cell(q, "nsm")["over_nsm"], 1.0);
        for layout in ["nsm", "pax", "dsm", "csm"] {
            assert_eq!(cell(q, layout)["seconds"].as_array().map(Vec::len), Some(2));
        }
        // Projectivity: the column layouts read only the queries' columns.
        let bytes = |l| cell(q, l)["bytes_read"].as_u64().expect("bytes");
        assert!(
            bytes("dsm") < bytes("nsm") && bytes("csm") < bytes("pax"),
            "Q{q}"
        );
    }
}

#[test]
fn a_previous_reports_calibration_is_replayed_without_calibration_runs() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let saved = tmp.path().join("saved.json");
    std::fs::write(
        &saved,
        r#"{"calibration": {"touched_bytes": 3000000, "cpu_bound_stream_s": 1.0,
            "lru_bytes": 9000000, "bandwidth_mb_s": 123.0, "bandwidth_given": false,
            "least_buffer_bytes": 1}, "sf": 0.01, "seed": 1, "queries_per_stream": 1}"#,
    )
    .expect("write");
    let json = tmp.path().join("r.json");
    let out = coopscan(&[
        "bench",
        "--preset",
        "tpch-bandwidth",
        "--db",
        db(),
        "--streams",
        "1",
        "--queries",
        "1",
        "--policies",
        "normal",
        "--calibration",
        saved.to_str().expect("utf8"),
        "--json",
        json.to_str().expect("utf8"),
        "--html",
        tmp.path().join("r.html").to_str().expect("utf8"),
    ]);
    stdout(&out);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("replayed from") && !err.contains("every touched piece"),
        "{err}"
    );
    let report: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&json).expect("json")).expect("parse");
    assert_eq!(report["calibration"]["touched_bytes"], 3_000_000);
    // Figure 15's points on the paper's scale, ours relative to the saved 123 MB/s.
    let points = report["points"].as_array().expect("points");
    assert_eq!(points[0]["x"], 200.0);
    let mb_s = points[0]["bandwidth_mb_s"].as_f64().expect("mb/s");
    assert!((mb_s - 123.0 * 200.0 / 600.0).abs() < 1e-9, "{mb_s}");
    let least = report["calibration"]["least_buffer_bytes"]
        .as_u64()
        .expect("least");
    let buffer = points[0]["buffer_bytes"].as_u64().expect("buffer");
    assert_eq!(
        buffer,
        least.max(900_000),
        "30 % of the saved touched volume"
    );
    std::fs::write(&saved, "{}").expect("write");
    let out = coopscan(&[
        "bench",
        "--preset",
        "tpch-buffer",
        "--db",
        db(),
        "--calibration",
        saved.to_str().expect("utf8"),
    ]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("not a TPC-H throughput report"));
}

#[test]
fn tables_generated_at_once_are_the_tables_generated_one_by_one() {
    let dir = fixture_dir::fixture_dir();
    // Four tables at once, each packed on two threads, against the fixture's one thread.
    generate(dir.path(), "8");
    let digest = |db: &Path, table: &str| -> serde_json::Value {
        let report = stdout(&coopscan(&[
            "verify",
            db.join(table).to_str().expect("utf8"),
        ]));
        let report: serde_json::Value = serde_json::from_str(&report).expect("json");
        report["digest"].clone()
    };
    for table in [
        "lineitem", "orders", "customer", "part", "partsupp", "supplier", "nation", "region",
    ] {
        assert_eq!(
            digest(dir.path(), table),
            digest(database(), table),
            "{table}"
        );
    }
    // The database lists every table, whichever finished first.
    let listed = std::fs::read_to_string(dir.path().join("database.json")).expect("catalog");
    assert!(
        ["lineitem", "region", "nation"]
            .iter()
            .all(|t| listed.contains(t)),
        "{listed}"
    );
}
