//! PDICT (Zukowski et al., ICDE 2006): a page's distinct values in a sorted dictionary,
//! each value stored as its bit-packed code. For low-cardinality columns — flags,
//! modes, discounts, quantities — whatever their type.
//!
//! ```text
//! integers: entries: u32 | width: u8 | entries × i64                          | packed codes
//! strings:  entries: u32 | width: u8 | (entries + 1) × u32 offsets | bytes    | packed codes
//! ```
//! Little-endian; string offsets start at 0 and frame the bytes exactly. `width` is
//! the bits of the largest code. Codes are checked against `entries` when decoded.

use std::collections::HashMap;
use std::hash::Hash;
use std::ops::Range;

use super::bitpack::{bits, pack, packed_len, Packed};
use super::{check_keep, check_positions, le_u32, le_u64, Int};
use crate::column::{offset_u32, ColumnValues};
use crate::encoding::DecodeError;

type DResult<T> = std::result::Result<T, DecodeError>;

/// Largest dictionary the writer builds; larger ones lose to PFOR or LZ4 anyway.
pub const MAX_ENTRIES: usize = 1 << 12;
const HEADER: usize = 4 + 1;

/// Code width for a dictionary of `entries` values.
fn code_width(entries: usize) -> u32 {
    bits(entries.saturating_sub(1) as u64)
}

/// The distinct values of `values`, or `None` past [`MAX_ENTRIES`].
fn distinct<K: Hash + Eq + Copy>(values: impl Iterator<Item = K>) -> Option<HashMap<K, u32>> {
    let mut map = HashMap::new();
    for v in values {
        map.entry(v).or_insert(0);
        if map.len() > MAX_ENTRIES {
            return None;
        }
    }
    Some(map)
}

/// Sorts the dictionary, numbers its entries and appends header and codes.
fn finish<K: Hash + Eq + Copy + Ord>(
    map: &mut HashMap<K, u32>,
    values: impl Iterator<Item = K>,
    write_entries: impl FnOnce(&[K], &mut Vec<u8>),
    out: &mut Vec<u8>,
) {
    let mut keys: Vec<K> = map.keys().copied().collect();
    keys.sort_unstable();
    for (code, k) in keys.iter().enumerate() {
        map.insert(*k, code as u32);
    }
    let width = code_width(keys.len());
    out.extend_from_slice(&(keys.len() as u32).to_le_bytes());
    out.push(width as u8);
    write_entries(&keys, out);
    pack(
        values.map(|v| u64::from(map.get(&v).copied().unwrap_or(0))),
        width,
        out,
    );
}

/// Encoded bytes of integer `values`, `None` if the dictionary would be too large.
pub fn int_len(values: &[i64]) -> Option<usize> {
    let d = distinct(values.iter().copied())?.len();
    Some(HEADER + 8 * d + packed_len(values.len(), code_width(d))?)
}

pub fn encode_ints(values: &[i64], out: &mut Vec<u8>) {
    let Some(mut map) = distinct(values.iter().copied()) else {
        return;
    };
    let entries = |keys: &[i64], out: &mut Vec<u8>| {
        keys.iter()
            .for_each(|k| out.extend_from_slice(&k.to_le_bytes()))
    };
    finish(&mut map, values.iter().copied(), entries, out);
}

/// Encoded bytes of string values `rows` of `values`, `None` if too many distinct.
pub fn bytes_len(values: &ColumnValues, rows: Range<usize>) -> Option<usize> {
    let map = distinct(rows.clone().map(|i| values.str_at(i)))?;
    let body: usize = map.keys().map(|k| k.len()).sum();
    Some(HEADER + 4 * (map.len() + 1) + body + packed_len(rows.len(), code_width(map.len()))?)
}

