//! The timeline against a plain model: every key's true remaining time, kept exactly.

use super::*;
use proptest::prelude::*;
use std::collections::BTreeMap;

const MS: u64 = 1_000_000;

/// Figure 10's example: two groups of two buckets, 100 ms slices.
fn figure10() -> TimelineShape {
    TimelineShape {
        time_slice: Nanos(100 * MS),
        per_group: 2,
        groups: 2,
    }
}

#[test]
fn buckets_cover_the_figure_10_ranges() {
    let shape = figure10();
    let ranges: Vec<_> = (0..4).map(|p| shape.slices_of(p)).collect();
    assert_eq!(ranges, vec![0..1, 1..2, 2..4, 4..6]);
    for (ms, position) in [(0, 0), (99, 0), (100, 1), (250, 2), (399, 2), (400, 3)] {
        assert_eq!(shape.position_of(Nanos(ms * MS)), position, "{ms} ms");
    }
    // Beyond the last group: the last bucket.
    assert_eq!(shape.position_of(Nanos(10_000 * MS)), 3);
    assert_eq!(shape.position_of(Nanos(u64::MAX)), 3);
}

#[test]
fn a_refresh_moves_a_key_toward_now_and_then_expires_it() {
    let mut t = BucketTimeline::new(figure10(), Nanos::ZERO).unwrap();
    t.push('a', Some(Nanos(250 * MS)));
    assert_eq!(t.filed('a'), Some(Filed::At(2)));
    // Slice 1: only group 0 moves (its span is 1 slice); group 1 moves every 2.
    assert!(t.advance(Nanos(100 * MS)).is_empty());
    assert_eq!(t.filed('a'), Some(Filed::At(2)));
    assert!(t.advance(Nanos(200 * MS)).is_empty());
    assert_eq!(t.filed('a'), Some(Filed::At(1)));
    assert!(t.advance(Nanos(300 * MS)).is_empty());
    assert_eq!(t.filed('a'), Some(Filed::At(0)));
    assert_eq!(t.advance(Nanos(400 * MS)), vec!['a']);
    assert!(t.is_empty());
    t.check_invariants().unwrap();
}

#[test]
fn eviction_takes_not_requested_oldest_first_then_the_latest_bucket() {
    let mut t = BucketTimeline::new(TimelineShape::DEFAULT, Nanos::ZERO).unwrap();
    t.push(1, Some(Nanos(5 * MS)));
    t.push(2, None);
    t.push(3, Some(Nanos(60_000 * MS)));
    t.push(4, None);
    t.push(5, Some(Nanos(700 * MS)));
    let order: Vec<_> = t.eviction_order().collect();
    assert_eq!(order, vec![2, 4, 3, 5, 1]);
    // Re-filing moves a key; removing unfiles it.
    t.push(2, Some(Nanos(0)));
    assert!(t.remove(3));
    assert!(!t.remove(3));
    assert_eq!(t.eviction_order().collect::<Vec<_>>(), vec![4, 5, 1, 2]);
    t.check_invariants().unwrap();
}

#[test]
fn a_long_gap_expires_every_requested_key() {
    let mut t = BucketTimeline::new(figure10(), Nanos::ZERO).unwrap();
    t.push(1, Some(Nanos(50 * MS)));
    t.push(2, Some(Nanos(10_000 * MS)));
    t.push(3, None);
    let mut expired = t.advance(Nanos(3_600_000 * MS));
    expired.sort_unstable();
    assert_eq!(expired, vec![1, 2]);
    assert_eq!(t.eviction_order().collect::<Vec<_>>(), vec![3]);
    t.check_invariants().unwrap();
}

#[test]
fn bad_shapes_are_refused() {
    let mut shape = figure10();
    shape.groups = 0;
    assert!(BucketTimeline::<u32>::new(shape, Nanos::ZERO).is_err());
    shape.groups = MAX_GROUPS + 1;
    assert!(BucketTimeline::<u32>::new(shape, Nanos::ZERO).is_err());
    shape = figure10();
    shape.time_slice = Nanos(0);
    assert!(BucketTimeline::<u32>::new(shape, Nanos::ZERO).is_err());
}

