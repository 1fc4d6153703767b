//! The "LRU" half of PBM/LRU's counter-rotating buckets (2012 paper §3): the same
//! bucket shape as the requested timeline, but moving *right* as time passes (aging).
//!
//! A key filed at distance `d` from now sits in the bucket whose range holds `d`; each
//! slice `d` grows by one slice, so the buckets of every group whose span divides the
//! slices passed move one position right (as on the requested timeline, the moving
//! buckets are a prefix). The last moving bucket has nowhere to go but into the first
//! bucket of the next group, which is not moving this slice: its keys are appended
//! there (after the keys already there, which are further out). The last bucket of the
//! timeline never moves: it collects everything older, oldest first.
//!
//! Cost: a slice moves `groups × per_group` list handles and relinks the keys of one
//! merged bucket; a key is merged at most once per group it ages through, so over its
//! life a key costs O(groups) relinks, not O(slices).

use super::{BucketTimeline, NIL};
use crate::Nanos;
use std::hash::Hash;

impl<K: Copy + Eq + Hash> BucketTimeline<K> {
    /// Files `key` in the aging bucket of distance `distance` (moving it if filed).
    /// `None` files it in the last bucket, behind everything older.
    pub(super) fn push_aging(&mut self, key: K, distance: Option<Nanos>) {
        let position = match distance {
            Some(d) => self.shape.position_of(d),
            None => self.slots.len() - 1,
        };
        self.push_into(key, self.slots[position]);
    }

    /// Ages every bucket to `now` (the mirror of `advance`; nothing expires, the last
    /// bucket absorbs). A gap longer than the whole timeline empties every bucket into
    /// the last one, further buckets first.
    pub(super) fn age(&mut self, now: Nanos) {
        let slices = now.saturating_sub(self.origin).0 / self.shape.time_slice.0;
        self.origin = self.origin + Nanos(slices * self.shape.time_slice.0);
        let whole_span = self.shape.group_start(self.shape.groups);
        if slices >= whole_span {
            let last = self.slots.len() - 1;
            for position in (0..last).rev() {
                self.append(self.slots[last], self.slots[position]);
            }
            self.slices_passed += slices;
            return;
        }
        for _ in 0..slices {
            self.slices_passed += 1;
            self.shift_right();
        }
    }

    /// One slice of aging: the moving prefix shifts one position right, its last
    /// bucket merging into the bucket after it; position 0 gets the emptied list.
    fn shift_right(&mut self) {
        let moving = (0..self.shape.groups)
            .take_while(|&g| self.slices_passed.is_multiple_of(self.shape.span(g)))
            .count()
            * self.shape.per_group as usize;
        let end = moving.min(self.slots.len() - 1);
        if end == 0 {
            return;
        }
        let emptied = self.slots[end - 1];
        self.append(self.slots[end], emptied);
        self.slots.copy_within(0..end - 1, 1);
        self.slots[0] = emptied;
    }

    /// Moves every key of list `from` to the back of list `to`, in order.
    fn append(&mut self, to: u32, from: u32) {
        let mut at = self.lists[from as usize].head;
        while at != NIL {
            let next = self.nodes[at as usize].next;
            self.unlink(at);
            self.nodes[at as usize].list = to;
            self.link_back(to, at);
            at = next;
        }
    }
}