pub fn encode_bytes(values: &ColumnValues, rows: Range<usize>, out: &mut Vec<u8>) {
    let Some(mut map) = distinct(rows.clone().map(|i| values.str_at(i))) else {
        return;
    };
    let entries = |keys: &[&[u8]], out: &mut Vec<u8>| {
        let mut at = 0u32;
        out.extend_from_slice(&at.to_le_bytes());
        for k in keys {
            at += k.len() as u32; // a page's strings are far below 4 GiB
            out.extend_from_slice(&at.to_le_bytes());
        }
        keys.iter().for_each(|k| out.extend_from_slice(k));
    };
    finish(&mut map, rows.map(|i| values.str_at(i)), entries, out);
}

/// Entry count, code width and the bytes after the header.
fn header(bytes: &[u8]) -> DResult<(usize, u32, &[u8])> {
    if bytes.len() < HEADER {
        return Err(DecodeError(format!(
            "PDICT page of {} bytes has no header",
            bytes.len()
        )));
    }
    Ok((
        le_u32(bytes, 0) as usize,
        u32::from(bytes[4]),
        &bytes[HEADER..],
    ))
}

/// The packed codes; their width must be the one the writer derives from the entry
/// count, which bounds `2^width` by twice the (page-bounded) dictionary.
fn codes(bytes: &[u8], width: u32, rows: usize, entries: usize) -> DResult<Packed<'_>> {
    if width != code_width(entries) {
        return Err(DecodeError(format!(
            "PDICT code width {width} for a dictionary of {entries}"
        )));
    }
    Packed::new(bytes, width, rows)
}

/// Why a string PDICT page stopped decoding.
#[derive(Clone, Copy)]
enum Bad {
    Code(u64),
    TooLong,
}

fn bad_code(code: u64, entries: usize) -> DecodeError {
    DecodeError(format!("PDICT code {code} in a dictionary of {entries}"))
}

/// Decodes values `keep` of an integer PDICT encoding of `rows` values.
pub(crate) fn decode_ints<T: Int>(
    bytes: &[u8],
    rows: usize,
    keep: Range<usize>,
    out: &mut Vec<T>,
) -> DResult<()> {
    check_keep(&keep, rows)?;
    let (dict, packed) = int_dictionary(bytes, rows)?;
    look_up(&packed, keep, dict, out)
}

/// [`decode_ints`] for the values at positions `at` (ascending, each below `rows`).
pub(crate) fn decode_ints_at<T: Int>(
    bytes: &[u8],
    rows: usize,
    at: &[u32],
    out: &mut Vec<T>,
) -> DResult<()> {
    check_positions(at, rows)?;
    let (dict, packed) = int_dictionary(bytes, rows)?;
    let mut bad = None;
    out.reserve(at.len());
    packed.unpack_at(at, |c| match dict.get(c as usize) {
        Some(&v) => out.push(v),
        None => {
            bad = Some(c);
            out.push(T::default());
        }
    })?;
    match bad {
        Some(code) => Err(bad_code(code, dict.len())),
        None => Ok(()),
    }
}

/// An integer PDICT page's dictionary, each entry in `T`, and its packed codes of
/// `rows` values, checked.
fn int_dictionary<T: Int>(bytes: &[u8], rows: usize) -> DResult<(Vec<T>, Packed<'_>)> {
    let (entries, width, rest) = header(bytes)?;
    let dict_len = entries
        .checked_mul(8)
        .filter(|&l| l <= rest.len())
        .ok_or_else(|| DecodeError(format!("PDICT dictionary of {entries} runs past the page")))?;
    let (dict, packed) = rest.split_at(dict_len);
    let dict = dict
        .chunks_exact(8)
        .map(|c| T::from_i64(le_u64(c, 0) as i64))
        .collect::<Option<Vec<T>>>()
        .ok_or_else(|| DecodeError("PDICT entry out of the column type's range".into()))?;
    Ok((dict, codes(packed, width, rows, entries)?))
}

