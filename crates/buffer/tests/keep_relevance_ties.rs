//! keepRelevance ties go to the least recently used chunk, within an equivalence class
//! too. Every chunk nobody needs is in one class (the empty interest set); taking that
//! class's lowest chunk instead evicted the chunks a finished scan had just read and
//! kept stale high-numbered ones for good: with one stream of CScans (`pbm-streams`,
//! 1 stream) relevance read 1279 chunks where PBM read 927 (docs/simulation.md).
#![allow(clippy::unwrap_used)] // test code: an unwrap that fails is a failed test
#![allow(clippy::single_range_in_vec_init)] // row ranges of one range

use coopscan_buffer::*;

const ROWS: u64 = 100;
const S: u64 = 1_000_000_000;

/// Reads `chunk` with a one-chunk scan at `t` s and retires the scan: afterwards the
/// chunk is resident, nobody needs it, and it is the most recently used.
fn read_once(abm: &mut Abm<AnyPolicy>, chunk: u64, t: u64) -> LoadDecision {
    let t = Nanos(t * S);
    let spec = ScanSpec::new(vec![chunk * ROWS..(chunk + 1) * ROWS], ColumnMask::ALL);
    let scan = abm.register_scan(&spec, t).unwrap().scan;
    assert_eq!(abm.next_chunk(scan, t).unwrap(), NextChunk::Wait);
    let load = abm.next_load(t).unwrap();
    let mut out = Vec::new();
    abm.load_completed(load.pieces[0], t, &mut out).unwrap();
    assert_eq!(out.len(), 1, "the waiting scan gets its chunk");
    abm.release_chunk(scan, t).unwrap();
    abm.unregister_scan(scan, t, &mut out).unwrap();
    load
}

#[test]
fn unneeded_chunks_leave_least_recently_used_first() {
    for eviction in [EvictionStrategy::Greedy, EvictionStrategy::Knapsack] {
        let geometry = TableGeometry::uniform(8, ROWS).unwrap();
        let config = AbmConfig::new(4).with_eviction(eviction);
        let mut abm = Abm::with_kind(geometry, config, PolicyKind::Relevance).unwrap();
        // Used in the order 7, 6, 5, 4: the lowest chunk is the most recently used.
        for (t, chunk) in [7, 6, 5, 4].into_iter().enumerate() {
            assert!(read_once(&mut abm, chunk, t as u64).evicted.is_empty());
        }
        let mut evicted = Vec::new();
        for (t, chunk) in [0, 1].into_iter().enumerate() {
            let load = read_once(&mut abm, chunk, 10 + t as u64);
            evicted.extend(load.evicted.iter().map(|p| p.chunk.0));
        }
        abm.check_invariants().unwrap();
        assert_eq!(
            evicted,
            vec![7, 6],
            "{eviction:?}: least recently used first"
        );
    }
}
