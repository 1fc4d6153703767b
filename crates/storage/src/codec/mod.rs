//! DSM page codecs. Each page of a DSM column is stored with whichever codec makes it
//! smallest, named by one bit of the page header's flags:
//!
//! | flag | codec | for |
//! |---|---|---|
//! | 1 | LZ4 over the plain minipage ([`crate::encoding`]) | what the others do not compress (comments); every page before these codecs |
//! | 2 | PFOR ([`pfor`]) | integers, dates, decimals in a narrow range |
//! | 4 | PFOR-DELTA ([`pfor`]) | sorted or clustered integers (keys) |
//! | 8 | PDICT ([`pdict`]) | few distinct values, strings or integers |
//! | 16 | zstd (level 3) over the plain minipage | string pages only: free text, where entropy coding halves LZ4's size |
//!
//! The lightweight codecs are those of X100/Vectorwise (Zukowski et al., "Super-Scalar
//! RAM-CPU Cache Compression", ICDE 2006): they decode straight into the column vectors,
//! with random access, so a chunk that needs part of a page unpacks only that part.
//! zstd is no lightweight codec (about 1 GB/s to decode); it is tried for string pages
//! only, where the lightweight ones have nothing to work with. Decoders never trust the page: every length, width, count, code and exception
//! position is checked, and a malformed page is a [`DecodeError`].

pub mod bitpack;
pub mod pdict;
pub mod pfor;

use std::cell::RefCell;
use std::ops::Range;

use crate::column::ColumnValues;
use crate::encoding::{decode_minipage, decode_minipage_packed, encode_minipage, DecodeError};
use crate::types::Physical;

type DResult<T> = std::result::Result<T, DecodeError>;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Codec {
    Lz4,
    Pfor,
    PforDelta,
    Pdict,
    Zstd,
}

/// Most bytes a DSM page may decode to per byte stored (its header's `raw_len` ÷ its
/// payload). LZ4's own ceiling: a sequence's match-length bytes add at most 255 bytes of
/// output each, so no LZ4 block decodes to more (`tests.rs` checks zeros, its best
/// case). The encoder imposes it on the codecs without such a ceiling, zstd and PDICT of
/// strings, falling back to LZ4; so no page the writer produces exceeds it, and the
/// reader refuses a page that claims more before allocating anything for it.
pub const MAX_EXPANSION: usize = 256;

/// zstd's level for string pages: its default, a fair trade of write time for size.
const ZSTD_LEVEL: i32 = 3;

/// zstd takes a string page from PDICT only when it makes it this many times smaller:
/// its decoding costs several times PDICT's, which also hands a scan packed words and
/// codes directly (Zukowski et al., ICDE 2006: light codecs over heavy ones). TPC-H's
/// `l_returnflag`, 18 % smaller in zstd, cost 6 % of Q1's CPU in zstd's decoder.
pub const PDICT_OVER_ZSTD: usize = 2;

impl Codec {
    pub const ALL: [Codec; 5] = [
        Codec::Lz4,
        Codec::Pfor,
        Codec::PforDelta,
        Codec::Pdict,
        Codec::Zstd,
    ];

    /// The page-header flag bit naming this codec.
    pub fn flag(self) -> u8 {
        match self {
            Codec::Lz4 => 1,
            Codec::Pfor => 2,
            Codec::PforDelta => 4,
            Codec::Pdict => 8,
            Codec::Zstd => 16,
        }
    }

    /// The codec of a DSM page's flags: exactly one known bit, else `None`. (Old readers
    /// see no LZ4 bit on the new codecs' pages and refuse them rather than misread.)
    pub fn from_flags(flags: u8) -> Option<Codec> {
        Codec::ALL.into_iter().find(|c| c.flag() == flags)
    }

    pub fn name(self) -> &'static str {
        match self {
            Codec::Lz4 => "lz4",
            Codec::Pfor => "pfor",
            Codec::PforDelta => "pfor-delta",
            Codec::Pdict => "pdict",
            Codec::Zstd => "zstd",
        }
    }
}

