//! A CScan over a changed table (2012 paper §2.1, "PDT Merge in CScan"): the plan asks
//! for RID ranges, the ABM schedules SID ranges (chunks), and each delivered chunk is
//! turned back into the RIDs it can produce, trimmed against what the scan still wants
//! and has not produced yet.

use std::collections::BTreeMap;
use std::ops::Range;

use crate::{DeltaError, Pdt, Rid, Sid};

impl<T: Clone> Pdt<T> {
    /// The stable ranges a scan must read to produce the tuples at `rids` (sorted,
    /// disjoint): each RID's SID, inserted tuples included (they are produced with the
    /// stable tuple after them). Tuples appended after the last stable one come with the
    /// last stable tuple; over an empty stable table there is nothing to read, and
    /// `merge_steps(0..0)` yields them all.
    pub fn sid_ranges(&self, rids: &[Range<u64>]) -> Result<Vec<Range<u64>>, DeltaError> {
        let last = self.stable_rows().checked_sub(1);
        let mut out: Vec<Range<u64>> = Vec::with_capacity(rids.len());
        for range in rids.iter().filter(|r| r.start < r.end) {
            let (Some(last), Some(end_rid)) = (last, range.end.checked_sub(1)) else {
                continue;
            };
            let start = self.rid_to_sid(Rid(range.start))?.0.min(last);
            let end = self.rid_to_sid(Rid(end_rid))?.0.min(last) + 1;
            match out.last_mut() {
                Some(prev) if prev.end >= start => prev.end = prev.end.max(end),
                _ => out.push(start..end),
            }
        }
        Ok(out)
    }

    /// The RIDs merging the stable tuples `sids` produces: from the lowest RID of its
    /// first SID to the lowest RID of the SID after it, or to the table's end for the
    /// range that ends the stable table (it carries the appended tuples). Ranges that
    /// tile the stable table give RID ranges that tile the table.
    pub fn rid_range(&self, sids: Range<u64>) -> Result<Range<u64>, DeltaError> {
        if sids.start > sids.end || sids.end > self.stable_rows() {
            return Err(DeltaError::SidOutOfRange {
                sid: sids.end,
                stable_rows: self.stable_rows(),
            });
        }
        let start = self.sid_to_rid_low(Sid(sids.start))?.0;
        let end = if sids.end == self.stable_rows() {
            self.rows()
        } else {
            self.sid_to_rid_low(Sid(sids.end))?.0
        };
        Ok(start..end.max(start))
    }
}

/// A scan's record of the RIDs it has produced, so that chunks delivered in any order
/// never yield a tuple twice (the paper's trimming against "all RID ranges that have
/// already been processed").
#[derive(Clone, Debug, Default)]
pub struct RidLedger {
    /// Produced ranges, start → end, disjoint and not touching.
    produced: BTreeMap<u64, u64>,
}

impl RidLedger {
    pub fn new() -> RidLedger {
        RidLedger::default()
    }

    /// The parts of `chunk` (the RIDs a delivered chunk can produce) that lie in `wanted`
    /// (sorted, disjoint) and were not produced before; they count as produced from now.
    pub fn claim(&mut self, wanted: &[Range<u64>], chunk: Range<u64>) -> Vec<Range<u64>> {
        let mut fresh = Vec::new();
        for want in wanted {
            let (start, end) = (want.start.max(chunk.start), want.end.min(chunk.end));
            if start < end {
                fresh.extend(self.unproduced(start..end));
            }
        }
        for range in &fresh {
            self.add(range.clone());
        }
        fresh
    }

    /// Rows produced so far.
    pub fn rows(&self) -> u64 {
        self.produced.iter().map(|(s, e)| e - s).sum()
    }

    fn unproduced(&self, range: Range<u64>) -> Vec<Range<u64>> {
        let mut out = Vec::new();
        let mut at = range.start;
        // The produced range starting at or before `at` may cover its beginning.
        let before = self.produced.range(..=at).next_back().map(|(s, e)| *s..*e);
        let after = self
            .produced
            .range(at.saturating_add(1)..range.end)
            .map(|(s, e)| *s..*e);
        for done in before.into_iter().chain(after) {
            if done.start > at {
                out.push(at..done.start.min(range.end));
            }
            at = at.max(done.end);
            if at >= range.end {
                return out;
            }
        }
        out.push(at..range.end);
        out
    }

    fn add(&mut self, range: Range<u64>) {
        let (mut start, mut end) = (range.start, range.end);
        if let Some((&s, &e)) = self.produced.range(..=start).next_back() {
            if e >= start {
                start = s;
                end = end.max(e);
            }
        }
        let touching: Vec<u64> = self.produced.range(start..=end).map(|(s, _)| *s).collect();
        for s in touching {
            if let Some(e) = self.produced.remove(&s) {
                end = end.max(e);
            }
        }
        self.produced.insert(start, end);
    }
}
