//! The resident pieces of a PBM replay, arranged so that the next victim is found
//! without ranking every resident piece.
//!
//! The rule (`mod.rs`): a resident piece no registered scan wants goes first, least
//! recently used first; then the wanted piece whose predicted consumption (the minimum
//! over the scans wanting it) is furthest, ties to the least recently used. Predictions
//! move with every reference (a scan's latest time and pace, the mean pace), so no key
//! fixed at insertion ranks the wanted pieces. What stays fixed is each scan's own
//! order: a scan's prediction grows with the position of its next reference to a piece
//! (the same latest time plus a non-negative pace per step), or, under exact times,
//! with that reference's time.
//!
//! So each wanted resident piece is *placed* in the list of one scan that wants it,
//! sorted by that scan's key. The placing scan's prediction is an upper bound of the
//! piece's (a minimum over the scans wanting it, the placing one among them) for as
//! long as the scan wants it, whatever the predictions do. An eviction merges the
//! lists from their far ends (a threshold search):
//!
//! ```text
//!   scan 0:  ... (k=12, p7) (k=15, p3) (k=20, p9) ◄─ far end: the list's largest bound
//!   scan 1:  ...            (k=4,  p5) (k=30, p2) ◄─
//!   pop the largest bound over the far ends:
//!     bound = the piece's prediction  → a candidate; stop once a popped bound is
//!                                       below the best candidate's prediction
//!     bound > the piece's prediction  → place the piece with the scan that predicts
//!                                       it (its bound is then exact) and push it back
//! ```
//!
//! Every piece's bound is at least its prediction, so a piece whose prediction is above
//! the best candidate's is popped, and found exact, before that candidate; popping
//! everything equal to the best prediction settles ties by last use. Cost per
//! eviction: O(scans with placed pieces × log) to start the merge, plus O(log +
//! scans wanting the piece) per popped entry. A popped piece that is no candidate moves
//! to the scan that will consume it first, so it costs again only once another scan
//! overtakes that one.

use std::cmp::Reverse;
use std::collections::{BTreeSet, BinaryHeap};

/// A scan's order key for a piece it wants (position, or exact time, of its next
/// reference to it), and the piece.
pub(super) type Entry = (u64, u32);

/// The resident pieces, unwanted by last use and wanted per placing scan by its key.
#[derive(Default)]
pub(super) struct VictimIndex {
    /// Resident pieces no registered scan wants: (last use, piece).
    unwanted: BTreeSet<(usize, u32)>,
    /// Per scan: the wanted resident pieces placed with it.
    placed: Vec<BTreeSet<Entry>>,
    /// Per piece: the scan it is placed with, and its entry there.
    place_of: Vec<Option<(u32, Entry)>>,
    /// The scans with placed pieces.
    placing: BTreeSet<u32>,
}

/// What the search needs to know of the replay's state at an eviction.
pub(super) trait Predictions {
    /// Scan `s`'s predicted consumption of the piece of its entry keyed `key`.
    fn scan_due(&self, s: u32, key: u64) -> u128;
    /// The scan predicted to consume `piece` first, its key, and that prediction (the
    /// piece's); `None` if no scan wants it.
    fn owner(&self, piece: u32) -> Option<(u32, u64, u128)>;
    fn last_use(&self, piece: u32) -> usize;
}

/// An entry of the merge: (bound, scan, entry, whether it stands for the rest of the
/// scan's list below it).
type Item = (u128, u32, Entry, bool);

impl VictimIndex {
    pub(super) fn new(scans: usize, pieces: usize) -> VictimIndex {
        VictimIndex {
            placed: vec![BTreeSet::new(); scans],
            place_of: vec![None; pieces],
            ..VictimIndex::default()
        }
    }

    pub(super) fn add_unwanted(&mut self, last_use: usize, piece: u32) {
        self.unwanted.insert((last_use, piece));
    }

    pub(super) fn remove_unwanted(&mut self, last_use: usize, piece: u32) {
        self.unwanted.remove(&(last_use, piece));
    }

    /// The scan `s` the piece of `entry` is placed with (replacing its old place).
    /// The caller guarantees that `s` wants it, at the position `entry` keys.
    pub(super) fn place(&mut self, s: u32, entry: Entry) {
        self.unplace(entry.1);
        self.placed[s as usize].insert(entry);
        self.placing.insert(s);
        self.place_of[entry.1 as usize] = Some((s, entry));
    }

    /// Removes `piece` from the list it is placed in, if any.
    pub(super) fn unplace(&mut self, piece: u32) {
        let Some((s, entry)) = self.place_of[piece as usize].take() else {
            return;
        };
        let list = &mut self.placed[s as usize];
        list.remove(&entry);
        if list.is_empty() {
            self.placing.remove(&s);
        }
    }

    /// The scan `piece` is placed with.
    pub(super) fn placed_with(&self, piece: u32) -> Option<u32> {
        self.place_of[piece as usize].map(|(s, _)| s)
    }

    /// The piece the rule evicts next, if any is resident. Moves the pieces it finds
    /// placed with a scan other than the one predicted to consume them first.
    pub(super) fn victim(&mut self, p: &impl Predictions) -> Option<u32> {
        if let Some(&(_, piece)) = self.unwanted.first() {
            return Some(piece);
        }
        let mut heap: BinaryHeap<Item> = BinaryHeap::new();
        for &s in &self.placing {
            if let Some(&entry) = self.placed[s as usize].last() {
                heap.push((p.scan_due(s, entry.0), s, entry, true));
            }
        }
        // Best candidate: (prediction, staleness as Reverse(last use), piece).
        let mut best: Option<(u128, Reverse<usize>, u32)> = None;
        while let Some((bound, s, entry, rest)) = heap.pop() {
            if best.is_some_and(|(b, _, _)| bound < b) {
                break;
            }
            if rest {
                if let Some(&next) = self.placed[s as usize].range(..entry).next_back() {
                    heap.push((p.scan_due(s, next.0), s, next, true));
                }
            }
            let piece = entry.1;
            let Some((owner, key, due)) = p.owner(piece) else {
                continue;
            };
            if due == bound {
                best = best.max(Some((due, Reverse(p.last_use(piece)), piece)));
            } else if self.placed_with(piece) == Some(s) {
                self.place(owner, (key, piece));
                heap.push((due, owner, (key, piece), false));
            }
        }
        best.map(|(_, _, piece)| piece)
    }
}
