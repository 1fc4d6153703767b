//! Piece-reference traces: every piece every scan consumed, in the order it happened.
//!
//! The 2012 paper measures OPT by replaying "a trace of all page references that were
//! made in the PBM run" through Belady's algorithm; [`Abm::record_trace`] records one
//! (a delivery of a chunk to a scan references each piece the scan reads of it), and
//! `coopscan-sim`'s replay runs OPT and LRU over it.
//!
//! # File format (little endian, version 2)
//!
//! ```text
//! offset  size  field
//! 0       8     magic "CSTRACE2"
//! 8       8     record count N (u64)
//! 16      48×N  records:  at_ns u64 | scan u64 | bytes u64 | table u32 | chunk u32
//!                         | columns u64 (the piece's column set) | version u32
//!                         | reserved 4 bytes (zero)
//! ```
//!
//! Version 1 ("CSTRACE1", 40-byte records) had `column u16` (0xFFFF: whole chunk) and
//! 6 reserved bytes after `chunk`; it is still read, as pieces of version 0.
//!
//! [`Abm::record_trace`]: crate::Abm::record_trace

pub mod opt;
pub mod pbm_replay;
pub mod reuse;

use crate::{ChunkId, ColumnMask, Nanos, PieceId, ScanId, TableId, TableVersion};
use std::collections::HashMap;
use std::io::{self, Read, Write};

const MAGIC: &[u8; 8] = b"CSTRACE2";
const RECORD_BYTES: usize = 48;
/// Version 1: the magic, record size and whole-chunk column of traces written before
/// pieces held column sets.
const MAGIC_V1: &[u8; 8] = b"CSTRACE1";
const RECORD_BYTES_V1: usize = 40;
const WHOLE_CHUNK_V1: u16 = u16::MAX;
/// Most records a trace file may hold (1.9 GB of records): a larger count is damage,
/// not a trace, and must not drive an allocation.
pub const MAX_TRACE_RECORDS: u64 = 40_000_000;

/// One reference: `scan` consumed `piece` (of `bytes` bytes) at `at`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Reference {
    pub at: Nanos,
    pub scan: ScanId,
    pub piece: PieceId,
    pub bytes: u64,
}

#[derive(Debug, thiserror::Error)]
pub enum TraceError {
    #[error("not a coopscan trace (bad magic; expected \"CSTRACE2\" or \"CSTRACE1\")")]
    BadMagic,
    #[error("trace claims {0} records; at most {MAX_TRACE_RECORDS} are accepted")]
    TooLarge(u64),
    #[error("trace is truncated: record {index} of {count} is incomplete")]
    Truncated { index: u64, count: u64 },
    #[error("trace record {0} has non-zero reserved bytes")]
    Reserved(u64),
    #[error("trace has bytes after its {0} records")]
    Trailing(u64),
    #[error(
        "trace record {index}: {piece:?} is {bytes} bytes, but {first} bytes in an earlier record"
    )]
    PieceSize {
        index: u64,
        piece: PieceId,
        bytes: u64,
        first: u64,
    },
    #[error("trace record {0}: the references' bytes add up to more than 2^64")]
    BytesOverflow(u64),
    #[error(transparent)]
    Io(#[from] io::Error),
}

/// Writes `refs` in the format above.
pub fn write_trace(mut w: impl Write, refs: &[Reference]) -> io::Result<()> {
    w.write_all(MAGIC)?;
    w.write_all(&(refs.len() as u64).to_le_bytes())?;
    for r in refs {
        let mut rec = [0u8; RECORD_BYTES];
        rec[0..8].copy_from_slice(&r.at.0.to_le_bytes());
        rec[8..16].copy_from_slice(&r.scan.0.to_le_bytes());
        rec[16..24].copy_from_slice(&r.bytes.to_le_bytes());
        rec[24..28].copy_from_slice(&r.piece.table.0.to_le_bytes());
        rec[28..32].copy_from_slice(&r.piece.chunk.0.to_le_bytes());
        rec[32..40].copy_from_slice(&r.piece.columns.0.to_le_bytes());
        rec[40..44].copy_from_slice(&r.piece.version.0.to_le_bytes());
        w.write_all(&rec)?;
    }
    w.flush()
}

