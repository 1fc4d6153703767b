//! PFOR and PFOR-DELTA (Zukowski et al., ICDE 2006): integers as bit-packed offsets from
//! a frame of reference, the few that do not fit the chosen width kept as exceptions and
//! patched in after unpacking, so the main loop has no branch on them.
//!
//! ```text
//! base: i64 | width: u8 | exceptions: u32 | packed offsets (rows × width bits)
//!           | exception positions (u32 each, strictly increasing) | exception offsets (u64 each)
//! ```
//! All little-endian. An offset is `value - base` in wrapping 64-bit arithmetic, so a
//! span that overflows `max - min` in `i64` still fits `u64`. Exception slots in the
//! packed offsets hold 0.
//!
//! PFOR-DELTA stores `d[0] = v[0]`, `d[i] = v[i] - v[i-1]` (wrapping) as PFOR: sorted
//! keys have tiny deltas, and the first value simply becomes an exception.

use std::ops::Range;

use super::bitpack::{bits, pack, packed_len, Packed};
use super::{check_keep, check_positions, le_u32, le_u64, Int};
use crate::encoding::DecodeError;

type DResult<T> = std::result::Result<T, DecodeError>;

const HEADER: usize = 8 + 1 + 4;
const EXCEPTION_BYTES: usize = 4 + 8;

/// The frame and width chosen for a run of values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Plan {
    base: i64,
    width: u32,
    exceptions: usize,
    len: usize,
}

impl Plan {
    /// Encoded bytes.
    pub fn encoded_len(&self) -> usize {
        self.len
    }
}

fn offset(v: i64, base: i64) -> u64 {
    v.wrapping_sub(base) as u64
}

/// Chooses the frame and width: the smaller encoding of two bases, the minimum and the
/// 1st percentile of a sample (so a few low outliers become exceptions instead of
/// widening every value).
pub fn plan(values: &[i64]) -> Plan {
    let min = values.iter().copied().min().unwrap_or(0);
    let best = plan_for(values, min);
    match low_percentile(values) {
        Some(base) if base > min => {
            let other = plan_for(values, base);
            if other.len < best.len {
                other
            } else {
                best
            }
        }
        _ => best,
    }
}

/// The 1st percentile of up to 1024 evenly spaced values.
fn low_percentile(values: &[i64]) -> Option<i64> {
    let step = values.len().div_ceil(1024).max(1);
    let mut sample: Vec<i64> = values.iter().step_by(step).copied().collect();
    sample.sort_unstable();
    sample.get(sample.len() / 100).copied()
}

/// The width that minimises packed bits plus exceptions for `base`, from a histogram of
/// offset bit lengths: one pass, whatever the width.
fn plan_for(values: &[i64], base: i64) -> Plan {
    let n = values.len();
    let mut hist = [0usize; 65];
    for &v in values {
        hist[bits(offset(v, base)) as usize] += 1;
    }
    let mut above = n; // values needing more than `width` bits
    let mut best = Plan {
        base,
        width: 64,
        exceptions: 0,
        len: usize::MAX,
    };
    for width in 0..=64u32 {
        above -= hist[width as usize];
        // n ≤ a page's rows, so these sizes cannot overflow.
        let packed = packed_len(n, width).unwrap_or(usize::MAX / 2);
        let len = HEADER + packed + above * EXCEPTION_BYTES;
        if len < best.len {
            best = Plan {
                base,
                width,
                exceptions: above,
                len,
            };
        }
    }
    best
}

