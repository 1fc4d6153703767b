//! A CSM table through the runtime: each column of a chunk is its own piece, as in DSM,
//! but a load of several columns reads their adjacent runs of the chunk's tile with one
//! request (DSM reads one per column, less the boundary pages it copies).
#![allow(clippy::single_range_in_vec_init)]

mod common;

use coopscan_runtime::{PolicyKind, Runtime};
use coopscan_storage::Layout;

use common::*;

const ROWS: i64 = 12_000;

#[test]
fn a_load_of_adjacent_columns_is_one_request_per_chunk() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let layout = Layout::Csm;
    let table = write_table(tmp.path(), layout, ROWS);
    let values = sequential_values(&table);
    let chunks = table.chunk_count() as u64;
    let whole_table = u32::try_from(chunks).expect("chunk count");
    let want = expected(&values, &table, &[0..ROWS as u64]);
    for policy in PolicyKind::ALL {
        let what = format!("{layout}/{policy}");
        let runtime =
            Runtime::new(table.clone(), device(), config(whole_table, policy)).expect(&what);
        let mut scan = runtime
            .register(vec![0..ROWS as u64], vec![K, V])
            .expect("scan");
        assert_eq!(consume(&mut scan, None).expect("consume"), want, "{what}");
        drop(scan);
        let (device, loader) = (runtime.device_stats(), runtime.stats());
        assert_eq!(device.requests, chunks, "{what}: one request per tile");
        assert_eq!(device.bytes, loader.bytes_read, "{what}: device = loader");
        // Every piece is exactly its run: the whole file, once.
        assert_eq!(device.bytes, table.manifest().file_len(0), "{what}: bytes");
        runtime.check_invariants().expect("invariants");
    }
}
