//! A damaged page fails the load of its chunk: the scans that need that chunk get an
//! error naming the file; the others finish with correct results; nothing hangs.
// A scan takes a list of ranges; one-range lists are the point here.
#![allow(clippy::single_range_in_vec_init)]

mod common;

use std::sync::Arc;

use coopscan_runtime::{PolicyKind, Runtime, RuntimeError};
use coopscan_storage::page::PAGE_HEADER_LEN;
use coopscan_storage::{Layout, Table};

use common::*;

const ROWS: i64 = 8_000;
const BAD_CHUNK: usize = 5;

/// Flips one payload byte in the first page of chunk `k`; returns the file's name.
fn corrupt_chunk(table: &Table, k: usize) -> String {
    let extent = table.chunk(k).columns[0].extent;
    let path = table.file_path(extent.file);
    let mut data = std::fs::read(&path).expect("read");
    data[(extent.offset as usize) + PAGE_HEADER_LEN + 3] ^= 0x40;
    std::fs::write(&path, data).expect("write");
    path.file_name()
        .expect("name")
        .to_string_lossy()
        .into_owned()
}

#[test]
fn only_scans_needing_a_corrupt_chunk_fail() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let table = write_table(tmp.path(), Layout::Pax, ROWS);
    let values = sequential_values(&table);
    let file = corrupt_chunk(&table, BAD_CHUNK);
    let bad_rows = table.chunk(BAD_CHUNK).rows();
    let before = 0..table.chunk(BAD_CHUNK - 1).rows().end;
    let after = table.chunk(BAD_CHUNK + 1).rows().start..ROWS as u64;
    let specs = vec![
        vec![0..ROWS as u64],                   // needs the bad chunk
        vec![bad_rows.start + 1..bad_rows.end], // only the bad chunk
        vec![before.clone()],                   // never touches it
        vec![before.clone(), after.clone()],    // around it
    ];
    for policy in PolicyKind::ALL {
        for frames in [2, 6] {
            let runtime = Arc::new(
                Runtime::new(table.clone(), device(), config(frames, policy)).expect("runtime"),
            );
            let results = run_scans(&runtime, specs.clone());
            for r in &results[..2] {
                match r {
                    Err(e @ RuntimeError::Load { chunk, .. }) => {
                        assert_eq!(chunk.0 as usize, BAD_CHUNK, "{policy}");
                        assert!(e.to_string().contains(&file), "{policy}: {e}");
                        assert!(e.to_string().contains("checksum"), "{policy}: {e}");
                    }
                    other => panic!("{policy}/{frames}: expected a load error, got {other:?}"),
                }
            }
            for (ranges, r) in specs[2..].iter().zip(&results[2..]) {
                let got = r
                    .as_ref()
                    .unwrap_or_else(|e| panic!("{policy}/{frames}: {e}"));
                assert_eq!(*got, expected(&values, &table, ranges), "{policy}/{frames}");
            }
            assert!(runtime.stats().load_failures >= 1);
            runtime
                .check_invariants()
                .expect("invariants after failure");
        }
    }
}
