//! PBM/LRU's two sets of counter-rotating buckets (2012 paper §3, "PBM/LRU").
//!
//! ```text
//!   PBM (requested)  | b0 | b1 | b2 b2 | b3 b3 | ...  ◄── move left: the time until a
//!   ─────────────────┼────┼────┼───────┼───────┼──        scan consumes the key shrinks
//!   LRU (unrequested)| b0 | b1 | b2 b2 | b3 b3 | ...  ──► move right (aging): the time
//!                                                           since the key was last used grows
//! ```
//!
//! Keys an active scan will consume sit above the line, at their predicted time of next
//! consumption (PBM's [`BucketTimeline`]). Keys no active scan wants sit below, at an
//! estimated time of next consumption from their own history of use (the caller's
//! estimate, e.g. the mean gap between their last uses), and age rightwards as time
//! passes without a use, as LRU would. A key with no estimate (used once) goes straight
//! to the last LRU bucket, in use order: for those keys this is PBM's "not requested"
//! bucket kept in LRU order.
//!
//! Eviction starts at the far end of both sets: the LRU bucket first, then the PBM
//! bucket of the same time range, moving left. Both sets have the same shape, so
//! position `p` of either stands for the same range of times from now.

use super::{BucketTimeline, Filed, TimelineShape};
use crate::Nanos;
use std::hash::Hash;

/// Where a key of a [`CounterRotatingTimeline`] is filed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Placed {
    /// A PBM bucket: an active scan will consume the key (0 = soonest).
    Requested(usize),
    /// An LRU bucket: no active scan will (0 = expected back soonest).
    Unrequested(usize),
}

/// PBM/LRU's timeline; see the module docs.
#[derive(Clone, Debug)]
pub struct CounterRotatingTimeline<K> {
    requested: BucketTimeline<K>,
    aging: BucketTimeline<K>,
}

impl<K: Copy + Eq + Hash> CounterRotatingTimeline<K> {
    /// Two empty bucket sets of `shape` whose "now" is `now`.
    pub fn new(shape: TimelineShape, now: Nanos) -> Result<Self, String> {
        Ok(CounterRotatingTimeline {
            requested: BucketTimeline::new(shape, now)?,
            aging: BucketTimeline::new(shape, now)?,
        })
    }

    pub fn len(&self) -> usize {
        self.requested.len() + self.aging.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn contains(&self, key: K) -> bool {
        self.requested.contains(key) || self.aging.contains(key)
    }

    /// Files `key` above the line: an active scan consumes it `after` from now.
    pub fn push_requested(&mut self, key: K, after: Nanos) {
        self.aging.remove(key);
        self.requested.push(key, Some(after));
    }

    /// Files `key` below the line at its estimated `distance` to its next use, or, with
    /// no estimate, last (newest of the keys there).
    pub fn push_unrequested(&mut self, key: K, distance: Option<Nanos>) {
        self.requested.remove(key);
        self.aging.push_aging(key, distance);
    }

    /// Unfiles `key`; false if it was not filed.
    pub fn remove(&mut self, key: K) -> bool {
        self.requested.remove(key) | self.aging.remove(key)
    }

    pub fn placed(&self, key: K) -> Option<Placed> {
        match (self.requested.filed(key), self.aging.filed(key)) {
            (Some(Filed::At(p)), _) => Some(Placed::Requested(p)),
            (_, Some(Filed::At(p))) => Some(Placed::Unrequested(p)),
            _ => None,
        }
    }

    /// Keys in eviction order: from the last position to the first, the LRU bucket
    /// (its oldest first), then the PBM bucket of the same range.
    pub fn eviction_order(&self) -> impl Iterator<Item = K> + '_ {
        (0..self.requested.slots.len()).rev().flat_map(move |p| {
            self.aging
                .walk(self.aging.slots[p])
                .chain(self.requested.walk(self.requested.slots[p]))
        })
    }

    /// One refresh to `now`: PBM buckets move left, LRU buckets move right. Returns the
    /// requested keys whose predicted time has passed, for the caller to re-file.
    pub fn advance(&mut self, now: Nanos) -> Vec<K> {
        self.aging.age(now);
        self.requested.advance(now)
    }

    /// Each set is consistent, no key is in both, and neither uses its separate
    /// "not requested" list (the LRU set's last bucket plays that part).
    pub fn check_invariants(&self) -> Result<(), String> {
        self.requested.check_invariants()?;
        self.aging.check_invariants()?;
        let unused = |t: &BucketTimeline<K>| t.lists[t.not_requested as usize].len;
        if unused(&self.requested) + unused(&self.aging) != 0 {
            return Err("a key is in a plain not-requested list".into());
        }
        if self.requested.index.keys().any(|k| self.aging.contains(*k)) {
            return Err("a key is both requested and unrequested".into());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
