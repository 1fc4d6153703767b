//! Pages straddling two chunks (2007 paper §6.1-6.2, "avoiding data waste"), counted.
//!
//! In coopscan's DSM storage a chunk's slice of a column is the run of that column's
//! pages holding any of its tuples, so the page on each chunk boundary belongs to both
//! neighbouring pieces and a load reads it again when the neighbour already did
//! (docs/storage.md, "Chunks"). The simulator models pieces as byte counts, not pages;
//! it counts, for every piece a load reads, its chunk boundaries (one before, one after,
//! except at the table's ends) and how many of them have the neighbouring piece of the
//! same column resident when the load starts: those pages could be copied from memory
//! instead of read (docs/abm.md, "Pages straddling two chunks").

use coopscan_buffer::{AbmState, ChunkId, PieceId};
use serde::Serialize;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Boundaries {
    /// Chunk boundaries of the pieces loaded (each one straddling page, at most).
    pub loaded: u64,
    /// Of those, boundaries whose neighbouring piece was resident at the load's start.
    pub neighbour_resident: u64,
}

impl Boundaries {
    /// Counts the boundaries of `pieces`, about to be read, against `state`.
    pub fn add_load(&mut self, state: &AbmState, pieces: &[PieceId]) {
        let last = state.chunk_count().saturating_sub(1);
        for piece in pieces {
            let bit = state.col_bit(*piece);
            let k = piece.chunk.0;
            let before = k.checked_sub(1);
            let after = (k < last).then(|| k + 1);
            for neighbour in [before, after].into_iter().flatten() {
                self.loaded += 1;
                if state.resident_cols(ChunkId(neighbour)) & bit != 0 {
                    self.neighbour_resident += 1;
                }
            }
        }
    }

    /// Share of straddling pages a load could have copied instead of read.
    pub fn avoidable_share(&self) -> f64 {
        if self.loaded == 0 {
            return 0.0;
        }
        self.neighbour_resident as f64 / self.loaded as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use coopscan_buffer::*;

    #[test]
    fn counts_both_neighbours_except_at_the_ends_and_only_resident_ones() {
        // 3 chunks of 2 columns; a scan of column 0 over everything, loaded in order.
        let geometry = TableGeometry::uniform(3, 10).unwrap();
        let geometry = geometry.with_column_bytes(vec![vec![1, 1]; 3]).unwrap();
        let mut abm = Abm::with_kind(geometry, AbmConfig::new(3), PolicyKind::Normal).unwrap();
        let spec = ScanSpec::new(0..30, ColumnMask(0b01));
        let scan = abm.register_scan(&spec, Nanos::ZERO).unwrap().scan;
        assert_eq!(abm.next_chunk(scan, Nanos::ZERO).unwrap(), NextChunk::Wait);
        let mut seen = Boundaries::default();
        let mut out = Vec::new();
        // Chunk 0: one boundary (after), neighbour absent.
        let load = abm.next_load(Nanos::ZERO).unwrap();
        seen.add_load(abm.state(), &load.pieces);
        assert_eq!(
            seen,
            Boundaries {
                loaded: 1,
                neighbour_resident: 0
            }
        );
        for p in load.pieces {
            abm.load_completed(p, Nanos::ZERO, &mut out).unwrap();
        }
        // Chunk 1 (read ahead): two boundaries, chunk 0's column 0 resident.
        let load = abm.next_load(Nanos::ZERO).unwrap();
        assert_eq!(load.chunk, ChunkId(1));
        seen.add_load(abm.state(), &load.pieces);
        assert_eq!(
            seen,
            Boundaries {
                loaded: 3,
                neighbour_resident: 1
            }
        );
        assert!((seen.avoidable_share() - 1.0 / 3.0).abs() < 1e-12);
    }
}
