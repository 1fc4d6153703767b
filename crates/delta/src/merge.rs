//! PDT merging: what a scan does with the stable tuples of one SID range to produce the
//! tuples a query sees. The merge restarts at any SID (a CScan's chunks come in any
//! order): the tree is searched for the first change at or after the range's start.

use std::ops::Range;

use crate::{Change, DeltaError, Entry, Pdt, Rid, Sid};

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
        let mut steps = Vec::new();
        let mut next = sids.start;
        let delta = self.visit_anchored(sids.clone(), |entry| {
            let sid = entry.sid.0;
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

    /// Whether an inserted or modified tuple is anchored in stable tuples `sids`: a
    /// chunk of them may hold values its zonemap does not know.
    pub fn has_new_values_in(&self, sids: Range<u64>) -> bool {
        let mut found = false;
        self.visit_anchored(sids, |entry| {
            found = !matches!(entry.change, Change::Delete);
            !found
        });
        found
    }

    /// Calls `f` on the entries merged with stable tuples `sids`, in stream order, until
    /// it returns `false`: those at SIDs in the range, and the appended ones (at
    /// `Sid(stable_rows)`) when the range ends the stable table. Returns the delta of the
    /// entries before the range.
    fn visit_anchored<'a>(
        &'a self,
        sids: Range<u64>,
        mut f: impl FnMut(&'a Entry<T>) -> bool,
    ) -> i64 {
        let with_tail = sids.end == self.stable_rows();
        self.visit_from_sid(Sid(sids.start), |entry| {
            let sid = entry.sid.0;
            let inside = sid < sids.end || (sid == sids.end && with_tail);
            inside && f(entry)
        })
    }
}
