//! The commands a newcomer runs, end to end on a small dataset.

use std::path::Path;
use std::process::{Command, Output};

fn coopscan(args: &[&str], data: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_coopscan"))
        .args(args)
        .env("COOPSCAN_DATA", data)
        .output()
        .expect("run coopscan")
}

/// [`coopscan`] with `input` on its standard input (the `sql` prompt's statements).
fn coopscan_with_input(args: &[&str], input: &str, data: &Path) -> Output {
    use std::io::Write;
    use std::process::Stdio;
    let mut child = Command::new(env!("CARGO_BIN_EXE_coopscan"))
        .args(args)
        .env("COOPSCAN_DATA", data)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    (child.stdin.take().expect("stdin"))
        .write_all(input.as_bytes())
        .expect("write");
    child.wait_with_output().expect("wait")
}

/// The smallest `l_shipdate` tpchgen produces at SF 0.01, as an ISO date.
fn min_shipdate_from_tpchgen() -> String {
    use arrow_array::cast::AsArray;
    use arrow_array::types::Date32Type;
    let min = coopscan_tpch::generate(coopscan_tpch::TpchTable::Lineitem, 0.01, 1, 1, 8192)
        .map(|b| {
            let b = b.expect("batch");
            let col = b
                .column_by_name("l_shipdate")
                .expect("l_shipdate")
                .as_primitive::<Date32Type>()
                .clone();
            col.values().iter().copied().min().expect("rows")
        })
        .min()
        .expect("batches");
    coopscan_storage::zonemap::civil_date(i64::from(min))
}

