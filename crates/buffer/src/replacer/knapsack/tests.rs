//! The knapsack against brute force on small inputs: every combination of options
//! (the solver), and every subset of every evictable piece (the whole plan, with the
//! loss computed from its definition, not from the options).
#![allow(clippy::unwrap_used)] // test code: an unwrap that fails is a failed test

use super::*;
use proptest::prelude::*;

/// Brute force over one option (or none) per group: the least (loss, bytes) cover.
fn brute_cover(groups: &[Vec<EvictOption>], need: u64) -> Option<(u64, u64)> {
    let mut best: Option<(u64, u64)> = None;
    let mut pick = vec![0usize; groups.len()]; // 0 = none, k = option k - 1
    loop {
        let (mut bytes, mut loss) = (0u64, 0u64);
        for (g, &k) in pick.iter().enumerate() {
            if k > 0 {
                bytes += groups[g][k - 1].bytes;
                loss += groups[g][k - 1].loss;
            }
        }
        if bytes >= need && best.is_none_or(|b| (loss, bytes) < b) {
            best = Some((loss, bytes));
        }
        // Next combination (odometer).
        let mut g = 0;
        loop {
            if g == groups.len() {
                return best;
            }
            pick[g] += 1;
            if pick[g] <= groups[g].len() {
                break;
            }
            pick[g] = 0;
            g += 1;
        }
    }
}

/// Brute force over every subset of every evictable piece: the least loss of a cover,
/// loss by definition (a scan is lost when any column it reads goes).
fn brute_min_loss(candidates: &[Candidate], need: u64) -> Option<u64> {
    let pieces: Vec<(usize, u32, u64)> = candidates
        .iter()
        .enumerate()
        .flat_map(|(k, c)| c.evictable.iter().map(move |&(col, b)| (k, col, b)))
        .collect();
    let mut best = None;
    for subset in 0u32..1 << pieces.len() {
        let mut cols = vec![0u64; candidates.len()];
        let mut bytes = 0;
        for (i, &(k, col, b)) in pieces.iter().enumerate() {
            if subset >> i & 1 == 1 {
                cols[k] |= 1 << col;
                bytes += b;
            }
        }
        if bytes < need {
            continue;
        }
        let loss: u64 = candidates
            .iter()
            .zip(&cols)
            .map(|(c, &evicted)| {
                c.scans
                    .iter()
                    .filter(|(read, _)| read & evicted != 0)
                    .map(|(_, w)| w)
                    .sum::<u64>()
            })
            .sum();
        if best.is_none_or(|b| loss < b) {
            best = Some(loss);
        }
    }
    best
}

fn option_strategy() -> impl Strategy<Value = EvictOption> {
    (1u64..16, 1u64..12, 0u64..600).prop_map(|(cols, bytes, loss)| EvictOption {
        cols,
        bytes,
        loss,
    })
}

/// Up to 3 chunks of up to 3 evictable columns (of 4) with up to 4 scans each.
fn candidate_strategy() -> impl Strategy<Value = Candidate> {
    let evictable = proptest::sample::subsequence(vec![0u32, 1, 2, 3], 1..=3);
    let sizes = proptest::collection::vec(1u64..10, 3);
    let scans = proptest::collection::vec((1u64..16, prop_oneof![Just(1u64), Just(256)]), 0..=4);
    (evictable, sizes, scans).prop_map(|(cols, sizes, scans)| Candidate {
        evictable: cols.into_iter().zip(sizes).collect(),
        scans,
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn the_solver_finds_the_least_loss_then_least_bytes_cover(
        groups in proptest::collection::vec(proptest::collection::vec(option_strategy(), 0..4), 0..5),
        need in 0u64..40,
    ) {
        let got = min_loss_cover(&groups, need).map(|picks| {
            let mut seen = std::collections::BTreeSet::new();
            for &(g, _) in &picks {
                assert!(seen.insert(g), "two options of group {g}");
            }
            picks.iter().fold((0, 0), |(l, b), &(g, o)| {
                (l + groups[g][o].loss, b + groups[g][o].bytes)
            })
        });
        prop_assert_eq!(got, brute_cover(&groups, need));
    }

    #[test]
    fn the_plan_loses_least_and_frees_enough_without_a_spare_piece(
        candidates in proptest::collection::vec(candidate_strategy(), 0..=3),
        need in 1u64..30,
    ) {
        let brute = brute_min_loss(&candidates, need);
        let plan = plan(&candidates, need);
        prop_assert_eq!(plan.is_some(), brute.is_some());
        let Some(pieces) = plan else { return Ok(()) };
        let mut cols = vec![0u64; candidates.len()];
        for &(k, col) in &pieces {
            prop_assert!(candidates[k].evictable.iter().any(|(c, _)| *c == col));
            prop_assert!(cols[k] >> col & 1 == 0, "piece chosen twice");
            cols[k] |= 1 << col;
        }
        let bytes: u64 = candidates.iter().zip(&cols).map(|(c, &e)| c.bytes_of(e)).sum();
        let loss: u64 = candidates.iter().zip(&cols).map(|(c, &e)| c.loss_of(e)).sum();
        prop_assert!(bytes >= need);
        prop_assert_eq!(Some(loss), brute);
        for &(k, col) in &pieces {
            let b = candidates[k].bytes_of(1 << col);
            prop_assert!(bytes - b < need, "piece {k}/{col} was not needed");
        }
    }
}

#[test]
fn one_small_chunk_beats_the_lowest_density_chunk() {
    // The greedy takes the lowest value per byte first: the big chunk (2 scans over 20
    // bytes), losing 2 scans for a need of 1 byte. The knapsack loses the one scan of
    // the small chunk.
    let big = Candidate {
        evictable: vec![(0, 10), (1, 10)],
        scans: vec![(0b11, 256), (0b11, 256)],
    };
    let small = Candidate {
        evictable: vec![(0, 1)],
        scans: vec![(0b1, 256)],
    };
    assert_eq!(plan(&[big, small], 1), Some(vec![(1, 0)]));
}

#[test]
fn a_chunk_already_paid_for_gives_its_other_columns_free() {
    // Sacrificing scan "AB" of chunk 0 frees A and B at the price of one scan; taking
    // A from chunk 0 and A from chunk 1 would cost two.
    let c0 = Candidate {
        evictable: vec![(0, 3), (1, 3)],
        scans: vec![(0b11, 1)],
    };
    let c1 = Candidate {
        evictable: vec![(0, 3)],
        scans: vec![(0b1, 1)],
    };
    let plan = plan(&[c0, c1], 6).unwrap();
    assert_eq!(plan, vec![(0, 0), (0, 1)]);
}
