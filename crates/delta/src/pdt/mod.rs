//! The Positional Delta Tree: a table's changes ordered as they appear in the merged
//! stream, with the running delta in every node (2012 paper §2.1; Héman et al. 2010).

mod locate;
mod node;

use std::sync::Arc;

use crate::{DeltaError, Rid, Sid};
use locate::{last_key_at_most, prefix_before};
use node::{Child, Node};

/// One change to one tuple position.
#[derive(Clone, Debug, PartialEq)]
pub enum Change<T> {
    /// A new tuple, placed before the stable tuple its entry's SID names (after the last
    /// one for `Sid(stable_rows)`): all its values, one per column.
    Insert(Vec<T>),
    /// The stable tuple at the entry's SID is gone.
    Delete,
    /// New values for some columns of the stable tuple at the entry's SID, by column
    /// index, ascending, each column once.
    Modify(Vec<(usize, T)>),
}

impl<T> Change<T> {
    /// How the change moves the RIDs after it.
    pub fn delta(&self) -> i64 {
        match self {
            Change::Insert(_) => 1,
            Change::Delete => -1,
            Change::Modify(_) => 0,
        }
    }
}

/// A change and the stable position it is anchored at.
#[derive(Clone, Debug, PartialEq)]
pub struct Entry<T> {
    pub sid: Sid,
    pub change: Change<T>,
}

impl<T> Entry<T> {
    fn new(sid: u64, change: Change<T>) -> Entry<T> {
        Entry {
            sid: Sid(sid),
            change,
        }
    }

    /// Where the entry sorts: by SID, inserts (rank 0, in RID order) before the one
    /// delete or modification of the stable tuple itself (rank 1).
    pub(crate) fn key(&self) -> (u64, u8) {
        let rank = match self.change {
            Change::Insert(_) => 0,
            Change::Delete | Change::Modify(_) => 1,
        };
        (self.sid.0, rank)
    }
}

/// The changes of one table (or of one layer of a snapshot's stack of trees) over a
/// stable image of `stable_rows` tuples of `columns` columns. Cloning is O(1): nodes are
/// shared and copied on write.
#[derive(Clone, Debug)]
pub struct Pdt<T> {
    root: Arc<Node<T>>,
    stable_rows: u64,
    columns: usize,
    entries: usize,
    delta: i64,
}

/// Where the tuple at a RID is.
enum Located {
    /// An inserted tuple: the sequence index of its entry.
    Inserted(usize),
    /// A stable tuple: its SID, the index of its delete/modify entry if it has one,
    /// else the index a new entry for it takes (also where an insert before it goes).
    Stable {
        sid: u64,
        entry: Option<usize>,
        at: usize,
    },
}

impl<T: Clone> Pdt<T> {
    /// No changes yet over a stable image of `stable_rows` tuples of `columns` columns.
    pub fn new(stable_rows: u64, columns: usize) -> Pdt<T> {
        Pdt {
            root: Arc::new(Node::Leaf(Vec::new())),
            stable_rows,
            columns,
            entries: 0,
            delta: 0,
        }
    }

    pub fn stable_rows(&self) -> u64 {
        self.stable_rows
    }

    /// The stable image grew to `rows` tuples at its end (a bulk append, 2012 §2.1).
    /// Tuples inserted after the last old stable tuple (`Sid(old stable_rows)`) now sit
    /// before the first appended one: rows inserted before the append come before the
    /// appended rows, and every RID the tree's changes address is unchanged. A smaller
    /// image is refused.
    pub fn grow_stable(&mut self, rows: u64) -> Result<(), DeltaError> {
        if rows < self.stable_rows {
            return Err(DeltaError::SidOutOfRange {
                sid: self.stable_rows,
                stable_rows: rows,
            });
        }
        let visible = i128::from(rows) + i128::from(self.delta);
        if u64::try_from(visible).is_err() {
            return Err(DeltaError::TooManyRows { max: u64::MAX });
        }
        self.stable_rows = rows;
        Ok(())
    }

    pub fn columns(&self) -> usize {
        self.columns
    }

    /// Tuples visible through the tree: stable ones not deleted plus inserted ones.
    pub fn rows(&self) -> u64 {
        let rows = i128::from(self.stable_rows) + i128::from(self.delta);
        u64::try_from(rows).unwrap_or(0)
    }

    /// Entries in the tree (inserts, deletes and modifications).
    pub fn entry_count(&self) -> usize {
        self.entries
    }

    pub fn is_empty(&self) -> bool {
        self.entries == 0
    }

