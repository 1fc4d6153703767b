//! The in-order core shared by normal, attach and the PBM family: every scan has a chunk
//! order and a cursor; the loader reads ahead `READ_AHEAD` chunks per scan (the one
//! being processed counts), serving the scan that has waited longest first; eviction is
//! LRU (PBM brings its own). The order is fixed at admission except under
//! `pbm-opportunistic`, which re-admits a scan with a new order of the chunks it still
//! needs (`ChunkOrder::remaining`) when it moves to another region.

use super::{choice_with, LoadChoice};
use crate::config::MAX_SCANS;
use crate::{AbmState, ChunkId, ChunkRanges, LruReplacer, Nanos, ScanSlot};
use std::ops::Range;

/// Chunks per scan kept resident or loading ahead of consumption: the one in process
/// plus one read-ahead, the same depth relevance uses before calling a scan starved.
pub(crate) const READ_AHEAD: u32 = 2;

/// A scan's chunk order and the position of the next chunk to deliver.
#[derive(Clone, Debug)]
pub(crate) struct ChunkOrder {
    ranges: Vec<Range<u32>>,
    /// `offsets[i]` is the position of `ranges[i].start` in the order.
    offsets: Vec<u32>,
    len: u32,
    cursor: u32,
}

impl ChunkOrder {
    pub(crate) fn ascending(chunks: &ChunkRanges) -> Self {
        Self::from_ranges(chunks.ranges().to_vec())
    }

    /// Starts at the first chunk at or after `start` and wraps around to the beginning
    /// ("circular scan").
    pub(crate) fn rotated(chunks: &ChunkRanges, start: ChunkId) -> Self {
        let (mut tail, mut head) = (Vec::new(), Vec::new());
        for r in chunks.ranges() {
            if r.end <= start.0 {
                head.push(r.clone());
            } else if r.start >= start.0 {
                tail.push(r.clone());
            } else {
                tail.push(start.0..r.end);
                head.push(r.start..start.0);
            }
        }
        tail.extend(head);
        Self::from_ranges(tail)
    }

    /// Position of `chunk` in the order (`None`: not in it). The ranges of an order
    /// are few (one per range of the scan, plus one for a rotation), so a walk is cheap.
    pub(crate) fn index_of(&self, chunk: ChunkId) -> Option<u32> {
        let i = self.ranges.iter().position(|r| r.contains(&chunk.0))?;
        Some(self.offsets[i] + (chunk.0 - self.ranges[i].start))
    }

    /// The chunks not yet passed by the cursor, as ascending ranges.
    pub(crate) fn remaining(&self) -> ChunkRanges {
        let from = self.cursor;
        let ranges = self.ranges.iter().zip(&self.offsets).filter_map(|(r, &o)| {
            let end = o + (r.end - r.start);
            (end > from).then(|| r.start + from.saturating_sub(o)..r.end)
        });
        ChunkRanges::from_ranges(ranges.collect())
    }

    fn from_ranges(ranges: Vec<Range<u32>>) -> Self {
        let mut offsets = Vec::with_capacity(ranges.len());
        let mut len = 0;
        for r in &ranges {
            offsets.push(len);
            len += r.end - r.start;
        }
        ChunkOrder {
            ranges,
            offsets,
            len,
            cursor: 0,
        }
    }

    pub(crate) fn nth(&self, pos: u32) -> Option<ChunkId> {
        if pos >= self.len {
            return None;
        }
        let i = self.offsets.partition_point(|&o| o <= pos) - 1;
        Some(ChunkId(self.ranges[i].start + (pos - self.offsets[i])))
    }

    /// The next chunk this scan will be given.
    pub(crate) fn current(&self) -> Option<ChunkId> {
        self.nth(self.cursor)
    }

    /// The chunk it was given last (`None` before its first in this order).
    pub(crate) fn previous(&self) -> Option<ChunkId> {
        self.nth(self.cursor.checked_sub(1)?)
    }

    pub(crate) fn first(&self) -> Option<ChunkId> {
        self.nth(0)
    }
}

#[derive(Clone, Debug)]
pub(crate) struct Sequential {
    orders: Vec<Option<ChunkOrder>>,
}

impl Default for Sequential {
    fn default() -> Self {
        Sequential {
            orders: vec![None; MAX_SCANS],
        }
    }
}

impl Sequential {
    pub(crate) fn admit(&mut self, slot: ScanSlot, order: ChunkOrder) {
        self.orders[slot.index()] = Some(order);
    }

    pub(crate) fn retire(&mut self, slot: ScanSlot) {
        self.orders[slot.index()] = None;
    }

    pub(crate) fn order(&self, slot: ScanSlot) -> Option<&ChunkOrder> {
        self.orders[slot.index()].as_ref()
    }

    /// Where the scan is: the oldest chunk it processes, else the next one it will get.
    pub(crate) fn position(&self, state: &AbmState, slot: ScanSlot) -> Option<ChunkId> {
        let oldest = state.active_scan(slot).held.first().map(|(_, c)| *c);
        oldest.or_else(|| self.order(slot)?.current())
    }

