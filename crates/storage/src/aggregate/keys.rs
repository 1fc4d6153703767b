//! Group numbers for the tuples of an aggregating scan: each distinct combination of
//! the group columns' values gets the next number, in order of first appearance.
//!
//! Keys are packed into one `u64` per tuple where the group columns fit (integers,
//! dates, decimals, `CHAR(n)` of up to 7 bytes with their length): TPC-H Q1's two
//! `CHAR(1)` columns take 18 bits, so a table indexed directly by the packed key numbers
//! them without hashing. Wider packed keys go through a hash map of `u64`, and keys
//! that do not pack (long or variable strings) through one of their bytes.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use crate::column::ColumnValues;
use crate::error::{Result, StorageError};
use crate::packed_chars::{self, PACKED_CHAR};
use crate::types::Physical;

/// Packed keys of at most this many bits are numbered through a directly indexed
/// table (4 bytes an entry: 4 MiB at most).
const DIRECT_BITS: u32 = 20;
const NO_GROUP: u32 = u32::MAX;

/// How one group column's values become bits of a packed key.
#[derive(Clone, Copy, Debug)]
enum Packing {
    /// A 32-bit integer.
    I32,
    /// A 64-bit integer.
    I64,
    /// A `CHAR(n)` of up to [`PACKED_CHAR`] bytes, packed with its length
    /// ([`packed_chars::pack`]).
    Chars { bytes: usize },
}

impl Packing {
    fn of(physical: Physical) -> Option<Packing> {
        match physical {
            Physical::I32 => Some(Packing::I32),
            Physical::I64 => Some(Packing::I64),
            Physical::FixedBytes(n) if n <= PACKED_CHAR => Some(Packing::Chars { bytes: n }),
            Physical::FixedBytes(_) | Physical::VarBytes => None,
        }
    }

    fn bits(self) -> u32 {
        match self {
            Packing::I32 => 32,
            Packing::I64 => 64,
            Packing::Chars { bytes } => packed_chars::word_bits(bytes),
        }
    }
}

/// Numbers the groups of the tuples it is shown.
#[derive(Debug)]
pub struct GroupIndex {
    how: Numbering,
    groups: u32,
    /// Scratch: the packed key of each tuple.
    packed: Vec<u64>,
}

#[derive(Debug)]
enum Numbering {
    /// No group columns: one group.
    Single,
    Direct {
        packing: Vec<Packing>,
        table: Vec<u32>,
    },
    Hashed {
        packing: Vec<Packing>,
        map: HashMap<u64, u32, BuildHasherDefault<MixHasher>>,
    },
    Bytes {
        map: HashMap<Vec<u8>, u32>,
    },
}

impl GroupIndex {
    /// An index for group columns of these physical types.
    pub fn new(columns: &[Physical]) -> GroupIndex {
        let how = if columns.is_empty() {
            Numbering::Single
        } else {
            match columns
                .iter()
                .map(|&p| Packing::of(p))
                .collect::<Option<Vec<_>>>()
            {
                Some(packing) => {
                    let bits: u32 = packing.iter().map(|p| p.bits()).sum();
                    if bits <= DIRECT_BITS {
                        Numbering::Direct {
                            packing,
                            table: vec![NO_GROUP; 1 << bits],
                        }
                    } else if bits <= 64 {
                        Numbering::Hashed {
                            packing,
                            map: HashMap::default(),
                        }
                    } else {
                        Numbering::Bytes {
                            map: HashMap::new(),
                        }
                    }
                }
                None => Numbering::Bytes {
                    map: HashMap::new(),
                },
            }
        };
        GroupIndex {
            how,
            groups: 0,
            packed: Vec::new(),
        }
    }

    /// Groups numbered so far.
    pub fn groups(&self) -> usize {
        self.groups as usize
    }