/// An integer type a column decodes into; `None` when a page's value does not fit it.
pub(crate) trait Int: Copy + Default {
    fn from_i64(v: i64) -> Option<Self>;
    /// `v` truncated to the type: only for values already known to fit.
    fn wrap(v: i64) -> Self;
}

impl Int for i64 {
    #[inline]
    fn from_i64(v: i64) -> Option<Self> {
        Some(v)
    }

    #[inline]
    fn wrap(v: i64) -> Self {
        v
    }
}

impl Int for i32 {
    #[inline]
    fn from_i64(v: i64) -> Option<Self> {
        i32::try_from(v).ok()
    }

    #[inline]
    fn wrap(v: i64) -> Self {
        v as i32
    }
}

fn check_keep(keep: &Range<usize>, rows: usize) -> DResult<()> {
    if keep.start > keep.end || keep.end > rows {
        return Err(DecodeError(format!(
            "rows {keep:?} asked of a page of {rows}"
        )));
    }
    Ok(())
}

/// Callers slice `b` so that `at + 4 <= b.len()`.
/// Positions a caller asks for: strictly ascending, each below `rows`.
fn check_positions(at: &[u32], rows: usize) -> DResult<()> {
    let ascending = at.windows(2).all(|w| w[0] < w[1]);
    match at.last() {
        Some(&last) if !ascending || last as usize >= rows => Err(DecodeError(format!(
            "positions up to {last} (ascending: {ascending}) asked of {rows} values"
        ))),
        _ => Ok(()),
    }
}

fn le_u32(b: &[u8], at: usize) -> u32 {
    let mut w = [0; 4];
    w.copy_from_slice(&b[at..at + 4]);
    u32::from_le_bytes(w)
}

/// Callers slice `b` so that `at + 8 <= b.len()`.
fn le_u64(b: &[u8], at: usize) -> u64 {
    let mut w = [0; 8];
    w.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(w)
}

/// Reusable buffers (and zstd context) for choosing and writing a page's encoding.
#[derive(Default)]
pub struct Encoder {
    /// Created on the first string page; reused because the writer tries several
    /// tuple counts per page.
    zstd: Option<zstd::bulk::Compressor<'static>>,
    ints: Vec<i64>,
    deltas: Vec<i64>,
    raw: Vec<u8>,
    lz4: Vec<u8>,
    /// The encoded page payload after [`Encoder::encode`].
    pub out: Vec<u8>,
}

impl Encoder {
    /// Encodes rows `rows` of `values` with the codec that makes them smallest (ties
    /// go to the cheaper decoder: integers PFOR, PDICT, PFOR-DELTA, LZ4; strings PDICT,
    /// LZ4, zstd; and zstd must beat PDICT by [`PDICT_OVER_ZSTD`]) into `self.out`.
    pub fn encode(
        &mut self,
        values: &ColumnValues,
        physical: Physical,
        rows: Range<usize>,
    ) -> Codec {
        self.out.clear();
        let lz4 = self.lz4_len(values, physical, rows.clone());
        if let ColumnValues::Bytes { .. } = values {
            // self.raw still holds the plain minipage lz4_len encoded.
            let raw = self.raw.len();
            let within = |len: &usize| raw <= len.saturating_mul(MAX_EXPANSION);
            let dict = pdict::bytes_len(values, rows.clone())
                .filter(within)
                .unwrap_or(usize::MAX);
            let zstd = self.zstd_compress().filter(|z| within(&z.len()));
            let zstd_len = zstd.as_ref().map_or(usize::MAX, Vec::len);
            if dict <= lz4 && dict <= zstd_len.saturating_mul(PDICT_OVER_ZSTD) {
                pdict::encode_bytes(values, rows, &mut self.out);
                return Codec::Pdict;
            }
            return match zstd {
                Some(z) if z.len() < lz4 => {
                    self.out = z;
                    Codec::Zstd
                }
                _ => self.lz4(),
            };
        }
        self.ints.clear();
        self.ints_of(values, rows.clone());
        let pfor = pfor::plan(&self.ints);
        pfor::deltas(&self.ints, &mut self.deltas);
        let delta = pfor::plan(&self.deltas);
        let dict = pdict::int_len(&self.ints).unwrap_or(usize::MAX);
        let best = pfor.encoded_len().min(dict).min(delta.encoded_len());
        if best > lz4 {
            self.lz4()
        } else if pfor.encoded_len() == best {
            pfor::encode(&self.ints, &pfor, &mut self.out);
            Codec::Pfor
        } else if dict == best {
            pdict::encode_ints(&self.ints, &mut self.out);
            Codec::Pdict
        } else {
            pfor::encode(&self.deltas, &delta, &mut self.out);
            Codec::PforDelta
        }
    }