#[derive(Clone, Debug)]
enum Op {
    /// Push key, due this many slices (and a fraction) from now, or not requested.
    Push(u8, Option<u32>),
    Remove(u8),
    /// Let this many slices pass.
    Advance(u16),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (any::<u8>(), proptest::option::weighted(0.9, 0u32..2_000)).prop_map(|(k, t)| Op::Push(k, t)),
        1 => any::<u8>().prop_map(Op::Remove),
        2 => (0u16..40).prop_map(Op::Advance),
    ]
}

/// The model: each requested key's absolute due time and the span (in slices) of the
/// bucket it was filed in, which bounds how far bucket granularity can misplace it.
#[derive(Default)]
struct Model {
    due: BTreeMap<u8, (u64, u64)>,
    not_requested: Vec<u8>,
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// Every key sits in a bucket whose range is within the filing bucket's span of its
    /// true remaining time; keys expire only when due (up to that span); eviction order
    /// is the model's order (latest due first) up to the same granularity.
    #[test]
    fn the_timeline_follows_a_sorted_model(ops in proptest::collection::vec(op(), 1..200)) {
        let shape = TimelineShape { time_slice: Nanos(10 * MS), per_group: 3, groups: 6 };
        let slice = shape.time_slice.0;
        let mut t = BucketTimeline::new(shape, Nanos::ZERO).unwrap();
        let mut model = Model::default();
        let mut now = 0u64; // in slices
        for op in ops {
            match op {
                Op::Push(k, Some(after)) => {
                    let after_ns = u64::from(after) * slice / 4; // quarter slices
                    t.push(k, Some(Nanos(after_ns)));
                    model.not_requested.retain(|&x| x != k);
                    let range = shape.slices_of(shape.position_of(Nanos(after_ns)));
                    // The last bucket also takes everything later: no bound there.
                    let span = if after_ns / slice < range.end { (range.end - range.start) * 4 } else { u64::MAX / 8 };
                    model.due.insert(k, (now * 4 + u64::from(after), span));
                }
                Op::Push(k, None) => {
                    t.push(k, None);
                    model.due.remove(&k);
                    model.not_requested.retain(|&x| x != k);
                    model.not_requested.push(k);
                }
                Op::Remove(k) => {
                    let was = model.due.remove(&k).is_some() || model.not_requested.contains(&k);
                    model.not_requested.retain(|&x| x != k);
                    prop_assert_eq!(t.remove(k), was);
                }
                Op::Advance(n) => {
                    now += u64::from(n);
                    for k in t.advance(Nanos(now * slice)) {
                        let (due, span) = model.due.remove(&k).expect("expired key was requested");
                        // Due by now, give or take the filing bucket's span (quarters).
                        prop_assert!(due < (now * 4).saturating_add(span) + 4, "{k} due {due} expired at {}", now * 4);
                    }
                }
            }
            t.check_invariants().map_err(TestCaseError::fail)?;
            prop_assert_eq!(t.len(), model.due.len() + model.not_requested.len());
            // Placement: the bucket's range (from now) brackets the true remaining time.
            let last = shape.per_group as usize * shape.groups as usize - 1;
            for (&k, &(due, span)) in &model.due {
                let Some(Filed::At(p)) = t.filed(k) else {
                    return Err(TestCaseError::fail(format!("{k} not in a requested bucket")));
                };
                let remaining = due.saturating_sub(now * 4);
                let r = shape.slices_of(p);
                let (lo, hi) = (r.start * 4, r.end * 4);
                prop_assert!(remaining.saturating_add(span) + 4 > lo, "{k}: {remaining} before bucket {p} {lo}..{hi}");
                prop_assert!(p == last || remaining < (hi + 4).saturating_add(span), "{k}: {remaining} after bucket {p} {lo}..{hi}");
            }
            // Eviction order: not requested in insertion order, then latest due first.
            let order: Vec<u8> = t.eviction_order().collect();
            let n = model.not_requested.len();
            prop_assert_eq!(&order[..n], &model.not_requested[..]);
            for pair in order[n..].windows(2) {
                let (a, b) = (model.due[&pair[0]], model.due[&pair[1]]);
                let slack = a.1.max(b.1).saturating_mul(2) + 8;
                prop_assert!(a.0.saturating_add(slack) >= b.0, "{} due {} evicted before {} due {}", pair[0], a.0, pair[1], b.0);
            }
        }
    }
}
