//! Byte encodings of column values, shared by the layouts.
//!
//! * **Minipage** (PAX minipages, DSM page payloads before compression): the values of
//!   one column for a run of rows. `I32`/`I64` as little-endian words, `CHAR(n)` as `n`
//!   zero-padded bytes per value, `VARCHAR` as `rows + 1` little-endian `u32` offsets
//!   (starting at 0) followed by the bytes.
//! * **NSM row**: the fields of one row in schema order; numbers and `CHAR(n)` as above,
//!   `VARCHAR` as a `u32` length and the bytes.
//!
//! Decoders never trust their input: every bound is checked and reported as a
//! [`DecodeError`], which the caller turns into an error naming file and offset.

use std::ops::Range;

use crate::column::{offset_u32, ColumnValues};
use crate::types::Physical;

/// A malformed encoding; the caller adds file and offset.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecodeError(pub String);

type DResult<T> = std::result::Result<T, DecodeError>;

fn short(what: &str) -> DecodeError {
    DecodeError(format!("{what} runs past the end of the page"))
}

/// Bytes the minipage of `rows` of `values` occupies.
pub fn minipage_len(values: &ColumnValues, physical: Physical, rows: Range<usize>) -> usize {
    let n = rows.len();
    match (values, physical) {
        (ColumnValues::I32(_), _) => 4 * n,
        (ColumnValues::I64(_), _) => 8 * n,
        (ColumnValues::Bytes { .. }, Physical::FixedBytes(w)) => w * n,
        (ColumnValues::Bytes { offsets, .. }, _) => {
            4 * (n + 1) + (offsets[rows.end] - offsets[rows.start]) as usize
        }
    }
}

/// Appends the minipage of `rows` of `values` to `out`.
pub fn encode_minipage(
    values: &ColumnValues,
    physical: Physical,
    rows: Range<usize>,
    out: &mut Vec<u8>,
) {
    match (values, physical) {
        (ColumnValues::I32(v), _) => v[rows]
            .iter()
            .for_each(|x| out.extend_from_slice(&x.to_le_bytes())),
        (ColumnValues::I64(v), _) => v[rows]
            .iter()
            .for_each(|x| out.extend_from_slice(&x.to_le_bytes())),
        (ColumnValues::Bytes { .. }, Physical::FixedBytes(w)) => {
            for i in rows {
                let s = values.str_at(i);
                out.extend_from_slice(s);
                out.resize(out.len() + (w - s.len()), 0);
            }
        }
        (ColumnValues::Bytes { offsets, data }, _) => {
            let base = offsets[rows.start];
            for &o in &offsets[rows.start..=rows.end] {
                out.extend_from_slice(&(o - base).to_le_bytes());
            }
            out.extend_from_slice(&data[base as usize..offsets[rows.end] as usize]);
        }
    }
}