    fn ints_of(&mut self, values: &ColumnValues, rows: Range<usize>) {
        match values {
            ColumnValues::I32(v) => self.ints.extend(v[rows].iter().map(|&x| i64::from(x))),
            ColumnValues::I64(v) => self.ints.extend_from_slice(&v[rows]),
            ColumnValues::Bytes { .. } => {}
        }
    }

    /// Compresses the plain minipage into `self.lz4`; returns its length.
    fn lz4_len(&mut self, values: &ColumnValues, physical: Physical, rows: Range<usize>) -> usize {
        self.raw.clear();
        encode_minipage(values, physical, rows, &mut self.raw);
        self.lz4 = lz4_flex::block::compress(&self.raw);
        self.lz4.len()
    }

    /// zstd of `self.raw`; `None` if zstd fails (then the page is not stored as zstd).
    fn zstd_compress(&mut self) -> Option<Vec<u8>> {
        if self.zstd.is_none() {
            self.zstd = zstd::bulk::Compressor::new(ZSTD_LEVEL).ok();
        }
        self.zstd.as_mut()?.compress(&self.raw).ok()
    }

    /// Chooses the LZ4 encoding [`Self::lz4_len`] made.
    fn lz4(&mut self) -> Codec {
        std::mem::swap(&mut self.out, &mut self.lz4);
        Codec::Lz4
    }
}

/// The header's `raw_len` is the plain minipage's length, which for fixed-width types
/// names the width the writer saw: int64 data declared int32 would otherwise decode as
/// plausible numbers whenever its values happen to fit.
fn check_raw_len(physical: Physical, rows: usize, raw_len: usize) -> DResult<()> {
    let width = match physical {
        Physical::I32 => 4,
        Physical::I64 => 8,
        Physical::FixedBytes(w) => w,
        Physical::VarBytes => return Ok(()),
    };
    if rows.checked_mul(width) != Some(raw_len) {
        return Err(DecodeError(format!(
            "page of {rows} values was {raw_len} bytes plain, not {width} per value (column type does not match the data)"
        )));
    }
    Ok(())
}

/// Refuses a page that claims to decode to more than [`MAX_EXPANSION`] bytes per byte
/// stored: LZ4 and zstd pages, and string pages of any codec (integer pages decode to at
/// most 8 bytes per value, their rows bounded by the caller).
fn check_expansion(page: &StoredPage) -> DResult<()> {
    let bounded = matches!(page.codec, Codec::Lz4 | Codec::Zstd)
        || matches!(page.physical, Physical::FixedBytes(_) | Physical::VarBytes);
    let most = page.payload.len().saturating_mul(MAX_EXPANSION);
    if bounded && page.raw_len > most {
        return Err(DecodeError(format!(
            "{} page of {} bytes claims {} decoded bytes, more than {MAX_EXPANSION} per byte stored",
            page.codec.name(),
            page.payload.len(),
            page.raw_len
        )));
    }
    Ok(())
}

thread_local! {
    /// One zstd decompression context per decoding thread. `zstd::bulk::
    /// decompress_to_buffer` creates one per call, and creating it (an allocation and
    /// its initialisation) was 6 % of the CPU-seconds of TPC-H queries over DSM tables
    /// (`perf record` of `coopscan tpch`, docs/performance.md).
    static ZSTD: RefCell<Option<zstd::bulk::Decompressor<'static>>> = const { RefCell::new(None) };
}

