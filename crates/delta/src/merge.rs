//! PDT merging: what a scan does with the stable tuples of one SID range to produce the
//! tuples a query sees. The merge restarts at any SID (a CScan's chunks come in any
//! order): the tree is searched for the first change at or after the range's start.

use std::ops::Range;

use crate::{Change, DeltaError, Pdt, Rid, Sid};

/// One run of the merged stream, in order.
#[derive(Clone, Debug, PartialEq)]
pub enum Step<'a, T> {
    /// Stable tuples copied as they are.
    Stable(Range<u64>),
    /// An inserted tuple, all its values.
    Insert(&'a [T]),
    /// The stable tuple at `sid` with some columns replaced.
    Modified { sid: u64, values: &'a [(usize, T)] },
}

impl<T> Step<'_, T> {
    /// Tuples the step produces.
    pub fn rows(&self) -> u64 {
        match self {
            Step::Stable(sids) => sids.end - sids.start,
            Step::Insert(_) | Step::Modified { .. } => 1,
        }
    }
}

/// The merged stream of one SID range: its first RID and its steps.
#[derive(Clone, Debug, PartialEq)]
pub struct Merged<'a, T> {
    pub first_rid: Rid,
    pub steps: Vec<Step<'a, T>>,
}

impl<T> Merged<'_, T> {
    pub fn rows(&self) -> u64 {
        self.steps.iter().map(Step::rows).sum()
    }
}

impl<T: Clone> Pdt<T> {
    /// The merged stream of stable tuples `sids` (a chunk): deleted ones skipped,
    /// modified ones patched, inserted ones placed. A range that ends at the stable
    /// table's end also yields the tuples appended after it.
    pub fn merge_steps(&self, sids: Range<u64>) -> Result<Merged<'_, T>, DeltaError> {
        if sids.start > sids.end || sids.end > self.stable_rows() {
            return Err(DeltaError::SidOutOfRange {
                sid: sids.end,
                stable_rows: self.stable_rows(),
            });
        }
        let with_tail = sids.end == self.stable_rows();
        let mut steps = Vec::new();
        let mut next = sids.start;
        let delta = self.visit_from_sid(Sid(sids.start), |entry| {
            let sid = entry.sid.0;
            if sid > sids.end || (sid == sids.end && !with_tail) {
                return false;
            }
            if sid > next {
                steps.push(Step::Stable(next..sid));
                next = sid;
            }
            match &entry.change {
                Change::Insert(row) => steps.push(Step::Insert(row)),
                Change::Delete => next = sid + 1,
                Change::Modify(values) => {
                    steps.push(Step::Modified { sid, values });
                    next = sid + 1;
                }
            }
            true
        });
        if next < sids.end {
            steps.push(Step::Stable(next..sids.end));
        }
        let first = i128::from(sids.start) + i128::from(delta);
        let first_rid = u64::try_from(first).map_err(|_| DeltaError::Corrupt { at: sids.start })?;
        Ok(Merged {
            first_rid: Rid(first_rid),
            steps,
        })
    }
}
