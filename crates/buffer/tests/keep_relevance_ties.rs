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

/// Reads chunks 7, 6, 5, 4 in that order with `read` (so the lowest chunk is the most
/// recently used; a 4-chunk buffer evicts nothing), then chunks 0 and 1: the chunks of
/// the pieces evicted for those two loads.
fn evicted_reading_0_and_1_after_7654(
    abm: &mut Abm<AnyPolicy>,
    read: fn(&mut Abm<AnyPolicy>, u64, u64) -> LoadDecision,
) -> Vec<u32> {
    for (t, chunk) in [7, 6, 5, 4].into_iter().enumerate() {
        assert!(read(abm, chunk, t as u64).evicted.is_empty());
    }
    let mut evicted = Vec::new();
    for (t, chunk) in [0, 1].into_iter().enumerate() {
        let load = read(abm, chunk, 10 + t as u64);
        evicted.extend(load.evicted.iter().map(|p| p.chunk.0));
    }
    abm.check_invariants().unwrap();
    evicted
}

#[test]
fn unneeded_chunks_leave_least_recently_used_first() {
    for eviction in [EvictionStrategy::Greedy, EvictionStrategy::Knapsack] {
        let geometry = TableGeometry::uniform(8, ROWS).unwrap();
        let config = AbmConfig::new(4).with_eviction(eviction);
        let mut abm = Abm::with_kind(geometry, config, PolicyKind::Relevance).unwrap();
        let evicted = evicted_reading_0_and_1_after_7654(&mut abm, read_once);
        assert_eq!(
            evicted,
            vec![7, 6],
            "{eviction:?}: least recently used first"
        );
    }
}

/// The knapsack offers each class only its first few chunks (4): they must be the
/// least recently used, not the lowest, also when the class of chunks nobody needs holds
/// more (8 here). Offering the lowest 4 evicted 7 and 6, chunks read just before.
#[test]
fn knapsack_offers_a_large_class_least_recently_used_first() {
    let geometry = TableGeometry::uniform(12, ROWS).unwrap();
    let config = AbmConfig::new(8).with_eviction(EvictionStrategy::Knapsack);
    let mut abm = Abm::with_kind(geometry, config, PolicyKind::Relevance).unwrap();
    for (t, chunk) in (4..12).rev().enumerate() {
        assert!(read_once(&mut abm, chunk, t as u64).evicted.is_empty());
    }
    let mut evicted = Vec::new();
    for (t, chunk) in [0, 1].into_iter().enumerate() {
        let load = read_once(&mut abm, chunk, 20 + t as u64);
        evicted.extend(load.evicted.iter().map(|p| p.chunk.0));
    }
    abm.check_invariants().unwrap();
    assert_eq!(evicted, vec![11, 10], "least recently used first");
}

/// A DSM table of `chunks` chunks with two columns of 1 byte each.
fn columnar(chunks: u32) -> TableGeometry {
    TableGeometry::uniform(chunks, ROWS)
        .unwrap()
        .with_column_bytes(vec![vec![1, 1]; chunks as usize])
        .unwrap()
}

/// [`read_once`] on a DSM table: every piece of the load completes.
fn read_columns_once(abm: &mut Abm<AnyPolicy>, chunk: u64, t: u64) -> LoadDecision {
    let t = Nanos(t * S);
    let spec = ScanSpec::new(vec![chunk * ROWS..(chunk + 1) * ROWS], ColumnMask::ALL);
    let scan = abm.register_scan(&spec, t).unwrap().scan;
    assert_eq!(abm.next_chunk(scan, t).unwrap(), NextChunk::Wait);
    let load = abm.next_load(t).unwrap();
    assert_eq!(
        load.chunk.0, chunk as u32,
        "the load is for the waiting scan"
    );
    let mut out = Vec::new();
    for piece in &load.pieces {
        abm.load_completed(*piece, t, &mut out).unwrap();
    }
    assert!(
        out.iter().any(|d| d.scan == scan),
        "the waiting scan gets its chunk"
    );
    abm.release_chunk(scan, t).unwrap();
    abm.unregister_scan(scan, t, &mut out).unwrap();
    load
}

/// Column storage, pieces nobody needs (the first eviction step, greedy and knapsack
/// alike): least recently used first. Taking the lowest chunk's first evicted 4 and 5.
#[test]
fn unneeded_pieces_leave_least_recently_used_first() {
    for eviction in [EvictionStrategy::Greedy, EvictionStrategy::Knapsack] {
        let config = AbmConfig::new(4).with_eviction(eviction);
        let mut abm = Abm::with_kind(columnar(8), config, PolicyKind::Relevance).unwrap();
        let evicted = evicted_reading_0_and_1_after_7654(&mut abm, read_columns_once);
        assert_eq!(
            evicted,
            vec![7, 7, 6, 6],
            "{eviction:?}: least recently used first"
        );
    }
}

/// Column storage, chunks a scan still needs, all in one class with the same `E / Pe`:
/// the least recently used goes, greedy and knapsack alike, also when the class holds
/// more chunks than the knapsack is offered per class (4). Taking the lowest chunk
/// evicted 4 (greedy) and the knapsack, offered 4-7 only, 7.
#[test]
fn needed_chunks_tied_on_keep_relevance_leave_least_recently_used_first() {
    let config = AbmConfig::new(8);
    let mut abm = Abm::with_kind(columnar(12), config, PolicyKind::Relevance).unwrap();
    // A scan over the whole table that never asks for a chunk: every chunk read below
    // stays wanted by it, so all fall in its class.
    let everything = ScanSpec::new(0..12 * ROWS, ColumnMask::ALL);
    abm.register_scan(&everything, Nanos(0)).unwrap();
    for (t, chunk) in (4..12).rev().enumerate() {
        assert!(read_columns_once(&mut abm, chunk, t as u64)
            .evicted
            .is_empty());
    }
    abm.check_invariants().unwrap();
    let state = abm.state();
    assert!(state.chunks_with_spare_columns().is_empty());
    assert_eq!(state.pool().free_bytes(), 0, "the buffer is full");
    let request = EvictionRequest {
        bytes: 2,
        chunk: Some(ChunkId(0)),
        for_scan: None,
    };
    let chunks = |plan: Option<Vec<PieceId>>| -> Vec<u32> {
        plan.unwrap().iter().map(|p| p.chunk.0).collect()
    };
    let ranking = RelevanceRanking::new(state, &request);
    let greedy = chunks(plan_eviction(
        &mut KeepRelevanceReplacer,
        state.pool(),
        &ranking,
        &request,
    ));
    let knapsack = chunks(plan_knapsack(state.pool(), &ranking, &request));
    assert_eq!(
        (greedy, knapsack),
        (vec![11, 11], vec![11, 11]),
        "(greedy, knapsack)"
    );
}
