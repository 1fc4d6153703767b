//! PBM/LRU (`pbm-lru`) against a plain model of the paper's rule: every evictable piece
//! gets a time of next use (requested: the scan's distance ÷ its observed pace;
//! unrequested: the mean gap between its uses plus the time since the last one, or
//! "unknown" with fewer than two uses), and the victim is an unknown one, least
//! recently used first, else the one with the latest time. The model is computed here
//! from the test's own record of what happened when, not from the policy.
#![allow(clippy::unwrap_used)] // test code: an unwrap that fails is a failed test
#![allow(clippy::single_range_in_vec_init)] // lists of chunk ranges, some of one range

use coopscan_buffer::*;

const ROWS: u64 = 100;
const CHUNKS: u32 = 10;
const S: u64 = 1_000_000_000;

fn at(seconds: u64) -> Nanos {
    Nanos(seconds * S)
}

fn rows(chunks: &[std::ops::Range<u64>]) -> ScanSpec {
    let ranges: Vec<_> = chunks
        .iter()
        .map(|r| r.start * ROWS..r.end * ROWS)
        .collect();
    ScanSpec::new(ranges, ColumnMask::ALL)
}

/// A piece's time of next use as the model sees it.
#[derive(Clone, Copy, Debug)]
enum Next {
    /// An active scan consumes it this long from now.
    Requested(u64),
    /// No scan wants it; estimated this long from now.
    Unrequested(u64),
    /// No scan wants it and it was used once; last used at this time.
    Unknown(u64),
}

/// The model's victim: unknown ones least recently used first, else the latest time
/// (an unrequested piece before a requested one of the same time).
fn model_victim(candidates: &[(u32, Next)]) -> u32 {
    let rank = |n: &Next| match *n {
        Next::Unknown(last) => (2, u64::MAX - last, 0),
        Next::Unrequested(t) => (1, t, 1),
        Next::Requested(t) => (1, t, 0),
    };
    candidates
        .iter()
        .max_by_key(|(_, n)| rank(n))
        .map(|(c, _)| *c)
        .unwrap()
}

/// Mean gap of the uses plus the age at `now` (the paper's estimate; all in seconds).
fn estimate(uses: &[u64], now: u64) -> Next {
    match uses {
        [] => unreachable!("a resident piece was used"),
        [only] => Next::Unknown(*only),
        [first, .., last] => {
            Next::Unrequested((last - first) / (uses.len() as u64 - 1) + (now - last))
        }
    }
}

struct Harness {
    abm: Abm<AnyPolicy>,
    out: Vec<Delivery>,
}

impl Harness {
    fn new(kind: PolicyKind, frames: u32) -> Self {
        let geometry = TableGeometry::uniform(CHUNKS, ROWS).unwrap();
        let abm = Abm::with_kind(geometry, AbmConfig::new(frames), kind).unwrap();
        Harness {
            abm,
            out: Vec::new(),
        }
    }

    /// A scan that reads `chunks` (all absent or resident) at `t`, one after another,
    /// loading and consuming each at once, then leaves.
    fn quick_scan(&mut self, chunks: std::ops::Range<u64>, t: Nanos) {
        let scan = self.abm.register_scan(&rows(&[chunks]), t).unwrap().scan;
        loop {
            match self.abm.next_chunk(scan, t).unwrap() {
                NextChunk::Finished => break,
                NextChunk::Deliver(_) => {}
                NextChunk::Wait => {
                    let load = self.abm.next_load(t).unwrap();
                    assert!(load.evicted.is_empty(), "the setup fits the pool");
                    self.abm
                        .load_completed(load.pieces[0], t, &mut self.out)
                        .unwrap();
                    self.out.clear();
                }
            }
            self.abm.release_chunk(scan, t).unwrap();
        }
        self.abm.unregister_scan(scan, t, &mut self.out).unwrap();
        self.abm.check_invariants().unwrap();
    }

    /// Registers a scan of `chunks` at `t` that waits for its first chunk; returns the
    /// load the ABM decides on for it.
    fn waiting_scan(
        &mut self,
        chunks: &[std::ops::Range<u64>],
        t: Nanos,
    ) -> (ScanId, LoadDecision) {
        let scan = self.abm.register_scan(&rows(chunks), t).unwrap().scan;
        assert_eq!(self.abm.next_chunk(scan, t).unwrap(), NextChunk::Wait);
        let load = self.abm.next_load(t).unwrap();
        self.abm.check_invariants().unwrap();
        (scan, load)
    }
}

