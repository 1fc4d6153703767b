//! Layered trees against a plain model of concurrent transactions: tuples as lists with
//! identities, a transaction's changes merged with the commits made since it began by
//! identity, the later committer refused exactly when both changed one tuple.

use coopscan_delta::layer::{entry_base, propagate, serialize, SerializeError};
use coopscan_delta::log::Op;
use coopscan_delta::{Pdt, Rid, Step};
use proptest::prelude::*;

/// Column 0 is the tuple's identity (a stable tuple's is its SID), column 1 its value.
const COLUMNS: usize = 2;
const STABLE_ROWS: u64 = 30;
/// Inserted tuples' identities start here.
const FRESH: u32 = 1_000;

#[derive(Clone, Debug)]
enum Spec {
    Insert(u64),
    Delete(u64),
    Modify(u64, u32),
}

fn spec() -> impl Strategy<Value = Spec> {
    prop_oneof![
        2 => any::<u64>().prop_map(Spec::Insert),
        1 => any::<u64>().prop_map(Spec::Delete),
        2 => (any::<u64>(), any::<u32>()).prop_map(|(r, v)| Spec::Modify(r, v)),
    ]
}

/// A tuple of the model: identity, value, the stamp of its last modification (so
/// "changed since" needs no value comparison), and whether it is still there: a deleted
/// tuple stays in its list as a tombstone, so a tuple inserted next to it keeps its place
/// relative to it, as a tree entry anchored at its position does.
#[derive(Clone, Debug, PartialEq)]
struct Tuple {
    id: u32,
    value: u32,
    stamp: u64,
    live: bool,
}

/// Counters for fresh identities and stamps.
#[derive(Default)]
struct Fresh {
    id: u32,
    stamp: u64,
}

/// Index in `list` of the live tuple at `rid` (the list's end past the last one).
fn index_of(list: &[Tuple], rid: u64) -> usize {
    let mut live = list.iter().enumerate().filter(|(_, t)| t.live);
    live.nth(rid as usize).map_or(list.len(), |(i, _)| i)
}

/// Applies `spec` to `pdt` (RIDs over the tuples it shows) and to the model `list` of
/// those tuples.
fn apply(spec: &Spec, pdt: &mut Pdt<u32>, list: &mut Vec<Tuple>, fresh: &mut Fresh) {
    let rows = list.iter().filter(|t| t.live).count() as u64;
    let op = match *spec {
        Spec::Insert(r) => {
            fresh.id += 1;
            let id = FRESH + fresh.id;
            let rid = r % (rows + 1);
            let tuple = Tuple {
                id,
                value: 0,
                stamp: 0,
                live: true,
            };
            list.insert(index_of(list, rid), tuple);
            Op::Insert {
                rid: Rid(rid),
                row: vec![id, 0],
            }
        }
        Spec::Delete(r) if rows > 0 => {
            let at = index_of(list, r % rows);
            list[at].live = false;
            Op::Delete { rid: Rid(r % rows) }
        }
        Spec::Modify(r, v) if rows > 0 => {
            fresh.stamp += 1;
            let at = index_of(list, r % rows);
            (list[at].value, list[at].stamp) = (v, fresh.stamp);
            Op::Modify {
                rid: Rid(r % rows),
                values: vec![(1, v)],
            }
        }
        _ => return,
    };
    op.apply(pdt).expect("op in range");
}

/// The (identity, value) pairs a committed tree shows over the stable table.
fn shown(pdt: &Pdt<u32>) -> Vec<(u32, u32)> {
    let merged = pdt.merge_steps(0..pdt.stable_rows()).expect("merge");
    let mut out = Vec::new();
    for step in merged.steps {
        match step {
            Step::Stable(sids) => out.extend(sids.map(|s| (s as u32, 0))),
            Step::Insert(row) => out.push((row[0], row[1])),
            Step::Modified { sid, values } => out.push((sid as u32, values[0].1)),
        }
    }
    out
}

/// The model's commit of `ours` (made from the tuples `base` shows) after `theirs`
/// (also made from them): `Err(identity)` of the first base tuple (in order) both
/// changed; else the list `ours` becomes over the tuples `theirs` shows: by base
/// position, each position's inserts (theirs first) before it; a tuple theirs deleted
/// gone, one ours deleted a tombstone.
fn model_merge(base: &[Tuple], theirs: &[Tuple], ours: &[Tuple]) -> Result<Vec<Tuple>, u32> {
    let base: Vec<&Tuple> = base.iter().filter(|t| t.live).collect();
    let (t, o) = (anchored(&base, theirs), anchored(&base, ours));
    let mut out = Vec::new();
    for (i, b) in base.iter().enumerate() {
        let their = copy_of(theirs, b.id);
        let our = copy_of(ours, b.id);
        let changed = |c: &Tuple| !c.live || c.stamp != b.stamp;
        if changed(their) && changed(our) {
            return Err(b.id);
        }
        out.extend(t[i].iter().chain(&o[i]).cloned());
        if their.live {
            out.push(if changed(their) { their } else { our }.clone());
        }
    }
    out.extend(t[base.len()].iter().chain(&o[base.len()]).cloned());
    Ok(out)
}