/// Appends the kept values of a page of `CHAR(n)` strings as packed words
/// ([`crate::packed_chars`]): each dictionary entry is packed once, and every tuple's
/// word is looked up by its code, with no string built.
pub(crate) fn decode_packed_chars(
    bytes: &[u8],
    rows: usize,
    keep: Range<usize>,
    n: usize,
    out: &mut Vec<i64>,
) -> DResult<()> {
    let pack = |v: &[u8]| crate::packed_chars::pack(v, n).map(|w| w as i64);
    per_entry(bytes, rows, keep, Some(n), pack, out)
        .map_err(|e| DecodeError(format!("{} (packing CHAR({n}))", e.0)))
}

/// Appends, for each kept tuple of a page of strings, `f` of its dictionary entry: `f`
/// runs once per entry and the tuples' answers are looked up by code. An entry `f`
/// gives nothing for is an error.
fn per_entry<T: Copy + Default>(
    bytes: &[u8],
    rows: usize,
    keep: Range<usize>,
    max_len: Option<usize>,
    f: impl Fn(&[u8]) -> Option<T>,
    out: &mut Vec<T>,
) -> DResult<()> {
    check_keep(&keep, rows)?;
    let StringDict {
        bounds,
        body,
        packed,
        ..
    } = string_dict(bytes, rows, max_len)?;
    let table = bounds
        .windows(2)
        .map(|w| body.get(w[0]..w[1]).and_then(&f))
        .collect::<Option<Vec<T>>>()
        .ok_or_else(|| DecodeError("a PDICT entry that does not convert".into()))?;
    look_up(&packed, keep, table, out)
}

/// Appends, for each code `keep` of `packed`, its entry of `table` (one per dictionary
/// entry). The table is padded to `2^width` entries, so any code indexes it; a code
/// past the real entries is caught by the maximum after the loop, not by a branch per
/// value.
fn look_up<T: Copy + Default>(
    packed: &Packed,
    keep: Range<usize>,
    mut table: Vec<T>,
    out: &mut Vec<T>,
) -> DResult<()> {
    let entries = table.len();
    table.resize(1usize << packed.width(), T::default());
    let index_mask = table.len() - 1;
    let mut max_code = 0u64;
    let any = !keep.is_empty();
    let start = out.len();
    out.resize(start + keep.len(), T::default());
    packed.unpack_to(keep, &mut out[start..], |c| {
        max_code = max_code.max(c);
        table[c as usize & index_mask]
    })?;
    if any && max_code >= entries as u64 {
        return Err(bad_code(max_code, entries));
    }
    Ok(())
}

/// A string PDICT page's parts, checked: entry count, the dictionary's `entries + 1`
/// offsets into `body` (from 0, ascending, each entry at most `max_len` bytes) and the
/// packed codes of `rows` values.
struct StringDict<'a> {
    entries: usize,
    bounds: Vec<usize>,
    body: &'a [u8],
    packed: Packed<'a>,
}

fn string_dict(bytes: &[u8], rows: usize, max_len: Option<usize>) -> DResult<StringDict<'_>> {
    let (entries, width, rest) = header(bytes)?;
    let offs_len = entries
        .checked_add(1)
        .and_then(|e| e.checked_mul(4))
        .filter(|&l| l <= rest.len())
        .ok_or_else(|| DecodeError(format!("PDICT dictionary of {entries} runs past the page")))?;
    let (offs, rest) = rest.split_at(offs_len);
    let bounds: Vec<usize> = offs
        .chunks_exact(4)
        .map(|c| le_u32(c, 0) as usize)
        .collect();
    let body_len = *bounds.last().unwrap_or(&0);
    if bounds.first() != Some(&0)
        || bounds
            .windows(2)
            .any(|w| w[0] > w[1] || max_len.is_some_and(|m| w[1] - w[0] > m))
        || body_len > rest.len()
    {
        return Err(DecodeError(
            "PDICT string dictionary offsets are out of order, too long or past the page".into(),
        ));
    }
    let (body, packed) = rest.split_at(body_len);
    Ok(StringDict {
        entries,
        bounds,
        body,
        packed: codes(packed, width, rows, entries)?,
    })
}

