//! A checkpoint's new image in a running runtime (2012 paper §2.1, case (iv)): the new
//! image shares no page with the old one, so it is served as a table of its own. A
//! scan of the old version registered before goes on reading the old image (whose
//! files the checkpoint has already replaced on disk) while a scan of the new one reads
//! the new; both share the one budget; when the old version's last scan leaves, its
//! pieces and its id are gone.
#![allow(clippy::single_range_in_vec_init)]

mod common;

use std::path::Path;
use std::sync::{mpsc, Arc};

use coopscan_buffer::{RowRanges, ScanOrder, TableId};
use coopscan_runtime::{Holdings, PolicyKind, Runtime, RuntimeConfig};
use coopscan_storage::{Layout, Table};

use common::*;

const ROWS: i64 = 3000;
/// The new image's rows: fewer, as after deletes, with other values.
const NEW_ROWS: i64 = 2000;

/// Writes the new image over the old one in `dir`, as a checkpoint does (staged, then
/// swapped in, the old files removed): row `k` holds `k`, `3 * value_of(k)`.
fn overwrite(dir: &Path, layout: Layout) -> Table {
    let batch = rows_batch(0..NEW_ROWS, |k| 3 * value_of(k));
    write_image(dir, layout, &batch, true)
}

fn all_rows(table: TableId, rows: i64) -> (TableId, RowRanges) {
    (table, RowRanges::new([0..rows as u64]))
}

#[test]
fn scans_of_both_versions_read_their_own_image_and_the_old_one_goes_with_its_last_scan() {
    for layout in Layout::ALL {
        let tmp = tempfile::tempdir().expect("tempdir");
        let dir = tmp.path().join("t");
        let old = write_table(&dir, layout, ROWS);
        let old_values = sequential_values(&old);
        let config = RuntimeConfig::new(64, PolicyKind::Relevance);
        let runtime = Arc::new(Runtime::new(old.clone(), device(), config).expect("runtime"));
        let register = |(table, ranges): (TableId, RowRanges)| {
            runtime
                .register_scan(table, ranges, vec![K, V], ScanOrder::Any, None)
                .expect("register")
        };
        let mut before = register(all_rows(TableId(0), ROWS));
        let first = consume(&mut before, Some(1)).expect("a first chunk");

        let image = overwrite(&dir, layout);
        let new_values = sequential_values(&image);
        let new = runtime
            .checkpointed(TableId(0), image.clone())
            .expect("checkpointed");
        assert_ne!(new, TableId(0), "{layout}");
        assert_eq!(runtime.table().rows(), NEW_ROWS as u64, "{layout}");
        // The old snapshot is still open to a late scan (a transaction on it).
        let late = register(all_rows(TableId(0), ROWS));
        let after = register(all_rows(new, NEW_ROWS));
        let (tx, rx) = mpsc::channel();
        for (i, mut scan) in [before, late, after].into_iter().enumerate() {
            let tx = tx.clone();
            std::thread::spawn(move || {
                let totals = consume(&mut scan, None);
                drop(scan);
                let _ = tx.send((i, totals));
            });
        }
        let done = collect(rx, 3);
        let want_old = expected(&old_values, &old, &[0..ROWS as u64]);
        let rest = done[0].as_ref().expect("the old scan");
        assert_eq!(first.rows + rest.rows, want_old.rows, "{layout}");
        assert_eq!(first.sum_v + rest.sum_v, want_old.sum_v, "{layout}");
        assert_eq!(
            done[1].as_ref().expect("the late scan"),
            &want_old,
            "{layout}"
        );
        let want_new = expected(&new_values, &image, &[0..NEW_ROWS as u64]);
        assert_eq!(
            done[2].as_ref().expect("the new scan"),
            &want_new,
            "{layout}"
        );

        // Every scan has left: the old version is freed, its id unknown.
        assert_eq!(runtime.holdings(), Holdings::default(), "{layout}");
        assert!(runtime.table_at(TableId(0)).is_none(), "{layout}");
        assert_eq!(runtime.tables().len(), 1, "{layout}");
        let gone = runtime.register_scan(
            TableId(0),
            RowRanges::new([0..1]),
            vec![K],
            ScanOrder::Any,
            None,
        );
        assert!(gone.is_err(), "{layout}");
        let geometry = runtime.geometry(new).expect("the new version");
        let new_bytes: u64 = geometry.chunk_bytes().iter().sum();
        assert!(
            runtime.used_bytes() <= new_bytes,
            "{layout}: {} bytes held, the new image has {new_bytes}",
            runtime.used_bytes()
        );
        runtime.check_invariants().expect("invariants");

        // A scan of the new version after the old one is gone still reads it whole.
        let mut again = register(all_rows(new, NEW_ROWS));
        assert_eq!(
            consume(&mut again, None).expect("again"),
            want_new,
            "{layout}"
        );
    }
}

/// Without scans of the old version the checkpoint frees it at once; a checkpoint of
/// a table the runtime does not serve is refused.
#[test]
fn an_idle_old_version_is_freed_at_once() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("t");
    let old = write_table(&dir, Layout::Dsm, ROWS);
    let runtime = Runtime::new(old, device(), config(16, PolicyKind::Normal)).expect("runtime");
    let mut scan = runtime
        .register(vec![0..ROWS as u64], vec![K, V])
        .expect("register");
    consume(&mut scan, None).expect("read the old image");
    drop(scan);
    assert!(runtime.used_bytes() > 0);
    let image = overwrite(&dir, Layout::Dsm);
    assert!(runtime.checkpointed(TableId(5), image.clone()).is_err());
    let new = runtime
        .checkpointed(TableId(0), image)
        .expect("checkpointed");
    assert!(runtime.table_at(TableId(0)).is_none());
    assert_eq!(runtime.used_bytes(), 0, "the old version's pieces are gone");
    assert!(runtime.table_at(new).is_some());
    runtime.check_invariants().expect("invariants");
}

/// A hold on the old version (a plan made before the checkpoint) keeps it registered
/// after the checkpoint, also with no scan on it: a scan registered later reads the
/// old image whole. Dropping the last hold frees it.
#[test]
fn a_held_version_stays_until_its_last_hold_goes() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("t");
    let old = write_table(&dir, Layout::Pax, ROWS);
    let old_values = sequential_values(&old);
    let runtime = Runtime::new(old.clone(), device(), config(16, PolicyKind::Relevance));
    let runtime = runtime.expect("runtime");
    let holds = [runtime.hold(TableId(0)), runtime.hold(TableId(0))];
    let [first, second] = holds.map(|h| h.expect("hold"));
    assert!(runtime.hold(TableId(7)).is_err());
    let new = runtime
        .checkpointed(TableId(0), overwrite(&dir, Layout::Pax))
        .expect("checkpointed");
    assert!(runtime.table_at(TableId(0)).is_some(), "held");
    let mut late = runtime
        .register_scan(
            TableId(0),
            RowRanges::new([0..ROWS as u64]),
            vec![K, V],
            ScanOrder::Any,
            None,
        )
        .expect("a scan of the held version");
    let want = expected(&old_values, &old, &[0..ROWS as u64]);
    assert_eq!(consume(&mut late, None).expect("late"), want);
    drop(late);
    drop(first);
    assert!(runtime.table_at(TableId(0)).is_some(), "one hold is left");
    drop(second);
    assert!(
        runtime.table_at(TableId(0)).is_none(),
        "freed with its last hold"
    );
    assert!(runtime.table_at(new).is_some());
    runtime.check_invariants().expect("invariants");
}
