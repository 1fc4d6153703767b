//! The bucket timeline of Predictive Buffer Management (2012 paper §3, Figures 9-10).
//!
//! Keys (pool pieces) are filed by their predicted time of next consumption into
//! buckets on a timeline that starts "now". Buckets come in `groups` groups of
//! `per_group` buckets; every bucket of group `g` spans `time_slice × 2^g`, so a few
//! dozen buckets cover hours with fine resolution near the present. A separate
//! "not requested" bucket holds keys no active scan will consume, oldest first.
//!
//! ```text
//!   now                                                                   not requested
//!   | g0: 1 1 1 1 | g1: 2 2 2 2 | g2: 4 4 4 4 | ... (slices per bucket)    [LRU list]
//!     ◄── every slice the timeline moves left; a bucket of group g moves one
//!         position every 2^g slices, the first one falls off and is re-filed
//! ```
//!
//! Every operation the paper needs is O(1): push and remove unlink from a doubly linked
//! list (an index arena here, so no unsafe code), the bucket of a time is arithmetic,
//! and a refresh moves `groups × per_group` list handles. Eviction walks buckets from the
//! far end: "not requested" first, then the latest requested bucket. Within a bucket
//! order is by insertion; the timeline is exact only up to bucket granularity, which is
//! what the paper trades for speed (it evicts in groups anyway).

use crate::Nanos;
use std::collections::HashMap;
use std::hash::Hash;

/// Shape of the timeline.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TimelineShape {
    /// Span of a bucket in the first group (paper: `time_slice`, 100 ms in Figure 10).
    pub time_slice: Nanos,
    /// Buckets per group (paper: `m`).
    pub per_group: u32,
    /// Groups (paper: `n`); the last bucket also takes every later time.
    pub groups: u32,
}

/// Most groups a timeline may have: spans double per group, so 40 groups of 100 ms
/// buckets already reach centuries; more would overflow the slice arithmetic.
pub const MAX_GROUPS: u32 = 40;
/// Most buckets per group (keeps a refresh, which touches every bucket, cheap).
pub const MAX_PER_GROUP: u32 = 1024;

impl TimelineShape {
    /// The default for scans of seconds to hours: 10 ms buckets, 8 per group, 20 groups
    /// (the last group starts about 24 hours out).
    pub const DEFAULT: TimelineShape = TimelineShape {
        time_slice: Nanos(10_000_000),
        per_group: 8,
        groups: 20,
    };

    fn buckets(&self) -> usize {
        (self.per_group * self.groups) as usize
    }

    /// Slices from now to where group `g` starts: `per_group × (2^g − 1)`.
    fn group_start(&self, g: u32) -> u64 {
        u64::from(self.per_group) * ((1u64 << g) - 1)
    }

    /// Span of each bucket of group `g`, in slices.
    fn span(&self, g: u32) -> u64 {
        1u64 << g
    }

    fn group_of(&self, position: usize) -> u32 {
        position as u32 / self.per_group
    }

    /// Paper: TimeToBucketNumber — O(1): the group from a base-2 logarithm, then the
    /// bucket within it.
    fn position_of(&self, after: Nanos) -> usize {
        let slices = after.0 / self.time_slice.0.max(1);
        let m = u64::from(self.per_group);
        // Group g holds slices [m(2^g − 1), m(2^{g+1} − 1)): g = ⌊log2(slices/m + 1)⌋.
        let g = (slices / m + 1).ilog2();
        if g >= self.groups {
            return self.buckets() - 1;
        }
        let within = (slices - self.group_start(g)) / self.span(g);
        (g * self.per_group) as usize + within as usize
    }

    /// The time range (from now, in slices) that bucket `position` stands for.
    pub fn slices_of(&self, position: usize) -> std::ops::Range<u64> {
        let g = self.group_of(position);
        let j = u64::from(position as u32 % self.per_group);
        let start = self.group_start(g) + j * self.span(g);
        start..start + self.span(g)
    }

    fn validate(&self) -> Result<(), String> {
        if self.time_slice.0 == 0 {
            return Err("time slice must be positive".into());
        }
        if !(1..=MAX_PER_GROUP).contains(&self.per_group) {
            return Err(format!("buckets per group must be 1..={MAX_PER_GROUP}"));
        }
        if !(1..=MAX_GROUPS).contains(&self.groups) {
            return Err(format!("groups must be 1..={MAX_GROUPS}"));
        }
        Ok(())
    }
}

