//! Positional Delta Trees against a plain model of the table: positions (RID ↔ SID),
//! merged scans over chunks in any order, snapshots, and the ledger's exactly-once.

mod model;

use coopscan_delta::translate::RidLedger;
use coopscan_delta::{DeltaError, Pdt, Rid, Sid, Step};
use model::{stable_value, Model};
use proptest::prelude::*;
use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

const COLUMNS: usize = 3;

#[derive(Clone, Debug)]
enum Op {
    Insert(u64, u32),
    Delete(u64),
    Modify(u64, usize, u32),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => (any::<u64>(), any::<u32>()).prop_map(|(r, v)| Op::Insert(r, v)),
        2 => any::<u64>().prop_map(Op::Delete),
        2 => (any::<u64>(), 0..COLUMNS, any::<u32>()).prop_map(|(r, c, v)| Op::Modify(r, c, v)),
    ]
}

/// Applies `op` to both, its RID taken modulo the rows there are.
fn apply(pdt: &mut Pdt<u32>, model: &mut Model, op: &Op) {
    let rows = model.rows();
    match *op {
        Op::Insert(r, v) => {
            let rid = r % (rows + 1);
            let row = vec![v, v.wrapping_add(1), v.wrapping_add(2)];
            pdt.insert(Rid(rid), row.clone()).expect("insert");
            model.insert(rid, row);
        }
        Op::Delete(r) if rows > 0 => {
            pdt.delete(Rid(r % rows)).expect("delete");
            model.delete(r % rows);
        }
        Op::Modify(r, c, v) if rows > 0 => {
            pdt.modify(Rid(r % rows), vec![(c, v)]).expect("modify");
            model.modify(r % rows, &[(c, v)]);
        }
        _ => {}
    }
}

fn check_positions(pdt: &Pdt<u32>, model: &Model) {
    assert_eq!(pdt.rows(), model.rows());
    for rid in 0..model.rows() {
        assert_eq!(
            pdt.rid_to_sid(Rid(rid)),
            Ok(Sid(model.rid_to_sid(rid))),
            "rid {rid}"
        );
    }
    for sid in 0..=model.stable_rows {
        assert_eq!(
            pdt.sid_to_rid_low(Sid(sid)),
            Ok(Rid(model.sid_to_rid_low(sid))),
            "low {sid}"
        );
        assert_eq!(
            pdt.sid_to_rid_high(Sid(sid)),
            Ok(Rid(model.sid_to_rid_high(sid))),
            "high {sid}"
        );
    }
}

/// The tuples a merged SID range yields, values materialised from the stable image.
fn merged_rows(pdt: &Pdt<u32>, sids: std::ops::Range<u64>) -> (u64, Vec<Vec<u32>>) {
    let merged = pdt.merge_steps(sids).expect("merge");
    let mut rows = Vec::new();
    for step in &merged.steps {
        match step {
            Step::Stable(r) => rows.extend(
                r.clone()
                    .map(|sid| (0..COLUMNS).map(|c| stable_value(sid, c)).collect()),
            ),
            Step::Insert(row) => rows.push(row.to_vec()),
            Step::Modified { sid, values } => {
                let mut row: Vec<u32> = (0..COLUMNS).map(|c| stable_value(*sid, c)).collect();
                for (c, v) in values.iter() {
                    row[*c] = *v;
                }
                rows.push(row);
            }
        }
    }
    assert_eq!(merged.rows(), rows.len() as u64);
    (merged.first_rid.0, rows)
}

