//! The order in which a DSM load reads its columns (2007 paper §6.2, "column loading
//! order"). Pieces of a load arrive one after another, and a scan waiting for the chunk
//! wakes when its last column arrives, so the order decides who wakes first.
//!
//! - `SmallestFirst` (the paper's "crude approach"): the most columns arrive early.
//! - `CompletesQuery` (the paper's "another approach"): repeatedly take the scan that
//!   still needs the chunk and that this load can complete — starved scans first, then
//!   almost-starved, then the one with the fewest bytes left to read, lowest slot on
//!   ties — and read its columns (smallest first); the columns no such scan needs come
//!   last, smallest first. A scan whose missing columns are not all resident, in
//!   flight or in this load cannot be completed by it and is skipped.

use crate::pool::PieceId;
use crate::state::{bits, AbmState};
use crate::{ChunkId, ColumnOrder, ScanSlot};

impl AbmState {
    /// The pieces of a load of `cols` of `chunk`, in the configured reading order.
    pub fn load_order(&self, chunk: ChunkId, cols: u64) -> Vec<PieceId> {
        match self.config.column_order {
            ColumnOrder::SmallestFirst => self.pieces_of(chunk, cols),
            ColumnOrder::CompletesQuery => self.completing_order(chunk, cols),
        }
    }

    fn completing_order(&self, chunk: ChunkId, cols: u64) -> Vec<PieceId> {
        let coming = self.resident_cols(chunk) | self.loading_cols(chunk) | cols;
        let mut left = cols;
        let mut out = Vec::with_capacity(bits(cols).count());
        while let Some(slot) = self.next_to_complete(chunk, coming, left) {
            let take = self.active_scan(slot).cols & left;
            out.extend(self.pieces_of(chunk, take));
            left &= !take;
        }
        out.extend(self.pieces_of(chunk, left));
        out
    }

    /// The scan this load completes soonest among those it can complete (see the
    /// module doc), or `None`.
    fn next_to_complete(&self, chunk: ChunkId, coming: u64, left: u64) -> Option<ScanSlot> {
        let (starved, almost) = (self.starved_mask(), self.almost_starved_mask());
        self.interest(chunk)
            .iter()
            .filter(|s| {
                let cols = self.active_scan(*s).cols;
                cols & !coming == 0 && cols & left != 0
            })
            .min_by_key(|s| {
                let read = self.bytes_of(chunk, self.active_scan(*s).cols & left);
                (!starved.contains(*s), !almost.contains(*s), read, *s)
            })
    }
}

#[cfg(test)]
mod tests {
    use crate::*;

    /// A 3-column table of 3, 1 and 4 bytes per piece. One scan reads column {0}, the
    /// other {1, 2}; both wait for chunk 0 (both starved).
    fn two_waiting_scans(order: ColumnOrder) -> Abm {
        let geometry = TableGeometry::uniform(2, 10).unwrap();
        let geometry = geometry
            .with_column_bytes(vec![vec![3, 1, 4], vec![3, 1, 4]])
            .unwrap();
        let config = AbmConfig::new(4).with_column_order(order);
        let mut abm = Abm::with_kind(geometry, config, PolicyKind::Normal).unwrap();
        for cols in [0b001, 0b110] {
            let spec = ScanSpec::new(0..10, ColumnMask(cols));
            let scan = abm.register_scan(&spec, Nanos::ZERO).unwrap().scan;
            assert_eq!(abm.next_chunk(scan, Nanos::ZERO).unwrap(), NextChunk::Wait);
        }
        abm
    }

    fn columns(order: &[PieceId]) -> Vec<u16> {
        order.iter().map(|p| p.columns.single().unwrap()).collect()
    }

    #[test]
    fn smallest_first_sorts_by_bytes() {
        let abm = two_waiting_scans(ColumnOrder::SmallestFirst);
        // {0} completes after 1 + 3 bytes, {1, 2} after all 8.
        assert_eq!(
            columns(&abm.state().load_order(ChunkId(0), 0b111)),
            [1, 0, 2]
        );
    }

    #[test]
    fn completes_query_reads_one_scan_whole_before_the_next() {
        let abm = two_waiting_scans(ColumnOrder::CompletesQuery);
        let state = abm.state();
        // Both starved; {0} needs 3 bytes, {1, 2} needs 5: {0} completes after 3 bytes
        // (not 4), {1, 2} still after 8.
        assert_eq!(columns(&state.load_order(ChunkId(0), 0b111)), [0, 1, 2]);
        // A load without column 2 cannot complete {1, 2}; {0} first, then the rest.
        assert_eq!(columns(&state.load_order(ChunkId(0), 0b011)), [0, 1]);
        // A load without column 0 completes only {1, 2}, smallest first.
        assert_eq!(columns(&state.load_order(ChunkId(0), 0b110)), [1, 2]);
    }
}
