//! The 2012 paper's §5 proposals on hand-made cases, against expectations computed here
//! from the paper's definitions (PBM's prediction: last delivery + pace × chunks
//! ahead − now; a region's worth: its cached chunks the scan still needs).
#![allow(clippy::unwrap_used)] // test code: an unwrap that fails is a failed test

use coopscan_buffer::policy::{HOLD_MAX_PACES, REGION_CHUNKS, THROTTLE_MAX_SHARE};
use coopscan_buffer::*;

const ROWS: u64 = 100;
const MS: u64 = 1_000_000;

fn at(ms: u64) -> Nanos {
    Nanos(ms * MS)
}

fn rows(chunks: std::ops::Range<u64>) -> ScanSpec {
    ScanSpec::new(
        RowRanges::new(std::iter::once(chunks.start * ROWS..chunks.end * ROWS)),
        ColumnMask::ALL,
    )
}

/// Asks for the scan's next chunk at `t`; if it must wait, loads what the loader
/// wants until the scan is served. Returns the chunk.
fn serve(abm: &mut Abm, scan: ScanId, t: Nanos) -> ChunkId {
    if let NextChunk::Deliver(d) = abm.next_chunk(scan, t).unwrap() {
        return d.chunk;
    }
    let mut out = Vec::new();
    loop {
        let load = abm
            .next_load(t)
            .expect("a waiting scan makes the loader busy");
        for piece in &load.pieces {
            abm.load_completed(*piece, t, &mut out).unwrap();
        }
        if let Some(d) = out.iter().find(|d| d.scan == scan) {
            return d.chunk;
        }
    }
}

/// Leader A reads chunks 0..=3 one per second; trailing B registers at 2.5 s and takes
/// chunk 0 at 3.5 s (pace 1 s per chunk); A's load of chunk 4 then evicts the piece B
/// needs last (chunk 3), and A asks again at 4.0 s after consuming chunk 4.
fn leader_and_trailer(kind: PolicyKind) -> (Abm, ScanId) {
    let geometry = TableGeometry::uniform(10, ROWS).unwrap();
    let mut abm = Abm::with_kind(geometry, AbmConfig::new(4), kind).unwrap();
    let a = abm
        .register_scan(&rows(0..10).in_order(), at(0))
        .unwrap()
        .scan;
    let mut b = None;
    for i in 0..4u64 {
        if i == 3 {
            b = Some(
                abm.register_scan(&rows(0..10).in_order(), at(2500))
                    .unwrap()
                    .scan,
            );
        }
        assert_eq!(serve(&mut abm, a, at(i * 1000)), ChunkId(i as u32));
        abm.release_chunk(a, at(i * 1000 + 500)).unwrap();
    }
    let b = b.unwrap();
    assert_eq!(serve(&mut abm, b, at(3500)), ChunkId(0));
    assert_eq!(abm.next_chunk(a, at(3500)).unwrap(), NextChunk::Wait);
    let load = abm.next_load(at(3500)).unwrap();
    assert_eq!(load.chunk, ChunkId(4));
    let evicted: Vec<u32> = load.evicted.iter().map(|p| p.chunk.0).collect();
    assert_eq!(evicted, vec![3], "PBM evicts what B needs last");
    let mut out = Vec::new();
    abm.load_completed(load.pieces[0], at(3500), &mut out)
        .unwrap();
    assert_eq!(out.len(), 1);
    abm.release_chunk(a, at(4000)).unwrap();
    abm.check_invariants().unwrap();
    (abm, a)
}

#[test]
fn a_leader_is_held_until_its_page_falls_below_the_eviction_horizon() {
    // The model: B's pace is 3.5 − 2.5 = 1 s per chunk and B holds chunk 0 from 3.5 s,
    // so B consumes chunk k at 3.5 + k s. Evicted at 3.5 s, chunk 3 was due in 3 s:
    // next_consumption_evict = 3 s. At 4.0 s chunk 4 (A's last) is due in 3.5 s: at or
    // beyond the horizon, by 0.5 s; a hold of 0.5 s (+1 ns to fall below) fits the
    // bound (A's life 4 s: a quarter share allows 4/3 s; 8 paces of 0.7 s allow 5.6 s).
    let (b_pace, b_start, k) = (1000, 3500, 4);
    let horizon = b_start + 3 * b_pace - 3500;
    let due_after = b_start + k * b_pace - 4000;
    let need = Nanos((due_after - horizon) * MS + 1);
    let (num, den) = THROTTLE_MAX_SHARE;
    assert!(
        need.0 * (den - num) <= num * at(4000).0,
        "within the share bound"
    );
    assert!(
        need.0 <= HOLD_MAX_PACES * at(700).0,
        "within the single-hold bound"
    );

    let (mut abm, a) = leader_and_trailer(PolicyKind::PbmThrottle);
    let until = at(4000) + need;
    assert_eq!(
        abm.next_chunk_paced(a, at(4000)).unwrap(),
        Paced::Hold { until }
    );
    // Held: nothing is read ahead for A (B holds chunk 0 and has chunk 1 resident).
    assert_eq!(abm.next_load(at(4000)).map(|l| l.chunk), None);
    abm.check_invariants().unwrap();
    // At the end of the hold A is served: never held twice without a delivery.
    assert_eq!(
        abm.next_chunk_paced(a, until).unwrap(),
        Paced::Go(NextChunk::Wait)
    );
    assert_eq!(abm.next_load(until).map(|l| l.chunk), Some(ChunkId(5)));
}