fn json(out: &Output) -> serde_json::Value {
    assert!(
        out.status.success(),
        "stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("JSON on stdout")
}

#[test]
fn gen_inspect_verify_agree_across_layouts() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let mut digests = Vec::new();
    for layout in LAYOUTS {
        let out_dir = tmp.path().join(layout);
        let out = coopscan(
            &[
                "gen",
                "--sf",
                "0.01",
                "--layout",
                layout,
                "--chunk-mb",
                "1",
                "--out",
                out_dir.to_str().expect("utf8"),
            ],
            tmp.path(),
        );
        assert!(
            out.status.success(),
            "gen {layout}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let table = out_dir.join("lineitem");
        let inspect = json(&coopscan(
            &["inspect", table.to_str().expect("utf8")],
            tmp.path(),
        ));
        assert_eq!(inspect["layout"], layout);
        assert_eq!(
            inspect["rows"], 60_175,
            "dbgen's SF 0.01 lineitem row count"
        );
        assert!(inspect["chunks"].as_u64().expect("chunks") > 1);
        let columns = inspect["columns"].as_array().expect("columns");
        assert_eq!(columns.len(), 16);
        // DSM keeps page bounds for its integer columns (l_orderkey), none for strings
        // (l_comment); other layouts none.
        let bounded = |c: usize| columns[c]["pages_with_bounds"].as_u64();
        let pages = |c: usize| {
            columns[c]["page_codecs"]
                .as_object()
                .map(|m| m.values().map(|n| n.as_u64().expect("count")).sum::<u64>())
        };
        match layout {
            "dsm" => {
                assert!(bounded(0) > Some(0) && bounded(0) == pages(0), "{inspect}");
                assert_eq!(bounded(15), Some(0));
            }
            _ => assert_eq!(bounded(0), None),
        }
        assert_eq!(
            inspect["zonemap"]["l_shipdate"]["min"],
            min_shipdate_from_tpchgen()
        );
        let verify = json(&coopscan(
            &["verify", table.to_str().expect("utf8")],
            tmp.path(),
        ));
        assert_eq!(verify["rows"], 60_175);
        digests.push(verify["digest"].as_str().expect("digest").to_string());
    }
    assert!(
        digests.windows(2).all(|w| w[0] == w[1]),
        "digests differ across layouts: {digests:?}"
    );
    read_cost_counts_the_requests_each_layout_needs(tmp.path());
    index_scans_answer_as_scans_do(tmp.path());
}

/// `coopscan index` over the tables `gen_inspect_verify_agree_across_layouts` wrote:
/// listed as usable, taken by `sql --index-scans always` (EXPLAIN shows it) with the
/// answer `--index-scans never` gives; a string column is refused.
fn index_scans_answer_as_scans_do(data: &Path) {
    let query = "SELECT count(*), sum(l_quantity), min(_rowid) FROM lineitem WHERE l_partkey = 77";
    for layout in LAYOUTS {
        let table = data.join(layout).join("lineitem");
        let table = table.to_str().expect("utf8");
        let built = coopscan(
            &["index", table, "--column", "l_partkey", "--buffered"],
            data,
        );
        assert!(
            built.status.success(),
            "{}",
            String::from_utf8_lossy(&built.stderr)
        );
        let listed = coopscan(&["index", table], data);
        let listed = String::from_utf8_lossy(&listed.stdout).to_string();
        assert!(
            listed.contains("l_partkey: 60175 entries, usable"),
            "{listed}"
        );
        let spec = format!("lineitem={table}");
        let sql = |mode: &str, sql: &str| {
            let out = coopscan(
                &[
                    "sql",
                    "--table",
                    &spec,
                    "--buffered",
                    "--index-scans",
                    mode,
                    sql,
                ],
                data,
            );
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            String::from_utf8_lossy(&out.stdout).to_string()
        };
        let explained = sql("always", &format!("EXPLAIN {query}"));
        assert!(explained.contains("IndexScanExec"), "{layout}: {explained}");
        let (with, without) = (sql("always", query), sql("never", query));
        assert_eq!(with, without, "{layout}");
        assert!(!with.contains("| 0 "), "{layout}: part 77 has rows: {with}");
        if layout == "nsm" || layout == "pax" {
            scattered_through_the_buffer(data, &spec, query, &without);
        }
    }
    let table = data.join("csm").join("lineitem");
    let table_dir = table.to_str().expect("utf8");
    let dropped = coopscan(&["index", table_dir, "--drop", "l_partkey"], data);
    assert!(
        dropped.status.success(),
        "{}",
        String::from_utf8_lossy(&dropped.stderr)
    );
    let listed = coopscan(&["index", table_dir], data);
    assert!(String::from_utf8_lossy(&listed.stdout).contains("no indexes"));
    let again = coopscan(&["index", table_dir, "--drop", "l_partkey"], data);
    assert!(String::from_utf8_lossy(&again.stderr).contains("has no index"));
    let refused = coopscan(
        &[
            "index",
            table.to_str().expect("utf8"),
            "--column",
            "l_comment",
        ],
        data,
    );
    assert!(!refused.status.success());
    assert!(String::from_utf8_lossy(&refused.stderr).contains("only integer"));
}

/// The selection through the buffer (a page fetch priced above any chunk, so it reads
/// chunks): it names its pages, so its chunks are loaded scattered, as `--stats` says,
/// and the answer is `want`.
fn scattered_through_the_buffer(data: &Path, spec: &str, query: &str, want: &str) {
    let args = [
        "sql",
        "--table",
        spec,
        "--buffered",
        "--policy",
        "relevance",
        "--index-page-cost-kb",
        "1048576",
        "--stats",
        query,
    ];
    let out = coopscan(&args, data);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(String::from_utf8_lossy(&out.stdout), want);
    let scattered = stderr
        .split(" scattered)")
        .next()
        .and_then(|head| head.rsplit('(').next())
        .and_then(|n| n.trim().parse::<u64>().ok());
    assert!(scattered.is_some_and(|n| n > 0), "{stderr}");
    assert!(stderr.contains("device: "), "{stderr}");
}

const LAYOUTS: [&str; 4] = ["nsm", "pax", "dsm", "csm"];

/// `read-cost` over the tables `gen_inspect_verify_agree_across_layouts` wrote: row
/// pages are one request per chunk whatever is read, DSM one per column and chunk, CSM
/// one per run of adjacent columns (so one per chunk for the first k columns).
fn read_cost_counts_the_requests_each_layout_needs(data: &Path) {
    let tables: Vec<String> = LAYOUTS
        .iter()
        .map(|l| data.join(l).join("lineitem").display().to_string())
        .collect();
    let read_cost = |flags: &[&str]| {
        let mut args = vec!["read-cost", "--json", "--repeat", "1", "--buffered"];
        args.extend(flags);
        args.extend(tables.iter().map(String::as_str));
        json(&coopscan(&args, data))
    };
    let rows = read_cost(&["--columns", "1,3,16"]);
    let rows = rows.as_array().expect("rows");
    assert_eq!(rows.len(), 3 * LAYOUTS.len());
    let cell = |layout: &str, k: u64| {
        rows.iter()
            .find(|r| r["layout"] == layout && r["columns"] == k)
            .unwrap_or_else(|| panic!("no row for {layout} {k}"))
    };
    let inspect = |i: usize| json(&coopscan(&["inspect", &tables[i]], data));
    let chunks: Vec<u64> = (0..LAYOUTS.len())
        .map(|i| inspect(i)["chunks"].as_u64().expect("chunks"))
        .collect();
    for k in [1, 3, 16] {
        let requests = |l: &str| cell(l, k)["requests"].as_u64().expect("requests");
        let bytes = |l: &str| cell(l, k)["bytes"].as_u64().expect("bytes");
        assert_eq!(requests("nsm"), chunks[0], "nsm, {k} columns");
        assert_eq!(requests("pax"), chunks[1], "pax, {k} columns");
        assert_eq!(requests("dsm"), k * chunks[2], "dsm, {k} columns");
        assert_eq!(requests("csm"), chunks[3], "csm, {k} columns");
        assert!(
            bytes("csm") < bytes("pax"),
            "csm reads compressed columns only"
        );
    }
    // Every column of a CSM table is its whole file, read tile by tile.
    let file_bytes: u64 = inspect(3)["columns"]
        .as_array()
        .expect("columns")
        .iter()
        .map(|c| c["file_bytes"].as_u64().expect("runs' bytes"))
        .sum();
    assert_eq!(cell("csm", 16)["bytes"].as_u64(), Some(file_bytes));
    // Index fetches: at 100 % every page of every table is read, one request each.
    let rows = read_cost(&["--selected-pct", "0.01,100", "--columns", "16"]);
    let rows = rows.as_array().expect("rows");
    assert_eq!(rows.len(), 2 * LAYOUTS.len());
    for (i, layout) in LAYOUTS.iter().enumerate() {
        let info = inspect(i);
        let page = info["page_bytes"].as_u64().expect("page bytes");
        let file_pages: u64 = info["files"]
            .as_array()
            .expect("files")
            .iter()
            .map(|f| f["bytes"].as_u64().expect("bytes") / page)
            .sum();
        let at = |pct: f64| {
            rows.iter()
                .find(|r| r["layout"] == *layout && r["selected_pct"] == pct)
                .unwrap_or_else(|| panic!("no row for {layout} {pct}"))
        };
        assert_eq!(at(100.0)["pages"].as_u64(), Some(file_pages), "{layout}");
        let few = at(0.01)["pages"].as_u64().expect("pages");
        assert!(
            few > 0 && few < file_pages / 4,
            "{layout}: {few} of {file_pages}"
        );
    }
    let bad = coopscan(&["read-cost", "--columns", "17", &tables[3]], data);
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("--columns"));
}

