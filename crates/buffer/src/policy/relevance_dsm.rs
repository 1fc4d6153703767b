//! relevance for column storage (2007 paper §6.2, Figure 11). A chunk's pieces are its
//! columns, of different sizes, and scans read different column subsets:
//!
//! ```text
//! useRelevance(c, q)  = Pu / U   U  = interested scans sharing a column with q
//!                                Pu = cached bytes of c in q's columns
//! loadRelevance(c, q) = L / Pl   L  = starved scans interested in c sharing a column with q
//!                                Pl = bytes to load of c for the columns of those scans
//! keepRelevance(c)    = E / Pe   E  = almost-starved scans interested in c
//!                                Pe = cached bytes of c in their columns   (replacer/)
//! ```
//!
//! Use promotes big chunks few others want (they free the most room soonest); load
//! promotes chunks that serve many starved scans for little I/O; keep protects small
//! chunks many are about to need. The NSM functions are the special case of one piece
//! per chunk. Still a walk over the equivalence classes, as in NSM, plus a walk over
//! each class's scans for the column overlap.

use super::relevance::{disk_head, nonzero};
use super::{available_in, cyclic_distance, next_cyclic_where};
use crate::{AbmState, ChunkId, ScanSet, ScanSlot};

/// The scans of `mask` reading any of `cols`.
fn overlapping(state: &AbmState, mask: ScanSet, cols: u64) -> impl Iterator<Item = ScanSlot> + '_ {
    mask.iter()
        .filter(move |s| state.active_scan(*s).cols & cols != 0)
}

/// Paper: chooseAvailableChunk with the DSM useRelevance (ties: lowest chunk).
pub(crate) fn choose_available(state: &AbmState, q: ScanSlot) -> Option<ChunkId> {
    let scan = state.active_scan(q);
    let cols = scan.cols;
    state
        .classes()
        .filter(|c| c.mask().contains(q))
        .filter_map(|c| {
            let chunk = available_in(state, c, scan)?;
            let u = overlapping(state, c.mask(), cols).count().max(1);
            let pu = state.bytes_of(chunk, cols) as f64;
            Some((pu / u as f64, chunk))
        })
        .max_by(|a, b| a.0.total_cmp(&b.0).then(b.1.cmp(&a.1)))
        .map(|(_, chunk)| chunk)
}

/// Paper: chooseChunkToLoad with the DSM loadRelevance: the chunk and the columns of
/// the starved scans it serves (ties: nearest the disk head).
pub(crate) fn choose_chunk_to_load(state: &AbmState, q: ScanSlot) -> Option<(ChunkId, u64)> {
    let q_cols = state.active_scan(q).cols;
    let (head, n) = (disk_head(state), state.chunk_count());
    let starved = state.starved_mask();
    state
        .classes()
        .filter(|c| c.mask().contains(q))
        .filter_map(|c| {
            let needs_q = |ch: ChunkId| state.missing_cols(ch, q_cols) != 0;
            let chunk = next_cyclic_where(c.absent(), head, needs_q)?;
            let served: Vec<ScanSlot> = overlapping(state, c.mask() & starved, q_cols).collect();
            let cols = served
                .iter()
                .map(|s| state.active_scan(*s).cols)
                .fold(q_cols, |a, b| a | b);
            let missing = nonzero(state.missing_cols(chunk, cols))?;
            let l = served.len().max(1) as f64;
            let pl = state.bytes_of(chunk, missing).max(1) as f64;
            Some((l / pl, chunk, missing))
        })
        .max_by(|a, b| {
            let near = |c: ChunkId| std::cmp::Reverse(cyclic_distance(head, c, n));
            a.0.total_cmp(&b.0).then(near(a.1).cmp(&near(b.1)))
        })
        .map(|(_, chunk, cols)| (chunk, cols))
}