/// Chunk boundaries over the stable table, chunks in a shuffled order, wanted RID ranges:
/// every wanted RID produced exactly once with the model's values, nothing else.
fn check_chunked_scan(pdt: &Pdt<u32>, model: &Model, rng: &mut ChaCha8Rng) {
    let n = model.stable_rows;
    let mut cuts: Vec<u64> = (0..rng.random_range(0..6))
        .map(|_| rng.random_range(0..=n))
        .collect();
    cuts.extend([0, n]);
    cuts.sort_unstable();
    cuts.dedup();
    let mut chunks: Vec<_> = cuts.windows(2).map(|w| w[0]..w[1]).collect();
    if n == 0 {
        chunks.push(0..0);
    }
    chunks.shuffle(rng);
    let rows = model.rows();
    let wanted = wanted_ranges(rows, rng);
    let sid_ranges = pdt.sid_ranges(&wanted).expect("sid ranges");
    let visible = model.visible();
    let mut produced = vec![0u32; rows as usize];
    let mut ledger = RidLedger::new();
    for chunk in chunks {
        let (first, tuples) = merged_rows(pdt, chunk.clone());
        let span = pdt.rid_range(chunk.clone()).expect("rid range");
        let merged = pdt.merge_steps(chunk.clone()).expect("merge");
        let new_values = merged.steps.iter().any(|s| !matches!(s, Step::Stable(_)));
        assert_eq!(
            pdt.has_new_values_in(chunk.clone()),
            new_values,
            "chunk {chunk:?}"
        );
        assert_eq!(span, first..first + tuples.len() as u64);
        let needed = sid_ranges
            .iter()
            .any(|s| s.start < chunk.end && chunk.start < s.end);
        for range in ledger.claim(&wanted, span) {
            assert!(
                needed || n == 0,
                "chunk {chunk:?} yields {range:?} but no SID range asked for it"
            );
            for rid in range {
                produced[rid as usize] += 1;
                assert_eq!(
                    tuples[(rid - first) as usize],
                    visible[rid as usize].1.values,
                    "rid {rid}"
                );
            }
        }
    }
    for rid in 0..rows {
        let want = wanted.iter().any(|r| r.contains(&rid)) as u32;
        assert_eq!(
            produced[rid as usize], want,
            "rid {rid} produced {} times",
            produced[rid as usize]
        );
    }
}

fn wanted_ranges(rows: u64, rng: &mut ChaCha8Rng) -> Vec<std::ops::Range<u64>> {
    if rng.random_bool(0.3) {
        return std::iter::once(0..rows).collect();
    }
    let mut cuts: Vec<u64> = (0..rng.random_range(0..8))
        .map(|_| rng.random_range(0..=rows))
        .collect();
    cuts.sort_unstable();
    cuts.dedup();
    cuts.chunks(2)
        .filter(|w| w.len() == 2)
        .map(|w| w[0]..w[1])
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn positions_and_merged_scans_match_the_model(
        stable_rows in 0u64..200,
        ops in proptest::collection::vec(op(), 0..250),
        seed in any::<u64>(),
    ) {
        let mut pdt = Pdt::new(stable_rows, COLUMNS);
        let mut model = Model::new(stable_rows, COLUMNS);
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        for (i, op) in ops.iter().enumerate() {
            apply(&mut pdt, &mut model, op);
            if i % 50 == 49 {
                check_positions(&pdt, &model);
            }
        }
        check_positions(&pdt, &model);
        check_chunked_scan(&pdt, &model, &mut rng);
    }

    #[test]
    fn a_clone_is_a_snapshot(
        stable_rows in 0u64..100,
        before in proptest::collection::vec(op(), 0..100),
        after in proptest::collection::vec(op(), 1..100),
        seed in any::<u64>(),
    ) {
        let mut pdt = Pdt::new(stable_rows, COLUMNS);
        let mut model = Model::new(stable_rows, COLUMNS);
        for op in &before {
            apply(&mut pdt, &mut model, op);
        }
        let (snapshot, frozen) = (pdt.clone(), model.clone());
        for op in &after {
            apply(&mut pdt, &mut model, op);
        }
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        check_positions(&snapshot, &frozen);
        check_chunked_scan(&snapshot, &frozen, &mut rng);
        check_positions(&pdt, &model);
    }
}

