//! Sums of few groups spread over [`LANES`] copies: tuple `i` adds into copy `i %
//! LANES`, so consecutive tuples of one group (TPC-H Q1's four groups, half the
//! tuples in one of them) do not each wait for the previous addition to the same
//! 128-bit sum. Only while every value fits in 64 bits (sums of such values cannot
//! leave 128 bits, so the copies add up exactly), and only for few groups; past either,
//! the copies are moved into the ordinary sums for good.

/// Copies of each sum.
const LANES: usize = 4;
/// Most groups (group 0, the rejected tuples', included) summed in lanes: their copies
/// take `LANE_GROUPS × values × LANES × 16` bytes.
const LANE_GROUPS: usize = 64;

#[derive(Debug)]
pub(super) struct Lanes {
    /// Values summed per group.
    width: usize,
    /// `[(group × width + value) × LANES + lane]`.
    sums: Vec<i128>,
    on: bool,
}

impl Lanes {
    pub(super) fn new(width: usize) -> Lanes {
        Lanes {
            width,
            sums: Vec::new(),
            on: width > 0,
        }
    }

    /// Whether the next block's narrow values go into the lanes, with `groups` groups
    /// numbered (group 0 included). Past [`LANE_GROUPS`] the lanes are moved into
    /// `sums` (group-major, `width` values a group) and stay off.
    pub(super) fn fit(&mut self, groups: usize, sums: &mut [i128]) -> bool {
        if !self.on {
            return false;
        }
        if groups > LANE_GROUPS {
            self.drain_into(sums);
            return false;
        }
        self.sums.resize(groups * self.width * LANES, 0);
        true
    }

    /// Adds one block of value `v` (64-bit values, never checked: see the module).
    pub(super) fn add(&mut self, v: usize, groups: &[u32], values: &[i64]) {
        let width = self.width;
        for (i, (&g, &x)) in groups.iter().zip(values).enumerate() {
            let slot = &mut self.sums[(g as usize * width + v) * LANES + i % LANES];
            *slot = slot.wrapping_add(i128::from(x));
        }
    }

    /// Moves every total into `sums` and turns the lanes off for good.
    pub(super) fn drain_into(&mut self, sums: &mut [i128]) {
        for (at, sum) in sums.iter_mut().enumerate() {
            *sum = sum.wrapping_add(self.total_at(at));
        }
        self.sums = Vec::new();
        self.on = false;
    }

    /// Value `v`'s total in the lanes of group `g` (0 once drained).
    pub(super) fn total(&self, g: usize, v: usize) -> i128 {
        self.total_at(g * self.width + v)
    }

    fn total_at(&self, at: usize) -> i128 {
        let lanes = self.sums.get(at * LANES..(at + 1) * LANES).unwrap_or(&[]);
        lanes.iter().fold(0i128, |t, &x| t.wrapping_add(x))
    }
}
