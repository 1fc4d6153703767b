//! Scans of snapshots with a common prefix (2012 paper §2.1, "Bulk Appends"): the
//! experiment behind the claim that shared chunks let "queries benefit from sharing
//! opportunities regardless of differences in snapshots". Defined once for the
//! simulator (`coopscan sim --preset common-prefix`).
//!
//! Table 2's machine and query mix (FAST and SLOW full scans, streams [`STAGGER_S`]
//! apart), each stream scanning one snapshot of [`SNAPSHOT_CHUNKS`] chunks, three ways:
//! every stream the same snapshot; half the streams a second snapshot that shares the
//! first [`SHARED_PCT`] % of its chunks and appended the rest (a transaction's bulk
//! append); half a disjoint version (a checkpoint's new image: no chunk in common).
//! The bound: the common prefix's loads at most [`TARGET`] × one snapshot's.

use std::ops::Range;

/// Chunks of each snapshot.
pub const SNAPSHOT_CHUNKS: u32 = 200;
/// Share of a snapshot's chunks the second snapshot has in common with the first.
pub const SHARED_PCT: u32 = 90;
/// The buffer, in chunks: a quarter of a snapshot, as Table 2's 64 of 256.
pub const BUFFER_CHUNKS: u32 = 50;
pub const STREAMS: usize = 8;
pub const QUERIES_PER_STREAM: usize = 3;
/// Seconds between stream starts (Table 2's).
pub const STAGGER_S: f64 = 3.0;
/// The bound on [`loads_over_one`] for [`Snapshots::CommonPrefix`].
pub const TARGET: f64 = 1.15;
/// The policy the paper extended with shared and local chunks.
pub const POLICY: &str = "relevance";

/// Which snapshots the streams read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Snapshots {
    /// Every stream the same snapshot.
    One,
    /// Odd streams a snapshot sharing [`SHARED_PCT`] % of the first's chunks.
    CommonPrefix,
    /// Odd streams a snapshot with no chunk of the first's.
    Disjoint,
}

impl Snapshots {
    pub const ALL: [Snapshots; 3] = [Snapshots::One, Snapshots::CommonPrefix, Snapshots::Disjoint];

    pub fn name(self) -> &'static str {
        match self {
            Snapshots::One => "one snapshot",
            Snapshots::CommonPrefix => "common prefix",
            Snapshots::Disjoint => "disjoint versions",
        }
    }

    /// Chunks of the table: every snapshot's, each chunk once.
    pub fn table_chunks(self) -> u32 {
        match self {
            Snapshots::One => SNAPSHOT_CHUNKS,
            Snapshots::CommonPrefix => SNAPSHOT_CHUNKS + SNAPSHOT_CHUNKS - shared_chunks(),
            Snapshots::Disjoint => 2 * SNAPSHOT_CHUNKS,
        }
    }

    /// The snapshot stream `stream` reads, as chunk ranges: the first snapshot is
    /// chunks `0..SNAPSHOT_CHUNKS`; the second's own chunks follow it.
    pub fn snapshot_of(self, stream: usize) -> Vec<Range<u32>> {
        let n = SNAPSHOT_CHUNKS;
        match (self, stream % 2) {
            (Snapshots::One, _) | (_, 0) => std::iter::once(0..n).collect(),
            (Snapshots::CommonPrefix, _) => {
                vec![0..shared_chunks(), n..self.table_chunks()]
            }
            (Snapshots::Disjoint, _) => std::iter::once(n..2 * n).collect(),
        }
    }
}

/// The buffer as % of a snapshot.
pub const fn buffer_pct() -> f64 {
    BUFFER_CHUNKS as f64 * 100.0 / SNAPSHOT_CHUNKS as f64
}

/// Chunks the two snapshots of [`Snapshots::CommonPrefix`] share.
pub const fn shared_chunks() -> u32 {
    SNAPSHOT_CHUNKS * SHARED_PCT / 100
}

/// Whether query `query` of stream `stream` is SLOW (else FAST): they alternate along
/// a stream and between neighbouring streams, so each snapshot gets both.
pub fn is_slow(stream: usize, query: usize) -> bool {
    (stream / 2 + query) % 2 == 1
}

/// A run's loads ÷ the one-snapshot run's.
pub fn loads_over_one(loads: u64, one: u64) -> f64 {
    loads as f64 / one.max(1) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_second_snapshot_shares_exactly_its_prefix() {
        let first = Snapshots::CommonPrefix.snapshot_of(0);
        let second = Snapshots::CommonPrefix.snapshot_of(1);
        let chunks = |s: &[Range<u32>]| -> Vec<u32> { s.iter().cloned().flatten().collect() };
        let (a, b) = (chunks(&first), chunks(&second));
        assert_eq!((a.len(), b.len()), (200, 200));
        let common = a.iter().filter(|c| b.contains(c)).count();
        assert_eq!(common, 180);
        assert_eq!(Snapshots::CommonPrefix.table_chunks(), 220);
        let disjoint = chunks(&Snapshots::Disjoint.snapshot_of(3));
        assert!(disjoint.iter().all(|c| !a.contains(c)));
        // Each snapshot gets FAST and SLOW queries.
        for s in 0..2 {
            let slow = (0..QUERIES_PER_STREAM).filter(|q| is_slow(s, *q)).count();
            assert!(slow > 0 && slow < QUERIES_PER_STREAM);
        }
    }
}