/// Reads a trace written by [`write_trace`]; any damage is an error, never a panic or
/// an allocation sized by the file beyond [`MAX_TRACE_RECORDS`]. A piece has one size
/// in every record, and the bytes of all records add up to at most `u64::MAX`, so that
/// the replays' byte counts (distinct bytes, bytes loaded: each at most that sum)
/// cannot wrap.
pub fn read_trace(mut r: impl Read) -> Result<Vec<Reference>, TraceError> {
    let mut header = [0u8; 16];
    r.read_exact(&mut header)
        .map_err(|_| TraceError::BadMagic)?;
    let v1 = match &header[..8] {
        m if m == MAGIC => false,
        m if m == MAGIC_V1 => true,
        _ => return Err(TraceError::BadMagic),
    };
    let record_bytes = if v1 { RECORD_BYTES_V1 } else { RECORD_BYTES };
    let count = u64::from_le_bytes(header[8..16].try_into().expect("8 bytes"));
    if count > MAX_TRACE_RECORDS {
        return Err(TraceError::TooLarge(count));
    }
    // Grow as records arrive: a count that lies about the file length costs nothing.
    let mut refs = Vec::with_capacity(count.min(1 << 16) as usize);
    let mut rec = [0u8; RECORD_BYTES];
    let mut sizes: HashMap<PieceId, u64> = HashMap::new();
    let mut total: u64 = 0;
    for index in 0..count {
        r.read_exact(&mut rec[..record_bytes])
            .map_err(|_| TraceError::Truncated { index, count })?;
        let reference = if v1 {
            decode_v1(&rec, index)?
        } else {
            decode(&rec, index)?
        };
        let first = *sizes.entry(reference.piece).or_insert(reference.bytes);
        if first != reference.bytes {
            return Err(TraceError::PieceSize {
                index,
                piece: reference.piece,
                bytes: reference.bytes,
                first,
            });
        }
        total = total
            .checked_add(reference.bytes)
            .ok_or(TraceError::BytesOverflow(index))?;
        refs.push(reference);
    }
    if r.read(&mut [0u8; 1])? != 0 {
        return Err(TraceError::Trailing(count));
    }
    Ok(refs)
}

fn u64_at(rec: &[u8], i: usize) -> u64 {
    u64::from_le_bytes(rec[i..i + 8].try_into().expect("8 bytes"))
}

fn u32_at(rec: &[u8], i: usize) -> u32 {
    u32::from_le_bytes(rec[i..i + 4].try_into().expect("4 bytes"))
}

/// The fields versions 1 and 2 share, with the piece of `columns` and `version`.
fn reference(rec: &[u8], columns: ColumnMask, version: u32) -> Reference {
    Reference {
        at: Nanos(u64_at(rec, 0)),
        scan: ScanId(u64_at(rec, 8)),
        bytes: u64_at(rec, 16),
        piece: PieceId {
            table: TableId(u32_at(rec, 24)),
            version: TableVersion(version),
            chunk: ChunkId(u32_at(rec, 28)),
            columns,
        },
    }
}

fn decode(rec: &[u8; RECORD_BYTES], index: u64) -> Result<Reference, TraceError> {
    if rec[44..].iter().any(|&b| b != 0) {
        return Err(TraceError::Reserved(index));
    }
    Ok(reference(rec, ColumnMask(u64_at(rec, 32)), u32_at(rec, 40)))
}

