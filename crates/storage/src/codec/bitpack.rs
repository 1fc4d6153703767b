//! A plain, checked bit-packer: `n` unsigned values of `width` bits (0..=64) packed
//! little-endian, value `i` at bits `i * width ..`, in exactly `ceil(n * width / 8)`
//! bytes. Random access by index, so a reader can unpack only the rows it keeps.

use std::ops::Range;

use crate::encoding::DecodeError;

type DResult<T> = std::result::Result<T, DecodeError>;

/// Widest packable value.
pub const MAX_WIDTH: u32 = 64;

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
        if range.start > range.end || range.end > self.n {
            return Err(DecodeError(format!(
                "values {range:?} asked of {} packed values",
                self.n
            )));
        }
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
            let byte = bit >> 3;
            let window = match self.bytes.get(byte..byte + 16) {
                Some(w) => {
                    let mut a = [0u8; 16];
                    a.copy_from_slice(w);
                    u128::from_le_bytes(a)
                }
                None => self.tail_window(byte),
            };
            f((window >> (bit & 7)) as u64 & mask);
            bit += width;
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