/// Appends the PFOR encoding of `values` under `plan` (from [`plan`] of the same values).
pub fn encode(values: &[i64], plan: &Plan, out: &mut Vec<u8>) {
    let limit = if plan.width >= 64 {
        u64::MAX
    } else {
        (1u64 << plan.width) - 1
    };
    let fits = |v: i64| offset(v, plan.base) <= limit;
    out.extend_from_slice(&plan.base.to_le_bytes());
    out.push(plan.width as u8);
    out.extend_from_slice(&(plan.exceptions as u32).to_le_bytes());
    let slots = values
        .iter()
        .map(|&v| if fits(v) { offset(v, plan.base) } else { 0 });
    pack(slots, plan.width, out);
    let exceptions = || values.iter().enumerate().filter(|(_, &v)| !fits(v));
    for (i, _) in exceptions() {
        out.extend_from_slice(&(i as u32).to_le_bytes());
    }
    for (_, &v) in exceptions() {
        out.extend_from_slice(&offset(v, plan.base).to_le_bytes());
    }
}

/// A checked view of a PFOR encoding of `rows` values.
struct View<'a> {
    base: i64,
    packed: Packed<'a>,
    positions: &'a [u8],
    offsets: &'a [u8],
}

fn parse(bytes: &[u8], rows: usize) -> DResult<View<'_>> {
    let head = bytes
        .get(..HEADER)
        .ok_or_else(|| DecodeError(format!("PFOR page of {} bytes has no header", bytes.len())))?;
    let base = le_u64(head, 0) as i64;
    let width = u32::from(head[8]);
    let exceptions = le_u32(head, 9) as usize;
    if exceptions > rows {
        return Err(DecodeError(format!(
            "{exceptions} PFOR exceptions in {rows} values"
        )));
    }
    let packed_bytes = packed_len(rows, width)
        .ok_or_else(|| DecodeError(format!("{rows} values of {width} bits overflow")))?;
    let exc_at = HEADER + packed_bytes; // rows ≤ a page's rows: no overflow
    let end = exc_at + exceptions * EXCEPTION_BYTES;
    if end != bytes.len() {
        return Err(DecodeError(format!(
            "PFOR page of {} bytes, its header implies {end} ({rows} values of {width} bits, {exceptions} exceptions)",
            bytes.len()
        )));
    }
    let packed = Packed::new(&bytes[HEADER..exc_at], width, rows)?;
    let (positions, offsets) = bytes[exc_at..].split_at(exceptions * 4);
    Ok(View {
        base,
        packed,
        positions,
        offsets,
    })
}

/// Decodes values `keep` of a PFOR encoding of `rows` values, appending them to `out`.
pub(crate) fn decode<T: Int>(
    bytes: &[u8],
    rows: usize,
    keep: Range<usize>,
    out: &mut Vec<T>,
) -> DResult<()> {
    check_keep(&keep, rows)?;
    let view = parse(bytes, rows)?;
    let start = out.len();
    out.reserve(keep.len());
    if frame_fits::<T>(view.base, view.packed.width()) {
        // Every packed offset lands in the type: no per-value check in the hot loop,
        // which writes to slots instead of pushing (no capacity check per value).
        out.resize(start + keep.len(), T::default());
        view.packed
            .unpack_to(keep.clone(), &mut out[start..], |u| {
                T::wrap(view.base.wrapping_add(u as i64))
            })?;
    } else {
        push_checked(view.base, out, |f| view.packed.unpack(keep.clone(), f))?;
    }
    patch(&view, rows, &keep, &mut out[start..])
}

/// Appends `base + u` for each offset `u` that `unpack` yields, each checked against
/// `T`'s range (an error after the last if any did not fit).
fn push_checked<T: Int>(
    base: i64,
    out: &mut Vec<T>,
    unpack: impl FnOnce(&mut dyn FnMut(u64)) -> DResult<()>,
) -> DResult<()> {
    let mut fits = true;
    unpack(&mut |u| {
        let v = T::from_i64(base.wrapping_add(u as i64));
        fits &= v.is_some();
        out.push(v.unwrap_or_default());
    })?;
    if !fits {
        return Err(DecodeError(
            "PFOR value out of the column type's range".into(),
        ));
    }
    Ok(())
}

