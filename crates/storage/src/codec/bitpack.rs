//! A plain, checked bit-packer: `n` unsigned values of `width` bits (0..=64) packed
//! little-endian, value `i` at bits `i * width ..`, in exactly `ceil(n * width / 8)`
//! bytes. Random access by index, so a reader can unpack only the rows it keeps.

use std::ops::Range;

use crate::encoding::DecodeError;

type DResult<T> = std::result::Result<T, DecodeError>;

/// Widest packable value.
pub const MAX_WIDTH: u32 = 64;

/// Runs `$body` with `$w` a `const usize` equal to `$width` when it is 1..=56
/// ([`MAX_BLOCK_WIDTH`]), `$other` otherwise.
macro_rules! with_block_width {
    ($width:expr, $w:ident => $body:block else $other:block) => {
        with_block_width!(@arms $width, $w, $body, $other;
            1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28
            29 30 31 32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53 54
            55 56)
    };
    (@arms $width:expr, $w:ident, $body:block, $other:block; $($n:literal)*) => {
        match $width {
            $($n => {
                const $w: usize = $n;
                $body
            })*
            _ => $other,
        }
    };
}

/// Bits needed to hold `v` (0 for 0).
pub fn bits(v: u64) -> u32 {
    64 - v.leading_zeros()
}

/// Bytes `n` values of `width` bits occupy, `None` on overflow.
pub fn packed_len(n: usize, width: u32) -> Option<usize> {
    n.checked_mul(width as usize)?.checked_add(7).map(|b| b / 8)
}

/// Appends `values` packed at `width` bits. Every value must fit `width` bits; the
/// writer guarantees it (higher bits would corrupt the neighbour, so they are masked).
pub fn pack(values: impl Iterator<Item = u64>, width: u32, out: &mut Vec<u8>) {
    if width == 0 {
        return;
    }
    let mask = mask(width);
    // A u128 accumulator holds up to 7 pending bits plus one 64-bit value.
    let mut acc: u128 = 0;
    let mut pending = 0u32;
    for v in values {
        acc |= u128::from(v & mask) << pending;
        pending += width;
        while pending >= 8 {
            out.push(acc as u8);
            acc >>= 8;
            pending -= 8;
        }
    }
    if pending > 0 {
        out.push(acc as u8);
    }
}

fn mask(width: u32) -> u64 {
    if width >= 64 {
        u64::MAX
    } else {
        (1u64 << width) - 1
    }
}

/// Packed values, checked on construction: the width is at most 64 and the bytes are
/// exactly the length `n` values of that width take.
#[derive(Debug, Clone, Copy)]
pub struct Packed<'a> {
    bytes: &'a [u8],
    width: u32,
    n: usize,
}

impl<'a> Packed<'a> {
    pub fn new(bytes: &'a [u8], width: u32, n: usize) -> DResult<Self> {
        if width > MAX_WIDTH {
            return Err(DecodeError(format!("bit width {width} over {MAX_WIDTH}")));
        }
        match packed_len(n, width) {
            Some(len) if len == bytes.len() => Ok(Packed { bytes, width, n }),
            _ => Err(DecodeError(format!(
                "{} packed bytes for {n} values of {width} bits",
                bytes.len()
            ))),
        }
    }

    pub fn width(&self) -> u32 {
        self.width
    }

    pub fn len(&self) -> usize {
        self.n
    }

    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    /// Calls `f` with the values at `range`, in order.
    pub fn unpack(&self, range: Range<usize>, mut f: impl FnMut(u64)) -> DResult<()> {
        self.check_range(&range)?;
        if self.width == 0 {
            range.for_each(|_| f(0));
            return Ok(());
        }
        let (width, mask) = (self.width as usize, mask(self.width));
        // range.end * width <= n * width, which packed_len computed without overflow.
        let mut bit = range.start * width;
        if self.width <= 56 {
            // A value starts at most 7 bits into its first byte, so 8 bytes hold it.
            for _ in range {
                let byte = bit >> 3;
                let window = match self.bytes.get(byte..byte + 8) {
                    Some(w) => {
                        let mut a = [0u8; 8];
                        a.copy_from_slice(w);
                        u64::from_le_bytes(a)
                    }
                    None => self.tail_window(byte) as u64,
                };
                f((window >> (bit & 7)) & mask);
                bit += width;
            }
            return Ok(());
        }
        for _ in range {
            // Wider values span up to 71 bits: a 16-byte window.
            f((self.wide_window(bit >> 3) >> (bit & 7)) as u64 & mask);
            bit += width;
        }
        Ok(())
    }

    /// The 16 bytes at `byte`, zero-extended near the end: a window that holds any
    /// value starting in that byte.
    fn wide_window(&self, byte: usize) -> u128 {
        match self.bytes.get(byte..byte + 16) {
            Some(w) => {
                let mut a = [0u8; 16];
                a.copy_from_slice(w);
                u128::from_le_bytes(a)
            }
            None => self.tail_window(byte),
        }
    }

