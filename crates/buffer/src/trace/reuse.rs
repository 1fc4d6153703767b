//! How much of what scans consume another scan consumed just before: the potential of
//! sharing a resident chunk's *decoded* pieces between the scans that read it in one
//! short window (2012 paper §5's future work: decoding once for several scans), which
//! is worth building only if that share is large. Measured on a trace's references:
//! a reference is *shareable within `window`* when another scan referenced the same
//! piece at most `window` before it.

use std::collections::HashMap;

use super::Reference;
use crate::{Nanos, PieceId, ScanId};

/// A trace's consumed bytes, and those another scan consumed shortly before.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Reuse {
    /// Bytes of every reference.
    pub consumed: u64,
    /// Bytes of the references whose piece another scan referenced within the window
    /// before.
    pub shareable: u64,
}

impl Reuse {
    /// The shareable share of the consumed bytes (0 for an empty trace).
    pub fn fraction(&self) -> f64 {
        match self.consumed {
            0 => 0.0,
            all => self.shareable as f64 / all as f64,
        }
    }
}

/// [`Reuse`] of `trace` (in time order, as recorded) for `window`.
pub fn reuse_within(trace: &[Reference], window: Nanos) -> Reuse {
    // Per piece: its last reference's time and scan.
    let mut last: HashMap<PieceId, (Nanos, ScanId)> = HashMap::new();
    let mut reuse = Reuse::default();
    for r in trace {
        reuse.consumed = reuse.consumed.saturating_add(r.bytes);
        let recent = last
            .get(&r.piece)
            .is_some_and(|&(at, scan)| scan != r.scan && r.at.0.saturating_sub(at.0) <= window.0);
        if recent {
            reuse.shareable = reuse.shareable.saturating_add(r.bytes);
        }
        last.insert(r.piece, (r.at, r.scan));
    }
    reuse
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ChunkId, ColumnMask, TableId, TableVersion};

    fn reference(at_ms: u64, scan: u64, chunk: u32, bytes: u64) -> Reference {
        Reference {
            at: Nanos(at_ms * 1_000_000),
            scan: ScanId(scan),
            piece: PieceId {
                table: TableId(0),
                version: TableVersion::default(),
                chunk: ChunkId(chunk),
                columns: ColumnMask::column(0),
            },
            bytes,
        }
    }

    #[test]
    fn a_piece_is_shareable_only_after_another_scans_reference_within_the_window() {
        let trace = [
            reference(0, 1, 0, 100),
            reference(5, 2, 0, 100),  // scan 2, 5 ms after scan 1: shareable
            reference(6, 2, 1, 10),   // first reference of chunk 1
            reference(7, 2, 1, 10),   // the same scan again: not shareable
            reference(50, 3, 0, 100), // 45 ms after scan 2: only with a wide window
        ];
        let narrow = reuse_within(&trace, Nanos(10_000_000));
        assert_eq!(
            narrow,
            Reuse {
                consumed: 320,
                shareable: 100
            }
        );
        let wide = reuse_within(&trace, Nanos(50_000_000));
        assert_eq!(wide.shareable, 200);
        assert!((wide.fraction() - 200.0 / 320.0).abs() < 1e-12);
        assert_eq!(reuse_within(&[], Nanos(1)).fraction(), 0.0);
    }
}
