//! Predictive Buffer Management against what an oracle would do: with two in-order
//! scans at different positions, the victim is the chunk the trailing scan needs last,
//! where LRU throws out the one it needs first.
#![allow(clippy::unwrap_used)] // test code: an unwrap that fails is a failed test

use coopscan_buffer::*;

const ROWS_PER_CHUNK: u64 = 100;
const CHUNKS: u32 = 10;
const SECOND: u64 = 1_000_000_000;

/// Scan A reads chunks 0..4 at one chunk per second (loading each when it waits), then
/// scan B registers for the whole table and A asks for chunk 4 with the pool full of
/// chunks 0..=3. Returns what that load evicts.
fn victim_when_a_leader_passes_a_follower(kind: PolicyKind) -> Vec<ChunkId> {
    let geometry = TableGeometry::uniform(CHUNKS, ROWS_PER_CHUNK).unwrap();
    let mut abm = Abm::with_kind(geometry, AbmConfig::new(4), kind).unwrap();
    let full = ScanSpec::full(u64::from(CHUNKS) * ROWS_PER_CHUNK);
    let a = abm.register_scan(&full, Nanos(0)).unwrap().scan;
    let mut out = Vec::new();
    for (i, t) in (0..4).map(|i| (i, Nanos(i * SECOND))) {
        assert_eq!(abm.next_chunk(a, t).unwrap(), NextChunk::Wait, "chunk {i}");
        let load = abm.next_load(t).expect("A waits: a load");
        assert!(load.evicted.is_empty(), "the pool has room for 4 chunks");
        abm.load_completed(load.pieces[0], t, &mut out).unwrap();
        assert_eq!(
            out.drain(..).map(|d| d.chunk.0).collect::<Vec<_>>(),
            vec![i as u32]
        );
        abm.release_chunk(a, t + Nanos(SECOND / 2)).unwrap();
    }
    let t = Nanos(4 * SECOND);
    let b = abm.register_scan(&full, t).unwrap();
    assert!(b.admitted);
    assert_eq!(abm.next_chunk(a, t).unwrap(), NextChunk::Wait);
    let load = abm.next_load(t).expect("A waits for chunk 4");
    assert_eq!(load.chunk, ChunkId(4));
    abm.check_invariants().unwrap();
    load.evicted.iter().map(|p| p.chunk).collect()
}

#[test]
fn pbm_evicts_what_the_follower_needs_last_and_lru_what_it_needs_first() {
    // B consumes 0, 1, 2, 3 in that order and A none of them: OPT evicts chunk 3.
    assert_eq!(
        victim_when_a_leader_passes_a_follower(PolicyKind::Pbm),
        vec![ChunkId(3)]
    );
    assert_eq!(
        victim_when_a_leader_passes_a_follower(PolicyKind::Normal),
        vec![ChunkId(0)]
    );
}

#[test]
fn pbm_prefers_a_chunk_no_scan_wants() {
    // Same start, but B only wants chunks 1..=3: chunk 0 is "not requested".
    let geometry = TableGeometry::uniform(CHUNKS, ROWS_PER_CHUNK).unwrap();
    let mut abm = Abm::with_kind(geometry, AbmConfig::new(4), PolicyKind::Pbm).unwrap();
    let full = ScanSpec::full(u64::from(CHUNKS) * ROWS_PER_CHUNK);
    let a = abm.register_scan(&full, Nanos(0)).unwrap().scan;
    let mut out = Vec::new();
    for t in (0..4).map(|i| Nanos(i * SECOND)) {
        abm.next_chunk(a, t).unwrap();
        let load = abm.next_load(t).unwrap();
        abm.load_completed(load.pieces[0], t, &mut out).unwrap();
        out.clear();
        abm.release_chunk(a, t).unwrap();
    }
    let t = Nanos(4 * SECOND);
    let rows = ROWS_PER_CHUNK..4 * ROWS_PER_CHUNK;
    abm.register_scan(&ScanSpec::new(vec![rows], ColumnMask::ALL), t)
        .unwrap();
    abm.next_chunk(a, t).unwrap();
    let load = abm.next_load(t).unwrap();
    let evicted: Vec<_> = load.evicted.iter().map(|p| p.chunk).collect();
    assert_eq!(evicted, vec![ChunkId(0)]);
}