const NIL: u32 = u32::MAX;

/// Where a key is filed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Filed {
    /// Requested bucket at this position (0 = soonest).
    At(usize),
    NotRequested,
}

#[derive(Clone, Copy, Debug, Default)]
struct List {
    head: u32,
    tail: u32,
    len: u32,
}

impl List {
    const EMPTY: List = List {
        head: NIL,
        tail: NIL,
        len: 0,
    };
}

#[derive(Clone, Debug)]
struct Node<K> {
    key: K,
    prev: u32,
    next: u32,
    list: u32,
}

/// Keys filed by predicted next consumption; see the module docs.
#[derive(Clone, Debug)]
pub struct BucketTimeline<K> {
    shape: TimelineShape,
    /// `slots[position]` is the list that currently is bucket `position`.
    slots: Vec<u32>,
    /// Lists: one per bucket plus the not-requested one (index `not_requested`).
    lists: Vec<List>,
    not_requested: u32,
    nodes: Vec<Node<K>>,
    free: Vec<u32>,
    index: HashMap<K, u32>,
    /// Slices passed since the start (paper: `time_passed`).
    slices_passed: u64,
    /// Time of the last refresh, rounded down to a slice.
    origin: Nanos,
}

impl<K: Copy + Eq + Hash> BucketTimeline<K> {
    /// An empty timeline whose "now" is `now`.
    pub fn new(shape: TimelineShape, now: Nanos) -> Result<Self, String> {
        shape.validate()?;
        let buckets = shape.buckets();
        Ok(BucketTimeline {
            shape,
            slots: (0..buckets as u32).collect(),
            lists: vec![List::EMPTY; buckets + 1],
            not_requested: buckets as u32,
            nodes: Vec::new(),
            free: Vec::new(),
            index: HashMap::new(),
            slices_passed: 0,
            origin: now,
        })
    }

    pub fn len(&self) -> usize {
        self.index.len()
    }

    pub fn is_empty(&self) -> bool {
        self.index.is_empty()
    }

    pub fn contains(&self, key: K) -> bool {
        self.index.contains_key(&key)
    }

    /// Paper: PagePush. Files `key` (moving it if filed already) by its predicted next
    /// consumption `after` from now, or as not requested (`None`, the newest of them).
    pub fn push(&mut self, key: K, after: Option<Nanos>) {
        let list = match after {
            Some(after) => self.slots[self.shape.position_of(after)],
            None => self.not_requested,
        };
        self.push_into(key, list);
    }

    /// Files `key` at the back of `list`, unfiling it first.
    fn push_into(&mut self, key: K, list: u32) {
        self.remove(key);
        let node = Node {
            key,
            prev: NIL,
            next: NIL,
            list,
        };
        let id = match self.free.pop() {
            Some(id) => {
                self.nodes[id as usize] = node;
                id
            }
            None => {
                self.nodes.push(node);
                (self.nodes.len() - 1) as u32
            }
        };
        self.link_back(list, id);
        self.index.insert(key, id);
    }

    /// Unfiles `key`; false if it was not filed.
    pub fn remove(&mut self, key: K) -> bool {
        let Some(id) = self.index.remove(&key) else {
            return false;
        };
        self.unlink(id);
        self.free.push(id);
        true
    }

    /// Where `key` is filed now.
    pub fn filed(&self, key: K) -> Option<Filed> {
        let list = self.nodes[*self.index.get(&key)? as usize].list;
        if list == self.not_requested {
            return Some(Filed::NotRequested);
        }
        self.slots.iter().position(|&l| l == list).map(Filed::At)
    }

