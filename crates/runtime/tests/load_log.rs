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