    /// Calls `f` with the values at positions `at` (each below [`Packed::len`]), in the
    /// order given: random access, for the few tuples a selection keeps.
    pub fn unpack_at(&self, at: &[u32], mut f: impl FnMut(u64)) -> DResult<()> {
        if let Some(&p) = at.iter().find(|&&p| p as usize >= self.n) {
            return Err(DecodeError(format!(
                "value {p} asked of {} packed values",
                self.n
            )));
        }
        if self.width == 0 {
            at.iter().for_each(|_| f(0));
            return Ok(());
        }
        let (width, mask) = (self.width as usize, mask(self.width));
        for &p in at {
            // p < n, so p * width is within the packed bits packed_len computed.
            let bit = p as usize * width;
            f((self.wide_window(bit >> 3) >> (bit & 7)) as u64 & mask);
        }
        Ok(())
    }

    /// Writes `map` of the values at `range`, in order, to `dst` (exactly as long as
    /// `range`): the hot loop of a decoder, in blocks of 8 values with the width a
    /// compile-time constant for widths up to [`MAX_BLOCK_WIDTH`].
    pub fn unpack_to<T>(
        &self,
        range: Range<usize>,
        dst: &mut [T],
        mut map: impl FnMut(u64) -> T,
    ) -> DResult<()> {
        self.check_range(&range)?;
        if dst.len() != range.len() {
            return Err(DecodeError(format!(
                "{} slots for the {} values {range:?}",
                dst.len(),
                range.len()
            )));
        }
        if self.width == 0 || self.width > MAX_BLOCK_WIDTH {
            let mut slots = dst.iter_mut();
            return self.unpack(range, |v| {
                if let Some(slot) = slots.next() {
                    *slot = map(v);
                }
            });
        }
        // Block k holds values 8k..8k + 8 in bytes k·width..(k + 1)·width, read through
        // a window of width + 8 bytes: the blocks used lie wholly inside `range` and
        // leave 8 bytes to spare at the end.
        let width = self.width as usize;
        let whole = (self.bytes.len().saturating_sub(8) / width).min(self.n / 8);
        let (first, end) = (range.start.div_ceil(8), (range.end / 8).min(whole));
        if first >= end {
            self.unpack_each(range, dst, &mut map);
            return Ok(());
        }
        // first·8 ≤ end·8 ≤ range.end, so both splits are inside `dst`.
        let (head, rest) = dst.split_at_mut(first * 8 - range.start);
        let (body, tail) = rest.split_at_mut((end - first) * 8);
        self.unpack_each(range.start..first * 8, head, &mut map);
        let bytes = &self.bytes[first * width..end * width + 8];
        with_block_width!(width, W => {
            for (b, out) in body.chunks_exact_mut(8).enumerate() {
                unpack_block::<W, T>(&bytes[b * W..b * W + W + 8], out, &mut map);
            }
        } else {
            self.unpack_each(first * 8..end * 8, body, &mut map);
        });
        self.unpack_each(end * 8..range.end, tail, &mut map);
        Ok(())
    }

    /// `map` of the values `range` one at a time into `dst`, each from the 8 bytes at
    /// its first bit (widths up to 56: a value starts at most 7 bits into its first
    /// byte).
    fn unpack_each<T>(&self, range: Range<usize>, dst: &mut [T], map: &mut impl FnMut(u64) -> T) {
        let (width, mask) = (self.width as usize, mask(self.width));
        let mut bit = range.start * width;
        for slot in dst {
            let byte = bit >> 3;
            let window = match self.bytes.get(byte..byte + 8) {
                Some(w) => {
                    let mut a = [0u8; 8];
                    a.copy_from_slice(w);
                    u64::from_le_bytes(a)
                }
                None => self.tail_window(byte) as u64,
            };
            *slot = map((window >> (bit & 7)) & mask);
            bit += width;
        }
    }

    fn check_range(&self, range: &Range<usize>) -> DResult<()> {
        if range.start > range.end || range.end > self.n {
            return Err(DecodeError(format!(
                "values {range:?} asked of {} packed values",
                self.n
            )));
        }
        Ok(())
    }

    /// The window at `byte` near the end, zero-extended.
    fn tail_window(&self, byte: usize) -> u128 {
        let mut a = [0u8; 16];
        let rest = self.bytes.get(byte..).unwrap_or(&[]);
        let take = rest.len().min(16);
        a[..take].copy_from_slice(&rest[..take]);
        u128::from_le_bytes(a)
    }
}

/// Widest value [`Packed::unpack_to`] decodes in blocks of 8 with the width a compile-time
/// constant (so every shift and byte offset of a block is one too, and one bounds check
/// covers the block): up to 56 bits a value lies in the 8 bytes from its first bit.
const MAX_BLOCK_WIDTH: u32 = 56;

