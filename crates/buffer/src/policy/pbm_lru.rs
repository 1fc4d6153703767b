//! pbm-lru: PBM/LRU (2012 paper §3, "PBM/LRU"; proposed there, built here). PBM as in
//! `pbm.rs`, except for the pieces no active scan will consume: plain PBM files them
//! all in one "not requested" bucket that is evicted first; PBM/LRU files each in the
//! LRU half of a [`CounterRotatingTimeline`] at an estimated time of next use taken
//! from its own history (the paper: "keeping for each page the timestamps of the last
//! four uses, and taking the average distance between them"), where it ages as LRU
//! would. So a piece that short scans keep coming back to outranks a piece some scan
//! needs only much later, and pieces used once leave first, least recently used first.
//!
//! A use is a delivery of the piece's chunk to a scan that reads the piece's column.
//! The history lives as long as the piece is in the pool (eviction forgets it), so a
//! re-loaded piece starts over with no estimate.

use crate::{BucketTimeline, CounterRotatingTimeline, Nanos, PieceId, TimelineShape};
use std::collections::HashMap;

/// Uses remembered per piece (the paper's "last four uses").
pub(crate) const USES_KEPT: usize = 4;

/// The last [`USES_KEPT`] times a piece was used, oldest first.
#[derive(Clone, Debug, Default)]
struct Uses {
    at: [Nanos; USES_KEPT],
    len: usize,
}

impl Uses {
    fn record(&mut self, at: Nanos) {
        if self.len == USES_KEPT {
            self.at.rotate_left(1);
            self.len -= 1;
        }
        self.at[self.len] = at;
        self.len += 1;
    }

    /// Mean gap between the remembered uses; `None` with fewer than two.
    fn mean_gap(&self) -> Option<Nanos> {
        let gaps = self.len.checked_sub(1).filter(|&g| g > 0)?;
        let span = self.at[self.len - 1].saturating_sub(self.at[0]);
        Some(Nanos(span.0 / gaps as u64))
    }

    fn last(&self) -> Option<Nanos> {
        self.len.checked_sub(1).map(|i| self.at[i])
    }
}

/// Use history of the pieces in the pool.
#[derive(Clone, Debug, Default)]
pub(crate) struct UseHistory {
    uses: HashMap<PieceId, Uses>,
}

impl UseHistory {
    pub(crate) fn record(&mut self, piece: PieceId, at: Nanos) {
        self.uses.entry(piece).or_default().record(at);
    }

    pub(crate) fn forget(&mut self, piece: PieceId) {
        self.uses.remove(&piece);
    }

    /// Estimated time from `now` to the piece's next use, as the LRU buckets file it:
    /// the mean gap between its uses plus the time since the last one (aging). `None`
    /// when it has fewer than two uses: no estimate, so it is filed last.
    pub(crate) fn distance(&self, piece: PieceId, now: Nanos) -> Option<Nanos> {
        let uses = self.uses.get(&piece)?;
        let gap = uses.mean_gap()?;
        let age = now.saturating_sub(uses.last()?);
        Some(gap + age)
    }
}

/// The timeline a PBM policy files pieces on: plain PBM's, or PBM/LRU's with the use
/// history that places unrequested pieces.
// One of these lives in each (boxed) PBM policy: the size difference costs nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug)]
pub(crate) enum PbmTimeline {
    Plain(BucketTimeline<PieceId>),
    CounterRotating(CounterRotatingTimeline<PieceId>, UseHistory),
}

impl PbmTimeline {
    pub(crate) fn plain() -> Self {
        PbmTimeline::Plain(
            BucketTimeline::new(TimelineShape::DEFAULT, Nanos::ZERO)
                .unwrap_or_else(|e| unreachable!("the default timeline shape is valid: {e}")),
        )
    }

    pub(crate) fn counter_rotating() -> Self {
        PbmTimeline::CounterRotating(
            CounterRotatingTimeline::new(TimelineShape::DEFAULT, Nanos::ZERO)
                .unwrap_or_else(|e| unreachable!("the default timeline shape is valid: {e}")),
            UseHistory::default(),
        )
    }

    /// Paper: PagePush. `after` is the predicted next consumption by an active scan;
    /// `None` files the piece as unrequested (PBM/LRU: by its history at `now`).
    pub(crate) fn file(&mut self, piece: PieceId, after: Option<Nanos>, now: Nanos) {
        match self {
            PbmTimeline::Plain(t) => t.push(piece, after),
            PbmTimeline::CounterRotating(t, history) => match after {
                Some(after) => t.push_requested(piece, after),
                None => t.push_unrequested(piece, history.distance(piece, now)),
            },
        }
    }

    /// The piece was used (delivered to a scan reading it) at `at`.
    pub(crate) fn record_use(&mut self, piece: PieceId, at: Nanos) {
        if let PbmTimeline::CounterRotating(_, history) = self {
            history.record(piece, at);
        }
    }

    /// The piece left the pool (or never arrived): unfile it and forget its history.
    pub(crate) fn remove(&mut self, piece: PieceId) {
        match self {
            PbmTimeline::Plain(t) => {
                t.remove(piece);
            }
            PbmTimeline::CounterRotating(t, history) => {
                t.remove(piece);
                history.forget(piece);
            }
        }
    }

    /// Paper: RefreshRequestedBuckets (and, for PBM/LRU, aging). Returns the requested
    /// pieces whose predicted time has passed.
    pub(crate) fn advance(&mut self, now: Nanos) -> Vec<PieceId> {
        match self {
            PbmTimeline::Plain(t) => t.advance(now),
            PbmTimeline::CounterRotating(t, _) => t.advance(now),
        }
    }

    /// Pieces in eviction order.
    pub(crate) fn eviction_order(&self) -> Box<dyn Iterator<Item = PieceId> + '_> {
        match self {
            PbmTimeline::Plain(t) => Box::new(t.eviction_order()),
            PbmTimeline::CounterRotating(t, _) => Box::new(t.eviction_order()),
        }
    }
}

/// The timeline is PBM's ranking: its replacer walks it from the far end.
impl crate::replacer::EvictionOrder for PbmTimeline {
    fn eviction_order(&self) -> impl Iterator<Item = PieceId> + '_ {
        PbmTimeline::eviction_order(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ChunkId, TableId};

    const S: u64 = 1_000_000_000;

    fn piece(c: u32) -> PieceId {
        PieceId::whole(TableId(0), ChunkId(c))
    }

    #[test]
    fn the_estimate_is_the_mean_gap_of_the_last_four_uses_plus_the_age() {
        let mut h = UseHistory::default();
        h.record(piece(1), Nanos(10 * S));
        assert_eq!(
            h.distance(piece(1), Nanos(11 * S)),
            None,
            "one use: no estimate"
        );
        // Uses at 10, 12, 20, 21, 22 s: the last four (12..22) are 10 s over 3 gaps.
        for t in [12, 20, 21, 22] {
            h.record(piece(1), Nanos(t * S));
        }
        let gap = 10 * S / 3;
        assert_eq!(h.distance(piece(1), Nanos(22 * S)), Some(Nanos(gap)));
        assert_eq!(
            h.distance(piece(1), Nanos(25 * S)),
            Some(Nanos(gap + 3 * S))
        );
        h.forget(piece(1));
        assert_eq!(h.distance(piece(1), Nanos(25 * S)), None);
    }
}