fn decode_v1(rec: &[u8; RECORD_BYTES], index: u64) -> Result<Reference, TraceError> {
    if rec[34..RECORD_BYTES_V1].iter().any(|&b| b != 0) {
        return Err(TraceError::Reserved(index));
    }
    let columns = match u16::from_le_bytes([rec[32], rec[33]]) {
        WHOLE_CHUNK_V1 => ColumnMask::ALL,
        column => ColumnMask::column(column),
    };
    Ok(reference(rec, columns, 0))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Vec<Reference> {
        (0..5u32)
            .map(|i| Reference {
                at: Nanos(u64::from(i) * 1000),
                scan: ScanId(u64::from(i % 2)),
                piece: PieceId {
                    table: TableId(3),
                    version: TableVersion(i / 3),
                    chunk: ChunkId(i),
                    columns: match i % 2 {
                        0 => ColumnMask::column(i as u16),
                        _ => ColumnMask::ALL,
                    },
                },
                bytes: 4096 + u64::from(i),
            })
            .collect()
    }

    #[test]
    fn a_trace_round_trips() {
        let mut buf = Vec::new();
        write_trace(&mut buf, &sample()).unwrap();
        assert_eq!(buf.len(), 16 + 5 * RECORD_BYTES);
        assert_eq!(read_trace(&buf[..]).unwrap(), sample());
    }

    #[test]
    fn damage_is_an_error() {
        let mut buf = Vec::new();
        write_trace(&mut buf, &sample()).unwrap();
        assert!(matches!(read_trace(&buf[..10]), Err(TraceError::BadMagic)));
        let mut bad = buf.clone();
        bad[0] = b'X';
        assert!(matches!(read_trace(&bad[..]), Err(TraceError::BadMagic)));
        assert!(matches!(
            read_trace(&buf[..buf.len() - 1]),
            Err(TraceError::Truncated { index: 4, count: 5 })
        ));
        let mut huge = buf.clone();
        huge[8..16].copy_from_slice(&u64::MAX.to_le_bytes());
        assert!(matches!(
            read_trace(&huge[..]),
            Err(TraceError::TooLarge(_))
        ));
        let mut reserved = buf.clone();
        reserved[16 + RECORD_BYTES - 1] = 1;
        assert!(matches!(
            read_trace(&reserved[..]),
            Err(TraceError::Reserved(0))
        ));
        let mut trailing = buf;
        trailing.push(0);
        assert!(matches!(
            read_trace(&trailing[..]),
            Err(TraceError::Trailing(5))
        ));
    }

    /// A version 1 trace (written before pieces held column sets) reads as pieces of
    /// version 0: a column number becomes its one-column set, 0xFFFF all columns.
    #[test]
    fn a_version_1_trace_is_still_read() {
        let mut buf = MAGIC_V1.to_vec();
        buf.extend(2u64.to_le_bytes());
        for (chunk, column) in [(3u32, 3u16), (0, WHOLE_CHUNK_V1)] {
            let mut rec = [0u8; RECORD_BYTES_V1];
            rec[0..8].copy_from_slice(&7u64.to_le_bytes());
            rec[8..16].copy_from_slice(&1u64.to_le_bytes());
            rec[16..24].copy_from_slice(&4096u64.to_le_bytes());
            rec[24..28].copy_from_slice(&2u32.to_le_bytes());
            rec[28..32].copy_from_slice(&chunk.to_le_bytes());
            rec[32..34].copy_from_slice(&column.to_le_bytes());
            buf.extend(rec);
        }
        let refs = read_trace(&buf[..]).unwrap();
        assert_eq!(refs[0].piece, PieceId::column(TableId(2), ChunkId(3), 3));
        assert_eq!(refs[1].piece, PieceId::whole(TableId(2), ChunkId(0)));
        assert_eq!(
            (refs[1].at, refs[1].scan, refs[1].bytes),
            (Nanos(7), ScanId(1), 4096)
        );
    }

    /// Regression (issue "Reliability", found re-testing it): `coopscan opt` summed the
    /// sizes a trace file gives without checking. Five pieces of `u64::MAX` bytes
    /// printed "18446744073709551611 distinct bytes" (wrapped; a panic in a debug build),
    /// and a piece given two sizes was replayed with whichever came first.
    #[test]
    fn sizes_that_overflow_or_disagree_are_an_error() {
        let mut huge = sample();
        for r in &mut huge {
            r.bytes = u64::MAX;
        }
        let mut buf = Vec::new();
        write_trace(&mut buf, &huge).unwrap();
        assert!(matches!(
            read_trace(&buf[..]),
            Err(TraceError::BytesOverflow(1))
        ));

        let mut resized = sample();
        resized.push(Reference {
            bytes: 1 << 40,
            ..resized[2]
        });
        let mut buf = Vec::new();
        write_trace(&mut buf, &resized).unwrap();
        let err = read_trace(&buf[..]).unwrap_err();
        assert!(
            matches!(
                err,
                TraceError::PieceSize {
                    index: 5,
                    bytes: 1099511627776,
                    first: 4098,
                    ..
                }
            ),
            "{err}"
        );
    }
}