/// Decompresses a zstd frame into `out` (at most `out.len()` bytes), with this thread's
/// context.
fn zstd_decompress(payload: &[u8], out: &mut [u8]) -> DResult<usize> {
    let zstd_error = |e: std::io::Error| DecodeError(format!("zstd: {e}"));
    ZSTD.with(|cell| {
        let mut slot = cell.borrow_mut();
        let decompressor = match &mut *slot {
            Some(d) => d,
            empty => empty.insert(zstd::bulk::Decompressor::new().map_err(zstd_error)?),
        };
        decompressor
            .decompress_to_buffer(payload, out)
            .map_err(zstd_error)
    })
}

/// Reusable buffers for decoding pages.
#[derive(Debug, Default)]
pub struct Scratch {
    raw: Vec<u8>,
    ints: Vec<i64>,
}

/// A stored DSM page payload and what its header says about it.
#[derive(Debug, Clone, Copy)]
pub struct StoredPage<'a> {
    pub codec: Codec,
    pub payload: &'a [u8],
    pub physical: Physical,
    /// Values in the page.
    pub rows: usize,
    /// The plain minipage's length (the LZ4 output size; the caller bounds it).
    pub raw_len: usize,
}

/// Tests rows `keep` of a DSM page of strings, appending one answer per row: a PDICT
/// page on its dictionary codes ([`pdict::test_bytes`]), any other decoded into
/// `values` (cleared first) and each value tested.
pub fn test_page(
    page: &StoredPage,
    keep: Range<usize>,
    test: &dyn Fn(&[u8]) -> bool,
    out: &mut Vec<bool>,
    values: &mut ColumnValues,
    scratch: &mut Scratch,
) -> DResult<()> {
    match (page.codec, page.physical) {
        (Codec::Pdict, Physical::FixedBytes(_) | Physical::VarBytes) => {
            check_expansion(page)?;
            check_raw_len(page.physical, page.rows, page.raw_len)?;
            let max_len = match page.physical {
                Physical::FixedBytes(w) => Some(w),
                _ => None,
            };
            pdict::test_bytes(page.payload, page.rows, keep, max_len, test, out)
        }
        (_, Physical::FixedBytes(_) | Physical::VarBytes) => {
            values.clear();
            decode_page(page, keep, values, scratch)?;
            let strings = (values.strings())
                .ok_or_else(|| DecodeError("column kind does not match its decoder".into()))?;
            out.extend(strings.map(|v| v.is_some_and(test)));
            Ok(())
        }
        _ => Err(DecodeError("a string test on a column of numbers".into())),
    }
}

/// Decodes rows `keep` of a DSM page, appending them to `out`.
pub fn decode_page(
    page: &StoredPage,
    keep: Range<usize>,
    out: &mut ColumnValues,
    scratch: &mut Scratch,
) -> DResult<()> {
    let StoredPage {
        codec,
        payload,
        physical,
        rows,
        raw_len,
    } = *page;
    check_expansion(page)?;
    if !matches!(codec, Codec::Lz4 | Codec::Zstd) {
        check_raw_len(physical, rows, raw_len)?;
    }
    match (codec, out) {
        // A `CHAR(n)` column asked for as packed words (an aggregating scan's keys).
        (_, ColumnValues::I64(words)) if matches!(physical, Physical::FixedBytes(_)) => {
            decode_packed_chars(page, keep, words, scratch)
        }
        (Codec::Lz4, out) | (Codec::Zstd, out @ ColumnValues::Bytes { .. }) => {
            decompress(page, &mut scratch.raw)?;
            decode_minipage(&scratch.raw, physical, rows, keep, out)
        }
        (Codec::Pfor, ColumnValues::I32(v)) => pfor::decode(payload, rows, keep, v),
        (Codec::Pfor, ColumnValues::I64(v)) => pfor::decode(payload, rows, keep, v),
        (Codec::PforDelta, ColumnValues::I32(v)) => {
            pfor::decode_delta(payload, rows, keep, v, &mut scratch.ints)
        }
        (Codec::PforDelta, ColumnValues::I64(v)) => {
            pfor::decode_delta(payload, rows, keep, v, &mut scratch.ints)
        }
        (Codec::Pdict, ColumnValues::I32(v)) => pdict::decode_ints(payload, rows, keep, v),
        (Codec::Pdict, ColumnValues::I64(v)) => pdict::decode_ints(payload, rows, keep, v),
        (Codec::Pdict, out @ ColumnValues::Bytes { .. }) => {
            let max_len = match physical {
                Physical::FixedBytes(w) => Some(w),
                _ => None,
            };
            pdict::decode_bytes(payload, rows, keep, max_len, raw_len, out)
        }
        (codec, _) => Err(DecodeError(format!(
            "{} page in a column of this type",
            codec.name()
        ))),
    }
}

