//! The tree under a [`super::Pdt`]: a B-tree over the sequence of changes, in the order
//! they take in the merged stream, each child summarised by its entry count, its running
//! delta (inserts minus deletes) and its first entry's (SID, rank). Addressed by sequence
//! index here; [`super::locate`] finds the index for a RID or a SID.
//!
//! Children sit behind `Arc`s and are copied on write (`Arc::make_mut`), so cloning a
//! tree for a snapshot costs one pointer and a change copies one root-to-leaf path.

use std::sync::Arc;

use super::Entry;

/// Entries per leaf before it splits.
pub(super) const LEAF_CAP: usize = 64;
/// Children per inner node before it splits.
pub(super) const INNER_CAP: usize = 32;

/// What a parent knows of a child without visiting it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Summary {
    pub count: usize,
    /// Inserts minus deletes in the subtree: how far RIDs after it are from SIDs.
    pub delta: i64,
    /// The (SID, rank) of its first entry (see [`Entry::rank`]).
    pub first: (u64, u8),
}

#[derive(Clone, Debug)]
pub(super) enum Node<T> {
    Leaf(Vec<Entry<T>>),
    Inner(Vec<Child<T>>),
}

#[derive(Clone, Debug)]
pub(super) struct Child<T> {
    pub sum: Summary,
    pub node: Arc<Node<T>>,
}

impl<T> Node<T> {
    /// `None` for an empty node (only an empty tree's root leaf is ever empty).
    pub fn summary(&self) -> Option<Summary> {
        match self {
            Node::Leaf(entries) => {
                let first = entries.first()?;
                Some(Summary {
                    count: entries.len(),
                    delta: entries.iter().map(|e| e.change.delta()).sum(),
                    first: first.key(),
                })
            }
            Node::Inner(children) => {
                let first = children.first()?.sum.first;
                let count = children.iter().map(|c| c.sum.count).sum();
                let delta = children.iter().map(|c| c.sum.delta).sum();
                Some(Summary {
                    count,
                    delta,
                    first,
                })
            }
        }
    }
}

impl<T> Child<T> {
    /// A child for a non-empty node.
    fn of(node: Node<T>) -> Option<Child<T>> {
        let sum = node.summary()?;
        Some(Child {
            sum,
            node: Arc::new(node),
        })
    }

    pub fn wrap(node: Arc<Node<T>>) -> Option<Child<T>> {
        Some(Child {
            sum: node.summary()?,
            node,
        })
    }
}

/// The child holding sequence index `index`, and the index inside it. With `at_end`, an
/// index equal to a child's end stays in that child (an insert after its last entry).
fn child_for<T>(children: &[Child<T>], mut index: usize, at_end: bool) -> (usize, usize) {
    let last = children.len().saturating_sub(1);
    for (ci, child) in children.iter().enumerate() {
        let inside = index < child.sum.count || (at_end && index == child.sum.count);
        if inside || ci == last {
            return (ci, index);
        }
        index -= child.sum.count;
    }
    (0, index)
}

pub(super) fn entry_at<T>(node: &Node<T>, index: usize) -> Option<&Entry<T>> {
    match node {
        Node::Leaf(entries) => entries.get(index),
        Node::Inner(children) => {
            let (ci, inner) = child_for(children, index, false);
            entry_at(&children.get(ci)?.node, inner)
        }
    }
}

/// Inserts `entry` at sequence index `index` (≤ the node's count); returns the right
/// half of the node when it had to split.
pub(super) fn insert_at<T: Clone>(
    node: &mut Arc<Node<T>>,
    index: usize,
    entry: Entry<T>,
) -> Option<Child<T>> {
    match Arc::make_mut(node) {
        Node::Leaf(entries) => {
            entries.insert(index.min(entries.len()), entry);
            if entries.len() <= LEAF_CAP {
                return None;
            }
            let right = entries.split_off(entries.len() / 2);
            Child::of(Node::Leaf(right))
        }
        Node::Inner(children) => {
            let (ci, inner) = child_for(children, index, true);
            let child = children.get_mut(ci)?;
            let split = insert_at(&mut child.node, inner, entry);
            refresh(child);
            if let Some(right) = split {
                children.insert(ci + 1, right);
            }
            if children.len() <= INNER_CAP {
                return None;
            }
            let right = children.split_off(children.len() / 2);
            Child::of(Node::Inner(right))
        }
    }
}

/// Removes and returns the entry at `index`; a child left empty is dropped.
pub(super) fn remove_at<T: Clone>(node: &mut Arc<Node<T>>, index: usize) -> Option<Entry<T>> {
    match Arc::make_mut(node) {
        Node::Leaf(entries) => (index < entries.len()).then(|| entries.remove(index)),
        Node::Inner(children) => {
            let (ci, inner) = child_for(children, index, false);
            let child = children.get_mut(ci)?;
            let removed = remove_at(&mut child.node, inner);
            if child.node.summary().is_none() {
                children.remove(ci);
            } else {
                refresh(child);
            }
            removed
        }
    }
}

/// Changes the entry at `index` in place (its SID must not move past a neighbour's).
pub(super) fn update_at<T: Clone>(
    node: &mut Arc<Node<T>>,
    index: usize,
    change: impl FnOnce(&mut Entry<T>),
) -> bool {
    match Arc::make_mut(node) {
        Node::Leaf(entries) => match entries.get_mut(index) {
            Some(entry) => {
                change(entry);
                true
            }
            None => false,
        },
        Node::Inner(children) => {
            let (ci, inner) = child_for(children, index, false);
            let Some(child) = children.get_mut(ci) else {
                return false;
            };
            let done = update_at(&mut child.node, inner, change);
            refresh(child);
            done
        }
    }
}

fn refresh<T>(child: &mut Child<T>) {
    if let Some(sum) = child.node.summary() {
        child.sum = sum;
    }
}

/// Calls `f` on every entry from sequence index `from` on, in order, until it returns
/// `false`; returns whether it never did.
pub(super) fn visit_from<'a, T>(
    node: &'a Node<T>,
    mut from: usize,
    f: &mut impl FnMut(&'a Entry<T>) -> bool,
) -> bool {
    match node {
        Node::Leaf(entries) => entries.iter().skip(from).all(f),
        Node::Inner(children) => {
            for child in children {
                if from >= child.sum.count {
                    from -= child.sum.count;
                    continue;
                }
                if !visit_from(&child.node, from, f) {
                    return false;
                }
                from = 0;
            }
            true
        }
    }
}

/// The tree's height (a leaf is 1): for the logarithmic-depth check in tests.
pub(super) fn height<T>(node: &Node<T>) -> usize {
    match node {
        Node::Leaf(_) => 1,
        Node::Inner(children) => 1 + children.first().map_or(0, |c| height(&c.node)),
    }
}
