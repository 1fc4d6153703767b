//! Issue 9 ("Reliability") end to end: each case the issue lists for gen, inspect,
//! verify, sql, sim and bench, run through the binary. Every failure must be a clear
//! error with exit code 1 — never a panic (101), never exit 0 over wrong data.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::{json, Value};

mod common;

fn coopscan(args: &[&str], data: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_coopscan"))
        .args(args)
        .env("COOPSCAN_DATA", data)
        .stdin(Stdio::null())
        .output()
        .expect("run coopscan")
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Exit code 1 with a message, no panic.
fn assert_clear_failure(out: &Output, what: &str) -> String {
    let err = stderr(out);
    assert_eq!(out.status.code(), Some(1), "{what}: {err}");
    assert!(!err.contains("panicked"), "{what} panicked: {err}");
    assert!(
        err.starts_with("error: ") || err.contains("\nerror: "),
        "{what}: {err}"
    );
    err
}

/// `gen --sf 0.01` of lineitem into `out`; returns the table directory.
fn gen(out: &Path, extra: &[&str]) -> PathBuf {
    let mut args = vec![
        "gen",
        "--sf",
        "0.01",
        "--chunk-mb",
        "1",
        "--out",
        out.to_str().expect("utf8"),
    ];
    args.extend_from_slice(extra);
    let res = coopscan(&args, out);
    assert!(res.status.success(), "gen: {}", stderr(&res));
    out.join("lineitem")
}

/// Edits the manifest as JSON and recomputes its checksum (a careful attacker).
fn edit_resealed(table: &Path, edit: impl FnOnce(&mut Value)) {
    let path = table.join("manifest.json");
    let mut v: Value = serde_json::from_slice(&std::fs::read(&path).expect("read")).expect("json");
    edit(&mut v);
    v.as_object_mut().expect("object").remove("checksum");
    let m: coopscan_storage::Manifest = serde_json::from_value(v.clone()).expect("manifest");
    v["checksum"] = m.checksum().expect("checksum").into();
    std::fs::write(&path, serde_json::to_vec_pretty(&v).expect("json")).expect("write");
}

fn q6(table: &Path, data: &Path) -> Output {
    let sql = "SELECT sum(l_extendedprice * l_discount) FROM lineitem WHERE l_shipdate >= DATE '1994-01-01' AND l_shipdate < DATE '1995-01-01' AND l_discount BETWEEN 0.05 AND 0.07 AND l_quantity < 24";
    let spec = format!("lineitem={}", table.display());
    coopscan(&["sql", "--table", &spec, "--policy", "scan", sql], data)
}

#[test]
fn hostile_manifests_are_errors_in_every_command() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let table = gen(tmp.path(), &[]);
    let t = table.to_str().expect("utf8");
    let good = std::fs::read(table.join("manifest.json")).expect("read");
    let spec = format!("lineitem={t}");
    type Edit = fn(&mut Value);
    let cases: [(&str, Edit, &str); 4] = [
        (
            "columns []",
            |m| m["schema"]["columns"] = json!([]),
            "1..=4096 columns",
        ),
        (
            "char(0)",
            |m| m["schema"]["columns"][8]["type"] = json!({"kind": "char", "len": 0}),
            "CHAR(0)",
        ),
        (
            "decimal scale 64",
            |m| {
                m["schema"]["columns"][4]["type"] =
                    json!({"kind": "decimal", "precision": 15, "scale": 64})
            },
            "scale",
        ),
        (
            "path traversal",
            |m| m["files"][0]["name"] = json!("../../../../etc/services"),
            "not a plain file name",
        ),
    ];
    for (what, edit, expected) in cases {
        std::fs::write(table.join("manifest.json"), &good).expect("restore");
        edit_resealed(&table, edit);
        for args in [
            vec!["inspect", t],
            vec!["verify", t],
            vec!["sql", "--table", &spec, "SELECT count(*) FROM lineitem"],
        ] {
            let err = assert_clear_failure(&coopscan(&args, tmp.path()), what);
            assert!(err.contains(expected), "{what} / {}: {err}", args[0]);
        }
    }
}

