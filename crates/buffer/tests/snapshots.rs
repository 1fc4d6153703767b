//! Bulk appends and snapshots (2012 paper §2.1): chunks two snapshots share are one
//! chunk of the ABM, marked *shared* while the snapshots of two active scans hold it and
//! *local* while only one does; relevance loads a scan's shared chunks before its local
//! ones.
#![allow(clippy::unwrap_used)] // test code: an unwrap that fails is a failed test

use coopscan_buffer::*;

const ROWS: u64 = 10;

fn appended(count: usize) -> Vec<AppendedChunk> {
    vec![
        AppendedChunk {
            rows: ROWS,
            bytes: vec![1]
        };
        count
    ]
}

fn rows_of(snapshot: &Snapshot) -> u64 {
    u64::from(snapshot.chunks().len()) * ROWS
}

/// The paper's Figure 6: T1 and T2 append to the master (chunks 0-3), T2 commits, T3
/// appends to T2's snapshot. The marks follow the scans that enter and leave.
#[test]
fn marks_follow_the_snapshots_of_active_scans() {
    let geometry = TableGeometry::uniform(4, ROWS).unwrap();
    let mut abm = Abm::with_kind(geometry, AbmConfig::new(8), PolicyKind::Relevance).unwrap();
    let master = Snapshot::first(4);
    let t1 = master.appended(range(abm.append_chunks(&appended(2)).unwrap()));
    let t2 = master.appended(range(abm.append_chunks(&appended(2)).unwrap()));
    let t3 = t2.appended(range(abm.append_chunks(&appended(2)).unwrap()));
    assert_eq!(t3.chunks().ranges(), &[0..4, 6..10]);
    let mut out = Vec::new();
    let scan_of = |abm: &mut Abm, s: &Snapshot| {
        let spec = ScanSpec::new(0..rows_of(s), ColumnMask::ALL).on_snapshot(s.clone());
        abm.register_scan(&spec, Nanos::ZERO).unwrap().scan
    };
    let marks = |abm: &Abm| -> String {
        let state = abm.state();
        (0..state.chunk_count())
            .map(
                |c| match (state.is_shared(ChunkId(c)), state.is_local(ChunkId(c))) {
                    (true, _) => 'S',
                    (_, true) => 'L',
                    _ => '.',
                },
            )
            .collect()
    };
    let a = scan_of(&mut abm, &t1);
    assert_eq!(marks(&abm), "LLLLLL....", "one scan: nothing is shared");
    let b = scan_of(&mut abm, &t3);
    assert_eq!(marks(&abm), "SSSSLLLLLL");
    let c = scan_of(&mut abm, &t2);
    assert_eq!(marks(&abm), "SSSSLLSSLL", "T2's and T3's share 0-3 and 6-7");
    abm.unregister_scan(a, Nanos::ZERO, &mut out).unwrap();
    assert_eq!(marks(&abm), "SSSS..SSLL");
    abm.unregister_scan(b, Nanos::ZERO, &mut out).unwrap();
    assert_eq!(marks(&abm), "LLLL..LL..");
    abm.unregister_scan(c, Nanos::ZERO, &mut out).unwrap();
    assert_eq!(marks(&abm), "..........");
    abm.check_invariants().unwrap();
}

fn range(ids: std::ops::Range<ChunkId>) -> std::ops::Range<u32> {
    ids.start.0..ids.end.0
}

