//! `coopscan bench` and `coopscan sql` end to end on a tiny dataset: the real
//! DataFusion path, every result checked against the in-order Scan reference.

use std::path::Path;
use std::process::{Command, Output, Stdio};

fn coopscan(args: &[&str], data: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_coopscan"))
        .args(args)
        .env("COOPSCAN_DATA", data)
        .stdin(Stdio::null())
        .output()
        .expect("run coopscan")
}

#[test]
fn a_tiny_bench_checks_every_result_and_writes_json_and_html() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let json = tmp.path().join("out.json");
    let html = tmp.path().join("out.html");
    let out = coopscan(
        &[
            "bench",
            "--sf",
            "0.01",
            "--chunk-mb",
            "1",
            "--streams",
            "3",
            "--queries",
            "2",
            "--policies",
            "normal,relevance",
            "--json",
            json.to_str().expect("utf8"),
            "--html",
            html.to_str().expect("utf8"),
        ],
        tmp.path(),
    );
    assert!(
        out.status.success(),
        "bench failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&json).expect("json")).expect("parse");
    for policy in ["normal", "relevance"] {
        let p = &report["policies"][policy];
        assert_eq!(
            p["results_checked"], 6,
            "{policy}: 3 streams × 2 queries, all checked"
        );
        for key in [
            "avg_stream_time_s",
            "avg_normalized_latency",
            "total_time_s",
            "cpu_use",
            "io_requests",
            "io_bytes",
        ] {
            assert!(p[key].is_number(), "{policy}.{key} missing in {p}");
        }
        assert!(p["io_requests"].as_u64().expect("io") > 0);
        // OPT on this run's own references is a lower bound on the run's loads: the run
        // itself is one feasible schedule of those references in the same buffer.
        let opt = p["opt_chunk_loads"].as_u64().expect("opt_chunk_loads");
        let loads = p["chunk_loads"].as_u64().expect("chunk_loads");
        assert!(
            opt > 0 && opt <= loads,
            "{policy}: OPT {opt} vs {loads} loads"
        );
        let types = p["query_types"].as_object().expect("query_types");
        let counted: u64 = types
            .values()
            .map(|t| t["count"].as_u64().expect("count"))
            .sum();
        assert_eq!(counted, 6);
    }
    assert!(report["bandwidth_mb_s"].as_f64().expect("bandwidth") > 0.0);
    let page = std::fs::read_to_string(&html).expect("html");
    // Figure 4: one chart per policy (each on its own time axis), then Figure 5.
    assert_eq!(
        page.matches("<svg").count(),
        3,
        "Figure 4 twice and Figure 5"
    );
}

#[test]
fn sql_runs_a_query_under_a_policy_and_in_order() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let out = coopscan(
        &[
            "gen",
            "--sf",
            "0.01",
            "--chunk-mb",
            "1",
            "--out",
            tmp.path().to_str().expect("utf8"),
        ],
        tmp.path(),
    );
    assert!(out.status.success());
    let table = format!("lineitem={}", tmp.path().join("lineitem").display());
    let sql = "SELECT count(*) AS n, sum(l_quantity) AS q FROM lineitem WHERE l_shipdate < DATE '1995-01-01'";
    let mut answers = Vec::new();
    for policy in ["scan", "relevance", "elevator"] {
        let out = coopscan(
            &["sql", "--table", &table, "--policy", policy, sql],
            tmp.path(),
        );
        assert!(
            out.status.success(),
            "{policy}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        answers.push(String::from_utf8_lossy(&out.stdout).into_owned());
    }
    assert!(answers[0].contains('|'), "a printed table: {}", answers[0]);
    assert!(answers.windows(2).all(|w| w[0] == w[1]), "{answers:?}");
    let bad = coopscan(&["sql", "--table", &table, "SELEC nonsense"], tmp.path());
    assert!(!bad.status.success());
    assert!(!String::from_utf8_lossy(&bad.stderr).contains("panicked"));
}