#[test]
fn a_narrowed_zonemap_never_changes_an_answer_silently() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let table = gen(tmp.path(), &[]);
    let right = q6(&table, tmp.path());
    assert!(right.status.success(), "{}", stderr(&right));
    let good = std::fs::read(table.join("manifest.json")).expect("read");
    let shipdate = 10;
    // Unsealed edit: refused on load by the checksum.
    let mut v: Value = serde_json::from_slice(&good).expect("json");
    for chunk in v["chunks"].as_array_mut().expect("chunks") {
        chunk["columns"][shipdate]["zonemap"] = json!({"min": 0, "max": 1});
    }
    std::fs::write(
        table.join("manifest.json"),
        serde_json::to_vec(&v).expect("json"),
    )
    .expect("write");
    let err = assert_clear_failure(&q6(&table, tmp.path()), "unsealed zonemap");
    assert!(err.contains("checksum mismatch"), "{err}");
    // Resealed edit: verify refutes it from the data.
    std::fs::write(table.join("manifest.json"), &good).expect("restore");
    edit_resealed(&table, |m| {
        m["chunks"][1]["columns"][shipdate]["zonemap"] = json!({"min": 0, "max": 1})
    });
    let err = assert_clear_failure(
        &coopscan(&["verify", table.to_str().expect("utf8")], tmp.path()),
        "resealed zonemap",
    );
    assert!(
        err.contains("chunk 1") && err.contains("l_shipdate") && err.contains("zonemap"),
        "{err}"
    );
}

#[test]
fn arguments_that_would_exhaust_memory_or_divide_by_zero_are_refused() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let out = tmp.path().join("x").to_string_lossy().into_owned();
    for args in [
        vec!["gen", "--out", &out, "--sf", "1e12"],
        vec!["sim", "--preset", "fig8", "--chunks", "0"],
        vec!["sim", "--preset", "fig8", "--chunks", "4294967295"],
        // Would be silently ignored: only fig8 sweeps chunk counts.
        vec!["sim", "--preset", "table2", "--chunks", "64"],
        vec!["bench", "--sf", "0.01", "--streams", "4294967295"],
        vec!["bench", "--sf", "0.01", "--queries", "0"],
        vec!["verify", &out, "--latency-ms", "1e15"],
    ] {
        let err = assert_clear_failure(&coopscan(&args, tmp.path()), &args.join(" "));
        let flag = args.iter().rev().nth(1).expect("flag");
        assert!(err.contains(flag), "{args:?}: {err}");
    }
    assert!(!tmp.path().join("x").exists(), "nothing generated");
}

#[test]
fn gen_over_an_existing_table_reuses_it_only_if_it_matches() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let out = tmp.path().to_str().expect("utf8");
    gen(tmp.path(), &[]);
    let same = coopscan(
        &["gen", "--sf", "0.01", "--chunk-mb", "1", "--out", out],
        tmp.path(),
    );
    assert!(same.status.success(), "{}", stderr(&same));
    assert!(
        stderr(&same).contains("reusing the matching table"),
        "{}",
        stderr(&same)
    );
    for (sf, chunk_mb, layout) in [
        ("0.01", "1", "dsm"),
        ("0.02", "1", "pax"),
        ("0.01", "2", "pax"),
    ] {
        let args = [
            "gen",
            "--sf",
            sf,
            "--chunk-mb",
            chunk_mb,
            "--layout",
            layout,
            "--out",
            out,
        ];
        let err = assert_clear_failure(&coopscan(&args, tmp.path()), &args.join(" "));
        assert!(
            err.contains("different table") && err.contains("--force"),
            "{err}"
        );
    }
}

#[test]
fn a_second_concurrent_writer_is_refused_and_the_first_unaffected() {
    use coopscan_storage::{Layout, TableWriter, WriteOptions};
    let tmp = tempfile::tempdir().expect("tempdir");
    let table = gen(tmp.path(), &[]);
    let mut opts = WriteOptions::new(Layout::Pax);
    opts.overwrite = true;
    let schema = coopscan_tpch::TpchTable::Lineitem.schema().expect("schema");
    let holder = TableWriter::create(&table, "lineitem", schema, opts).expect("lock");
    let out = tmp.path().to_str().expect("utf8");
    let res = coopscan(
        &[
            "gen",
            "--sf",
            "0.01",
            "--chunk-mb",
            "1",
            "--out",
            out,
            "--force",
        ],
        tmp.path(),
    );
    let err = assert_clear_failure(&res, "concurrent gen --force");
    assert!(err.contains("another writer"), "{err}");
    drop(holder);
    let verify = coopscan(&["verify", table.to_str().expect("utf8")], tmp.path());
    assert!(
        verify.status.success(),
        "the table is intact: {}",
        stderr(&verify)
    );
}