/// `map` of the 8 values of `W` bits packed in `block[..W]` (which is `W + 8` bytes
/// long, so each value's 8-byte window is inside it) into `out[..8]`.
#[inline(always)]
fn unpack_block<const W: usize, T>(block: &[u8], out: &mut [T], map: &mut impl FnMut(u64) -> T) {
    let block: &[u8] = &block[..W + 8];
    let out = &mut out[..8];
    let mask = (1u64 << W) - 1;
    for (j, slot) in out.iter_mut().enumerate() {
        let bit = j * W;
        let byte = bit >> 3;
        let mut a = [0u8; 8];
        a.copy_from_slice(&block[byte..byte + 8]);
        *slot = map((u64::from_le_bytes(a) >> (bit & 7)) & mask);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn roundtrip(values: &[u64], width: u32) -> Vec<u64> {
        let mut out = Vec::new();
        pack(values.iter().copied(), width, &mut out);
        let p = Packed::new(&out, width, values.len()).expect("valid");
        let mut got = Vec::new();
        p.unpack(0..values.len(), |v| got.push(v))
            .expect("in range");
        got
    }

    #[test]
    fn every_width_round_trips_its_extremes() {
        for width in 0..=64 {
            let top = mask(width);
            let values = [0, top, top / 2, 1 & top, top, 0, top];
            assert_eq!(roundtrip(&values, width), values, "width {width}");
        }
    }

    #[test]
    fn bad_lengths_and_widths_are_errors() {
        assert!(Packed::new(&[0; 2], 65, 0).is_err());
        assert!(Packed::new(&[0; 2], 3, 7).is_err()); // needs 3 bytes
        assert!(Packed::new(&[0; 3], 3, 7).is_ok());
        let p = Packed::new(&[0; 3], 3, 7).expect("valid");
        assert!(p.unpack(0..8, |_| {}).is_err());
        assert!(p.unpack_to(0..8, &mut [0u64; 8], |v| v).is_err());
        // The slots must match the range exactly.
        assert!(p.unpack_to(0..7, &mut [0u64; 6], |v| v).is_err());
        assert!(p.unpack_to(0..7, &mut [0u64; 8], |v| v).is_err());
    }

    /// Value `i` read bit by bit from the packed bytes: the format's definition.
    fn model(bytes: &[u8], width: u32, i: usize) -> u64 {
        (0..width as usize)
            .map(|b| {
                let bit = i * width as usize + b;
                u64::from((bytes[bit / 8] >> (bit % 8)) & 1) << b
            })
            .sum()
    }

    #[test]
    fn blocks_heads_and_tails_equal_the_bit_by_bit_model() {
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        for width in 0..=64u32 {
            let values: Vec<u64> = (0..203)
                .map(|_| {
                    seed ^= seed << 13;
                    seed ^= seed >> 7;
                    seed ^= seed << 17;
                    seed & mask(width)
                })
                .collect();
            let mut bytes = Vec::new();
            pack(values.iter().copied(), width, &mut bytes);
            let p = Packed::new(&bytes, width, values.len()).expect("valid");
            for (lo, hi) in [
                (0, 203),
                (1, 203),
                (7, 200),
                (8, 16),
                (9, 15),
                (13, 197),
                (200, 203),
            ] {
                let want: Vec<u64> = (lo..hi).map(|i| model(&bytes, width, i)).collect();
                assert_eq!(&want[..], &values[lo..hi], "width {width}: the packer");
                let mut got = Vec::new();
                p.unpack(lo..hi, |v| got.push(v)).expect("in range");
                assert_eq!(got, want, "unpack, width {width}, values {lo}..{hi}");
                let mut slots = vec![u64::MAX; hi - lo];
                p.unpack_to(lo..hi, &mut slots, |v| v).expect("in range");
                assert_eq!(slots, want, "unpack_to, width {width}, values {lo}..{hi}");
            }
        }
    }

    proptest! {
        #[test]
        fn random_values_round_trip(width in 0u32..=64, raw in proptest::collection::vec(any::<u64>(), 0..300)) {
            let values: Vec<u64> = raw.iter().map(|v| v & mask(width)).collect();
            prop_assert_eq!(roundtrip(&values, width), values);
        }

        #[test]
        fn any_sub_range_unpacks_the_same_values(width in 1u32..=64, raw in proptest::collection::vec(any::<u64>(), 1..200), a in 0usize..200, b in 0usize..200) {
            let values: Vec<u64> = raw.iter().map(|v| v & mask(width)).collect();
            let (a, b) = (a.min(values.len()), b.min(values.len()));
            let (lo, hi) = (a.min(b), a.max(b));
            let mut out = Vec::new();
            pack(values.iter().copied(), width, &mut out);
            let mut got = Vec::new();
            Packed::new(&out, width, values.len()).expect("valid").unpack(lo..hi, |v| got.push(v)).expect("in range");
            prop_assert_eq!(&got[..], &values[lo..hi]);
        }
    }
}