#[test]
fn verify_fails_naming_file_and_offset_on_damage() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let out_dir = tmp.path().join("pax");
    let out = coopscan(
        &[
            "gen",
            "--sf",
            "0.01",
            "--layout",
            "pax",
            "--chunk-mb",
            "2",
            "--out",
            out_dir.to_str().expect("utf8"),
        ],
        tmp.path(),
    );
    assert!(out.status.success());
    // A chunk of 2 MiB of pages decodes to about that much: over a 1 MiB budget,
    // refused naming the file, as a scan with that budget refuses it.
    let lineitem = out_dir.join("lineitem");
    let lineitem = lineitem.to_str().expect("utf8");
    let out = coopscan(&["verify", lineitem, "--decode-budget-mb", "1"], tmp.path());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "over the budget: {err}");
    assert!(
        err.contains("data.pax") && err.contains("decode budget"),
        "{err}"
    );
    let data = out_dir.join("lineitem").join("data.pax");
    let mut bytes = std::fs::read(&data).expect("read");
    let offset = 3 * 65_536; // the fourth page
    bytes[offset + 100] ^= 1;
    std::fs::write(&data, bytes).expect("write");
    let out = coopscan(
        &["verify", out_dir.join("lineitem").to_str().expect("utf8")],
        tmp.path(),
    );
    assert!(!out.status.success(), "verify must fail on damage");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("data.pax")
            && err.contains(&format!("offset {offset}"))
            && err.contains("checksum"),
        "{err}"
    );
}