#[test]
fn plain_pbm_never_holds_and_next_chunk_never_holds() {
    let (mut abm, a) = leader_and_trailer(PolicyKind::Pbm);
    assert_eq!(
        abm.next_chunk_paced(a, at(4000)).unwrap(),
        Paced::Go(NextChunk::Wait)
    );
    // A driver that cannot wait on time asks `next_chunk`: no hold under any policy.
    let (mut abm, a) = leader_and_trailer(PolicyKind::PbmThrottle);
    assert_eq!(abm.next_chunk(a, at(4000)).unwrap(), NextChunk::Wait);
}

/// A scan that accepts any order attaches to the running scan (starts at its position
/// and wraps around); one that needs table order starts at its first chunk.
#[test]
fn throttle_attaches_scans_that_accept_any_order() {
    for (spec, first) in [(rows(0..10), 3), (rows(0..10).in_order(), 0)] {
        let geometry = TableGeometry::uniform(10, ROWS).unwrap();
        let mut abm = Abm::with_kind(geometry, AbmConfig::new(6), PolicyKind::PbmThrottle).unwrap();
        let a = abm.register_scan(&rows(0..10), at(0)).unwrap().scan;
        for i in 0..3 {
            assert_eq!(serve(&mut abm, a, at(i)), ChunkId(i as u32));
            abm.release_chunk(a, at(i)).unwrap();
        }
        let b = abm.register_scan(&spec, at(3)).unwrap().scan;
        let mut got = vec![serve(&mut abm, b, at(3)).0];
        assert_eq!(got[0], first);
        abm.release_chunk(b, at(3)).unwrap();
        got.extend(drain(&mut abm, b, at(4)));
        let expected: Vec<u32> = (first..10).chain(0..first).collect();
        assert_eq!(got, expected, "wraps around, each chunk once");
    }
}

/// Every delivery of `scan` until it finishes, loading whatever the loader wants when
/// it waits (the loader serves only this scan then).
fn drain(abm: &mut Abm, scan: ScanId, t: Nanos) -> Vec<u32> {
    let mut got = Vec::new();
    loop {
        match abm.next_chunk(scan, t).unwrap() {
            NextChunk::Finished => break,
            NextChunk::Deliver(d) => got.push(d.chunk.0),
            NextChunk::Wait => got.push(serve(abm, scan, t).0),
        }
        abm.release_chunk(scan, t).unwrap();
        abm.check_invariants().unwrap();
    }
    let mut out = Vec::new();
    abm.unregister_scan(scan, t, &mut out).unwrap();
    got
}

#[test]
fn an_opportunistic_scan_goes_where_the_cache_is_and_gets_each_chunk_once() {
    assert_eq!(REGION_CHUNKS, 8, "the hand-computed regions below");
    let geometry = TableGeometry::uniform(32, ROWS).unwrap();
    let kind = PolicyKind::PbmOpportunistic;
    let mut abm = Abm::with_kind(geometry, AbmConfig::new(16), kind).unwrap();
    // Two in-order scans leave chunks 16..=20 (region 2) and 2..=3 (region 0) cached.
    for range in [16..21, 2..4] {
        let s = abm
            .register_scan(&rows(range.clone()).in_order(), at(0))
            .unwrap();
        assert_eq!(
            drain(&mut abm, s.scan, at(0)),
            range.map(|c| c as u32).collect::<Vec<_>>()
        );
    }
    let x = abm.register_scan(&rows(0..32), at(1)).unwrap().scan;
    let got = drain(&mut abm, x, at(1));
    // Region 2 holds 5 cached chunks, region 0 two: X starts at 16 and reads 16..=20
    // in order; at 21 (absent) region 0 is the most cached: 2, 3; then nothing is
    // cached, so it reads on from 4 in order, skipping what it had, and wraps to 0, 1.
    let expected: Vec<u32> = (16..21).chain(2..16).chain(21..32).chain(0..2).collect();
    assert_eq!(got, expected);
}

#[test]
fn plain_pbm_reads_the_same_case_in_table_order() {
    let geometry = TableGeometry::uniform(32, ROWS).unwrap();
    let mut abm = Abm::with_kind(geometry, AbmConfig::new(16), PolicyKind::Pbm).unwrap();
    for range in [16..21, 2..4] {
        let s = abm.register_scan(&rows(range).in_order(), at(0)).unwrap();
        drain(&mut abm, s.scan, at(0));
    }
    let x = abm.register_scan(&rows(0..32), at(1)).unwrap().scan;
    assert_eq!(drain(&mut abm, x, at(1)), (0..32).collect::<Vec<_>>());
}
