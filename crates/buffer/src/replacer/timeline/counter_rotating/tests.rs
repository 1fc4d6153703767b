//! The counter-rotating timeline against a plain model: each requested key's true
//! remaining time, each unrequested key's true distance (its estimate plus the time
//! since it was filed), and the use order of unrequested keys with no estimate.

use super::*;
use proptest::prelude::*;
use std::collections::BTreeMap;

const MS: u64 = 1_000_000;
/// The model counts time in quarter slices, so pushes land inside buckets.
const Q: u64 = 4;

fn shape() -> TimelineShape {
    TimelineShape {
        time_slice: Nanos(10 * MS),
        per_group: 3,
        groups: 6,
    }
}

fn last() -> usize {
    let s = shape();
    (s.per_group * s.groups) as usize - 1
}

#[test]
fn aging_moves_an_unrequested_key_right_while_a_requested_one_moves_left() {
    let s = shape();
    let slice = s.time_slice.0;
    let mut t = CounterRotatingTimeline::new(s, Nanos::ZERO).unwrap();
    t.push_requested('r', Nanos(4 * slice));
    t.push_unrequested('u', Some(Nanos(4 * slice)));
    // Slices 4..6 are group 1's first bucket (position 3) on both sides.
    assert_eq!(t.placed('r'), Some(Placed::Requested(3)));
    assert_eq!(t.placed('u'), Some(Placed::Unrequested(3)));
    t.advance(Nanos(2 * slice));
    // Two slices later: 'r' is due in 2 (position 2), 'u' is 6 away (position 4).
    assert_eq!(t.placed('r'), Some(Placed::Requested(2)));
    assert_eq!(t.placed('u'), Some(Placed::Unrequested(4)));
    t.check_invariants().unwrap();
}

#[test]
fn eviction_takes_the_lru_bucket_before_the_pbm_bucket_of_the_same_range() {
    let s = shape();
    let slice = s.time_slice.0;
    let mut t = CounterRotatingTimeline::new(s, Nanos::ZERO).unwrap();
    t.push_requested(1, Nanos(slice / 2)); // soonest
    t.push_requested(2, Nanos(50 * slice));
    t.push_unrequested(3, Some(Nanos(50 * slice))); // same range as 2
    t.push_unrequested(4, None); // no history: last, in use order
    t.push_unrequested(5, Some(Nanos(2 * slice)));
    t.push_unrequested(6, None);
    assert_eq!(
        t.eviction_order().collect::<Vec<_>>(),
        vec![4, 6, 3, 2, 5, 1]
    );
    // Moving a key across the line leaves no trace on the other side.
    t.push_requested(4, Nanos(0));
    assert!(t.remove(6));
    assert!(!t.remove(6));
    assert_eq!(t.eviction_order().collect::<Vec<_>>(), vec![3, 2, 5, 1, 4]);
    assert_eq!(t.len(), 5);
    t.check_invariants().unwrap();
}

#[test]
fn a_long_gap_ages_every_unrequested_key_into_the_last_bucket_further_first() {
    let s = shape();
    let slice = s.time_slice.0;
    let mut t = CounterRotatingTimeline::new(s, Nanos::ZERO).unwrap();
    t.push_unrequested('a', Some(Nanos(slice)));
    t.push_unrequested('b', None);
    t.push_unrequested('c', Some(Nanos(20 * slice)));
    t.push_requested('r', Nanos(slice));
    let expired = t.advance(Nanos(10_000 * slice));
    assert_eq!(expired, vec!['r']);
    assert_eq!(t.eviction_order().collect::<Vec<_>>(), vec!['b', 'c', 'a']);
    t.check_invariants().unwrap();
}

#[derive(Clone, Debug)]
enum Op {
    /// Requested, due this many quarter slices from now.
    Request(u8, u32),
    /// Unrequested at this estimated distance (quarter slices), or with no estimate.
    Unrequest(u8, Option<u32>),
    Remove(u8),
    /// Let this many slices pass.
    Advance(u16),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => (any::<u8>(), 0u32..1_000).prop_map(|(k, t)| Op::Request(k, t)),
        3 => (any::<u8>(), proptest::option::weighted(0.6, 0u32..1_000))
            .prop_map(|(k, d)| Op::Unrequest(k, d)),
        1 => any::<u8>().prop_map(Op::Remove),
        2 => (0u16..40).prop_map(Op::Advance),
    ]
}

#[derive(Clone, Copy, Debug)]
enum Truth {
    /// Due at this absolute time (quarter slices); the span (quarter slices) of the
    /// bucket it was filed in, which bounds its error as its bucket moves left.
    Due(u64, u64),
    /// Distance = now − anchor (quarter slices).
    Anchor(u64),
    /// No estimate; the number is its use order.
    Unknown(u64),
}

/// The plain model: the truth of every filed key, and a use counter.
#[derive(Default)]
struct Model {
    keys: BTreeMap<u8, Truth>,
    uses: u64,
}

impl Model {
    /// The key's true value in quarter slices: remaining time or distance; unknowns are
    /// beyond every bucket.
    fn value(&self, k: u8, now: u64) -> u64 {
        match self.keys[&k] {
            Truth::Due(due, _) => due.saturating_sub(now),
            Truth::Anchor(anchor) => now.wrapping_sub(anchor),
            Truth::Unknown(_) => u64::MAX / 4,
        }
    }
}