/// Tests values `keep` of a string PDICT encoding of `rows` values without decoding
/// them: `test` once per dictionary entry, then each value's code looks its answer up
/// (a comparison on dictionary codes, 2012 paper §5). Appends one answer per value.
pub(crate) fn test_bytes(
    bytes: &[u8],
    rows: usize,
    keep: Range<usize>,
    max_len: Option<usize>,
    test: &dyn Fn(&[u8]) -> bool,
    out: &mut Vec<bool>,
) -> DResult<()> {
    per_entry(bytes, rows, keep, max_len, |v| Some(test(v)), out)
}

/// Dictionary entries this short are copied as one fixed-size block (a few moves, where
/// a copy of a variable length is a call to `memcpy`: 12 % of the CPU of TPC-H Q12 and
/// Q19, `perf record` of `coopscan tpch`); longer ones as they are.
const SHORT_ENTRY: usize = 16;

/// Decodes values `keep` of a string PDICT encoding of `rows` values; with
/// `max_len = Some(n)` (a `CHAR(n)` column) every entry must fit `n` bytes. Appends at
/// most `max_body` bytes of values (the page's plain size bounds them): short codes
/// of a long entry would otherwise multiply it.
pub(crate) fn decode_bytes(
    bytes: &[u8],
    rows: usize,
    keep: Range<usize>,
    max_len: Option<usize>,
    max_body: usize,
    out: &mut ColumnValues,
) -> DResult<()> {
    check_keep(&keep, rows)?;
    let StringDict {
        entries,
        bounds,
        body,
        packed,
    } = string_dict(bytes, rows, max_len)?;
    let ColumnValues::Bytes { offsets, data } = out else {
        return Err(DecodeError("column kind does not match its decoder".into()));
    };
    let (mut bad, mut budget) = (None, max_body);
    offsets.reserve(keep.len());
    // Room for every kept value at its longest (never more than the page's plain size)
    // plus one block of slack, so a short entry's block copy stays inside `data`.
    let longest = bounds.windows(2).map(|w| w[1] - w[0]).max().unwrap_or(0);
    let room = keep.len().saturating_mul(longest).min(max_body);
    let start = data.len();
    data.resize(start + room + SHORT_ENTRY, 0);
    let mut end = start;
    packed.unpack(keep, |c| {
        let value = (bounds.get(c as usize), bounds.get(c as usize + 1));
        match value {
            (Some(&lo), Some(&hi)) if bad.is_none() && hi - lo <= budget => {
                let len = hi - lo;
                budget -= len;
                // In range: `end - start` never exceeds `room` (the budget and the
                // longest entry bound it), and `data` has a block of slack beyond. The
                // block's bytes past the entry land in that slack and are overwritten
                // by the next value; entries near the dictionary's end, whose block
                // would run past it, are copied as they are.
                if len <= SHORT_ENTRY && lo + SHORT_ENTRY <= body.len() {
                    data[end..end + SHORT_ENTRY].copy_from_slice(&body[lo..lo + SHORT_ENTRY]);
                } else {
                    data[end..end + len].copy_from_slice(&body[lo..hi]);
                }
                end += len;
                offsets.push(offset_u32(end).unwrap_or(u32::MAX));
            }
            (Some(_), Some(_)) => bad = bad.or(Some(Bad::TooLong)),
            _ => bad = bad.or(Some(Bad::Code(c))),
        }
    })?;
    data.truncate(end);
    match bad {
        Some(Bad::Code(c)) => return Err(bad_code(c, entries)),
        Some(Bad::TooLong) => {
            return Err(DecodeError(format!(
                "PDICT values decode to more than the page's {max_body} plain bytes"
            )))
        }
        None => {}
    }
    offset_u32(data.len()).map_err(|e| DecodeError(e.to_string()))?;
    Ok(())
}