#[test]
fn kill_9_during_gen_force_leaves_the_old_table() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let table = gen(tmp.path(), &[]);
    let t = table.to_str().expect("utf8");
    let before = coopscan(&["verify", t], tmp.path());
    assert!(before.status.success());
    let digest =
        |o: &Output| serde_json::from_slice::<Value>(&o.stdout).expect("json")["digest"].clone();
    let mut child = Command::new(env!("CARGO_BIN_EXE_coopscan"))
        .args([
            "gen",
            "--sf",
            "0.2",
            "--chunk-mb",
            "1",
            "--force",
            "--out",
            tmp.path().to_str().expect("utf8"),
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn");
    // Kill it once it is writing the new table beside the old one.
    let work = tmp.path().join(".lineitem.tmp").join("data.pax");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !work.exists() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    assert!(work.exists(), "gen never started writing");
    child.kill().expect("SIGKILL");
    child.wait().expect("reap");
    let after = coopscan(&["verify", t], tmp.path());
    assert!(after.status.success(), "old table gone: {}", stderr(&after));
    assert_eq!(digest(&after), digest(&before), "the old table, unchanged");
    // The next writer clears the killed one's work directory.
    gen(tmp.path(), &["--force"]);
    assert!(!tmp.path().join(".lineitem.tmp").exists());
}

#[test]
fn bench_checks_report_paths_before_running() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let bad = tmp.path().join("no-such-dir").join("r.json");
    let start = std::time::Instant::now();
    let res = coopscan(
        &[
            "bench",
            "--sf",
            "0.01",
            "--json",
            bad.to_str().expect("utf8"),
        ],
        tmp.path(),
    );
    let err = assert_clear_failure(&res, "unwritable --json");
    assert!(
        err.contains("cannot write the report") && err.contains("r.json"),
        "{err}"
    );
    assert!(start.elapsed().as_secs() < 30, "failed only after running");
    common::assert_nothing_generated(tmp.path(), "unwritable --json");
}

