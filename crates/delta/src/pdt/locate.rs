//! Descents that turn a position into a sequence index, in O(height × fanout).
//!
//! Every entry has a *key*: its SID plus the running delta of the entries before it. For
//! an insert that is the RID of the inserted tuple; for a modification, the RID of the
//! modified stable tuple; for a delete, the RID the next visible tuple takes. Keys never
//! decrease along the sequence (a delete at SID s followed by an entry at s + 1 may tie),
//! which is what lets a RID be searched like a key.

use super::node::{Child, Node};
use super::Entry;

/// An entry found by a descent: its sequence index and the delta of the entries before it.
pub(super) struct Found<'a, T> {
    pub index: usize,
    pub delta_before: i64,
    pub entry: &'a Entry<T>,
}

impl<T> Found<'_, T> {
    pub fn key(&self) -> i128 {
        key(self.entry.sid.0, self.delta_before)
    }
}

fn key(sid: u64, delta_before: i64) -> i128 {
    i128::from(sid) + i128::from(delta_before)
}

/// The last of `children` (the first at sequence index `index`, after a delta of
/// `delta`) whose first entry passes `before(its (SID, rank), the delta before it)`,
/// with its own index and delta; children pass in a prefix, as keys never decrease.
fn last_child<T>(
    children: &[Child<T>],
    index: usize,
    delta: i64,
    before: impl Fn((u64, u8), i64) -> bool,
) -> Option<(&Node<T>, usize, i64)> {
    let mut chosen = None;
    let (mut at, mut d) = (index, delta);
    for child in children {
        if !before(child.sum.first, d) {
            break;
        }
        chosen = Some((child.node.as_ref(), at, d));
        at += child.sum.count;
        d += child.sum.delta;
    }
    chosen
}

/// The last entry whose key is at most `rid`, if any.
pub(super) fn last_key_at_most<T>(root: &Node<T>, rid: u64) -> Option<Found<'_, T>> {
    let rid = i128::from(rid);
    let (mut node, mut index, mut delta) = (root, 0usize, 0i64);
    loop {
        match node {
            Node::Inner(children) => {
                let before = |first: (u64, u8), d| key(first.0, d) <= rid;
                (node, index, delta) = last_child(children, index, delta, before)?;
            }
            Node::Leaf(entries) => {
                let mut found = None;
                let mut d = delta;
                for (i, entry) in entries.iter().enumerate() {
                    if key(entry.sid.0, d) > rid {
                        break;
                    }
                    found = Some(Found {
                        index: index + i,
                        delta_before: d,
                        entry,
                    });
                    d += entry.change.delta();
                }
                return found;
            }
        }
    }
}

/// How many entries sort before `target` (an entry's (SID, rank)), and their delta.
pub(super) fn prefix_before<T>(root: &Node<T>, target: (u64, u8)) -> (usize, i64) {
    let (mut node, mut index, mut delta) = (root, 0usize, 0i64);
    loop {
        match node {
            Node::Inner(children) => {
                let before = |first: (u64, u8), _| first < target;
                let Some(chosen) = last_child(children, index, delta, before) else {
                    return (index, delta);
                };
                (node, index, delta) = chosen;
            }
            Node::Leaf(entries) => {
                for entry in entries.iter().take_while(|e| e.key() < target) {
                    index += 1;
                    delta += entry.change.delta();
                }
                return (index, delta);
            }
        }
    }
}