/// A scan of T1's snapshot (master 0-7, its own 8-9) beside a scan of the master's
/// chunks 6-7. Once the second has its chunks, the disk head is at 8, the first
/// scan's local chunks; relevance still loads every shared chunk it needs first.
/// Every chunk is loaded once: the shared ones serve both scans.
#[test]
fn relevance_loads_shared_chunks_before_local_ones() {
    let geometry = TableGeometry::uniform(8, ROWS).unwrap();
    let config = AbmConfig::new(20).with_max_inflight(1);
    let mut abm = Abm::with_kind(geometry, config, PolicyKind::Relevance).unwrap();
    let master = Snapshot::first(8);
    let t1 = master.appended(range(abm.append_chunks(&appended(2)).unwrap()));
    let whole = ScanSpec::new(0..rows_of(&t1), ColumnMask::ALL).on_snapshot(t1);
    let a = abm.register_scan(&whole, Nanos::ZERO).unwrap().scan;
    let part = ScanSpec::new(6 * ROWS..8 * ROWS, ColumnMask::ALL).on_snapshot(master);
    let b = abm.register_scan(&part, Nanos::ZERO).unwrap().scan;
    let (loads, _) = drive(&mut abm, &[a, b]);
    assert_eq!(loads.len(), 10, "each chunk loaded once: {loads:?}");
    assert_eq!(&loads[..2], &[6, 7], "the shorter scan first: {loads:?}");
    let first_local = loads.iter().position(|c| *c >= 8).unwrap();
    assert_eq!(first_local, 8, "local chunks last: {loads:?}");
}

/// Among pieces no scan needs, a local chunk's goes before a shared one's used longer
/// ago: scan A of T1's snapshot has read chunk 1 (shared with the master) and then its
/// own chunk 4; scan B of the master then needs room for its third chunk.
#[test]
fn relevance_evicts_unneeded_local_chunks_first() {
    let geometry = TableGeometry::uniform(4, ROWS).unwrap();
    let config = AbmConfig::new(4).with_max_inflight(1);
    let mut abm = Abm::with_kind(geometry, config, PolicyKind::Relevance).unwrap();
    let master = Snapshot::first(4);
    let t1 = master.appended(range(abm.append_chunks(&appended(1)).unwrap()));
    let spec = ScanSpec::new(vec![ROWS..2 * ROWS, 4 * ROWS..5 * ROWS], ColumnMask::ALL);
    let a = abm
        .register_scan(&spec.on_snapshot(t1), Nanos::ZERO)
        .unwrap()
        .scan;
    let (loads, _) = drive(&mut abm, &[a]);
    assert_eq!(loads, vec![1, 4]);
    let spec = ScanSpec::new(vec![0..ROWS, 2 * ROWS..4 * ROWS], ColumnMask::ALL);
    let b = abm
        .register_scan(&spec.on_snapshot(master), Nanos::ZERO)
        .unwrap()
        .scan;
    let (loads, evicted) = drive(&mut abm, &[a, b]);
    assert_eq!(loads, vec![0, 2, 3]);
    assert_eq!(
        evicted,
        vec![4],
        "the local chunk, though chunk 1 was used before it"
    );
}

/// Runs the scans to the end, loads completed at once, each chunk released as soon as
/// it is delivered; no scan is unregistered. Returns the loaded chunks in order and
/// the evicted ones.
fn drive(abm: &mut Abm, scans: &[ScanId]) -> (Vec<u32>, Vec<u32>) {
    let (mut loads, mut evicted, mut out) = (Vec::new(), Vec::new(), Vec::new());
    let mut done = vec![false; scans.len()];
    for _ in 0..1000 {
        for (i, scan) in scans.iter().enumerate() {
            if done[i] {
                continue;
            }
            let _ = abm.release_chunk(*scan, Nanos::ZERO);
            done[i] = abm.next_chunk(*scan, Nanos::ZERO).unwrap() == NextChunk::Finished;
        }
        if done.iter().all(|d| *d) {
            return (loads, evicted);
        }
        if let Some(load) = abm.next_load(Nanos::ZERO) {
            loads.push(load.chunk.0);
            evicted.extend(load.evicted.iter().map(|p| p.chunk.0));
            for piece in load.pieces {
                abm.load_completed(piece, Nanos::ZERO, &mut out).unwrap();
            }
        }
        out.clear();
        abm.check_invariants().unwrap();
    }
    panic!("the scans did not finish: loads {loads:?}");
}
