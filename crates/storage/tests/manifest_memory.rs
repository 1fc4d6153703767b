//! Memory of loading a large manifest (found re-testing issue 9): `Manifest::load`
//! parsed the text into a `serde_json::Value` tree first, about 20 times the text's
//! size, so a 250 MB manifest (under the 256 MiB limit) took 5.4 GB before it was
//! refused. It now parses straight into the `Manifest`. This file holds one test so
//! that the process's peak RSS is this test's.

use std::io::Write;

use coopscan_storage::Manifest;

/// Peak resident set size of this process so far (`VmHWM`), in bytes.
fn peak_rss() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    let line = status
        .lines()
        .find(|l| l.starts_with("VmHWM:"))
        .expect("VmHWM");
    let kb: u64 = line
        .split_whitespace()
        .nth(1)
        .and_then(|v| v.parse().ok())
        .expect("VmHWM in kB");
    kb * 1024
}

#[test]
fn a_large_manifest_costs_a_small_multiple_of_its_size_to_load() {
    const CHUNKS: usize = 360_000;
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("manifest.json");
    {
        // Streamed to the file, so that writing it does not raise the peak.
        let mut w = std::io::BufWriter::new(std::fs::File::create(&path).expect("create"));
        write!(
            w,
            r#"{{"format":"coopscan-table","version":2,"checksum":"xxh3-64:0000000000000000","table_id":1,"name":"t","layout":"pax","page_bytes":4096,"chunk_bytes":65536,"rows":{CHUNKS},"schema":{{"columns":[{{"name":"a","type":{{"kind":"int64"}}}}]}},"files":[{{"name":"data.pax","pages":{CHUNKS}}}],"chunks":["#
        )
        .expect("write");
        for k in 0..CHUNKS {
            let sep = if k == 0 { "" } else { "," };
            write!(
                w,
                r#"{sep}{{"row_start":{k},"row_count":1,"pages":[{k},1],"columns":[{{"extent":{{"file":0,"offset":{},"len":4096}},"bytes":8,"zonemap":{{"min":{k},"max":{k}}}}}]}}"#,
                k * 4096
            )
            .expect("write");
        }
        write!(w, "]}}").expect("write");
        w.flush().expect("flush");
    }
    let text_bytes = std::fs::metadata(&path).expect("metadata").len();
    let before = peak_rss();
    let err = Manifest::load(dir.path()).expect_err("the checksum is wrong");
    assert!(err.to_string().contains("checksum mismatch"), "{err}");
    let grown = peak_rss().saturating_sub(before);
    assert!(
        grown < 5 * text_bytes,
        "loading a {text_bytes}-byte manifest raised the peak RSS by {grown} bytes"
    );
}
