//! Offline replays of a piece-reference trace (`coopscan_buffer::trace`): Belady's OPT
//! and LRU, each under a byte budget (PBM's rule replayed: `pbm_replay.rs`).
//!
//! As in the 2012 paper (§4), OPT replays the references of a run in the order they
//! happened and, on a miss with a full buffer, evicts the resident piece referenced
//! furthest in the future (or never again). The incoming piece competes too: if it is
//! the one needed furthest, it is read, used and dropped. Pieces differ in size (DSM
//! columns), for which furthest-first is the standard heuristic rather than a proven
//! optimum; for equal-size pieces it is optimal.

use crate::{PieceId, Reference};
use serde::Serialize;
use std::collections::{BTreeSet, HashMap};

/// I/O a replay caused.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Replay {
    pub references: u64,
    /// Misses: pieces read.
    pub loads: u64,
    pub bytes_loaded: u64,
}

/// Never referenced again.
pub(crate) const NEVER: usize = usize::MAX;

/// Dense ids for the trace's pieces, and each piece's size.
pub(crate) struct Dense {
    /// The piece of each reference.
    pub(crate) ids: Vec<u32>,
    /// Each piece's size.
    pub(crate) bytes: Vec<u64>,
}

pub(crate) fn dense(trace: &[Reference]) -> Dense {
    let mut map: HashMap<PieceId, u32> = HashMap::new();
    let mut bytes = Vec::new();
    let ids = trace
        .iter()
        .map(|r| {
            *map.entry(r.piece).or_insert_with(|| {
                bytes.push(r.bytes);
                (bytes.len() - 1) as u32
            })
        })
        .collect();
    Dense { ids, bytes }
}

/// Bytes of the distinct pieces the trace references (what "100 % buffer" holds).
pub fn distinct_bytes(trace: &[Reference]) -> u64 {
    dense(trace).bytes.iter().sum()
}

/// Belady's OPT under `capacity` bytes.
pub fn replay_opt(trace: &[Reference], capacity: u64) -> Replay {
    let d = dense(trace);
    // next[i]: index of the next reference to the same piece.
    let mut next = vec![NEVER; trace.len()];
    let mut seen_at = vec![NEVER; d.bytes.len()];
    for (i, &id) in d.ids.iter().enumerate().rev() {
        next[i] = seen_at[id as usize];
        seen_at[id as usize] = i;
    }
    // Keep it unless it is itself the piece needed furthest (or cannot fit).
    replay(&d, capacity, |i| next[i])
}

/// LRU under `capacity` bytes (the baseline the replays are compared with).
pub fn replay_lru(trace: &[Reference], capacity: u64) -> Replay {
    // The least recently referenced has the largest key.
    replay(&dense(trace), capacity, |i| NEVER - i)
}

/// The replay loop both policies share: after reference `i` its piece is resident with
/// key `evict_key(i)`, and while the buffer is over `capacity` the largest key goes.
fn replay(d: &Dense, capacity: u64, evict_key: impl Fn(usize) -> usize) -> Replay {
    let mut resident: BTreeSet<(usize, u32)> = BTreeSet::new();
    let mut key_of: Vec<Option<usize>> = vec![None; d.bytes.len()];
    let (mut used, mut out) = (0u64, Replay::default());
    for (i, &id) in d.ids.iter().enumerate() {
        out.references += 1;
        let size = d.bytes[id as usize];
        if let Some(key) = key_of[id as usize].take() {
            resident.remove(&(key, id));
        } else {
            out.loads += 1;
            out.bytes_loaded += size;
            used += size;
        }
        let key = evict_key(i);
        resident.insert((key, id));
        key_of[id as usize] = Some(key);
        while used > capacity {
            let Some((_, victim)) = resident.pop_last() else {
                break;
            };
            key_of[victim as usize] = None;
            used -= d.bytes[victim as usize];
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ChunkId, Nanos, ScanId, TableId};

    fn trace(chunks: &[u32]) -> Vec<Reference> {
        chunks
            .iter()
            .enumerate()
            .map(|(i, &c)| Reference {
                at: Nanos(i as u64),
                scan: ScanId(0),
                piece: PieceId::whole(TableId(0), ChunkId(c)),
                bytes: 10,
            })
            .collect()
    }

    /// Misses of Belady's MIN by brute force: the fewest loads over every choice of
    /// victim (and of bypassing), for tiny traces.
    fn brute_force_min(refs: &[u32], frames: usize) -> u64 {
        fn go(refs: &[u32], frames: usize, cache: &mut Vec<u32>) -> u64 {
            let Some((&r, rest)) = refs.split_first() else {
                return 0;
            };
            if cache.contains(&r) {
                return go(rest, frames, cache);
            }
            let mut best = 1 + go(rest, frames, &mut cache.clone()); // bypass
            if cache.len() < frames {
                let mut c = cache.clone();
                c.push(r);
                best = best.min(1 + go(rest, frames, &mut c));
            } else {
                for k in 0..cache.len() {
                    let mut c = cache.clone();
                    c[k] = r;
                    best = best.min(1 + go(rest, frames, &mut c));
                }
            }
            best
        }
        go(refs, frames, &mut Vec::new())
    }

    #[test]
    fn opt_matches_brute_force_on_small_traces() {
        use rand::{RngExt, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
        for _ in 0..200 {
            let len = rng.random_range(1..11);
            let refs: Vec<u32> = (0..len).map(|_| rng.random_range(0..5)).collect();
            let frames = rng.random_range(1..4);
            let got = replay_opt(&trace(&refs), 10 * frames as u64).loads;
            assert_eq!(got, brute_force_min(&refs, frames), "{refs:?} in {frames}");
        }
    }

    #[test]
    fn a_cyclic_scan_defeats_lru_but_not_opt() {
        // Two passes over 4 chunks with room for 3: LRU misses every time; OPT reads
        // chunk 3 without keeping it, so 0..=2 stay for the second pass.
        let refs = trace(&[0, 1, 2, 3, 0, 1, 2, 3]);
        assert_eq!(replay_lru(&refs, 30).loads, 8);
        assert_eq!(replay_opt(&refs, 30).loads, 5);
        assert_eq!(replay_opt(&refs, 40).loads, 4);
        assert_eq!(distinct_bytes(&refs), 40);
    }
}