    /// The group of each of `n` tuples whose group columns are `keys` (one entry per
    /// group column, `n` values each), into `out`: groups are numbered from 1 in order
    /// of first appearance among the tuples `keep` marks (all without it); a tuple it
    /// does not mark is in group 0 and makes no group. `new_group(tuple)` is called for
    /// the first tuple of each new group, in numbering order.
    pub fn assign(
        &mut self,
        keys: &[&ColumnValues],
        n: usize,
        keep: Option<&[bool]>,
        out: &mut Vec<u32>,
        mut new_group: impl FnMut(usize) -> Result<()>,
    ) -> Result<()> {
        out.clear();
        if keys.iter().any(|k| k.len() != n) || keep.is_some_and(|k| k.len() != n) {
            return Err(StorageError::Invalid(format!(
                "group columns or selection of unequal lengths for {n} tuples"
            )));
        }
        let kept = |i: usize| keep.is_none_or(|k| k[i]);
        let no_group_yet = self.groups == 0;
        let groups = &mut self.groups;
        let mut next = |tuple: usize| -> Result<u32> {
            let g = groups
                .checked_add(1)
                .filter(|&g| g != NO_GROUP)
                .ok_or_else(|| StorageError::Invalid("more than 4 294 967 294 groups".into()))?;
            *groups = g;
            new_group(tuple)?;
            Ok(g)
        };
        match &mut self.how {
            Numbering::Single => {
                let first = (0..n).find(|&i| kept(i));
                if let Some(first) = first.filter(|_| no_group_yet) {
                    next(first)?;
                }
                out.extend((0..n).map(|i| u32::from(kept(i))));
            }
            Numbering::Direct { packing, table } => {
                pack_all(packing, keys, n, &mut self.packed)?;
                out.resize(n, 0);
                // Without a branch on `keep` for tuples of known groups (nearly all).
                for (i, (&key, group)) in self.packed.iter().zip(out.iter_mut()).enumerate() {
                    let kept = kept(i);
                    let slot = &mut table[key as usize];
                    if *slot == NO_GROUP && kept {
                        *slot = next(i)?;
                    }
                    *group = if kept { *slot } else { 0 };
                }
            }
            Numbering::Hashed { packing, map } => {
                pack_all(packing, keys, n, &mut self.packed)?;
                for (i, &key) in self.packed.iter().enumerate() {
                    if !kept(i) {
                        out.push(0);
                        continue;
                    }
                    let g = match map.get(&key) {
                        Some(&g) => g,
                        None => {
                            let g = next(i)?;
                            map.insert(key, g);
                            g
                        }
                    };
                    out.push(g);
                }
            }
            Numbering::Bytes { map } => {
                let mut key = Vec::new();
                for i in 0..n {
                    if !kept(i) {
                        out.push(0);
                        continue;
                    }
                    key.clear();
                    for k in keys {
                        key_bytes(k, i, &mut key);
                    }
                    let g = match map.get(key.as_slice()) {
                        Some(&g) => g,
                        None => {
                            let g = next(i)?;
                            map.insert(key.clone(), g);
                            g
                        }
                    };
                    out.push(g);
                }
            }
        }
        Ok(())
    }
}

/// Every tuple's key packed as `packing` says (the columns' bits side by side), one
/// column at a time; an error for a value the packing does not hold (a string longer
/// than its `CHAR(n)`, values of another kind), which only a damaged table has.
fn pack_all(
    packing: &[Packing],
    keys: &[&ColumnValues],
    n: usize,
    out: &mut Vec<u64>,
) -> Result<()> {
    out.clear();
    out.resize(n, 0);
    for (p, k) in packing.iter().zip(keys) {
        let shift = p.bits();
        // The columns before this one move up by its bits (none left of a 64-bit one).
        let put = |key: &mut u64, bits: u64| *key = key.checked_shl(shift).unwrap_or(0) | bits;
        match (p, k) {
            (Packing::I32, ColumnValues::I32(v)) => {
                (out.iter_mut().zip(v)).for_each(|(key, &x)| put(key, u64::from(x as u32)))
            }
            (Packing::I64, ColumnValues::I64(v)) => {
                (out.iter_mut().zip(v)).for_each(|(key, &x)| put(key, x as u64))
            }
            (Packing::Chars { bytes }, ColumnValues::Bytes { offsets, data }) => {
                for (key, w) in out.iter_mut().zip(offsets.windows(2)) {
                    let s = data.get(w[0] as usize..w[1] as usize);
                    let word = s.and_then(|s| packed_chars::pack(s, *bytes));
                    put(key, word.ok_or_else(unpackable)?);
                }
            }
            // Already packed by the decoder (`packed_chars`).
            (Packing::Chars { .. }, ColumnValues::I64(words)) => {
                (out.iter_mut().zip(words)).for_each(|(key, &w)| put(key, w as u64))
            }
            _ => return Err(unpackable()),
        }
    }
    Ok(())
}

fn unpackable() -> StorageError {
    StorageError::Invalid("a group column's value does not fit its type".into())
}

