//! Regression (sim seed 1567 of `mixed_orders`): under the elevator, a DSM buffer of 2
//! chunks with 3 loads in flight never delivered a chunk. Each load is several pieces;
//! the FIFO window evicted the first piece of a load whose later piece was still being
//! read, so no chunk was ever whole for the scan waiting on it, and the sweep went round
//! for ever. Here a device that serves pieces one at a time in the order the loads
//! asked for them drives one any-order scan; it must get every chunk exactly once, and
//! no load may evict a piece of a chunk that is still arriving.
#![allow(clippy::unwrap_used)] // test code: an unwrap that fails is a failed test

use coopscan_buffer::*;
use std::collections::{BTreeSet, VecDeque};

const ROWS_PER_CHUNK: u64 = 10;
const CHUNKS: u32 = 6;
/// Far more device steps than 6 chunks need; the livelock ran past any bound.
const STEPS: usize = 1_000;

/// Column bytes of every chunk: the scan reads columns 1 and 2 (3 bytes per chunk), the
/// budget is 2 whole chunks (8 bytes), so two loads fit and a third must evict.
fn geometry() -> TableGeometry {
    let columns = vec![vec![1, 2, 1]; CHUNKS as usize];
    TableGeometry::uniform(CHUNKS, ROWS_PER_CHUNK)
        .unwrap()
        .with_column_bytes(columns)
        .unwrap()
}

#[test]
fn elevator_never_evicts_a_chunk_still_arriving_and_the_scan_finishes() {
    let config = AbmConfig::new(2).with_max_inflight(3);
    let mut abm = Abm::with_kind(geometry(), config, PolicyKind::Elevator).unwrap();
    let spec = ScanSpec::new(0..u64::from(CHUNKS) * ROWS_PER_CHUNK, ColumnMask(0b110));
    let scan = abm.register_scan(&spec, Nanos(0)).unwrap().scan;
    let mut got = BTreeSet::new();
    let take = |d: Delivery, got: &mut BTreeSet<u32>| {
        assert_eq!(d.scan, scan);
        assert!(got.insert(d.chunk.0), "chunk {} twice", d.chunk);
    };
    let mut device: VecDeque<PieceId> = VecDeque::new();
    let mut out = Vec::new();
    let mut finished = false;
    for step in 0..STEPS {
        let now = Nanos(step as u64);
        // The scan processes what it holds at once and asks again.
        if let Ok(chunk) = abm.release_chunk(scan, now) {
            assert!(got.contains(&chunk.0));
        }
        match abm.next_chunk(scan, now).unwrap() {
            NextChunk::Deliver(d) => take(d, &mut got),
            NextChunk::Wait => {}
            NextChunk::Finished => {
                finished = true;
                break;
            }
        }
        while let Some(load) = abm.next_load(now) {
            for victim in &load.evicted {
                let arriving = device.iter().any(|p| p.chunk == victim.chunk);
                assert!(
                    !arriving,
                    "step {step}: evicted {victim} of a chunk in flight"
                );
            }
            device.extend(load.pieces);
        }
        if let Some(piece) = device.pop_front() {
            abm.load_completed(piece, now, &mut out).unwrap();
            for d in out.drain(..) {
                take(d, &mut got);
            }
        }
        abm.check_invariants().unwrap();
    }
    assert!(finished, "the scan got only {got:?} in {STEPS} steps");
    assert_eq!(got, (0..CHUNKS).collect());
}