#[test]
fn bad_arguments_are_clear_errors_not_panics() {
    let tmp = tempfile::tempdir().expect("tempdir");
    for args in [
        vec!["gen", "--layout", "columnar"],
        vec!["gen", "--chunk-mb", "0"],
        vec!["gen", "--sf", "-1", "--out", "x"],
        vec!["gen", "--tables", "lineitems"],
        vec!["inspect", "/nonexistent/table"],
        vec!["verify", "/nonexistent/table", "--bandwidth-mb", "-5"],
        vec!["verify", "/nonexistent/table", "--decode-budget-mb", "0"],
        vec![
            "sql",
            "--table",
            "t=/x",
            "--decode-budget-mb",
            "99999999999",
        ],
    ] {
        let out = coopscan(&args, tmp.path());
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{args:?} must fail");
        assert!(!err.contains("panicked"), "{args:?} panicked: {err}");
        assert!(!err.is_empty(), "{args:?}: no message");
    }
}

/// Lines of tpchgen's SF 0.01 lineitem whose order key is below `key`.
fn lines_below(key: i64) -> usize {
    keys_below(coopscan_tpch::TpchTable::Lineitem, "l_orderkey", key)
}

/// Tuples of `table` at SF 0.01 whose `column` is below `key` (from tpchgen itself).
fn keys_below(table: coopscan_tpch::TpchTable, column: &str, key: i64) -> usize {
    use arrow_array::cast::AsArray;
    use arrow_array::types::Int64Type;
    coopscan_tpch::generate(table, 0.01, 1, 1, 8192)
        .map(|b| {
            let b = b.expect("batch");
            let keys = b.column_by_name(column).expect("key column");
            let keys = keys.as_primitive::<Int64Type>();
            keys.values().iter().filter(|&&k| k < key).count()
        })
        .sum()
}

/// A transaction over two tables of a `gen` database, through the prompt: rolled back it
/// changes neither, committed it changes both, for later processes too (the decision in
/// the database's `transactions.log`), and a checkpoint of the database keeps it.
#[test]
fn a_transaction_over_two_tables_of_a_database_commits_in_both() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let db = tmp.path().to_str().expect("utf8");
    let gen = coopscan(
        &[
            "gen",
            "--sf",
            "0.01",
            "--tables",
            "orders,lineitem",
            "--layout",
            "dsm",
        ]
        .into_iter()
        .chain(["--chunk-mb", "1", "--out", db])
        .collect::<Vec<_>>(),
        tmp.path(),
    );
    assert!(
        gen.status.success(),
        "gen: {}",
        String::from_utf8_lossy(&gen.stderr)
    );
    let script = "BEGIN;\n\
        DELETE FROM orders WHERE o_orderkey > 50000;\n\
        DELETE FROM lineitem WHERE l_orderkey > 50000;\n\
        ROLLBACK;\n\
        BEGIN;\n\
        DELETE FROM orders WHERE o_orderkey < 200;\n\
        DELETE FROM lineitem WHERE l_orderkey < 200;\n\
        COMMIT;\n";
    let res = coopscan_with_input(&["sql", "--db", db], script, tmp.path());
    assert!(
        res.status.success(),
        "{}",
        String::from_utf8_lossy(&res.stderr)
    );
    assert!(
        tmp.path().join("transactions.log").exists(),
        "a decision written"
    );
    let orders = 15_000 - keys_below(coopscan_tpch::TpchTable::Orders, "o_orderkey", 200);
    let lines = 60_175 - lines_below(200);
    let counts = "SELECT (SELECT count(*) FROM orders) AS o, (SELECT count(*) FROM lineitem) AS l";
    for when in ["committed", "checkpointed"] {
        let out = coopscan(&["sql", "--db", db, counts], tmp.path());
        let text = String::from_utf8_lossy(&out.stdout);
        let row = text.lines().find(|l| l.contains(&format!(" {orders} ")));
        assert!(
            row.is_some_and(|l| l.contains(&format!(" {lines} "))),
            "{when}: want {orders} orders and {lines} lines: {text}"
        );
        let merged = coopscan(&["checkpoint", "--db", db], tmp.path());
        assert!(merged.status.success(), "checkpoint");
    }
    // `CHECKPOINT` in the prompt: merged in the running session, whose next query
    // reads the new image (in its shared buffer, a version of its own).
    let script = "DELETE FROM lineitem WHERE l_orderkey < 400;\n\
        CHECKPOINT lineitem;\n\
        SELECT count(*) AS n FROM lineitem;\n";
    let res = coopscan_with_input(&["sql", "--db", db], script, tmp.path());
    let text = String::from_utf8_lossy(&res.stdout);
    assert!(
        res.status.success(),
        "{}",
        String::from_utf8_lossy(&res.stderr)
    );
    let lines = 60_175 - lines_below(400);
    let deleted = lines_below(400) - lines_below(200);
    assert!(
        text.lines()
            .any(|l| l.contains("lineitem") && l.contains(&format!(" {deleted} "))),
        "the checkpoint's row: {text}"
    );
    assert!(
        text.contains(&format!(" {lines} ")),
        "the count after: {text}"
    );
    let log = tmp
        .path()
        .join("lineitem")
        .join(coopscan_exec::delta::LOG_FILE);
    assert!(!log.exists(), "the log went with the old image");
    let out = coopscan(
        &["sql", "--db", db, "SELECT count(*) FROM lineitem"],
        tmp.path(),
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains(&format!(" {lines} ")),
        "a later process: {text}"
    );
}