/// The bench owns its cached dataset: one this build cannot read (an older format,
/// damage) is regenerated with a note, not reported as an error.
#[test]
fn bench_regenerates_a_cached_dataset_it_cannot_read() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let args = [
        "bench",
        "--sf",
        "0.01",
        "--chunk-mb",
        "1",
        "--streams",
        "1",
        "--queries",
        "1",
        "--policies",
        "relevance",
        "--json",
    ];
    let run = |name: &str| {
        let json = tmp.path().join(name);
        let mut all: Vec<&str> = args.to_vec();
        all.push(json.to_str().expect("utf8"));
        coopscan(&all, tmp.path())
    };
    let first = run("first.json");
    assert!(
        first.status.success(),
        "{}",
        String::from_utf8_lossy(&first.stderr)
    );
    let manifest = tmp
        .path()
        .join("tpch-sf0.01-pax-1mb")
        .join("lineitem")
        .join("manifest.json");
    assert!(manifest.exists(), "the dataset is where the bench keeps it");
    // What a format-1 table left in the cache looks like to this build.
    std::fs::write(&manifest, r#"{"format":"coopscan-table","version":1}"#).expect("write");
    let second = run("second.json");
    let stderr = String::from_utf8_lossy(&second.stderr);
    assert!(second.status.success(), "{stderr}");
    assert!(stderr.contains("regenerating"), "{stderr}");
    let third = run("third.json");
    let stderr = String::from_utf8_lossy(&third.stderr);
    assert!(
        third.status.success() && !stderr.contains("regenerating"),
        "{stderr}"
    );
}

/// `bench` on SF 0.01 in 1 MB chunks, 3 streams × 2 queries, then `extra`.
fn tiny_bench<'a>(extra: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec![
        "bench",
        "--sf",
        "0.01",
        "--chunk-mb",
        "1",
        "--streams",
        "3",
        "--queries",
        "2",
    ];
    args.extend_from_slice(extra);
    args
}

/// A `bench` run's JSON report in `dir`, after asserting the command succeeded.
fn bench_json(args: &[&str], dir: &Path) -> serde_json::Value {
    let json = dir.join("out.json");
    let html = dir.join("out.html");
    let mut all: Vec<&str> = args.to_vec();
    all.extend(["--json", json.to_str().expect("utf8")]);
    all.extend(["--html", html.to_str().expect("utf8")]);
    let out = coopscan(&all, dir);
    assert!(
        out.status.success(),
        "bench failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&std::fs::read(&json).expect("json")).expect("parse")
}

/// `--refresh-every-s`: refresh pairs (RF1 inserting copies after the last tuple, RF2
/// deleting them) run beside the streams, every query's result is still checked, and
/// the report counts the pairs and their tuples; a period out of range is a clean error.
#[test]
fn a_refresh_stream_beside_the_queries_keeps_every_result() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let args = tiny_bench(&[
        "--policies",
        "relevance,normal",
        "--standalone-runs",
        "1",
        "--refresh-every-s",
        "0.005",
        "--refresh-per-mille",
        "5",
    ]);
    let report = bench_json(&args, tmp.path());
    assert_eq!(report["parameters"]["refresh"]["per_mille"], 5.0);
    for policy in ["relevance", "normal"] {
        let p = &report["policies"][policy];
        assert_eq!(p["results_checked"], 6, "{policy}");
        let pairs = p["refresh"]["pairs"].as_u64().expect("pairs");
        assert!(pairs >= 1, "{policy}: {}", p["refresh"]);
        // SF 0.01 lineitem: 60 175 tuples, 5 per mille of them.
        assert_eq!(p["refresh"]["rows_per_pair"], 301, "{policy}");
    }
    let bad = coopscan(&tiny_bench(&["--refresh-every-s", "0"]), tmp.path());
    let stderr = String::from_utf8_lossy(&bad.stderr);
    assert!(
        !bad.status.success() && stderr.contains("refresh every"),
        "{stderr}"
    );
}

/// `--scan-workers 2`: every query's CScan two partitions of one ABM scan; every result
/// still checked against the in-order Scan's, and the report says how it ran.
#[test]
fn a_bench_of_parallel_cscans_checks_every_result() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let args = tiny_bench(&[
        "--policies",
        "relevance,pbm",
        "--query-threads",
        "2",
        "--scan-workers",
        "2",
        "--standalone-runs",
        "1",
    ]);
    let report = bench_json(&args, tmp.path());
    assert_eq!(report["parameters"]["scan_workers"], 2);
    for policy in ["relevance", "pbm"] {
        assert_eq!(report["policies"][policy]["results_checked"], 6, "{policy}");
    }
    let bad = coopscan(&tiny_bench(&["--scan-workers", "65"]), tmp.path());
    let stderr = String::from_utf8_lossy(&bad.stderr);
    assert!(
        stderr.contains("scan_workers must be in 1..=64"),
        "{stderr}"
    );
}

