//! The one-temperature ranking (`mixed`'s eviction) against a plain model: each
//! resident chunk's next use is the earliest of what each interested scan predicts —
//! an in-order Scan by its distance × pace, a CScan by the place the chunk has in the
//! order it will be handed out (fewest interested scans first, then the lowest chunk) ×
//! pace — and the eviction order is: unwanted first, then the latest next use first,
//! ties least recently used first. The model works from the test's own list of which
//! scan wants which chunk, not from the ABM's state.
#![allow(clippy::unwrap_used)] // test code: an unwrap that fails is a failed test
#![allow(clippy::single_range_in_vec_init)] // row ranges of one range

use coopscan_buffer::*;
use std::collections::BTreeMap;

const ROWS: u64 = 100;
const CHUNKS: u32 = 8;
const S: u64 = 1_000_000_000;

struct Want {
    chunks: std::ops::Range<u32>,
    in_order: bool,
    pace_s: u64,
}

/// The model's eviction order of the resident chunks `0..resident` (loaded in that
/// order and used once each, so least recently used = lowest).
fn model_order(wants: &[Want], resident: u32) -> Vec<u32> {
    let interested = |c: u32| wants.iter().filter(|w| w.chunks.contains(&c)).count();
    let mut due: BTreeMap<u32, u64> = BTreeMap::new();
    for w in wants {
        let mine: Vec<u32> = (0..resident).filter(|c| w.chunks.contains(c)).collect();
        let mut handed = mine.clone();
        if !w.in_order {
            handed.sort_by_key(|&c| (interested(c), c));
        }
        for (place, c) in handed.into_iter().enumerate() {
            // A Scan at its first chunk: distance = place in ascending order.
            let t = place as u64 * w.pace_s;
            due.entry(c).and_modify(|d| *d = (*d).min(t)).or_insert(t);
        }
    }
    let mut order: Vec<(u8, std::cmp::Reverse<u64>, u32)> = (0..resident)
        .map(|c| match due.get(&c) {
            None => (0, std::cmp::Reverse(0), c),
            Some(&t) => (1, std::cmp::Reverse(t), c),
        })
        .collect();
    order.sort_unstable();
    order.into_iter().map(|(_, _, c)| c).collect()
}

/// Loads chunks `0..resident` (one short scan each, in that order), then registers the
/// wanting scans at 10 s without delivering them anything, and ranks the pool at 10 s
/// with the given paces.
fn ranked(wants: &[Want], resident: u32) -> Vec<u32> {
    let geometry = TableGeometry::uniform(CHUNKS, ROWS).unwrap();
    let mut abm = Abm::with_kind(geometry, AbmConfig::new(resident), PolicyKind::Mixed).unwrap();
    let mut out = Vec::new();
    for c in 0..u64::from(resident) {
        let t = Nanos(c * S);
        let spec = ScanSpec::new(vec![c * ROWS..(c + 1) * ROWS], ColumnMask::ALL);
        let scan = abm.register_scan(&spec, t).unwrap().scan;
        assert_eq!(abm.next_chunk(scan, t).unwrap(), NextChunk::Wait);
        let load = abm.next_load(t).unwrap();
        abm.load_completed(load.pieces[0], t, &mut out).unwrap();
        out.clear();
        abm.release_chunk(scan, t).unwrap();
        abm.unregister_scan(scan, t, &mut out).unwrap();
    }
    let now = Nanos(10 * S);
    let mut paces = vec![None; MAX_SCANS];
    for w in wants {
        let rows = u64::from(w.chunks.start) * ROWS..u64::from(w.chunks.end) * ROWS;
        let spec = ScanSpec::new(vec![rows], ColumnMask::ALL);
        let spec = if w.in_order { spec.in_order() } else { spec };
        let registration = abm.register_scan(&spec, now).unwrap();
        assert!(registration.admitted);
        let slot = abm.state().active_slots().last().unwrap();
        paces[usize::from(slot.0)] = Some(Nanos(w.pace_s * S));
    }
    abm.check_invariants().unwrap();
    let paces = Paces {
        observed: &paces,
        unobserved: Nanos(S),
    };
    let order = next_use::ranking(abm.state(), paces, now);
    order.into_iter().map(|p| p.chunk.0).collect()
}

#[test]
fn scans_and_cscans_share_one_temperature() {
    // A CScan over 0..6 (1 s a chunk) and a Scan over 2..6 (3 s a chunk); chunk 6 is
    // resident and wanted by nobody.
    let wants = [
        Want {
            chunks: 0..6,
            in_order: false,
            pace_s: 1,
        },
        Want {
            chunks: 2..6,
            in_order: true,
            pace_s: 3,
        },
    ];
    let model = model_order(&wants, 7);
    assert_eq!(model, vec![6, 5, 4, 3, 1, 0, 2], "the model itself");
    assert_eq!(ranked(&wants, 7), model);
}

#[test]
fn a_slow_scan_ahead_of_a_fast_cscan_and_two_cscans_sharing() {
    let cases = [
        vec![
            Want {
                chunks: 0..7,
                in_order: true,
                pace_s: 5,
            },
            Want {
                chunks: 3..7,
                in_order: false,
                pace_s: 1,
            },
        ],
        vec![
            Want {
                chunks: 0..4,
                in_order: false,
                pace_s: 2,
            },
            Want {
                chunks: 2..7,
                in_order: false,
                pace_s: 1,
            },
            Want {
                chunks: 5..6,
                in_order: true,
                pace_s: 1,
            },
        ],
    ];
    for wants in &cases {
        assert_eq!(ranked(wants, 7), model_order(wants, 7));
    }
}
