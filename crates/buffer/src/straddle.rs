//! Pages straddling two chunks (DSM; docs/abm.md, "Pages straddling two chunks"): a
//! piece's first page may also be the previous chunk's last page of the column, and its
//! last page the next chunk's first. When that neighbouring piece is resident as the
//! load starts, the loader copies the page from it instead of reading it again.
//!
//! ```text
//!   column file:  … ┆ p7 ┆ p8 ┆ p9 ┆ p10 ┆ …     chunk k-1 = p7..=p8, chunk k = p8..=p10
//!   load (k, col) with (k-1, col) resident:  copy p8 from it, read p9..=p10
//! ```
//!
//! Memory is unchanged (each piece keeps its own copy of the page, so evicting either
//! never touches the other): only the bytes read fall.

use std::ops::Range;

use crate::{AbmState, ChunkId, PieceId, PieceState};

/// How the loader gets one piece of a load: `read` (byte offsets within the piece,
/// page aligned by construction) from the device; the bytes before it from `head_from`'s
/// last page, those after it from `tail_from`'s first page.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReadPlan {
    pub piece: PieceId,
    pub read: Range<u64>,
    pub head_from: Option<PieceId>,
    pub tail_from: Option<PieceId>,
    /// A scattered load (`scatter.rs`): the runs of page numbers kept, read with one
    /// request over `read` (the pages between runs dropped); empty for every other
    /// load.
    pub pages: Vec<Range<u32>>,
}

impl ReadPlan {
    /// The plan of a scattered piece: one request over `read` (from its first page to
    /// its last), keeping the page runs `pages`.
    pub(crate) fn scattered(piece: PieceId, read: Range<u64>, pages: Vec<Range<u32>>) -> ReadPlan {
        ReadPlan {
            piece,
            read,
            head_from: None,
            tail_from: None,
            pages,
        }
    }

    /// Bytes read from the device.
    pub fn read_bytes(&self) -> u64 {
        self.read.end.saturating_sub(self.read.start)
    }
}

impl AbmState {
    /// The plan for `piece`, from what is resident now (a loading neighbour has no bytes
    /// to copy yet). A one-page piece shared both ways needs one copy, the head's.
    pub(crate) fn plan_read(&self, piece: PieceId) -> ReadPlan {
        let bytes = self.piece_bytes(piece);
        let shared = self.geometry.shared_pages(piece.chunk, piece.columns);
        let resident = |chunk: Option<u32>| {
            let chunk = ChunkId(chunk.filter(|&c| c < self.chunk_count())?);
            let neighbour = PieceId { chunk, ..piece };
            (self.pool.state(neighbour) == Some(PieceState::Resident)).then_some(neighbour)
        };
        let head_from = (shared.head > 0)
            .then(|| resident(piece.chunk.0.checked_sub(1)))
            .flatten();
        let skip_head = head_from.map_or(0, |_| shared.head);
        let tail_from = (shared.tail > 0 && skip_head.saturating_add(shared.tail) <= bytes)
            .then(|| resident(piece.chunk.0.checked_add(1)))
            .flatten();
        let skip_tail = tail_from.map_or(0, |_| shared.tail);
        let end = bytes.saturating_sub(skip_tail).max(skip_head);
        ReadPlan {
            piece,
            read: skip_head.min(end)..end,
            head_from,
            tail_from,
            pages: Vec::new(),
        }
    }
}