/// Decodes the values at positions `at` (ascending, each below `rows`) of a PFOR
/// encoding of `rows` values, appending them to `out`: random access into the packed
/// offsets, then the exceptions among `at` patched.
pub(crate) fn decode_at<T: Int>(
    bytes: &[u8],
    rows: usize,
    at: &[u32],
    out: &mut Vec<T>,
) -> DResult<()> {
    check_positions(at, rows)?;
    let view = parse(bytes, rows)?;
    let start = out.len();
    out.reserve(at.len());
    push_checked(view.base, out, |f| view.packed.unpack_at(at, f))?;
    patch_at(&view, rows, at, &mut out[start..])
}

/// Whether `base + o` fits `T` for every offset `o` of `width` bits (so
/// `base..=base + 2^width - 1` does not wrap and both ends fit).
fn frame_fits<T: Int>(base: i64, width: u32) -> bool {
    let top = i128::from(base) + (1i128 << width) - 1;
    i64::try_from(top).is_ok_and(|top| T::from_i64(base).is_some() && T::from_i64(top).is_some())
}

/// Writes the exceptions that fall in `keep` over their slots; checks all positions.
fn patch<T: Int>(view: &View, rows: usize, keep: &Range<usize>, out: &mut [T]) -> DResult<()> {
    for exception in exceptions(view, rows) {
        let (pos, v) = exception?;
        if keep.contains(&pos) {
            out[pos - keep.start] = exception_value(v)?;
        }
    }
    Ok(())
}

/// [`patch`] for the values at positions `at` (ascending): `out[i]` is position `at[i]`.
fn patch_at<T: Int>(view: &View, rows: usize, at: &[u32], out: &mut [T]) -> DResult<()> {
    let mut i = 0usize;
    for exception in exceptions(view, rows) {
        let (pos, v) = exception?;
        while i < at.len() && (at[i] as usize) < pos {
            i += 1;
        }
        if i < at.len() && at[i] as usize == pos {
            out[i] = exception_value(v)?;
        }
    }
    Ok(())
}

/// A view's exceptions as (position, value), checked: positions strictly increasing
/// and below `rows`.
fn exceptions<'v>(view: &'v View, rows: usize) -> impl Iterator<Item = DResult<(usize, i64)>> + 'v {
    let mut next = 0usize;
    (view.positions.chunks_exact(4))
        .zip(view.offsets.chunks_exact(8))
        .map(move |(p, o)| {
            let pos = le_u32(p, 0) as usize;
            if pos < next || pos >= rows {
                return Err(DecodeError(format!(
                    "PFOR exception at {pos} (must be at least {next} and below {rows})"
                )));
            }
            next = pos + 1;
            Ok((pos, view.base.wrapping_add(le_u64(o, 0) as i64)))
        })
}

fn exception_value<T: Int>(v: i64) -> DResult<T> {
    T::from_i64(v)
        .ok_or_else(|| DecodeError("PFOR exception out of the column type's range".into()))
}

/// The deltas PFOR-DELTA encodes: `d[0] = v[0]`, `d[i] = v[i] - v[i-1]`, wrapping.
pub fn deltas(values: &[i64], out: &mut Vec<i64>) {
    out.clear();
    let mut prev = 0i64;
    for &v in values {
        out.push(v.wrapping_sub(prev));
        prev = v;
    }
}

/// Decodes values `keep` of a PFOR-DELTA encoding: every delta up to `keep.end` is
/// needed for the running sum. `scratch` is reused between pages.
pub(crate) fn decode_delta<T: Int>(
    bytes: &[u8],
    rows: usize,
    keep: Range<usize>,
    out: &mut Vec<T>,
    scratch: &mut Vec<i64>,
) -> DResult<()> {
    check_keep(&keep, rows)?;
    scratch.clear();
    decode(bytes, rows, 0..keep.end, scratch)?;
    out.reserve(keep.len());
    let mut sum = 0i64;
    for (i, &d) in scratch.iter().enumerate() {
        sum = sum.wrapping_add(d);
        if i >= keep.start {
            out.push(T::from_i64(sum).ok_or_else(|| {
                DecodeError("PFOR-DELTA value out of the column type's range".into())
            })?);
        }
    }
    Ok(())
}
