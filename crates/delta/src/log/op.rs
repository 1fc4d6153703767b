//! A committed change as the log keeps it: the operation on the tree, by RID in the
//! state the statement saw, and its encoding in a record.

use crate::{DeltaError, Pdt, Rid};

/// One change of a statement, in the order the statement applied it.
#[derive(Clone, Debug, PartialEq)]
pub enum Op<T> {
    Insert { rid: Rid, row: Vec<T> },
    Delete { rid: Rid },
    Modify { rid: Rid, values: Vec<(usize, T)> },
}

impl<T: Clone> Op<T> {
    /// Applies the change to `pdt` (what the statement did, and what replay does again).
    pub fn apply(&self, pdt: &mut Pdt<T>) -> Result<(), DeltaError> {
        match self {
            Op::Insert { rid, row } => pdt.insert(*rid, row.clone()),
            Op::Delete { rid } => pdt.delete(*rid),
            Op::Modify { rid, values } => pdt.modify(*rid, values.clone()),
        }
    }
}

/// How a table's values become bytes in its log and back; the column says the type.
pub trait ValueCodec<T> {
    fn encode(&self, column: usize, value: &T, out: &mut Vec<u8>) -> Result<(), String>;
    fn decode(&self, column: usize, bytes: &[u8]) -> Result<T, String>;
}

const INSERT: u8 = 0;
const DELETE: u8 = 1;
const MODIFY: u8 = 2;

/// Appends `ops` to `out`: count, then per op its kind, RID and (column, value) pairs.
pub(super) fn encode_ops<T>(
    ops: &[Op<T>],
    codec: &dyn ValueCodec<T>,
    out: &mut Vec<u8>,
) -> Result<(), String> {
    put_u32(
        out,
        u32::try_from(ops.len()).map_err(|_| "too many changes in one statement")?,
    );
    for op in ops {
        let (kind, rid, values): (u8, Rid, Vec<(usize, &T)>) = match op {
            Op::Insert { rid, row } => (INSERT, *rid, row.iter().enumerate().collect()),
            Op::Delete { rid } => (DELETE, *rid, Vec::new()),
            Op::Modify { rid, values } => {
                (MODIFY, *rid, values.iter().map(|(c, v)| (*c, v)).collect())
            }
        };
        out.push(kind);
        out.extend_from_slice(&rid.0.to_le_bytes());
        put_u32(
            out,
            u32::try_from(values.len()).map_err(|_| "too many columns")?,
        );
        for (column, value) in values {
            put_u32(
                out,
                u32::try_from(column).map_err(|_| "column index too large")?,
            );
            let mut bytes = Vec::new();
            codec.encode(column, value, &mut bytes)?;
            put_u32(
                out,
                u32::try_from(bytes.len()).map_err(|_| "value too large")?,
            );
            out.extend_from_slice(&bytes);
        }
    }
    Ok(())
}

/// The ops of one record's payload (after its sequence number).
pub(super) fn decode_ops<T>(
    mut bytes: &[u8],
    codec: &dyn ValueCodec<T>,
) -> Result<Vec<Op<T>>, String> {
    let count = take_u32(&mut bytes)?;
    let mut ops = Vec::new();
    for _ in 0..count {
        let kind = take(&mut bytes, 1)?[0];
        let rid = Rid(u64::from_le_bytes(take_array(&mut bytes)?));
        let n = take_u32(&mut bytes)?;
        let mut values = Vec::new();
        for _ in 0..n {
            let column = take_u32(&mut bytes)? as usize;
            let len = take_u32(&mut bytes)? as usize;
            values.push((column, codec.decode(column, take(&mut bytes, len)?)?));
        }
        ops.push(match kind {
            INSERT => Op::Insert {
                rid,
                row: values.into_iter().map(|(_, v)| v).collect(),
            },
            DELETE => Op::Delete { rid },
            MODIFY => Op::Modify { rid, values },
            other => return Err(format!("unknown change kind {other}")),
        });
    }
    if !bytes.is_empty() {
        return Err(format!("{} bytes after the last change", bytes.len()));
    }
    Ok(ops)
}

pub(super) fn put_u32(out: &mut Vec<u8>, v: u32) {
    out.extend_from_slice(&v.to_le_bytes());
}

pub(super) fn take<'a>(bytes: &mut &'a [u8], n: usize) -> Result<&'a [u8], String> {
    if bytes.len() < n {
        return Err(format!("a record ends {} bytes early", n - bytes.len()));
    }
    let (head, rest) = bytes.split_at(n);
    *bytes = rest;
    Ok(head)
}

pub(super) fn take_array<const N: usize>(bytes: &mut &[u8]) -> Result<[u8; N], String> {
    let head = take(bytes, N)?;
    let mut out = [0u8; N];
    out.copy_from_slice(head);
    Ok(out)
}

pub(super) fn take_u32(bytes: &mut &[u8]) -> Result<u32, String> {
    Ok(u32::from_le_bytes(take_array(bytes)?))
}