    /// Keys in eviction order (paper: EvictPage, repeated): not requested, oldest
    /// first; then requested buckets from the latest to the soonest.
    pub fn eviction_order(&self) -> impl Iterator<Item = K> + '_ {
        std::iter::once(self.not_requested)
            .chain(self.slots.iter().rev().copied())
            .flat_map(move |list| self.walk(list))
    }

    fn walk(&self, list: u32) -> impl Iterator<Item = K> + '_ {
        let mut at = self.lists[list as usize].head;
        std::iter::from_fn(move || {
            let node = self.nodes.get(at as usize)?;
            at = node.next;
            Some(node.key)
        })
    }

    /// Paper: RefreshRequestedBuckets, once per slice passed up to `now`. Returns the
    /// keys whose predicted time has passed (bucket "−1"): the caller re-files them
    /// with a fresh prediction. A long gap empties every requested bucket at once.
    pub fn advance(&mut self, now: Nanos) -> Vec<K> {
        let slices = now.saturating_sub(self.origin).0 / self.shape.time_slice.0;
        self.origin = self.origin + Nanos(slices * self.shape.time_slice.0);
        let mut expired = Vec::new();
        let whole_span = self.shape.group_start(self.shape.groups);
        if slices >= whole_span {
            for position in 0..self.slots.len() {
                self.drain(self.slots[position], &mut expired);
            }
            self.slices_passed += slices;
            return expired;
        }
        for _ in 0..slices {
            self.slices_passed += 1;
            self.shift(&mut expired);
        }
        expired
    }

    /// One slice: every bucket whose span divides the slices passed moves one position
    /// left (spans are powers of two, so the moving buckets are a prefix); the first
    /// falls off into `expired` and its emptied list becomes the vacated bucket.
    fn shift(&mut self, expired: &mut Vec<K>) {
        let moving = (0..self.shape.groups)
            .take_while(|&g| self.slices_passed.is_multiple_of(self.shape.span(g)))
            .count()
            * self.shape.per_group as usize;
        if moving == 0 {
            return;
        }
        let fallen = self.slots[0];
        self.drain(fallen, expired);
        self.slots.copy_within(1..moving, 0);
        self.slots[moving - 1] = fallen;
    }

    fn drain(&mut self, list: u32, out: &mut Vec<K>) {
        while let Some(id) = self.head(list) {
            let key = self.nodes[id as usize].key;
            self.remove(key);
            out.push(key);
        }
    }

    fn head(&self, list: u32) -> Option<u32> {
        let head = self.lists[list as usize].head;
        (head != NIL).then_some(head)
    }

    fn link_back(&mut self, list: u32, id: u32) {
        let l = &mut self.lists[list as usize];
        let old_tail = l.tail;
        l.tail = id;
        if old_tail == NIL {
            l.head = id;
        }
        l.len += 1;
        self.nodes[id as usize].prev = old_tail;
        if old_tail != NIL {
            self.nodes[old_tail as usize].next = id;
        }
    }

    fn unlink(&mut self, id: u32) {
        let Node {
            prev, next, list, ..
        } = self.nodes[id as usize];
        match prev {
            NIL => self.lists[list as usize].head = next,
            p => self.nodes[p as usize].next = next,
        }
        match next {
            NIL => self.lists[list as usize].tail = prev,
            n => self.nodes[n as usize].prev = prev,
        }
        self.lists[list as usize].len -= 1;
    }

    /// Every filed key is in exactly the list its node names, list lengths match, and
    /// every list is a bucket or the not-requested list.
    pub fn check_invariants(&self) -> Result<(), String> {
        let mut seen = 0usize;
        for list in 0..self.lists.len() as u32 {
            let mut count = 0u32;
            for key in self.walk(list) {
                let id = *self.index.get(&key).ok_or("listed key is not indexed")?;
                if self.nodes[id as usize].list != list {
                    return Err("node names another list".into());
                }
                count += 1;
            }
            if count != self.lists[list as usize].len {
                return Err(format!("list {list}: length {count} recorded {}", {
                    self.lists[list as usize].len
                }));
            }
            seen += count as usize;
        }
        if seen != self.index.len() {
            return Err(format!("{} indexed, {seen} listed", self.index.len()));
        }
        let mut slots = self.slots.clone();
        slots.sort_unstable();
        slots.dedup();
        if slots.len() != self.slots.len() || slots.contains(&self.not_requested) {
            return Err("bucket lists are not distinct".into());
        }
        Ok(())
    }
}

mod aging;
mod counter_rotating;

pub use counter_rotating::{CounterRotatingTimeline, Placed};

#[cfg(test)]
mod tests;