/// `coopscan sql` runs DELETE, UPDATE and INSERT on its tables: later statements of the
/// session see them (under a Scan and under CScans), so do later sessions (the table's
/// delta log), and `verify` still passes the table.
/// SF 0.01 lineitem in 1 MB chunks, generated into a directory of the test's own, and
/// its `--table` argument.
fn lineitem_sf001() -> (tempfile::TempDir, String) {
    let tmp = tempfile::tempdir().expect("tempdir");
    let out = tmp.path().to_str().expect("utf8");
    let gen = coopscan(
        &["gen", "--sf", "0.01", "--chunk-mb", "1", "--out", out],
        tmp.path(),
    );
    assert!(
        gen.status.success(),
        "gen: {}",
        String::from_utf8_lossy(&gen.stderr)
    );
    let spec = format!("lineitem={}", tmp.path().join("lineitem").display());
    (tmp, spec)
}

#[test]
fn sql_changes_a_table_for_the_session() {
    let (tmp, spec) = lineitem_sf001();
    let columns = "l_orderkey, l_partkey, l_suppkey, l_linenumber, l_quantity, l_extendedprice, \
        l_discount, l_tax, l_returnflag, l_linestatus, l_shipdate, l_commitdate, \
        l_receiptdate, l_shipinstruct, l_shipmode, l_comment";
    // The first session's INSERT leaves its column list out, the second's names it.
    let script = |columns: &str| {
        format!(
            "DELETE FROM lineitem WHERE l_orderkey < 100;\n\
             UPDATE lineitem SET l_comment = 'edited' WHERE l_orderkey < 200;\n\
             INSERT INTO lineitem {columns} VALUES (999999, 1, 1, 1, 1.00, 1.00, 0.00, 0.00, 'N', 'O', \
             DATE '1998-01-01', DATE '1998-01-01', DATE '1998-01-01', 'NONE', 'AIR', 'new');\n\
             SELECT count(*) AS n, sum(CASE WHEN l_comment = 'edited' THEN 1 ELSE 0 END) AS e FROM lineitem;\n"
        )
    };
    let scripts = [script(""), script(&format!("({columns})"))];
    let (deleted, edited) = (lines_below(100), lines_below(200) - lines_below(100));
    for (run, policy) in ["scan", "relevance"].into_iter().enumerate() {
        let script = &scripts[run];
        let args = ["sql", "--table", &spec, "--policy", policy];
        let res = coopscan_with_input(&args, script, tmp.path());
        let (stdout, stderr) = (
            String::from_utf8_lossy(&res.stdout),
            String::from_utf8_lossy(&res.stderr),
        );
        assert!(res.status.success(), "{policy}: {stderr}");
        // The second session replays the first's changes: its DELETE finds nothing
        // more, its INSERT adds a second row.
        let want = format!("{}", 60175 - deleted + run + 1);
        let last = stdout.lines().rev().find(|l| l.contains(&want));
        assert!(
            last.is_some_and(|l| l.contains(&format!("{edited}"))),
            "{policy}: want n = {want}, e = {edited}: {stdout}"
        );
    }
    let table = tmp.path().join("lineitem");
    let dir = table.to_str().expect("utf8");
    let done = coopscan(&["checkpoint", dir], tmp.path());
    let said = String::from_utf8_lossy(&done.stdout);
    assert!(
        done.status.success() && said.contains("changes merged"),
        "checkpoint: {said}"
    );
    assert!(
        !table.join("delta.log").exists(),
        "the log went with the old image"
    );
    let count = coopscan(
        &["sql", "--table", &spec, "SELECT count(*) FROM lineitem"],
        tmp.path(),
    );
    let after = format!("{}", 60175 - deleted + 2);
    assert!(
        String::from_utf8_lossy(&count.stdout).contains(&after),
        "rows after the checkpoint"
    );
    let none = coopscan(&["checkpoint", "--db", "/nonexistent"], tmp.path());
    assert_eq!(
        none.status.code(),
        Some(1),
        "a missing database is an error"
    );
    let verify = coopscan(&["verify", dir], tmp.path());
    assert!(
        verify.status.success(),
        "verify: {}",
        String::from_utf8_lossy(&verify.stderr)
    );
}