/// Chunk 9 read once by F at 0 s; a slow scan L over chunks 1, 3 and 9 gets chunk 1 at
/// 10 s (registered at 0 s: 10 s per chunk), keeps processing it and reads chunk 3
/// ahead; short scans read chunk 0 at 10, 11, 12, 13 s; at 14 s a scan N needs chunk 5
/// in a full pool of 4. Returns N's victim.
fn frequently_used_vs_needed_later(kind: PolicyKind) -> u32 {
    let mut h = Harness::new(kind, 4);
    h.quick_scan(9..10, at(0));
    let (_l, load) = h.waiting_scan(&[1..2, 3..4, 9..10], at(0));
    assert_eq!(load.chunk, ChunkId(1));
    h.abm
        .load_completed(load.pieces[0], at(10), &mut h.out)
        .unwrap();
    assert_eq!(h.out.drain(..).count(), 1, "L gets chunk 1 at 10 s");
    let ahead = h.abm.next_load(at(10)).unwrap();
    assert_eq!(ahead.chunk, ChunkId(3), "L reads ahead");
    h.abm
        .load_completed(ahead.pieces[0], at(10), &mut h.out)
        .unwrap();
    for t in 10..14 {
        h.quick_scan(0..1, at(t));
    }
    let (_n, load) = h.waiting_scan(&[5..6], at(14));
    assert_eq!(load.chunk, ChunkId(5));
    assert_eq!(load.evicted.len(), 1);
    load.evicted[0].chunk.0
}

#[test]
fn a_piece_short_scans_keep_using_outranks_one_a_scan_needs_later() {
    // L's pace is 10 s per chunk; chunk 3 is next (due at 20 s, 6 s from now), then 9
    // (at 30 s). Chunk 0: uses 1 s apart, last at 13 s: back in 1 s + 1 s of age.
    let model = model_victim(&[
        (3, Next::Requested(6)),
        (9, Next::Requested(16)),
        (0, estimate(&[10, 11, 12, 13], 14)),
    ]);
    assert_eq!(model, 9);
    assert_eq!(frequently_used_vs_needed_later(PolicyKind::PbmLru), model);
    // Plain PBM evicts whatever no scan wants first: the frequently used chunk.
    assert_eq!(frequently_used_vs_needed_later(PolicyKind::Pbm), 0);
}

/// A scan A reads chunks 0..4 at 0..3 s; a scan C re-reads chunks 0 and 1 at 5 s; at
/// 6 s a scan B needs chunk 5 in a full pool of 4. Returns B's victim.
fn unrequested_pieces_in_a_full_pool(kind: PolicyKind) -> u32 {
    let mut h = Harness::new(kind, 4);
    for c in 0..4 {
        h.quick_scan(c..c + 1, at(c));
    }
    h.quick_scan(0..2, at(5));
    let (_b, load) = h.waiting_scan(&[5..6], at(6));
    assert_eq!(load.evicted.len(), 1);
    load.evicted[0].chunk.0
}

#[test]
fn unrequested_pieces_used_once_leave_first_least_recently_used_first() {
    let now = 6;
    let uses: [&[u64]; 4] = [&[0, 5], &[1, 5], &[2], &[3]];
    let candidates: Vec<(u32, Next)> = (0..4)
        .map(|c| (c, estimate(uses[c as usize], now)))
        .collect();
    let model = model_victim(&candidates);
    assert_eq!(model, 2);
    assert_eq!(unrequested_pieces_in_a_full_pool(PolicyKind::PbmLru), model);
}

/// Eviction after eviction in a full pool of single-use pieces: PBM/LRU's victims are
/// the model's LRU order, whatever order the pieces were loaded in.
#[test]
fn single_use_pieces_leave_in_lru_order() {
    let mut h = Harness::new(PolicyKind::PbmLru, 4);
    // Each chunk read once, by a short scan, in this order (not the chunk order).
    let reads = [(3u64, 0u64), (1, 1), (0, 2), (2, 3)];
    for &(c, t) in &reads {
        h.quick_scan(c..c + 1, at(t));
    }
    let mut victims = Vec::new();
    for (k, c) in (5..9).enumerate() {
        let t = at(4 + k as u64);
        let (scan, load) = h.waiting_scan(&[c..c + 1], t);
        victims.extend(load.evicted.iter().map(|p| p.chunk.0));
        h.abm.load_completed(load.pieces[0], t, &mut h.out).unwrap();
        h.out.clear();
        h.abm.release_chunk(scan, t).unwrap();
        h.abm.unregister_scan(scan, t, &mut h.out).unwrap();
    }
    // The model: every piece is unknown; least recently used first. Chunks 5..8 are
    // newer than all of 0..3, so 0..3 go first, in read order.
    let mut model: Vec<(u64, u32)> = reads.iter().map(|&(c, t)| (t, c as u32)).collect();
    model.sort_unstable();
    let model: Vec<u32> = model.into_iter().map(|(_, c)| c).collect();
    assert_eq!(victims, model);
    h.abm.check_invariants().unwrap();
}