    /// Levels of the tree, a leaf being one.
    pub fn height(&self) -> usize {
        node::height(&self.root)
    }

    /// The SID of the tuple at `rid`; an inserted tuple maps to the SID of the stable
    /// tuple after it (so several RIDs may share a SID).
    pub fn rid_to_sid(&self, rid: Rid) -> Result<Sid, DeltaError> {
        self.check_rid(rid.0)?;
        Ok(match self.locate(rid.0)? {
            Located::Inserted(index) => self.entry(index)?.sid,
            Located::Stable { sid, .. } => Sid(sid),
        })
    }

    /// The lowest RID that maps to `sid`: its first inserted tuple, else the stable tuple,
    /// else (deleted, nothing inserted before it) the next visible tuple's RID.
    pub fn sid_to_rid_low(&self, sid: Sid) -> Result<Rid, DeltaError> {
        self.rid_before(sid, 0)
    }

    /// The RID of the stable tuple at `sid` itself, after the tuples inserted before it;
    /// for a deleted tuple the next visible tuple's RID. `Sid(stable_rows)` gives `rows()`.
    pub fn sid_to_rid_high(&self, sid: Sid) -> Result<Rid, DeltaError> {
        self.rid_before(sid, 1)
    }

    fn rid_before(&self, sid: Sid, rank: u8) -> Result<Rid, DeltaError> {
        self.check_sid(sid.0)?;
        let (_, delta) = prefix_before(&self.root, (sid.0, rank));
        let rid = i128::from(sid.0) + i128::from(delta);
        u64::try_from(rid).map(Rid).map_err(|_| self.corrupt(sid.0))
    }

    /// Inserts `row` so that it becomes the tuple at `rid` (`rid == rows()` appends).
    pub fn insert(&mut self, rid: Rid, row: Vec<T>) -> Result<(), DeltaError> {
        if row.len() != self.columns {
            return Err(DeltaError::RowWidth {
                got: row.len(),
                columns: self.columns,
            });
        }
        if rid.0 > self.rows() {
            return Err(DeltaError::RidOutOfRange {
                rid: rid.0,
                rows: self.rows(),
            });
        }
        if self.rows() == u64::MAX {
            return Err(DeltaError::TooManyRows { max: u64::MAX });
        }
        let (index, sid) = if rid.0 == self.rows() {
            (self.entries, Sid(self.stable_rows))
        } else {
            match self.locate(rid.0)? {
                Located::Inserted(index) => (index, self.entry(index)?.sid),
                Located::Stable { sid, at, .. } => (at, Sid(sid)),
            }
        };
        self.insert_entry(
            index,
            Entry {
                sid,
                change: Change::Insert(row),
            },
        );
        Ok(())
    }

    /// Deletes the tuple at `rid`.
    pub fn delete(&mut self, rid: Rid) -> Result<(), DeltaError> {
        self.check_rid(rid.0)?;
        match self.locate(rid.0)? {
            Located::Inserted(index) => {
                if node::remove_at(&mut self.root, index).is_some() {
                    self.entries -= 1;
                    self.delta -= 1;
                }
                self.collapse_root();
            }
            Located::Stable {
                entry: Some(index), ..
            } => {
                node::update_at(&mut self.root, index, |e| e.change = Change::Delete);
                self.delta -= 1;
            }
            Located::Stable {
                sid,
                entry: None,
                at,
            } => self.insert_entry(at, Entry::new(sid, Change::Delete)),
        }
        Ok(())
    }

    /// Gives the tuple at `rid` new values for some columns (later values for the same
    /// column win).
    pub fn modify(&mut self, rid: Rid, values: Vec<(usize, T)>) -> Result<(), DeltaError> {
        self.check_rid(rid.0)?;
        let values = self.normalized(values)?;
        match self.locate(rid.0)? {
            Located::Inserted(index) => {
                node::update_at(&mut self.root, index, |e| {
                    if let Change::Insert(row) = &mut e.change {
                        apply(row, values);
                    }
                });
            }
            Located::Stable {
                entry: Some(index), ..
            } => {
                node::update_at(&mut self.root, index, |e| {
                    if let Change::Modify(old) = &mut e.change {
                        overlay(old, values);
                    }
                });
            }
            Located::Stable {
                sid,
                entry: None,
                at,
            } => self.insert_entry(at, Entry::new(sid, Change::Modify(values))),
        }
        Ok(())
    }