/// Decodes rows `keep` (a sub-range of `0..rows`) of a minipage holding `rows` values,
/// appending them to `out`.
pub fn decode_minipage(
    bytes: &[u8],
    physical: Physical,
    rows: usize,
    keep: Range<usize>,
    out: &mut ColumnValues,
) -> DResult<()> {
    if keep.start > keep.end || keep.end > rows {
        return Err(DecodeError(format!(
            "rows {keep:?} asked of a minipage of {rows}"
        )));
    }
    check_minipage_len(bytes, physical, rows)?;
    match (physical, out) {
        (Physical::I32, ColumnValues::I32(v)) => {
            let b = bytes
                .get(keep.start * 4..keep.end * 4)
                .ok_or_else(|| short("int32 minipage"))?;
            v.extend(
                b.chunks_exact(4)
                    .map(|c| i32::from_le_bytes([c[0], c[1], c[2], c[3]])),
            );
        }
        (Physical::I64, ColumnValues::I64(v)) => {
            let b = bytes
                .get(keep.start * 8..keep.end * 8)
                .ok_or_else(|| short("int64 minipage"))?;
            v.extend(
                b.chunks_exact(8)
                    .map(|c| i64::from_le_bytes(c.try_into().unwrap_or([0; 8]))),
            );
        }
        (Physical::FixedBytes(w), out @ ColumnValues::Bytes { .. }) => {
            let b = bytes
                .get(keep.start * w..keep.end * w)
                .ok_or_else(|| short("char minipage"))?;
            push_fixed(out, b, w)?;
        }
        (Physical::VarBytes, ColumnValues::Bytes { offsets, data }) => {
            let offs_len = 4 * (rows + 1);
            let offs = bytes
                .get(..offs_len)
                .ok_or_else(|| short("varchar offsets"))?;
            let body = &bytes[offs_len..];
            let off = |i: usize| {
                u32::from_le_bytes([
                    offs[4 * i],
                    offs[4 * i + 1],
                    offs[4 * i + 2],
                    offs[4 * i + 3],
                ]) as usize
            };
            if off(0) != 0 || off(rows) != body.len() {
                return Err(DecodeError(format!(
                    "varchar offsets {}..{} do not frame a body of {} bytes",
                    off(0),
                    off(rows),
                    body.len()
                )));
            }
            let (lo, hi) = (off(keep.start), off(keep.end));
            if lo > hi || hi > body.len() {
                return Err(DecodeError(format!(
                    "varchar offsets {lo}..{hi} outside a body of {} bytes",
                    body.len()
                )));
            }
            let base = data.len();
            data.extend_from_slice(&body[lo..hi]);
            let mut prev = lo;
            for i in keep.start + 1..=keep.end {
                let o = off(i);
                if o < prev || o > hi {
                    return Err(DecodeError(format!(
                        "varchar offset {o} out of order at value {i}"
                    )));
                }
                prev = o;
                offsets.push(offset_u32(base + o - lo).map_err(|e| DecodeError(e.to_string()))?);
            }
        }
        _ => return Err(DecodeError("column kind does not match its decoder".into())),
    }
    Ok(())
}

/// A fixed-width minipage is exactly `rows` values long: a different length means the
/// type the manifest declares is not the type that was written (e.g. int32 over int64
/// data), which would otherwise decode as plausible wrong numbers.
fn check_minipage_len(bytes: &[u8], physical: Physical, rows: usize) -> DResult<()> {
    let width = match physical {
        Physical::I32 => 4,
        Physical::I64 => 8,
        Physical::FixedBytes(0) => return Err(DecodeError("CHAR(0) column".into())),
        Physical::FixedBytes(w) => w,
        Physical::VarBytes => return Ok(()), // framed by its offsets, checked by the caller
    };
    match rows.checked_mul(width) {
        Some(n) if n == bytes.len() => Ok(()),
        _ => Err(DecodeError(format!(
            "minipage of {} bytes for {rows} values of {width} bytes (column type does not match the data)",
            bytes.len()
        ))),
    }
}

/// Appends the `CHAR(w)` fields of `b`, padding stripped. One bounds check for all of
/// them (the data grows by at most `b.len()` bytes), so the loop does no error
/// handling per value: `CHAR(1)` flags are most of SLOW's strings.
fn push_fixed(out: &mut ColumnValues, b: &[u8], w: usize) -> DResult<()> {
    let ColumnValues::Bytes { offsets, data } = out else {
        return Err(DecodeError("column kind does not match its decoder".into()));
    };
    if w == 0 {
        return Err(DecodeError("CHAR(0) column".into()));
    }
    data.len()
        .checked_add(b.len())
        .filter(|end| u32::try_from(*end).is_ok())
        .ok_or_else(|| DecodeError("string data over 4 GiB in one batch".into()))?;
    data.reserve(b.len());
    offsets.reserve(b.len() / w);
    for field in b.chunks_exact(w) {
        data.extend_from_slice(strip_padding(field));
        // Fits: the check above bounds data.len() by u32::MAX.
        offsets.push(data.len() as u32);
    }
    Ok(())
}

/// [`decode_minipage`] of a `CHAR(w)` minipage as packed words
/// ([`crate::packed_chars`]): each kept field packed where it lies, no string built.
pub fn decode_minipage_packed(
    bytes: &[u8],
    w: usize,
    rows: usize,
    keep: Range<usize>,
    words: &mut Vec<i64>,
) -> DResult<()> {
    if keep.start > keep.end || keep.end > rows {
        return Err(DecodeError(format!(
            "rows {keep:?} asked of a minipage of {rows}"
        )));
    }
    if w == 0 {
        return Err(DecodeError("CHAR(0) column".into()));
    }
    check_minipage_len(bytes, Physical::FixedBytes(w), rows)?;
    let b = bytes
        .get(keep.start * w..keep.end * w)
        .ok_or_else(|| short("char minipage"))?;
    words.reserve(keep.len());
    for field in b.chunks_exact(w) {
        let word = crate::packed_chars::pack(strip_padding(field), w)
            .ok_or_else(|| DecodeError(format!("CHAR({w}) does not pack into a word")))?;
        words.push(word as i64);
    }
    Ok(())
}

