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
    for layout in ["nsm", "pax", "dsm"] {
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
        assert_eq!(inspect["columns"].as_array().expect("columns").len(), 16);
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
            "1",
            "--out",
            out_dir.to_str().expect("utf8"),
        ],
        tmp.path(),
    );
    assert!(out.status.success());
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
    ] {
        let out = coopscan(&args, tmp.path());
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{args:?} must fail");
        assert!(!err.contains("panicked"), "{args:?} panicked: {err}");
        assert!(!err.is_empty(), "{args:?}: no message");
    }
}