#[test]
fn table3_runs_lineitem_in_dsm_beside_table3() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let args = [
        "bench",
        "--preset",
        "table3",
        "--sf",
        "0.01",
        "--chunk-mb",
        "1",
        "--streams",
        "2",
        "--queries",
        "2",
        "--policies",
        "normal,relevance",
        "--standalone-runs",
        "1",
    ];
    let report = bench_json(&args, tmp.path());
    assert_eq!(report["parameters"]["layout"], "dsm");
    let source = report["paper"]["source"].as_str().expect("paper source");
    assert!(source.contains("Table 3"), "{source}");
    // F-100 reads Q6's 4 columns of 16: far less than the table.
    let table = &report["table"];
    let (fast, all) = (table["fast_read_bytes"].as_u64(), table["bytes"].as_u64());
    assert!(fast.expect("fast") * 2 < all.expect("bytes"), "{table}");
    for policy in ["normal", "relevance"] {
        assert_eq!(report["policies"][policy]["results_checked"], 4, "{policy}");
    }
}

#[test]
fn table4_runs_every_family_on_the_synthetic_relation() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let args = [
        "bench",
        "--preset",
        "table4",
        "--rows",
        "60000",
        "--chunk-mb",
        "1",
        "--streams",
        "4",
        "--queries",
        "1",
        "--standalone-runs",
        "1",
    ];
    let report = bench_json(&args, tmp.path());
    let families = report["table4"].as_array().expect("table4");
    assert_eq!(families.len(), 5);
    for run in report["runs"].as_array().expect("runs") {
        assert_eq!(run["parameters"]["dataset"]["kind"], "synthetic");
        for policy in ["normal", "relevance"] {
            let p = &run["policies"][policy];
            assert_eq!(
                p["results_checked"], 4,
                "{policy}: {}",
                run["parameters"]["label"]
            );
            assert!(p["io_requests"].as_u64().expect("io") > 0);
        }
    }
    // The relation is cached and reused by `gen` with the same parameters.
    let gen = coopscan(
        &["gen", "--synthetic", "--rows", "60000", "--chunk-mb", "1"],
        tmp.path(),
    );
    assert!(
        gen.status.success(),
        "{}",
        String::from_utf8_lossy(&gen.stderr)
    );
    let other = coopscan(
        &[
            "gen",
            "--synthetic",
            "--rows",
            "60000",
            "--chunk-mb",
            "1",
            "--seed",
            "5",
        ],
        tmp.path(),
    );
    assert!(
        other.status.success(),
        "another seed is another dataset directory"
    );
}

#[test]
fn pbm_sharing_reports_what_every_query_consumed() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let args = tiny_bench(&[
        "--preset",
        "pbm-sharing",
        "--policies",
        "pbm,relevance",
        "--standalone-runs",
        "1",
    ]);
    let report = bench_json(&args, tmp.path());
    let table_mib = report["table"]["bytes"].as_f64().expect("table bytes") / 1_048_576.0;
    for policy in ["pbm", "relevance"] {
        let s = &report["policies"][policy]["sharing"];
        assert_eq!(s["samples"].as_array().map(Vec::len), Some(200), "{s}");
        // Every consumption belongs to a query of the run: the runtime kept the tags
        // of scans that had already unregistered.
        assert_eq!(s["ignored"]["unknown_tag"], 0, "{policy}");
        assert_eq!(s["ignored"]["chunk_past_rows"], 0, "{policy}");
        let wanted: f64 = (0..4)
            .map(|i| s["mean_chunks"][i].as_f64().expect("mean"))
            .sum();
        assert!(
            wanted > 0.0,
            "{policy}: queries were active and wanted chunks"
        );
        // A chunk counts with what one query took of it, so the volume wanted at any
        // moment is at most the table.
        let wanted_mib: f64 = (0..4)
            .map(|i| s["mean_mib"][i].as_f64().expect("mean MiB"))
            .sum();
        assert!(
            wanted_mib > 0.0 && wanted_mib <= table_mib,
            "{policy}: {wanted_mib} MiB wanted of a {table_mib} MiB table"
        );
    }
}

/// The trace a table2 `bench --trace DIR` kept for `policy`: its path and references.
fn kept_trace(dir: &Path, policy: &str) -> (std::path::PathBuf, Vec<coopscan_buffer::Reference>) {
    let path = dir.join(format!("table2-{policy}.trace"));
    let file = std::fs::File::open(&path).expect("the bench kept the trace");
    let trace = coopscan_buffer::read_trace(std::io::BufReader::new(file)).expect("readable");
    (path, trace)
}