fn copy_of(list: &[Tuple], id: u32) -> &Tuple {
    list.iter()
        .find(|t| t.id == id)
        .expect("a base tuple stays")
}

/// `list`'s live tuples new to `base`, grouped by the base position of the next base
/// tuple in `list` (tombstones count; the last group: after every one).
fn anchored(base: &[&Tuple], list: &[Tuple]) -> Vec<Vec<Tuple>> {
    let mut groups = vec![Vec::new(); base.len() + 1];
    let mut pending = Vec::new();
    for tuple in list {
        match base.iter().position(|b| b.id == tuple.id) {
            Some(at) => groups[at].append(&mut pending),
            None if tuple.live => pending.push(tuple.clone()),
            None => {}
        }
    }
    groups[base.len()].append(&mut pending);
    groups
}

fn pairs(list: &[Tuple]) -> Vec<(u32, u32)> {
    list.iter()
        .filter(|t| t.live)
        .map(|t| (t.id, t.value))
        .collect()
}

/// The live tuples of `list`, a new base.
fn live(list: &[Tuple]) -> Vec<Tuple> {
    list.iter().filter(|t| t.live).cloned().collect()
}

/// Before: `before` changes committed. Then a transaction makes `ours` from that state
/// while `commits` are committed one after another; `ours` is serialized past each
/// commit's layer and propagated, or refused. Returns whether it committed.
fn check(before: &[Spec], commits: &[Vec<Spec>], ours: &[Spec]) -> bool {
    let mut fresh = Fresh::default();
    let mut committed = Pdt::new(STABLE_ROWS, COLUMNS);
    let mut start: Vec<Tuple> = (0..STABLE_ROWS as u32)
        .map(|id| Tuple {
            id,
            value: 0,
            stamp: 0,
            live: true,
        })
        .collect();
    for spec in before {
        apply(spec, &mut committed, &mut start, &mut fresh);
    }
    let base = live(&start);
    let mut our_layer = Pdt::new(committed.rows(), COLUMNS);
    let mut our_list = base.clone();
    for spec in ours {
        apply(spec, &mut our_layer, &mut our_list, &mut fresh);
    }
    // The model steps ours past each commit by identity; the trees by position.
    let (mut moved, mut model, mut states) = (Ok(our_layer.clone()), Ok(our_list), vec![base]);
    for commit in commits {
        let mut layer = Pdt::new(committed.rows(), COLUMNS);
        let mut list = live(states.last().expect("a state"));
        for spec in commit {
            apply(spec, &mut layer, &mut list, &mut fresh);
        }
        propagate(&mut committed, &layer).expect("a commit's layer");
        assert_eq!(shown(&committed), pairs(&list), "a commit propagated");
        let prior = states.last().expect("a state").clone();
        model = model.and_then(|ours| model_merge(&prior, &list, &ours));
        moved = moved.and_then(|ours| serialize(&ours, &layer));
        states.push(live(&list));
    }
    match (moved, model) {
        (Ok(layer), Ok(list)) => {
            let ops = propagate(&mut committed, &layer).expect("ours propagated");
            assert_eq!(shown(&committed), pairs(&list), "the commit's tuples");
            assert!(ops.len() <= ours.len(), "no more ops than changes made");
            true
        }
        (Err(SerializeError::Conflict { entry }), Err(id)) => {
            let sid = entry_base(&our_layer, entry).expect("the entry");
            let start_ids: Vec<u32> = states[0].iter().map(|t| t.id).collect();
            assert_eq!(
                start_ids.get(sid.0 as usize),
                Some(&id),
                "the conflict's tuple"
            );
            false
        }
        (tree, model) => panic!("tree {tree:?} vs model {model:?}"),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(600))]

    #[test]
    fn transactions_commit_as_the_model_merges_them(
        before in prop::collection::vec(spec(), 0..12),
        commits in prop::collection::vec(prop::collection::vec(spec(), 0..5), 0..4),
        ours in prop::collection::vec(spec(), 0..8),
    ) {
        check(&before, &commits, &ours);
    }
}

/// Each outcome happens: a conflict, and a commit after others' commits.
#[test]
fn both_outcomes_are_reached() {
    use Spec::*;
    // Theirs modifies tuple 3, ours deletes it.
    assert!(!check(&[], &[vec![Modify(3, 7)]], &[Insert(0), Delete(4)]));
    // Disjoint: theirs deletes 0 and inserts at the end, ours modifies 5 and inserts at 0.
    let commits = [vec![Delete(0), Insert(99)], vec![Modify(7, 1)]];
    assert!(check(&[Delete(9)], &commits, &[Modify(5, 2), Insert(0)]));
}