/// Tuple `i`'s value appended to a byte key, self-delimiting.
fn key_bytes(k: &ColumnValues, i: usize, out: &mut Vec<u8>) {
    match k {
        ColumnValues::I32(v) => out.extend_from_slice(&v[i].to_le_bytes()),
        ColumnValues::I64(v) => out.extend_from_slice(&v[i].to_le_bytes()),
        ColumnValues::Bytes { .. } => {
            let s = k.str_at(i);
            out.extend_from_slice(&(s.len() as u64).to_le_bytes());
            out.extend_from_slice(s);
        }
    }
}

/// A multiplicative hash of one `u64` (keys are packed values, not attacker-chosen
/// beyond what the table's own data holds, and a collision only costs time).
#[derive(Default)]
struct MixHasher(u64);

impl Hasher for MixHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(u64::from(b));
        }
    }

    fn write_u64(&mut self, v: u64) {
        let x = (self.0 ^ v).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        self.0 = x ^ (x >> 29);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(values: &[&str]) -> ColumnValues {
        let mut c = ColumnValues::empty(Physical::VarBytes);
        for v in values {
            c.push_str(v.as_bytes()).unwrap();
        }
        c
    }

    /// The numbering of every kind agrees with a plain map of the tuples' values.
    #[test]
    fn every_numbering_gives_first_appearance_order() {
        let flags = strings(&["A", "N", "A", "R", "", "N", "A"]);
        let status = strings(&["F", "O", "F", "F", "F", "O", "O"]);
        let ints = ColumnValues::I32(vec![7, 7, 7, 8, 8, 7, 7]);
        let long = strings(&["long string", "x", "long string", "y", "", "x", "x"]);
        let want = |cols: &[&ColumnValues]| -> Vec<u32> {
            let mut seen: Vec<Vec<u8>> = Vec::new();
            (0..7)
                .map(|i| {
                    let mut key = Vec::new();
                    cols.iter().for_each(|c| key_bytes(c, i, &mut key));
                    let at = seen.iter().position(|s| *s == key).unwrap_or_else(|| {
                        seen.push(key);
                        seen.len() - 1
                    });
                    at as u32 + 1
                })
                .collect()
        };
        let cases: Vec<(Vec<Physical>, Vec<&ColumnValues>)> = vec![
            (
                vec![Physical::FixedBytes(1), Physical::FixedBytes(1)],
                vec![&flags, &status],
            ),
            (
                vec![Physical::FixedBytes(1), Physical::I32],
                vec![&flags, &ints],
            ),
            (
                vec![Physical::VarBytes, Physical::FixedBytes(1)],
                vec![&long, &status],
            ),
        ];
        for (types, cols) in cases {
            let mut index = GroupIndex::new(&types);
            let mut firsts = Vec::new();
            let mut out = Vec::new();
            index
                .assign(&cols, 7, None, &mut out, |t| {
                    firsts.push(t);
                    Ok(())
                })
                .unwrap();
            assert_eq!(out, want(&cols), "{types:?}");
            assert_eq!(index.groups(), firsts.len());
            for (g, &t) in firsts.iter().enumerate() {
                assert_eq!(out[t] as usize, g + 1);
            }
        }
        let mut single = GroupIndex::new(&[]);
        let mut out = Vec::new();
        single.assign(&[], 0, None, &mut out, |_| Ok(())).unwrap();
        assert_eq!(single.groups(), 0, "no tuples, no group yet");
        let none = [false, false];
        single
            .assign(&[], 2, Some(&none), &mut out, |_| Ok(()))
            .unwrap();
        assert_eq!((single.groups(), &out), (0, &vec![0, 0]), "none kept");
        single
            .assign(&[], 3, Some(&[false, true, true]), &mut out, |_| Ok(()))
            .unwrap();
        assert_eq!((single.groups(), out), (1, vec![0, 1, 1]));
    }

    /// Tuples not kept are in group 0 and make no group, however their keys look.
    #[test]
    fn tuples_not_kept_make_no_group() {
        let flags = strings(&["A", "N", "A", "R"]);
        let mut index = GroupIndex::new(&[Physical::FixedBytes(1)]);
        let mut out = Vec::new();
        let mut firsts = Vec::new();
        let keep = [false, true, true, false];
        index
            .assign(&[&flags], 4, Some(&keep), &mut out, |t| {
                firsts.push(t);
                Ok(())
            })
            .unwrap();
        assert_eq!(
            (out, firsts, index.groups()),
            (vec![0, 1, 2, 0], vec![1, 2], 2)
        );
    }
}
