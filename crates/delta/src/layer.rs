//! Layered trees for snapshot isolation (Héman et al. 2010, §4: "Trans-PDT", "Serialize",
//! "Propagate"). A transaction keeps its changes as a *layer*: a [`Pdt`] whose "stable"
//! tuples are the visible tuples of the snapshot it began from, so its positions are
//! that snapshot's RIDs. Committing it after others committed first takes two steps:
//! - [`serialize`] moves the layer past each later commit's own layer (over the same
//!   base), so its positions become those of the newer state, or finds a tuple both
//!   changed (a write-write conflict: the later committer aborts);
//! - [`propagate`] applies a layer to the newest committed tree, giving the operations a
//!   log record keeps.
//!
//! Tuples are matched by position alone, which is exact here: both layers describe the
//! same base, and a tuple either of them inserted is not in the other's view.

use crate::log::Op;
use crate::{Change, DeltaError, Entry, Pdt, Rid, Sid};

/// Why a layer could not be serialized past another.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SerializeError {
    /// Both layers delete or modify one base tuple; `entry` is the index, in stream order,
    /// of the conflicting entry of the layer being moved (serializing keeps every entry
    /// and its order, so the index names the same change in the layer before any move).
    Conflict {
        entry: usize,
    },
    Delta(DeltaError),
}

impl From<DeltaError> for SerializeError {
    fn from(e: DeltaError) -> Self {
        SerializeError::Delta(e)
    }
}

/// `ours` moved past `theirs`: both are layers over one base; the result is a layer over
/// the state `theirs` made, with the same entries in the same order. A tuple both
/// delete or modify is a conflict; tuples both insert before one base tuple keep
/// `theirs`' first (they committed first).
pub fn serialize<T: Clone>(ours: &Pdt<T>, theirs: &Pdt<T>) -> Result<Pdt<T>, SerializeError> {
    if ours.stable_rows() != theirs.stable_rows() || ours.columns() != theirs.columns() {
        return Err(DeltaError::Corrupt {
            at: ours.stable_rows(),
        }
        .into());
    }
    let theirs = entries(theirs);
    let mut next = 0;
    // The delta of `theirs`' entries before the base tuple at hand (its inserts before
    // it included, its own delete or modification not).
    let mut shift: i64 = 0;
    let mut moved = Vec::with_capacity(ours.entry_count());
    for (index, entry) in entries(ours).into_iter().enumerate() {
        let sid = entry.sid.0;
        while let Some(their) = theirs.get(next).filter(|e| e.key() < (sid, 1)) {
            shift += their.change.delta();
            next += 1;
        }
        let touched_by_both = !matches!(entry.change, Change::Insert(_))
            && theirs.get(next).is_some_and(|e| e.key() == (sid, 1));
        if touched_by_both {
            return Err(SerializeError::Conflict { entry: index });
        }
        let at = i128::from(sid) + i128::from(shift);
        let at = u64::try_from(at).map_err(|_| DeltaError::Corrupt { at: sid })?;
        moved.push((at, entry.change.clone()));
    }
    let rows = u64::try_from(i128::from(ours.stable_rows()) + i128::from(shift_total(&theirs)))
        .map_err(|_| DeltaError::Corrupt { at: 0 })?;
    let mut out = Pdt::new(rows, ours.columns());
    replay(&mut out, moved)?;
    Ok(out)
}

/// Applies `layer` (over the tuples `target` shows) to `target`; returns the operations,
/// by RID in the state each met, that do the same from `target`'s state: what a log
/// record keeps. On an error `target` may hold part of the layer: callers pass a clone
/// (an O(1) snapshot) and publish it only on success.
pub fn propagate<T: Clone>(target: &mut Pdt<T>, layer: &Pdt<T>) -> Result<Vec<Op<T>>, DeltaError> {
    if layer.stable_rows() != target.rows() || layer.columns() != target.columns() {
        return Err(DeltaError::Corrupt {
            at: layer.stable_rows(),
        });
    }
    let changes = entries(layer)
        .into_iter()
        .map(|e| (e.sid.0, e.change.clone()))
        .collect();
    replay(target, changes)
}

/// The base position (its SID in the layer, the RID in the layer's base state) of the
/// layer's entry `index` in stream order.
pub fn entry_base(layer: &Pdt<impl Clone>, index: usize) -> Option<Sid> {
    layer.entry_at(index).map(|e| e.sid)
}

/// Applies changes anchored at base positions, in stream order, to `pdt`; returns them as
/// operations by RID.
fn replay<T: Clone>(
    pdt: &mut Pdt<T>,
    changes: Vec<(u64, Change<T>)>,
) -> Result<Vec<Op<T>>, DeltaError> {
    let mut ops = Vec::with_capacity(changes.len());
    // The delta of the changes applied so far: every one of them sorts before the next.
    let mut delta: i64 = 0;
    for (sid, change) in changes {
        let rid = i128::from(sid) + i128::from(delta);
        let rid = Rid(u64::try_from(rid).map_err(|_| DeltaError::Corrupt { at: sid })?);
        delta += change.delta();
        let op = match change {
            Change::Insert(row) => Op::Insert { rid, row },
            Change::Delete => Op::Delete { rid },
            Change::Modify(values) => Op::Modify { rid, values },
        };
        op.apply(pdt)?;
        ops.push(op);
    }
    Ok(ops)
}

fn entries<T: Clone>(pdt: &Pdt<T>) -> Vec<&Entry<T>> {
    let mut out = Vec::with_capacity(pdt.entry_count());
    pdt.visit_from_sid(Sid(0), |e| {
        out.push(e);
        true
    });
    out
}

fn shift_total<T>(entries: &[&Entry<T>]) -> i64 {
    entries.iter().map(|e| e.change.delta()).sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layer(base: u64, ops: &[Op<u32>]) -> Pdt<u32> {
        let mut pdt = Pdt::new(base, 1);
        for op in ops {
            op.apply(&mut pdt).expect("op");
        }
        pdt
    }

    #[test]
    fn a_modification_of_a_tuple_the_other_deleted_conflicts() {
        let theirs = layer(5, &[Op::Delete { rid: Rid(2) }]);
        let ours = layer(
            5,
            &[
                Op::Insert {
                    rid: Rid(0),
                    row: vec![9],
                },
                Op::Modify {
                    rid: Rid(3),
                    values: vec![(0, 7)],
                },
            ],
        );
        // Our second entry is the modification of base tuple 2.
        assert_eq!(
            serialize(&ours, &theirs).map(|_| ()),
            Err(SerializeError::Conflict { entry: 1 })
        );
        assert_eq!(entry_base(&ours, 1), Some(Sid(2)));
    }

    #[test]
    fn inserts_before_one_tuple_keep_the_first_committer_first() {
        let theirs = layer(
            2,
            &[Op::Insert {
                rid: Rid(1),
                row: vec![10],
            }],
        );
        let ours = layer(
            2,
            &[Op::Insert {
                rid: Rid(1),
                row: vec![20],
            }],
        );
        let moved = serialize(&ours, &theirs).expect("no conflict");
        let mut committed = layer(2, &[]);
        propagate(&mut committed, &theirs).expect("theirs");
        let ops = propagate(&mut committed, &moved).expect("ours");
        assert_eq!(
            ops,
            vec![Op::Insert {
                rid: Rid(2),
                row: vec![20]
            }]
        );
        assert_eq!(committed.rows(), 4);
    }
}