/// Decodes the rows at positions `at` (ascending, each below the page's rows) of a
/// DSM page, appending them to `out`, by random access where the codec allows it
/// (PFOR and PDICT integers): `Ok(false)`, with `out` untouched, for a codec or output
/// that must be decoded in ranges ([`decode_page`]).
pub fn decode_page_at(page: &StoredPage, at: &[u32], out: &mut ColumnValues) -> DResult<bool> {
    // A `CHAR(n)` page asked for as packed words is strings, not integers.
    let ints = !matches!(page.physical, Physical::FixedBytes(_));
    let (payload, rows) = (page.payload, page.rows);
    match (page.codec, out) {
        (Codec::Pfor, ColumnValues::I32(v)) if ints => {
            check_int_page(page)?;
            pfor::decode_at(payload, rows, at, v)?
        }
        (Codec::Pfor, ColumnValues::I64(v)) if ints => {
            check_int_page(page)?;
            pfor::decode_at(payload, rows, at, v)?
        }
        (Codec::Pdict, ColumnValues::I32(v)) if ints => {
            check_int_page(page)?;
            pdict::decode_ints_at(payload, rows, at, v)?
        }
        (Codec::Pdict, ColumnValues::I64(v)) if ints => {
            check_int_page(page)?;
            pdict::decode_ints_at(payload, rows, at, v)?
        }
        _ => return Ok(false),
    }
    Ok(true)
}

/// [`decode_page`]'s checks of a PFOR or PDICT page's declared sizes.
fn check_int_page(page: &StoredPage) -> DResult<()> {
    check_expansion(page)?;
    check_raw_len(page.physical, page.rows, page.raw_len)
}

/// The plain minipage an LZ4 or zstd page holds, into `raw` (`raw_len` bytes exactly).
fn decompress(page: &StoredPage, raw: &mut Vec<u8>) -> DResult<()> {
    let raw_len = page.raw_len;
    raw.resize(raw_len, 0);
    let (n, name) = match page.codec {
        Codec::Lz4 => (
            lz4_flex::block::decompress_into(page.payload, raw)
                .map_err(|e| DecodeError(format!("LZ4: {e}")))?,
            "LZ4",
        ),
        // Writes at most raw_len bytes: a longer frame is an error, not an overflow.
        Codec::Zstd => (zstd_decompress(page.payload, raw)?, "zstd"),
        other => {
            return Err(DecodeError(format!(
                "{} is no compressed minipage",
                other.name()
            )))
        }
    };
    if n != raw_len {
        return Err(DecodeError(format!(
            "{name} produced {n} bytes, header says {raw_len}"
        )));
    }
    Ok(())
}

/// [`decode_page`] of a `CHAR(n)` page into packed words ([`crate::packed_chars`]):
/// PDICT packs its dictionary, other codecs' strings are decoded and then packed.
fn decode_packed_chars(
    page: &StoredPage,
    keep: Range<usize>,
    words: &mut Vec<i64>,
    scratch: &mut Scratch,
) -> DResult<()> {
    let Physical::FixedBytes(n) = page.physical else {
        return Err(DecodeError(
            "packed words of a column that is no CHAR(n)".into(),
        ));
    };
    if n > crate::packed_chars::PACKED_CHAR {
        return Err(DecodeError(format!("CHAR({n}) does not pack into a word")));
    }
    match page.codec {
        Codec::Pdict => pdict::decode_packed_chars(page.payload, page.rows, keep, n, words),
        Codec::Lz4 | Codec::Zstd => {
            decompress(page, &mut scratch.raw)?;
            decode_minipage_packed(&scratch.raw, n, page.rows, keep, words)
        }
        other => Err(DecodeError(format!(
            "{} page in a column of this type",
            other.name()
        ))),
    }
}

#[cfg(test)]
mod tests;