/// Thousands of changes keep the tree shallow, and positions stay exact (sampled).
#[test]
fn many_changes_keep_the_tree_logarithmic() {
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    let stable_rows = 50_000;
    let mut pdt = Pdt::new(stable_rows, COLUMNS);
    let mut model = Model::new(stable_rows, COLUMNS);
    for _ in 0..20_000 {
        let op = match rng.random_range(0..7) {
            0..=2 => Op::Insert(rng.random(), rng.random()),
            3..=4 => Op::Delete(rng.random()),
            _ => Op::Modify(rng.random(), rng.random_range(0..COLUMNS), rng.random()),
        };
        apply(&mut pdt, &mut model, &op);
    }
    assert!(pdt.entry_count() > 15_000, "{} entries", pdt.entry_count());
    assert!(
        pdt.height() <= 4,
        "height {} for {} entries",
        pdt.height(),
        pdt.entry_count()
    );
    assert_eq!(pdt.rows(), model.rows());
    let visible = model.visible();
    for _ in 0..2_000 {
        let rid = rng.random_range(0..model.rows());
        assert_eq!(pdt.rid_to_sid(Rid(rid)), Ok(Sid(visible[rid as usize].0)));
        let sid = rng.random_range(0..=stable_rows);
        assert_eq!(
            pdt.sid_to_rid_low(Sid(sid)),
            Ok(Rid(model.sid_to_rid_low(sid)))
        );
    }
    check_chunked_scan(&pdt, &model, &mut rng);
}

#[test]
fn bad_positions_and_rows_are_errors() {
    let mut pdt: Pdt<u32> = Pdt::new(10, 2);
    assert_eq!(
        pdt.delete(Rid(10)),
        Err(DeltaError::RidOutOfRange { rid: 10, rows: 10 })
    );
    assert_eq!(
        pdt.insert(Rid(11), vec![1, 2]),
        Err(DeltaError::RidOutOfRange { rid: 11, rows: 10 })
    );
    assert_eq!(
        pdt.insert(Rid(0), vec![1]),
        Err(DeltaError::RowWidth { got: 1, columns: 2 })
    );
    assert_eq!(
        pdt.modify(Rid(0), vec![(2, 5)]),
        Err(DeltaError::ColumnOutOfRange {
            column: 2,
            columns: 2
        })
    );
    assert_eq!(
        pdt.rid_to_sid(Rid(10)),
        Err(DeltaError::RidOutOfRange { rid: 10, rows: 10 })
    );
    assert_eq!(
        pdt.sid_to_rid_low(Sid(11)),
        Err(DeltaError::SidOutOfRange {
            sid: 11,
            stable_rows: 10
        })
    );
    assert!(pdt.merge_steps(3..11).is_err());
    assert!(pdt.rid_range(std::ops::Range { start: 5, end: 4 }).is_err());
    assert!(pdt.is_empty(), "failed changes left entries");
}

/// The paper's Figure 4 shape: a delete, inserts before a stable tuple and at the end.
#[test]
fn figure_4_shape() {
    let mut pdt: Pdt<u32> = Pdt::new(6, 1);
    pdt.delete(Rid(1)).unwrap(); // stable 1 gone: 0 2 3 4 5
    pdt.insert(Rid(2), vec![100]).unwrap(); // 0 2 ins 3 4 5
    pdt.insert(Rid(2), vec![101]).unwrap(); // 0 2 ins' ins 3 4 5
    pdt.insert(Rid(7), vec![102]).unwrap(); // ... 5 ins''
    let sids: Vec<u64> = (0..pdt.rows())
        .map(|r| pdt.rid_to_sid(Rid(r)).unwrap().0)
        .collect();
    assert_eq!(sids, [0, 2, 3, 3, 3, 4, 5, 6]);
    assert_eq!(pdt.sid_to_rid_low(Sid(1)), Ok(Rid(1)));
    assert_eq!(pdt.sid_to_rid_high(Sid(1)), Ok(Rid(1)));
    assert_eq!(pdt.sid_to_rid_low(Sid(3)), Ok(Rid(2)));
    assert_eq!(pdt.sid_to_rid_high(Sid(3)), Ok(Rid(4)));
    assert_eq!(pdt.sid_to_rid_high(Sid(6)), Ok(Rid(8)));
    let merged = pdt.merge_steps(2..6).unwrap();
    assert_eq!(merged.first_rid, Rid(1));
    assert_eq!(
        merged.steps,
        [
            Step::Stable(2..3),
            Step::Insert(&[101]),
            Step::Insert(&[100]),
            Step::Stable(3..6),
            Step::Insert(&[102])
        ]
    );
}