/// The range (quarter slices) a position stands for, widened by twice `span` (at
/// least its own): the granularity a bucket timeline promises (a bucket moves once
/// per span; a requested key keeps the error of the wider bucket it was filed in).
fn bracket(p: usize, span: u64) -> (u64, u64) {
    let r = shape().slices_of(p);
    let span = span.max((r.end - r.start) * Q);
    let hi = if p == last() {
        u64::MAX / 2
    } else {
        (r.end * Q).saturating_add(2 * span) + Q
    };
    ((r.start * Q).saturating_sub(2 * span + Q), hi)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// Every key sits on its side of the line in a bucket that brackets its true
    /// value; requested keys expire only when due; eviction order is the model's
    /// order (largest value first, LRU bucket before PBM bucket) up to bucket
    /// granularity, and keys with no estimate leave in use order (LRU).
    #[test]
    fn the_counter_rotating_timeline_follows_a_plain_model(
        ops in proptest::collection::vec(op(), 1..200)
    ) {
        let slice = shape().time_slice.0;
        let mut t = CounterRotatingTimeline::new(shape(), Nanos::ZERO).unwrap();
        let mut model = Model::default();
        let mut now = 0u64; // quarter slices, always whole slices
        for op in ops {
            match op {
                Op::Request(k, after) => {
                    t.push_requested(k, Nanos(u64::from(after) * slice / Q));
                    let Some(Placed::Requested(p)) = t.placed(k) else {
                        return Err(TestCaseError::fail(format!("{k} not requested")));
                    };
                    let r = shape().slices_of(p);
                    // The last bucket also takes every later time: no bound there.
                    let span = if u64::from(after) < r.end * Q {
                        (r.end - r.start) * Q
                    } else {
                        u64::MAX / 8
                    };
                    model.keys.insert(k, Truth::Due(now + u64::from(after), span));
                }
                Op::Unrequest(k, Some(d)) => {
                    t.push_unrequested(k, Some(Nanos(u64::from(d) * slice / Q)));
                    // Anchor may precede time 0: shift by a constant offset instead.
                    model.keys.insert(k, Truth::Anchor(now.wrapping_sub(u64::from(d))));
                }
                Op::Unrequest(k, None) => {
                    t.push_unrequested(k, None);
                    model.uses += 1;
                    model.keys.insert(k, Truth::Unknown(model.uses));
                }
                Op::Remove(k) => {
                    prop_assert_eq!(t.remove(k), model.keys.remove(&k).is_some());
                }
                Op::Advance(n) => {
                    now += u64::from(n) * Q;
                    for k in t.advance(Nanos(now / Q * slice)) {
                        let Some(Truth::Due(due, span)) = model.keys.remove(&k) else {
                            return Err(TestCaseError::fail(format!("{k} expired unrequested")));
                        };
                        // Due by now, give or take the largest span it was filed in.
                        prop_assert!(due < now + span + Q, "{k} due {due} at {now}");
                    }
                }
            }
            t.check_invariants().map_err(TestCaseError::fail)?;
            prop_assert_eq!(t.len(), model.keys.len());
            let value = |k: u8| model.value(k, now);
            let mut positions = Vec::new();
            for (&k, truth) in &model.keys {
                let placed = t.placed(k);
                let p = match (truth, placed) {
                    (Truth::Due(..), Some(Placed::Requested(p))) => p,
                    (Truth::Anchor(_), Some(Placed::Unrequested(p))) => p,
                    (Truth::Unknown(_), Some(Placed::Unrequested(p))) => {
                        prop_assert_eq!(p, last(), "{} has no estimate but is not last", k);
                        p
                    }
                    _ => return Err(TestCaseError::fail(format!("{k} {truth:?} placed {placed:?}"))),
                };
                let filed_span = match truth { Truth::Due(_, span) => *span, _ => 0 };
                let (lo, hi) = bracket(p, filed_span);
                let v = value(k);
                prop_assert!(lo <= v && v < hi, "{k} {truth:?}: value {v} in bucket {p} ({lo}..{hi})");
                positions.push((k, p));
            }
            // Eviction order: positions never increase; at one position LRU keys first.
            let order: Vec<u8> = t.eviction_order().collect();
            prop_assert_eq!(order.len(), model.keys.len());
            let side = |k: u8| matches!(model.keys[&k], Truth::Due(..));
            let pos = |k: u8| positions.iter().find(|(x, _)| *x == k).map(|(_, p)| *p);
            for pair in order.windows(2) {
                let (a, b) = (pair[0], pair[1]);
                prop_assert!(pos(a) >= pos(b), "{a} at {:?} evicted before {b} at {:?}", pos(a), pos(b));
                if pos(a) == pos(b) {
                    prop_assert!(!side(a) || side(b), "requested {a} before unrequested {b}");
                }
            }
            // LRU among the keys with no estimate: least recently filed first.
            let unknown: Vec<u64> = order
                .iter()
                .filter_map(|k| match model.keys[k] { Truth::Unknown(u) => Some(u), _ => None })
                .collect();
            prop_assert!(unknown.windows(2).all(|w| w[0] < w[1]), "{unknown:?}");
        }
    }
}