/// `bench --preset clotho-…` over a small synthetic relation: every layout and mode
/// measured (the run itself fails when two of them answer differently), the paper's
/// finding printed beside; the peers are refused for these presets.
#[test]
fn clotho_presets_run_every_layout_and_mode() {
    let tmp = tempfile::tempdir().expect("tempdir");
    for (preset, modes) in [
        ("clotho-selectivity", &["S-scan", "SI-scan"][..]),
        ("clotho-point", &["SI-scan"][..]),
        ("clotho-projectivity", &["S-scan"][..]),
    ] {
        let out = coopscan(
            &[
                "bench",
                "--preset",
                preset,
                "--rows",
                "30000",
                "--standalone-runs",
                "1",
            ],
            tmp.path(),
        );
        let text = String::from_utf8_lossy(&out.stdout).to_string();
        assert!(
            out.status.success(),
            "{preset}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        for layout in LAYOUTS {
            for mode in modes {
                let line = format!("  {layout:<6}  {mode:<8}");
                assert!(text.contains(&line), "{preset}: no {line:?} in\n{text}");
            }
        }
        assert!(text.contains("paper: "), "{text}");
    }
    let peers = coopscan(
        &[
            "bench",
            "--preset",
            "clotho-point",
            "--engines",
            "coopscan,duckdb",
        ],
        tmp.path(),
    );
    assert!(!peers.status.success());
    assert!(String::from_utf8_lossy(&peers.stderr).contains("coopscan alone"));
}