#[test]
fn bench_keeps_each_policys_trace_and_opt_replays_it() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let traces = tmp.path().join("traces");
    let args = tiny_bench(&[
        "--policies",
        "normal,relevance",
        "--standalone-runs",
        "1",
        "--trace",
        traces.to_str().expect("utf8"),
    ]);
    let report = bench_json(&args, tmp.path());
    for policy in ["normal", "relevance"] {
        let (path, trace) = kept_trace(&traces, policy);
        // Each of the 6 queries took each piece of its ranges once: a piece named
        // twice by one scan would be a tuple delivered twice.
        let mut seen = std::collections::HashSet::new();
        for r in &trace {
            assert!(seen.insert((r.scan, r.piece)), "{policy}: {r:?} twice");
        }
        let scans: std::collections::HashSet<_> = trace.iter().map(|r| r.scan).collect();
        assert_eq!(scans.len(), 6, "{policy}: 3 streams × 2 queries");
        // With room for everything, OPT loads each distinct piece once: counted here
        // from the file, then by `coopscan opt` from the same file.
        let pieces: std::collections::HashSet<_> = trace.iter().map(|r| r.piece).collect();
        let out = coopscan(
            &["opt", path.to_str().expect("utf8"), "--buffer-pct", "100"],
            tmp.path(),
        );
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let stdout = String::from_utf8_lossy(&out.stdout);
        let row = stdout
            .lines()
            .find(|l| l.trim_start().starts_with("100%"))
            .unwrap_or_else(|| panic!("no 100% row in {stdout}"));
        let opt_loads: usize = row
            .split_whitespace()
            .nth(2)
            .expect("OPT loads")
            .parse()
            .expect("number");
        assert_eq!(opt_loads, pieces.len(), "{policy}: {row}");
        // The bench's own OPT replayed these references: at its smaller buffer it
        // needs at least one load per distinct piece.
        let bench_opt = report["policies"][policy]["opt_chunk_loads"]
            .as_u64()
            .expect("opt");
        assert!(
            bench_opt >= pieces.len() as u64,
            "{policy}: {bench_opt} < {}",
            pieces.len()
        );
    }
}

#[test]
fn bench_refuses_a_trace_directory_it_cannot_create() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let blocker = tmp.path().join("a-file");
    std::fs::write(&blocker, b"not a directory").expect("write");
    let out = coopscan(
        &[
            "bench",
            "--sf",
            "0.01",
            "--trace",
            blocker.join("traces").to_str().expect("utf8"),
        ],
        tmp.path(),
    );
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("--trace"), "{stderr}");
}

#[test]
fn queries_drawn_in_order_read_in_table_order_and_give_the_same_results() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let traces = tmp.path().join("traces");
    let args = tiny_bench(&[
        "--policies",
        "mixed,relevance",
        "--standalone-runs",
        "1",
        "--in-order-pct",
        "100",
        "--trace",
        traces.to_str().expect("utf8"),
    ]);
    let report = bench_json(&args, tmp.path());
    assert_eq!(
        report["parameters"]["in_order_pct"], 100,
        "{}",
        report["parameters"]
    );
    for policy in ["mixed", "relevance"] {
        let p = &report["policies"][policy];
        // Every result was checked against plain DataFusion's.
        assert_eq!(p["results_checked"], 6, "{policy}");
        let runs = p["query_runs"].as_array().expect("query_runs");
        assert!(runs.iter().all(|r| r["in_order"] == true), "{policy}");
        // Each scan consumed its chunks ascending: relevance would otherwise hand
        // a CScan whatever loaded chunk it wants first.
        let (_, trace) = kept_trace(&traces, policy);
        let mut last: std::collections::HashMap<_, u32> = std::collections::HashMap::new();
        for r in &trace {
            let chunk = r.piece.chunk.0;
            if let Some(before) = last.insert(r.scan, chunk) {
                assert!(before <= chunk, "{policy}: {r:?} after chunk {before}");
            }
        }
        assert_eq!(last.len(), 6, "{policy}: 3 streams × 2 queries traced");
    }
    // Half in order: the text report says how many, the JSON marks as many.
    let json = tmp.path().join("half.json");
    let half = tiny_bench(&[
        "--policies",
        "mixed",
        "--standalone-runs",
        "1",
        "--in-order-pct",
        "50",
        "--json",
        json.to_str().expect("utf8"),
    ]);
    let out = coopscan(&half, tmp.path());
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&json).expect("json")).expect("parse");
    let runs = report["policies"]["mixed"]["query_runs"]
        .as_array()
        .expect("query_runs");
    let marked = runs.iter().filter(|r| r["in_order"] == true).count();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let said = format!("{marked} of 6 queries in table order");
    assert!(stdout.contains(&said), "{said} not in {stdout}");
    let bad = tiny_bench(&["--in-order-pct", "101"]);
    let out = coopscan(&bad, tmp.path());
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("in-order-pct"));
}

