//! The load log records every chunk load with the tag of the scan it was scheduled
//! for: the benchmark's per-query I/O counts and its Figure 4 are built from it.

mod common;

use std::collections::BTreeSet;

use coopscan_runtime::{PolicyKind, Runtime};
use coopscan_storage::Layout;

use common::{config, consume, device, write_table, K, V};

#[test]
fn a_lone_tagged_scan_owns_every_load_of_exactly_its_chunks() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let table = write_table(tmp.path(), Layout::Pax, 20_000);
    let rows = table.rows();
    let expected: BTreeSet<u32> = {
        let chunks = table.chunks_for_rows(rows / 4..rows / 2);
        (chunks.start as u32..chunks.end as u32).collect()
    };
    for policy in PolicyKind::ALL {
        let runtime = Runtime::new(table.clone(), device(), config(8, policy)).expect("runtime");
        let mut scan = runtime
            .register_tagged(
                std::iter::once(rows / 4..rows / 2).collect(),
                vec![K, V],
                Some(42),
            )
            .expect("register");
        consume(&mut scan, None).expect("scan");
        drop(scan);
        let (log, dropped) = runtime.load_log();
        assert_eq!(dropped, 0);
        assert_eq!(log.len() as u64, runtime.stats().piece_loads, "{policy:?}");
        let loaded: BTreeSet<u32> = log.iter().map(|r| r.chunk).collect();
        assert_eq!(
            loaded, expected,
            "{policy:?}: a lone scan loads each of its chunks once"
        );
        // Elevator's global cursor loads for no scan in particular (the paper's Table 2
        // has no per-query I/O column for it either); every other policy loads for one.
        let want_tag = if policy == PolicyKind::Elevator {
            None
        } else {
            Some(42)
        };
        assert!(log.iter().all(|r| r.tag == want_tag), "{policy:?}: {log:?}");
        assert!(
            log.windows(2).all(|w| w[0].at <= w[1].at),
            "{policy:?}: completion order"
        );
        assert_eq!(
            log.iter().map(|r| r.bytes).sum::<u64>(),
            runtime.stats().bytes_read
        );
    }
}

#[test]
fn the_trace_names_each_chunk_every_scan_consumed_once() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let table = write_table(tmp.path(), Layout::Pax, 20_000);
    let rows = table.rows();
    let ranges = [0..rows / 2, rows / 3..rows];
    for policy in PolicyKind::ALL {
        let runtime = Runtime::new(table.clone(), device(), config(4, policy)).expect("runtime");
        runtime.record_trace();
        for r in &ranges {
            let mut scan = runtime
                .register(vec![r.clone()], vec![K, V])
                .expect("register");
            consume(&mut scan, None).expect("scan");
        }
        let trace = runtime.take_trace();
        let mut per_scan: std::collections::BTreeMap<u64, Vec<u32>> = Default::default();
        for r in &trace {
            per_scan.entry(r.scan.0).or_default().push(r.piece.chunk.0);
            assert!(r.bytes > 0, "{policy}: {r:?}");
        }
        let got: Vec<BTreeSet<u32>> = per_scan
            .values()
            .map(|chunks| chunks.iter().copied().collect())
            .collect();
        let want: Vec<BTreeSet<u32>> = ranges
            .iter()
            .map(|r| {
                let c = table.chunks_for_rows(r.clone());
                (c.start as u32..c.end as u32).collect()
            })
            .collect();
        assert_eq!(got, want, "{policy}");
        let references: usize = per_scan.values().map(Vec::len).sum();
        assert_eq!(
            references,
            want.iter().map(BTreeSet::len).sum::<usize>(),
            "{policy}: each once"
        );
    }
}

/// `Runtime::buffer_report` (what the loader prints on a stall) says what the buffer
/// holds: the table by name, a scan's held chunk as pinned, its pieces as resident, and
/// none of it once the scan is gone.
#[test]
fn the_buffer_report_names_the_table_and_what_a_scan_holds() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let table = write_table(tmp.path(), Layout::Pax, 20_000);
    let name = table.manifest().name.clone();
    let rows = table.rows();
    let runtime = Runtime::new(table, device(), config(8, PolicyKind::Relevance)).expect("runtime");
    let mut scan = runtime
        .register(std::iter::once(0..rows).collect(), vec![K, V])
        .expect("register");
    let chunk = scan.next_chunk().expect("no error").expect("a chunk");
    let report = runtime.buffer_report();
    assert!(report.contains(&format!("table {name}: ")), "{report}");
    assert!(report.contains("1 chunks pinned"), "{report}");
    assert!(report.contains("1 scans active"), "{report}");
    assert!(!report.contains(" 0 pieces resident"), "{report}");
    drop(chunk);
    drop(scan);
    let report = runtime.buffer_report();
    assert!(
        report.contains("0 chunks pinned") && report.contains("0 scans active"),
        "{report}"
    );
    assert!(report.contains("0 scan workers waiting"), "{report}");
}