/// `coopscan sim --replay` runs a bench report's own queries over its table: every
/// query reads the chunks its rows touch (counted here from the manifest's chunk starts),
/// under the report's scan shape or the one given; what it cannot replay it refuses.
#[test]
fn sim_replays_a_bench_report_over_its_table() {
    let (tmp, _) = lineitem_sf001();
    let dir = tmp.path().join("lineitem");
    let table = coopscan_storage::Table::open(&dir).expect("table");
    let rows = table.rows();
    let queries = [
        (0, 0, "F-10", rows / 3, rows / 3 + rows / 10),
        (0, 1, "S-50", rows / 4, rows / 4 + rows / 2),
        (1, 0, "F-100", 0, rows),
        (1, 1, "S-01", rows - rows / 100, rows),
    ];
    let runs: Vec<serde_json::Value> = queries
        .iter()
        .map(|(stream, index, kind, start, end)| {
            serde_json::json!({"stream": stream, "index": index, "query_type": kind,
                "row_start": start, "row_end": end, "in_order": false})
        })
        .collect();
    let report = serde_json::json!({
        "parameters": {"layout": "pax", "buffer_pct": 25.0, "scan_workers": 2, "static_split": true},
        "table": {"rows": rows, "bytes": table.chunk_count() << 20},
        "bandwidth_mb_s": 100.0,
        "stagger_s": 0.05,
        "calibration": {"input": {"fast_read_bytes": 1e6, "fast_cpu_s": 0.001, "slow_cpu_s": 0.01}},
        "policies": {"relevance": {"query_runs": runs}}
    });
    let path = tmp.path().join("report.json");
    std::fs::write(&path, report.to_string()).expect("write the report");
    let (report_arg, dir_arg) = (path.to_str().expect("utf8"), dir.to_str().expect("utf8"));
    let replay = |extra: &[&str]| {
        let args = [
            "sim",
            "--replay",
            report_arg,
            "--table",
            dir_arg,
            "--policies",
            "relevance",
        ];
        coopscan(&[&args[..], extra].concat(), tmp.path())
    };
    // The relevance run of a replay given `extra`, read back from its --json.
    let relevance_run = |extra: &[&str]| -> serde_json::Value {
        let path = tmp.path().join("replayed.json");
        let out = replay(&[extra, &["--json", path.to_str().expect("utf8")]].concat());
        assert!(
            out.status.success(),
            "{extra:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let text = std::fs::read_to_string(&path).expect("the replay's JSON");
        let doc: serde_json::Value = serde_json::from_str(&text).expect("JSON");
        doc["policies"]["relevance"].clone()
    };
    let got = relevance_run(&[])["queries"].clone();
    // A plain model of the manifest: chunk k holds rows starts[k]..starts[k + 1].
    let starts = table.chunk_row_starts();
    let touched = |start: u64, end: u64| {
        let ends = starts.iter().skip(1).copied().chain([rows]);
        starts
            .iter()
            .zip(ends)
            .filter(|&(&s, e)| s < end && e > start)
            .count() as u64
    };
    for (stream, index, kind, start, end) in queries {
        let name = format!("s{stream}q{index}");
        let q = got
            .as_array()
            .expect("queries")
            .iter()
            .find(|q| q["name"] == name.as_str());
        let q = q.unwrap_or_else(|| panic!("{name} not replayed: {got}"));
        assert_eq!(
            (q["kind"].as_str(), q["chunks"].as_u64()),
            (Some(kind), Some(touched(start, end))),
            "{name}"
        );
    }
    // A disk of 1 MB/s instead of the report's 100: one load after another, each of a
    // 1 MiB chunk, at least 1.048576 s.
    let slow = relevance_run(&["--bandwidth-mb", "1"]);
    let loads = slow["chunk_loads"].as_f64().expect("loads");
    let total = slow["total_time_s"].as_f64().expect("total");
    assert!(
        loads > 0.0 && total >= loads * 1.048,
        "{loads} loads in {total} s"
    );
    // The loader's turn after each load makes the same run longer.
    let loader = relevance_run(&["--loader-cpu-ms", "5"]);
    let base = relevance_run(&[]);
    let time = |run: &serde_json::Value| run["total_time_s"].as_f64().expect("total");
    assert!(
        time(&loader) > time(&base),
        "{} s with the loader's turn, {} s without",
        time(&loader),
        time(&base)
    );
    let refused: [(&[&str], &str); 5] = [
        (&["--scan-workers", "65"], "1 to 64 workers"),
        (&["--cores", "0"], "need a core"),
        (&["--cpu-scale", "0"], "a factor in"),
        (&["--bandwidth-mb", "0"], "is outside"),
        (&["--loader-cpu-ms", "2000"], "milliseconds in"),
    ];
    for (extra, why) in refused {
        let out = replay(extra);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            !out.status.success() && err.contains(why),
            "{extra:?}: {err}"
        );
    }
    let no_table = coopscan(&["sim", "--replay", report_arg], tmp.path());
    assert!(!no_table.status.success(), "--replay without --table ran");
}

/// `coopscan sim --preset common-prefix` prints each way of snapshots with its loads
/// against the one-snapshot run's; `bench` refuses it by name, saying why.
#[test]
fn common_prefix_runs_in_the_simulator_only() {
    let data = tempfile::tempdir().expect("tempdir");
    let out = coopscan(
        &[
            "sim",
            "--preset",
            "common-prefix",
            "--policies",
            "relevance",
        ],
        data.path(),
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for way in ["one snapshot", "common prefix", "disjoint versions"] {
        assert!(text.contains(way), "{way}: {text}");
    }
    let out = coopscan(&["bench", "--preset", "common-prefix"], data.path());
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("only in the simulator"), "{err}");
}