#[test]
fn sql_prompt_survives_invalid_utf8_and_errors_print_once() {
    use std::io::Write;
    let tmp = tempfile::tempdir().expect("tempdir");
    let table = gen(tmp.path(), &[]);
    let spec = format!("lineitem={}", table.display());
    let mut child = Command::new(env!("CARGO_BIN_EXE_coopscan"))
        .args(["sql", "--table", &spec, "--policy", "scan"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let mut stdin = child.stdin.take().expect("stdin");
    stdin
        .write_all(b"SELECT \xff\xfe;\nSELECT count(*) AS n FROM lineitem;\n")
        .expect("write");
    drop(stdin);
    let out = child.wait_with_output().expect("wait");
    let err = assert_clear_failure(&out, "a session with a non-UTF-8 statement");
    assert!(err.contains("not UTF-8"), "{err}");
    assert!(err.contains("1 statement(s) failed"), "{err}");
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("60175"),
        "the next statement ran"
    );
    let missing = coopscan(&["inspect", "/nonexistent/table"], tmp.path());
    let err = assert_clear_failure(&missing, "missing table");
    assert_eq!(err.matches("No such file").count(), 1, "{err}");
}

/// Found re-testing issue 9: statements piped into `sql` could fail with exit 0 (a
/// script's failure went unnoticed), and input without a newline (`< /dev/zero`) grew
/// one line in memory until the process aborted (exit 134 at 2.2 GB under a 4 GB
/// address-space limit). Now a failed statement makes the session exit 1 after the
/// rest ran, and a statement over `MAX_STATEMENT_BYTES` ends the session with an error.
#[test]
fn piped_sql_fails_loudly_and_reads_a_bounded_statement() {
    use std::io::Write;
    let tmp = tempfile::tempdir().expect("tempdir");
    let table = gen(tmp.path(), &[]);
    let spec = format!("lineitem={}", table.display());
    let session = |input: Vec<u8>| {
        let mut child = Command::new(env!("CARGO_BIN_EXE_coopscan"))
            .args(["sql", "--table", &spec, "--policy", "scan"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn");
        let mut stdin = child.stdin.take().expect("stdin");
        // The child may stop reading early: a failed write is expected then.
        let writer = std::thread::spawn(move || {
            let _ = stdin.write_all(&input);
        });
        let out = child.wait_with_output().expect("wait");
        writer.join().expect("writer");
        out
    };
    let out = session(
        b"SELECT nosuchcolumn FROM lineitem;\nSELECT count(*) AS n FROM lineitem;\n".to_vec(),
    );
    let err = assert_clear_failure(&out, "a failed statement in a script");
    assert!(err.contains("nosuchcolumn"), "{err}");
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("60175"),
        "the next statement ran"
    );
    let ok = session(b"SELECT count(*) AS n FROM lineitem;\n".to_vec());
    assert!(ok.status.success(), "{}", stderr(&ok));

    let endless = vec![b' '; 17 << 20];
    let err = assert_clear_failure(&session(endless), "a statement without end");
    assert!(
        err.contains("statement longer than 16777216 bytes"),
        "{err}"
    );
}

/// Issue 9, items 7 and 12 (no test named them before): `sql --frames 4294967295`
/// aborted allocating the frames, and `gen --out D` printed `Dlineitem`. The buffer is
/// a byte budget filled only by the chunks a query loads, so a huge frame count costs
/// no more than the table; gen names the table directory with its separator.
#[test]
fn a_huge_frame_count_answers_and_gen_names_the_table_directory() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let out_dir = tmp.path().join("D");
    let out = out_dir.to_str().expect("utf8");
    let res = coopscan(
        &["gen", "--sf", "0.01", "--chunk-mb", "1", "--out", out],
        tmp.path(),
    );
    assert!(res.status.success(), "{}", stderr(&res));
    let table = out_dir.join("lineitem");
    let said = format!("{}{}", String::from_utf8_lossy(&res.stdout), stderr(&res));
    assert!(
        said.contains(&table.display().to_string()),
        "gen should name {}: {said}",
        table.display()
    );
    let spec = format!("lineitem={}", table.display());
    let res = coopscan(
        &[
            "sql",
            "--table",
            &spec,
            "--frames",
            "4294967295",
            "SELECT count(*) AS n FROM lineitem",
        ],
        tmp.path(),
    );
    assert!(res.status.success(), "{}", stderr(&res));
    assert!(
        String::from_utf8_lossy(&res.stdout).contains("60175"),
        "{}",
        String::from_utf8_lossy(&res.stdout)
    );
}

/// `coopscan sql` ran DataFusion's `COPY … TO` (writing any path the process could
/// write) and `CREATE EXTERNAL TABLE` over any file (it printed lines of `/etc/shadow`
/// as root). A session is now read-only over its registered tables: DDL, DML (COPY,
/// INSERT) and statements (SET) are refused before they run, with an error saying
/// so; queries over the tables answer as before.
#[test]
fn sql_is_read_only_over_its_tables() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let table = gen(tmp.path(), &[]);
    let spec = format!("lineitem={}", table.display());
    let written = tmp.path().join("copied.csv");
    let outside = tmp.path().join("outside.csv");
    std::fs::write(&outside, "secret\nline\n").expect("write");
    let copy = format!(
        "COPY (SELECT l_orderkey FROM lineitem LIMIT 3) TO '{}' STORED AS CSV",
        written.display()
    );
    let external = format!(
        "CREATE EXTERNAL TABLE outside (line VARCHAR) STORED AS CSV LOCATION '{}'",
        outside.display()
    );
    for policy in ["scan", "relevance"] {
        for (sql, kind) in [
            (copy.as_str(), "COPY"),
            (external.as_str(), "CreateExternalTable"),
            ("SET datafusion.execution.batch_size = 1", "SetVariable"),
        ] {
            let res = coopscan(
                &["sql", "--table", &spec, "--policy", policy, sql],
                tmp.path(),
            );
            let err = assert_clear_failure(&res, sql);
            assert!(
                err.contains("read-only") && err.contains(kind),
                "{policy}: {sql}: {err}"
            );
            assert!(!String::from_utf8_lossy(&res.stdout).contains("secret"));
        }
        assert!(
            !written.exists(),
            "{policy}: COPY wrote {}",
            written.display()
        );
        // The same through the prompt: refused, and the session goes on.
        let mut child = Command::new(env!("CARGO_BIN_EXE_coopscan"))
            .args(["sql", "--table", &spec, "--policy", policy])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn");
        let script =
            format!("{external};\nSELECT * FROM outside;\nSELECT count(*) AS n FROM lineitem;\n");
        std::io::Write::write_all(&mut child.stdin.take().expect("stdin"), script.as_bytes())
            .expect("write");
        let out = child.wait_with_output().expect("wait");
        let err = assert_clear_failure(&out, "a script creating an external table");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(err.contains("2 statement(s) failed"), "{policy}: {err}");
        assert!(!stdout.contains("secret"), "{policy}: {stdout}");
        assert!(
            stdout.contains("60175"),
            "{policy}: the query ran: {stdout}"
        );
        let select = coopscan(
            &[
                "sql",
                "--table",
                &spec,
                "--policy",
                policy,
                "SELECT count(*) AS n FROM lineitem WHERE l_quantity < 24",
            ],
            tmp.path(),
        );
        assert!(select.status.success(), "{policy}: {}", stderr(&select));
    }
}