    /// Chunks the scan will be given before `chunk` from now on, counting those it
    /// holds (PBM's "tuples_behind − tuples_consumed" in chunks: 0 for the chunk in
    /// process, 1 for the next while it holds one). `None`: passed or not in its order.
    /// With several workers releasing out of order, the held count stands for the
    /// chunks just behind the cursor: an estimate, as PBM's positions are.
    pub(crate) fn ahead(&self, state: &AbmState, slot: ScanSlot, chunk: ChunkId) -> Option<u32> {
        let order = self.order(slot)?;
        let holding = state.active_scan(slot).held.len() as u32;
        order
            .index_of(chunk)?
            .checked_add(holding)?
            .checked_sub(order.cursor)
    }

    pub(crate) fn choose_available(&self, state: &AbmState, slot: ScanSlot) -> Option<ChunkId> {
        let chunk = self.order(slot)?.current()?;
        let cols = state.active_scan(slot).cols;
        state.available_for(chunk, cols).then_some(chunk)
    }

    pub(crate) fn on_delivered(&mut self, slot: ScanSlot, chunk: ChunkId) {
        if let Some(order) = self.orders[slot.index()].as_mut() {
            debug_assert_eq!(order.current(), Some(chunk), "in-order delivery");
            order.cursor += 1;
        }
    }

    pub(crate) fn choose_load(&self, state: &AbmState) -> Option<LoadChoice> {
        let (chunk, cols, slot) = self.next_target(state)?;
        choice_with(state, &mut LruReplacer, &(), chunk, cols, Some(slot))
    }

    /// What to read next, before choosing victims: the read-ahead chunk of the scan
    /// that has waited longest, with the columns it lacks, and that scan.
    pub(crate) fn next_target(&self, state: &AbmState) -> Option<(ChunkId, u64, ScanSlot)> {
        self.next_target_of(state, |_| true)
    }

    /// [`Sequential::next_target`] among the scans `eligible` accepts (a throttled scan
    /// reads nothing ahead while it is held).
    pub(crate) fn next_target_of(
        &self,
        state: &AbmState,
        eligible: impl Fn(ScanSlot) -> bool,
    ) -> Option<(ChunkId, u64, ScanSlot)> {
        let mut best: Option<((bool, Nanos, ScanSlot), ChunkId)> = None;
        for slot in state.active_slots().filter(|s| eligible(*s)) {
            let Some(chunk) = self.read_ahead_candidate(state, slot) else {
                continue;
            };
            let scan = state.active_scan(slot);
            // Blocked scans first, longest waiting first; then the least recently served.
            let key = (
                scan.blocked_since().is_none(),
                scan.blocked_since().unwrap_or(scan.last_served),
                slot,
            );
            if best.is_none_or(|(k, _)| key < k) {
                best = Some((key, chunk));
            }
        }
        let ((_, _, slot), chunk) = best?;
        let cols = state.missing_cols(chunk, state.active_scan(slot).cols);
        Some((chunk, cols, slot))
    }

    /// The first chunk among the scan's next `READ_AHEAD` chunks with some of its
    /// columns neither resident nor loading (normal's DSM variant: LRU per piece, the
    /// scan's own columns only).
    fn read_ahead_candidate(&self, state: &AbmState, slot: ScanSlot) -> Option<ChunkId> {
        let order = self.order(slot)?;
        let scan = state.active_scan(slot);
        // One more chunk ahead per further worker, less those its workers hold.
        let window = READ_AHEAD + u32::from(scan.workers.max(1)) - 1;
        let window = window.saturating_sub(scan.held.len() as u32);
        (0..window)
            .map_while(|i| order.nth(order.cursor + i))
            .find(|c| state.missing_cols(*c, scan.cols) != 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn collect(o: &ChunkOrder) -> Vec<u32> {
        (0..o.len).filter_map(|i| o.nth(i)).map(|c| c.0).collect()
    }

    #[test]
    fn rotation_wraps_around_the_ranges() {
        let chunks = ChunkRanges::from_ranges(vec![2..5, 8..10]);
        assert_eq!(
            collect(&ChunkOrder::ascending(&chunks)),
            vec![2, 3, 4, 8, 9]
        );
        assert_eq!(
            collect(&ChunkOrder::rotated(&chunks, ChunkId(3))),
            vec![3, 4, 8, 9, 2]
        );
        assert_eq!(
            collect(&ChunkOrder::rotated(&chunks, ChunkId(6))),
            vec![8, 9, 2, 3, 4]
        );
        assert_eq!(
            collect(&ChunkOrder::rotated(&chunks, ChunkId(11))),
            vec![2, 3, 4, 8, 9]
        );
    }

    /// `index_of` inverts `nth`, and `remaining` is what the cursor has not passed,
    /// both checked against the plain list of the order.
    #[test]
    fn index_of_and_remaining_follow_the_listed_order() {
        let chunks = ChunkRanges::from_ranges(vec![2..5, 8..10, 12..13]);
        for start in 0..14 {
            let mut order = ChunkOrder::rotated(&chunks, ChunkId(start));
            let listed = collect(&order);
            for c in 0..14 {
                let expected = listed.iter().position(|&x| x == c).map(|p| p as u32);
                assert_eq!(order.index_of(ChunkId(c)), expected, "start {start}, {c}");
            }
            for cursor in 0..=listed.len() {
                order.cursor = cursor as u32;
                let mut rest: Vec<u32> = listed[cursor..].to_vec();
                rest.sort_unstable();
                let got: Vec<u32> = order.remaining().iter().map(|c| c.0).collect();
                assert_eq!(got, rest, "start {start}, cursor {cursor}");
            }
        }
    }
}