/// `coopscan sim --scan-workers` and `--checkpoint-every-s` are for Table 2 and 3's
/// queries, a scan has 1 to 64 workers and checkpoints come at a positive interval
/// without a trace: anything else is refused before a simulation runs.
#[test]
fn sim_scan_workers_and_checkpoints_are_checked() {
    let data = tempfile::tempdir().expect("tempdir");
    let trace = data.path().join("traces");
    let trace = trace.to_str().expect("a UTF-8 path");
    let refused: [(&[&str], &str); 8] = [
        (
            &["--preset", "homogeneous", "--checkpoint-every-s", "10"],
            "only table2 and table3 take checkpoints",
        ),
        (
            &["--preset", "table2", "--checkpoint-every-s", "0"],
            "the interval must be positive",
        ),
        (
            &[
                "--preset",
                "table2",
                "--checkpoint-every-s",
                "5",
                "--trace",
                trace,
            ],
            "follow one version's chunks",
        ),
        (
            &["--preset", "fig8", "--scan-workers", "2"],
            "only table2 and table3",
        ),
        (
            &["--preset", "heterogeneous", "--static-split"],
            "only table2 and table3",
        ),
        (
            &["--preset", "table2", "--scan-workers", "65"],
            "1 to 64 workers",
        ),
        (
            &["--preset", "pbm-sharing", "--cpu-shares", "short-first"],
            "only table2 and table3",
        ),
        (
            &["--preset", "table2", "--cpu-shares", "fair"],
            "equal, short-first",
        ),
    ];
    for (args, why) in refused {
        let out = coopscan(&[&["sim"][..], args].concat(), data.path());
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            !out.status.success() && err.contains(why),
            "{args:?}: {err}"
        );
    }
}

/// `coopscan append` writes a query's rows as new pages after the table's: sessions
/// after it see them beside the changes committed before (a delete, an inserted row),
/// under a Scan and under CScans, further changes commit, and the table verifies.
#[test]
fn append_adds_a_querys_rows_and_keeps_the_changes() {
    let (tmp, spec) = lineitem_sf001();
    let sql = |policy: &str, statement: &str| {
        let out = coopscan(
            &["sql", "--table", &spec, "--policy", policy, statement],
            tmp.path(),
        );
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(out.status.success(), "{statement}: {stderr}");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    sql("scan", "DELETE FROM lineitem WHERE l_orderkey < 100");
    sql(
        "scan",
        "INSERT INTO lineitem SELECT 999999, l_partkey, l_suppkey, l_linenumber, l_quantity, \
         l_extendedprice, l_discount, l_tax, l_returnflag, l_linestatus, l_shipdate, \
         l_commitdate, l_receiptdate, l_shipinstruct, l_shipmode, 'new' FROM lineitem \
         WHERE l_orderkey = 100 AND l_linenumber = 1",
    );
    let append = |query: &str| {
        let args = [
            "append", "--table", &spec, "--into", "lineitem", "--sql", query,
        ];
        coopscan(&args, tmp.path())
    };
    let appended = lines_below(1000) - lines_below(100);
    let done = append("SELECT * FROM lineitem WHERE l_orderkey < 1000");
    let said = String::from_utf8_lossy(&done.stdout);
    assert!(
        done.status.success() && said.contains(&format!("{appended} rows appended")),
        "append: {said} {}",
        String::from_utf8_lossy(&done.stderr)
    );
    let rows = 60175 - lines_below(100) + 1 + appended;
    let count =
        "SELECT count(*) AS n, sum(CASE WHEN l_orderkey = 999999 THEN 1 ELSE 0 END) AS new, \
                 sum(CASE WHEN l_orderkey < 100 THEN 1 ELSE 0 END) AS deleted FROM lineitem";
    for policy in ["scan", "relevance"] {
        let out = sql(policy, count);
        assert!(
            out.lines().any(|l| {
                let cells: Vec<&str> = l
                    .split('|')
                    .map(str::trim)
                    .filter(|c| !c.is_empty())
                    .collect();
                cells == [rows.to_string().as_str(), "1", "0"]
            }),
            "{policy}: want {rows} rows, 1 new, 0 deleted: {out}"
        );
    }
    sql(
        "relevance",
        "DELETE FROM lineitem WHERE l_orderkey = 999999",
    );
    let out = sql("scan", "SELECT count(*) FROM lineitem");
    assert!(
        out.contains(&format!("{}", rows - 1)),
        "after a change: {out}"
    );
    let dir = tmp.path().join("lineitem");
    let verify = coopscan(&["verify", dir.to_str().expect("utf8")], tmp.path());
    assert!(
        verify.status.success(),
        "verify: {}",
        String::from_utf8_lossy(&verify.stderr)
    );
    let refused = append("DELETE FROM lineitem");
    assert!(!refused.status.success(), "a change is not a query");
    let narrow = append("SELECT l_orderkey FROM lineitem");
    let said = String::from_utf8_lossy(&narrow.stderr);
    assert!(
        !narrow.status.success()
            && said.contains("gives 1 column (l_orderkey)")
            && said.contains("l_comment"),
        "too few columns, named: {said}"
    );
}