    /// Calls `f` on every entry from the first one at `sid` or later, in stream order,
    /// until it returns `false`. Returns the delta of the entries before `sid`.
    pub fn visit_from_sid<'a>(&'a self, sid: Sid, f: impl FnMut(&'a Entry<T>) -> bool) -> i64 {
        let (index, delta) = prefix_before(&self.root, (sid.0, 0));
        let mut f = f;
        node::visit_from(&self.root, index, &mut f);
        delta
    }

    /// The entry at `index` in stream order.
    pub fn entry_at(&self, index: usize) -> Option<&Entry<T>> {
        node::entry_at(&self.root, index)
    }

    fn locate(&self, rid: u64) -> Result<Located, DeltaError> {
        let Some(found) = last_key_at_most(&self.root, rid) else {
            return Ok(Located::Stable {
                sid: rid,
                entry: None,
                at: 0,
            });
        };
        let on_entry = found.key() == i128::from(rid);
        Ok(match found.entry.change {
            Change::Insert(_) if on_entry => Located::Inserted(found.index),
            Change::Modify(_) if on_entry => Located::Stable {
                sid: found.entry.sid.0,
                entry: Some(found.index),
                at: found.index,
            },
            _ => {
                let after = found.delta_before + found.entry.change.delta();
                let sid = i128::from(rid) - i128::from(after);
                let sid = u64::try_from(sid).map_err(|_| self.corrupt(rid))?;
                Located::Stable {
                    sid,
                    entry: None,
                    at: found.index + 1,
                }
            }
        })
    }

    fn entry(&self, index: usize) -> Result<&Entry<T>, DeltaError> {
        node::entry_at(&self.root, index).ok_or(DeltaError::Corrupt { at: index as u64 })
    }

    fn insert_entry(&mut self, index: usize, entry: Entry<T>) {
        self.delta += entry.change.delta();
        self.entries += 1;
        if let Some(right) = node::insert_at(&mut self.root, index, entry) {
            let left = Child::wrap(Arc::clone(&self.root));
            self.root = Arc::new(Node::Inner(left.into_iter().chain([right]).collect()));
        }
    }

    /// An inner root with one child gives way to it; an emptied tree is one empty leaf.
    fn collapse_root(&mut self) {
        loop {
            let next = match self.root.as_ref() {
                Node::Inner(children) if children.len() <= 1 => match children.first() {
                    Some(only) => Arc::clone(&only.node),
                    None => Arc::new(Node::Leaf(Vec::new())),
                },
                _ => return,
            };
            self.root = next;
        }
    }

    fn normalized(&self, mut values: Vec<(usize, T)>) -> Result<Vec<(usize, T)>, DeltaError> {
        if let Some(&(column, _)) = values.iter().find(|(c, _)| *c >= self.columns) {
            return Err(DeltaError::ColumnOutOfRange {
                column,
                columns: self.columns,
            });
        }
        // Stable sort then keep the last value of each column: later values win.
        values.sort_by_key(|(c, _)| *c);
        let mut out: Vec<(usize, T)> = Vec::with_capacity(values.len());
        for (column, value) in values {
            match out.last_mut() {
                Some(last) if last.0 == column => last.1 = value,
                _ => out.push((column, value)),
            }
        }
        Ok(out)
    }

    fn check_rid(&self, rid: u64) -> Result<(), DeltaError> {
        if rid < self.rows() {
            Ok(())
        } else {
            Err(DeltaError::RidOutOfRange {
                rid,
                rows: self.rows(),
            })
        }
    }

    fn check_sid(&self, sid: u64) -> Result<(), DeltaError> {
        if sid <= self.stable_rows {
            Ok(())
        } else {
            Err(DeltaError::SidOutOfRange {
                sid,
                stable_rows: self.stable_rows,
            })
        }
    }

    fn corrupt(&self, at: u64) -> DeltaError {
        DeltaError::Corrupt { at }
    }
}

/// Writes `values` (column-sorted, in range) into an inserted row.
fn apply<T>(row: &mut [T], values: Vec<(usize, T)>) {
    for (column, value) in values {
        if let Some(cell) = row.get_mut(column) {
            *cell = value;
        }
    }
}

/// Merges `newer` (column-sorted) into `older` (column-sorted): newer values win.
fn overlay<T>(older: &mut Vec<(usize, T)>, newer: Vec<(usize, T)>) {
    for (column, value) in newer {
        match older.binary_search_by_key(&column, |(c, _)| *c) {
            Ok(at) => older[at].1 = value,
            Err(at) => older.insert(at, (column, value)),
        }
    }
}