// `coopscan sql` over several tables with one buffer (`--buffer-mb`): a join of two
// tables gives the in-order Scan's answer under every policy with a buffer smaller than
// the tables, and a buffer too small or out of range is a clean error.

/// Lineitem and orders at SF 0.01 in DSM with small chunks; returns the --table args.
fn two_tables(dir: &Path) -> Vec<String> {
    let out = dir.to_str().expect("utf8");
    let gen = [
        "gen",
        "--sf",
        "0.01",
        "--layout",
        "dsm",
        "--chunk-mb",
        "1",
        "--tables",
        "lineitem,orders",
        "--out",
        out,
    ];
    let done = coopscan(&gen, dir);
    assert!(
        done.status.success(),
        "{}",
        String::from_utf8_lossy(&done.stderr)
    );
    ["lineitem", "orders"]
        .iter()
        .map(|t| format!("{t}={}", dir.join(t).display()))
        .collect()
}

const JOIN: &str = "SELECT o_orderpriority, count(*) AS n, sum(l_extendedprice) AS price \
    FROM orders JOIN lineitem ON l_orderkey = o_orderkey \
    WHERE l_commitdate < l_receiptdate GROUP BY o_orderpriority ORDER BY o_orderpriority";

fn sql(tables: &[String], extra: &[&str], dir: &Path) -> Output {
    let mut args = vec!["sql"];
    for t in tables {
        args.extend(["--table", t.as_str()]);
    }
    args.extend(extra);
    args.push(JOIN);
    coopscan(&args, dir)
}

#[test]
fn one_buffer_for_two_tables_gives_the_scan_answer_under_every_policy() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let tables = two_tables(tmp.path());
    let reference = sql(&tables, &["--policy", "scan"], tmp.path());
    assert!(
        reference.status.success(),
        "{}",
        String::from_utf8_lossy(&reference.stderr)
    );
    let reference = String::from_utf8_lossy(&reference.stdout).into_owned();
    assert_eq!(reference.matches("-URGENT").count(), 1, "{reference}");
    for policy in ["relevance", "normal", "pbm", "elevator"] {
        let out = sql(
            &tables,
            &["--policy", policy, "--buffer-mb", "4"],
            tmp.path(),
        );
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{policy}: {stderr}");
        assert_eq!(String::from_utf8_lossy(&out.stdout), reference, "{policy}");
    }
    // The generated directory is a database: `--db` opens both tables by name.
    let db = tmp.path().to_str().expect("utf8");
    let out = coopscan(&["sql", "--db", db, "--buffer-mb", "4", JOIN], tmp.path());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "--db: {stderr}");
    assert_eq!(String::from_utf8_lossy(&out.stdout), reference, "--db");
    // A directory that is no database is a clean error.
    let lineitem = tmp.path().join("lineitem");
    let out = coopscan(
        &["sql", "--db", lineitem.to_str().expect("utf8"), JOIN],
        tmp.path(),
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("database.json") && !stderr.contains("panicked"),
        "{stderr}"
    );
    // Parallel CScans: each scan three partitions of one ABM scan, the same answer.
    for policy in ["relevance", "pbm"] {
        let extra = [
            "--policy",
            policy,
            "--buffer-mb",
            "8",
            "--scan-workers",
            "3",
        ];
        let out = sql(&tables, &extra, tmp.path());
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{policy}: {stderr}");
        assert_eq!(String::from_utf8_lossy(&out.stdout), reference, "{policy}");
    }
}

#[test]
fn a_buffer_out_of_range_is_a_clean_error() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let tables = two_tables(tmp.path());
    for bad in [
        &["--buffer-mb", "0"][..],
        &["--buffer-mb", "4", "--frames", "8"],
        &["--scan-workers", "0"],
        &["--scan-workers", "65"],
    ] {
        let out = sql(&tables, bad, tmp.path());
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{bad:?}: {stderr}");
    }
    // Room for fewer than two of the largest chunks: the buffer manager says so.
    let out = sql(&tables, &["--frames", "1"], tmp.path());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("at least 2 of the largest chunks"),
        "{stderr}"
    );
    assert!(!stderr.contains("panicked"), "{stderr}");
}
