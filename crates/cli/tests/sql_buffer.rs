//! `coopscan sql` over several tables with one buffer (`--buffer-mb`): a join of two
//! tables gives the in-order Scan's answer under every policy with a buffer smaller than
//! the tables, and a buffer too small or out of range is a clean error.

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
}

#[test]
fn a_buffer_out_of_range_is_a_clean_error() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let tables = two_tables(tmp.path());
    for bad in [
        &["--buffer-mb", "0"][..],
        &["--buffer-mb", "4", "--frames", "8"],
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
