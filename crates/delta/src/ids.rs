//! The two kinds of tuple position (2012 paper §2.1): SIDs name stable tuples, RIDs the
//! tuples a query sees. They differ once a table has changes; keeping them apart in the
//! type system is what stops a chunk's SIDs from being used as a plan's RIDs.

use std::fmt;

/// Stable ID: the position of a tuple in the stable table, implied by its place on disk.
/// `Sid(stable_rows)` is the position after the last stable tuple, where rows appended
/// through the tree sit.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Sid(pub u64);

/// Row ID: the position of a tuple in the table as a snapshot sees it, changes applied.
/// Never stored: generated while merging.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Rid(pub u64);

impl fmt::Display for Sid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SID {}", self.0)
    }
}

impl fmt::Display for Rid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "RID {}", self.0)
    }
}
