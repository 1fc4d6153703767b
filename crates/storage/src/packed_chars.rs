//! Short `CHAR(n)` values as one word: an aggregating scan numbers its groups by packed
//! keys (`aggregate::keys`), and a PDICT page packs each dictionary entry once so its
//! tuples' words are looked up by code, never built as strings (`codec::pdict`).
//!
//! A word holds the value's bytes big-endian, then its length in
//! [`length_bits`]`(n)` bits: distinct values of one column give distinct words.

/// Longest `CHAR(n)` packed into a word (7 bytes and a 3-bit length: 59 bits).
pub const PACKED_CHAR: usize = 7;

/// Bits of a packed word's length field for a `CHAR(n)` column.
pub fn length_bits(n: usize) -> u32 {
    usize::BITS - n.leading_zeros()
}

/// Bits a packed word of a `CHAR(n)` column takes.
pub fn word_bits(n: usize) -> u32 {
    n as u32 * 8 + length_bits(n)
}

/// `s` (a value of a `CHAR(n)` column, `n` ≤ [`PACKED_CHAR`]) as a word; `None` when it
/// is longer than `n`, or `n` too long to pack.
#[inline]
pub fn pack(s: &[u8], n: usize) -> Option<u64> {
    if s.len() > n || n > PACKED_CHAR {
        return None;
    }
    let word = match *s {
        [] => 0,
        [b] => u64::from(b),
        _ => s.iter().fold(0u64, |word, &b| word << 8 | u64::from(b)),
    };
    Some(word << length_bits(n) | s.len() as u64)
}

/// The value a word of a `CHAR(n)` column packs: its bytes are the first `len` of the
/// array. `None` for a word [`pack`] does not make.
pub fn unpack(word: u64, n: usize) -> Option<([u8; PACKED_CHAR], usize)> {
    if n > PACKED_CHAR {
        return None;
    }
    let bits = length_bits(n);
    let len = usize::try_from(word & ((1 << bits) - 1)).ok()?;
    if len > n || word >> (len as u32 * 8 + bits) != 0 {
        return None;
    }
    let mut bytes = [0u8; PACKED_CHAR];
    let mut rest = word >> bits;
    for b in bytes[..len].iter_mut().rev() {
        *b = (rest & 0xff) as u8;
        rest >>= 8;
    }
    Some((bytes, len))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_round_trip_and_tell_values_apart() {
        let values: [&[u8]; 6] = [b"", b"A", b"\0", b"AB", b"A\0", b"ZZZZZZZ"];
        let mut words = Vec::new();
        for n in [1usize, 2, 7] {
            for s in values.iter().filter(|s| s.len() <= n) {
                let word = pack(s, n).expect("fits");
                assert!(word < 1 << word_bits(n), "{s:?} in CHAR({n})");
                let (bytes, len) = unpack(word, n).expect("a packed word");
                assert_eq!(&bytes[..len], *s);
                words.push((n, word));
            }
        }
        let mut distinct = words.clone();
        distinct.sort_unstable();
        distinct.dedup();
        assert_eq!(
            distinct.len(),
            words.len(),
            "distinct values, distinct words"
        );
        assert_eq!(pack(b"AB", 1), None);
        assert_eq!(pack(b"12345678", 8), None);
        assert_eq!(unpack(0, 1), Some(([0; PACKED_CHAR], 0)));
        assert_eq!(unpack(0b10, 1), None, "a byte past its length");
        assert_eq!(unpack(1 << 9 | 1, 1), None, "bytes past its length");
        assert_eq!(unpack(0b11, 2), None, "a length past CHAR(2)");
    }
}
