//! [`ScanSet`]: a fixed-size bit set of admitted scans, one bit per [`ScanSlot`].
//!
//! Interest ("which scans still need this chunk") is the key of every equivalence class
//! and the input of every relevance function, so it must be cheap to copy, compare, hash
//! and count. A `u64` did all that but capped an ABM at 64 concurrent scans; four words
//! keep the same operations branch-free for [`MAX_SCANS`] = 256.

use crate::config::MAX_SCANS;
use crate::ScanSlot;
use std::fmt;

const WORDS: usize = MAX_SCANS / 64;

/// A set of scan slots (paper: the set of queries interested in a chunk).
#[derive(Clone, Copy, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ScanSet([u64; WORDS]);

impl ScanSet {
    pub const EMPTY: ScanSet = ScanSet([0; WORDS]);

    /// The set holding only `slot`.
    pub fn single(slot: ScanSlot) -> ScanSet {
        let mut set = ScanSet::EMPTY;
        set.insert(slot);
        set
    }

    pub fn insert(&mut self, slot: ScanSlot) {
        let (word, bit) = Self::locate(slot);
        self.0[word] |= bit;
    }

    pub fn remove(&mut self, slot: ScanSlot) {
        let (word, bit) = Self::locate(slot);
        self.0[word] &= !bit;
    }

    pub fn set(&mut self, slot: ScanSlot, member: bool) {
        if member {
            self.insert(slot);
        } else {
            self.remove(slot);
        }
    }

    pub fn contains(&self, slot: ScanSlot) -> bool {
        let (word, bit) = Self::locate(slot);
        self.0[word] & bit != 0
    }

    /// Number of scans in the set (paper: numberInterestedQueries when it is interest).
    pub fn len(&self) -> u32 {
        self.0.iter().map(|w| w.count_ones()).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.0.iter().all(|w| *w == 0)
    }

    pub fn intersects(&self, other: &ScanSet) -> bool {
        self.0.iter().zip(other.0.iter()).any(|(a, b)| a & b != 0)
    }

    /// `|self ∩ other|` without building the intersection.
    pub fn intersection_len(&self, other: &ScanSet) -> u32 {
        self.0
            .iter()
            .zip(other.0.iter())
            .map(|(a, b)| (a & b).count_ones())
            .sum()
    }

    /// The lowest slot not in the set, if any.
    pub fn first_free(&self) -> Option<ScanSlot> {
        self.0.iter().enumerate().find_map(|(i, w)| {
            let bit = (!w).trailing_zeros() as usize;
            (bit < 64).then(|| ScanSlot((i * 64 + bit) as u16))
        })
    }

    /// Slots in the set, ascending.
    pub fn iter(self) -> impl Iterator<Item = ScanSlot> {
        self.0.into_iter().enumerate().flat_map(|(i, word)| {
            let mut w = word;
            std::iter::from_fn(move || {
                if w == 0 {
                    return None;
                }
                let bit = w.trailing_zeros() as usize;
                w &= w - 1;
                Some(ScanSlot((i * 64 + bit) as u16))
            })
        })
    }

    fn locate(slot: ScanSlot) -> (usize, u64) {
        let i = slot.index();
        debug_assert!(i < MAX_SCANS, "slot {i} beyond MAX_SCANS");
        (i / 64, 1u64 << (i % 64))
    }

    fn zip_with(self, other: ScanSet, f: impl Fn(u64, u64) -> u64) -> ScanSet {
        let mut out = [0; WORDS];
        for (i, o) in out.iter_mut().enumerate() {
            *o = f(self.0[i], other.0[i]);
        }
        ScanSet(out)
    }
}

impl std::ops::BitAnd for ScanSet {
    type Output = ScanSet;
    fn bitand(self, rhs: ScanSet) -> ScanSet {
        self.zip_with(rhs, |a, b| a & b)
    }
}

impl std::ops::BitOr for ScanSet {
    type Output = ScanSet;
    fn bitor(self, rhs: ScanSet) -> ScanSet {
        self.zip_with(rhs, |a, b| a | b)
    }
}

impl std::ops::BitXor for ScanSet {
    type Output = ScanSet;
    fn bitxor(self, rhs: ScanSet) -> ScanSet {
        self.zip_with(rhs, |a, b| a ^ b)
    }
}

impl std::ops::Sub for ScanSet {
    type Output = ScanSet;
    /// Set difference.
    fn sub(self, rhs: ScanSet) -> ScanSet {
        self.zip_with(rhs, |a, b| a & !b)
    }
}

impl FromIterator<ScanSlot> for ScanSet {
    fn from_iter<I: IntoIterator<Item = ScanSlot>>(iter: I) -> Self {
        let mut set = ScanSet::EMPTY;
        for slot in iter {
            set.insert(slot);
        }
        set
    }
}

impl fmt::Debug for ScanSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set().entries(self.iter().map(|s| s.0)).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_operations_across_words() {
        let a: ScanSet = [0, 63, 64, 200, 255].map(ScanSlot).into_iter().collect();
        let b: ScanSet = [63, 200, 7].map(ScanSlot).into_iter().collect();
        assert_eq!(a.len(), 5);
        assert_eq!((a & b).iter().map(|s| s.0).collect::<Vec<_>>(), [63, 200]);
        assert_eq!(a.intersection_len(&b), 2);
        assert_eq!((a - b).len(), 3);
        assert_eq!((a | b).len(), 6);
        assert!(a.contains(ScanSlot(255)) && !a.contains(ScanSlot(1)));
        assert_eq!(a.first_free(), Some(ScanSlot(1)));
        let full: ScanSet = (0..MAX_SCANS as u16).map(ScanSlot).collect();
        assert_eq!(full.first_free(), None);
        assert_eq!(full.len() as usize, MAX_SCANS);
    }
}
