//! Sums of few groups spread over [`LANES`] copies: tuple `i` adds into copy `i %
//! LANES`, so consecutive tuples of one group (TPC-H Q1's four groups, half the
//! tuples in one of them) do not each wait for the previous addition to the same
//! 128-bit sum. Only while every value fits in 64 bits (sums of such values cannot
//! leave 128 bits, so the copies add up exactly), and only for few groups; past either,
//! the copies are moved into the ordinary sums for good. A block whose values are all
//! narrow (below 2⁵³ in magnitude, nearly always) is first summed in 64-bit copies and
//! those added to the 128-bit ones: one addition to memory a value instead of two
//! (`cargo bench -p coopscan-storage --bench aggregate`). Group counts are kept in
//! copies the same way.

use super::BLOCK;

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
    /// One block's sums of one value, `[group × LANES + lane]`.
    narrow: Vec<i64>,
    /// One chunk's tuple counts, `[group × LANES + lane]`.
    copies: Vec<u64>,
    on: bool,
}

/// A block of at most [`BLOCK`] (2¹⁰) values in `-2⁵³ .. 2⁵³` sums within `i64`.
const NARROW: i64 = 1 << 53;

/// Whether every value lies in `-NARROW .. NARROW`: shifted up by `NARROW` each is
/// below `2 × NARROW` as an unsigned number, and so is their OR (one addition and one
/// OR a value, a pass the compiler vectorizes).
fn all_narrow(values: &[i64]) -> bool {
    let shifted = values
        .iter()
        .fold(0u64, |m, &x| m | x.wrapping_add(NARROW) as u64);
    shifted < 2 * NARROW as u64
}

impl Lanes {
    pub(super) fn new(width: usize) -> Lanes {
        Lanes {
            width,
            sums: Vec::new(),
            narrow: Vec::new(),
            copies: Vec::new(),
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

    /// Adds to `counts` (indexed by group) the tuples of each group in `groups`: in
    /// [`LANES`] copies while the groups are few, as the sums are.
    pub(super) fn count(&mut self, groups: &[u32], counts: &mut [u64]) {
        if counts.len() > LANE_GROUPS {
            groups.iter().for_each(|&g| counts[g as usize] += 1);
            return;
        }
        self.copies.clear();
        self.copies.resize(counts.len() * LANES, 0);
        let (g4, rest) = groups.as_chunks::<LANES>();
        for g in g4 {
            for (lane, &g) in g.iter().enumerate() {
                self.copies[g as usize * LANES + lane] += 1;
            }
        }
        for &g in rest {
            self.copies[g as usize * LANES] += 1;
        }
        for (count, copies) in counts.iter_mut().zip(self.copies.chunks_exact(LANES)) {
            *count += copies.iter().sum::<u64>();
        }
    }

    /// Adds one block of value `v` (64-bit values, never checked: see the module).
    pub(super) fn add(&mut self, v: usize, groups: &[u32], values: &[i64]) {
        if values.len() <= BLOCK && all_narrow(values) {
            self.add_narrow(v, groups, values);
            return;
        }
        let width = self.width;
        for (i, (&g, &x)) in groups.iter().zip(values).enumerate() {
            let slot = &mut self.sums[(g as usize * width + v) * LANES + i % LANES];
            *slot = slot.wrapping_add(i128::from(x));
        }
    }

    /// [`Lanes::add`] of a block whose values lie in `-NARROW .. NARROW`:
    /// summed in 64-bit copies (one addition to memory per tuple instead of two), then
    /// added to the 128-bit ones.
    fn add_narrow(&mut self, v: usize, groups: &[u32], values: &[i64]) {
        let slots = self.sums.len() / self.width.max(1);
        self.narrow.clear();
        self.narrow.resize(slots, 0);
        let narrow = &mut self.narrow[..];
        let (g4, gs) = groups.as_chunks::<LANES>();
        let (x4, xs) = values.as_chunks::<LANES>();
        for (g, x) in g4.iter().zip(x4) {
            for (lane, (&g, &x)) in g.iter().zip(x).enumerate() {
                let slot = &mut narrow[g as usize * LANES + lane];
                *slot = slot.wrapping_add(x);
            }
        }
        for (lane, (&g, &x)) in gs.iter().zip(xs).enumerate() {
            let slot = &mut narrow[g as usize * LANES + lane];
            *slot = slot.wrapping_add(x);
        }
        let width = self.width;
        for (at, &sum) in narrow.iter().enumerate() {
            if sum != 0 {
                let (g, lane) = (at / LANES, at % LANES);
                let slot = &mut self.sums[(g * width + v) * LANES + lane];
                *slot = slot.wrapping_add(i128::from(sum));
            }
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Blocks of every length up to past [`BLOCK`], values narrow, at the narrow bound's
    /// edges and far past it (up to `i64::MIN` and `i64::MAX`): every total equals a
    /// plain 128-bit sum per group.
    #[test]
    fn totals_equal_plain_sums_for_any_magnitude() {
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let edges = [NARROW - 1, -NARROW, NARROW, -NARROW - 1, i64::MAX, i64::MIN];
        let (groups, width) = (5usize, 2usize);
        let mut lanes = Lanes::new(width);
        let mut sums = vec![0i128; groups * width];
        assert!(lanes.fit(groups, &mut sums));
        let mut plain = vec![0i128; groups * width];
        for len in (0..BLOCK + 9).step_by(37).chain([1, 3, 4, 5, BLOCK, BLOCK]) {
            for v in 0..width {
                // A whole block of one group at the bound: the largest narrow sums.
                let of: Vec<u32> = (0..len)
                    .map(|_| match len {
                        BLOCK => 3,
                        _ => (next() % groups as u64) as u32,
                    })
                    .collect();
                let extreme = [NARROW - 1, -NARROW][len % 2];
                let values: Vec<i64> = (0..len)
                    .map(|_| match next() % 8 {
                        _ if len == BLOCK => extreme,
                        0 => edges[(next() % edges.len() as u64) as usize],
                        1 => next() as i64,
                        _ => (next() % 2_000_000) as i64 - 1_000_000,
                    })
                    .collect();
                lanes.add(v, &of, &values);
                for (&g, &x) in of.iter().zip(&values) {
                    plain[g as usize * width + v] += i128::from(x);
                }
            }
        }
        for g in 0..groups {
            for v in 0..width {
                assert_eq!(
                    lanes.total(g, v),
                    plain[g * width + v],
                    "group {g} value {v}"
                );
            }
        }
    }
}