/// `CHAR(n)` fields are right-padded with zero bytes; the value ends at the first one.
fn strip_padding(field: &[u8]) -> &[u8] {
    let end = field.iter().rposition(|&b| b != 0).map_or(0, |p| p + 1);
    &field[..end]
}

fn push_str(out: &mut ColumnValues, s: &[u8]) -> DResult<()> {
    out.push_str(s).map_err(|e| DecodeError(e.to_string()))
}

/// Bytes row `row` takes in NSM encoding.
pub fn nsm_row_len(columns: &[(Physical, &ColumnValues)], row: usize) -> usize {
    columns
        .iter()
        .map(|(p, v)| match p {
            Physical::I32 => 4,
            Physical::I64 => 8,
            Physical::FixedBytes(w) => *w,
            Physical::VarBytes => 4 + v.str_at(row).len(),
        })
        .sum()
}

/// Appends row `row` in NSM encoding.
pub fn encode_nsm_row(columns: &[(Physical, &ColumnValues)], row: usize, out: &mut Vec<u8>) {
    for (p, v) in columns {
        match (p, v) {
            (_, ColumnValues::I32(x)) => out.extend_from_slice(&x[row].to_le_bytes()),
            (_, ColumnValues::I64(x)) => out.extend_from_slice(&x[row].to_le_bytes()),
            (Physical::FixedBytes(w), _) => {
                let s = v.str_at(row);
                out.extend_from_slice(s);
                out.resize(out.len() + (w - s.len()), 0);
            }
            (_, _) => {
                let s = v.str_at(row);
                out.extend_from_slice(&(s.len() as u32).to_le_bytes());
                out.extend_from_slice(s);
            }
        }
    }
}

/// Decodes rows `keep` of an NSM payload of `rows` rows. `outs[c]` is `Some` for the
/// projected columns; the others are skipped (NSM must still walk over them).
pub fn decode_nsm_rows(
    bytes: &[u8],
    physicals: &[Physical],
    rows: usize,
    keep: Range<usize>,
    outs: &mut [Option<&mut ColumnValues>],
) -> DResult<()> {
    let mut pos = 0usize;
    let take = |pos: &mut usize, n: usize| -> DResult<&[u8]> {
        let end = pos.checked_add(n).ok_or_else(|| short("NSM row"))?;
        let s = bytes.get(*pos..end).ok_or_else(|| short("NSM row"))?;
        *pos += n;
        Ok(s)
    };
    // Every row is walked, wanted or not, so that the payload's length can be checked.
    for row in 0..rows {
        let wanted = keep.contains(&row);
        for (c, p) in physicals.iter().enumerate() {
            let field_len = match p {
                Physical::I32 => 4,
                Physical::I64 => 8,
                Physical::FixedBytes(0) => return Err(DecodeError("CHAR(0) column".into())),
                Physical::FixedBytes(w) => *w,
                Physical::VarBytes => {
                    let l = take(&mut pos, 4)?;
                    u32::from_le_bytes([l[0], l[1], l[2], l[3]]) as usize
                }
            };
            let field = take(&mut pos, field_len)?;
            let Some(out) = outs[c].as_deref_mut().filter(|_| wanted) else {
                continue;
            };
            match (p, out) {
                (Physical::I32, ColumnValues::I32(v)) => {
                    v.push(i32::from_le_bytes([field[0], field[1], field[2], field[3]]))
                }
                (Physical::I64, ColumnValues::I64(v)) => {
                    v.push(i64::from_le_bytes(field.try_into().unwrap_or([0; 8])))
                }
                (Physical::FixedBytes(_), out) => push_str(out, strip_padding(field))?,
                (Physical::VarBytes, out) => push_str(out, field)?,
                _ => return Err(DecodeError("column kind does not match its decoder".into())),
            }
        }
    }
    if pos != bytes.len() {
        return Err(DecodeError(format!(
            "{rows} NSM rows take {pos} of the payload's {} bytes (column types do not match the data)",
            bytes.len()
        )));
    }
    Ok(())
}
