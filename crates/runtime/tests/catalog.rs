//! Two tables on disk under one runtime and one buffer smaller than either: concurrent
//! scans of both, under every policy, each get exactly their tuples (checked against
//! the generator's formula), the budget holds, and loads of one table evict pieces of
//! the other.

mod common;

use std::ops::Range;
use std::sync::{mpsc, Arc};

use coopscan_buffer::{RowRanges, ScanOrder, TableId};
use coopscan_runtime::{PolicyKind, Runtime};
use coopscan_storage::Layout;

use common::*;

const ROWS: [i64; 2] = [12_000, 9_000];
const SCANS_PER_TABLE: usize = 4;
/// Frames of the largest chunk: fewer than either table's chunks.
const FRAMES: u32 = 5;

#[test]
fn two_tables_share_one_buffer_under_every_policy() {
    let tmp = [tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap()];
    let tables = vec![
        write_table(tmp[0].path(), Layout::Pax, ROWS[0]),
        write_table(tmp[1].path(), Layout::Dsm, ROWS[1]),
    ];
    assert!(tables.iter().all(|t| t.chunk_count() > FRAMES as usize));
    let mut foreign = 0;
    let mut rng = Rng(0x5eed_0f7a_b1e5);
    for policy in PolicyKind::ALL {
        let runtime = Runtime::with_tables(tables.clone(), device(), config(FRAMES, policy));
        let runtime = Arc::new(runtime.expect("runtime"));
        let specs: Vec<(usize, Vec<Range<u64>>)> = (0..2 * SCANS_PER_TABLE)
            .map(|i| (i % 2, rng.ranges(ROWS[i % 2] as u64)))
            .collect();
        let (tx, rx) = mpsc::channel();
        for (i, (t, ranges)) in specs.iter().cloned().enumerate() {
            let (tx, runtime) = (tx.clone(), Arc::clone(&runtime));
            std::thread::spawn(move || {
                let in_scan = selected(ROWS[t] as u64, &ranges);
                let rows = RowRanges::new(ranges);
                let table = TableId(t as u32);
                let result = runtime
                    .register_scan(table, rows, vec![K, V], ScanOrder::Any, None)
                    .and_then(|mut scan| consume_checked(&mut scan, &in_scan, None));
                let _ = tx.send((i, (result, expected_from_formula(&in_scan))));
            });
        }
        for (i, (got, want)) in collect(rx, specs.len()).into_iter().enumerate() {
            let got = got.unwrap_or_else(|e| panic!("{policy}: scan {i}: {e}"));
            assert_eq!(
                (got.rows, got.sum_k, got.sum_v),
                (want.rows, want.sum_k, want.sum_v)
            );
        }
        runtime.check_invariants().expect("invariants");
        assert!(runtime.used_bytes() <= runtime.buffer_bytes());
        assert_eq!(runtime.holdings(), Default::default(), "{policy}: leaked");
        foreign += runtime.foreign_evictions().0;
    }
    assert!(
        foreign > 0,
        "no table's load ever evicted the other's pieces"
    );
}

#[test]
fn an_unknown_table_is_an_error() {
    let tmp = tempfile::tempdir().unwrap();
    let table = write_table(tmp.path(), Layout::Nsm, 1000);
    let runtime = Runtime::new(table, device(), config(4, PolicyKind::Relevance)).unwrap();
    let rows = RowRanges::new(std::iter::once(0..10));
    let err = runtime.register_scan(TableId(1), rows, vec![K], ScanOrder::Any, None);
    assert!(err.is_err_and(|e| e.to_string().contains("table 1")));
}
