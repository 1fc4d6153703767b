//! In-memory column values: the bridge between Arrow arrays and the on-disk encodings.
//!
//! Strings (both `CHAR(n)` and `VARCHAR`) are held as offsets + bytes; `CHAR(n)` padding
//! is added only when encoding and stripped when decoding, so the logical value is the
//! same in every layout.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{Date32Type, Decimal128Type, Int32Type, Int64Type};
use arrow_array::{
    Array, ArrayRef, Date32Array, Decimal128Array, Int32Array, Int64Array, StringArray,
};
use arrow_buffer::{Buffer, OffsetBuffer, ScalarBuffer};
use arrow_schema::DataType;

use crate::error::{Result, StorageError};
use crate::types::{ColumnType, Physical};

/// Most values [`ColumnValues::with_capacity`] reserves room for: far above a chunk's
/// rows (SF1 lineitem: ~29 000 per 4 MB chunk), far below what would exhaust memory.
pub const MAX_PRESIZED_ROWS: usize = 1 << 20;
/// Most string bytes [`ColumnValues::with_capacity`] reserves room for.
pub const MAX_PRESIZED_BYTES: usize = 64 << 20;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ColumnValues {
    I32(Vec<i32>),
    I64(Vec<i64>),
    /// `offsets.len() == rows + 1`, `offsets[0] == 0`.
    Bytes {
        offsets: Vec<u32>,
        data: Vec<u8>,
    },
}

impl ColumnValues {
    /// No values, of the same kind as `self`.
    pub fn empty_like(&self) -> Self {
        match self {
            ColumnValues::I32(_) => ColumnValues::I32(Vec::new()),
            ColumnValues::I64(_) => ColumnValues::I64(Vec::new()),
            ColumnValues::Bytes { .. } => ColumnValues::Bytes {
                offsets: vec![0],
                data: Vec::new(),
            },
        }
    }

    pub fn empty(physical: Physical) -> Self {
        match physical {
            Physical::I32 => ColumnValues::I32(Vec::new()),
            Physical::I64 => ColumnValues::I64(Vec::new()),
            Physical::FixedBytes(_) | Physical::VarBytes => ColumnValues::Bytes {
                offsets: vec![0],
                data: Vec::new(),
            },
        }
    }

    /// Empty, with room for `rows` values (at most [`MAX_PRESIZED_ROWS`]: the count
    /// comes from a file, and a wrong one must not allocate absurd memory), so decoding a
    /// chunk page by page does not regrow and copy its vectors (issue 11: those copies
    /// were most of the scan thread's `memmove` in a resident Q6).
    pub fn with_capacity(physical: Physical, rows: usize) -> Self {
        let rows = rows.min(MAX_PRESIZED_ROWS);
        match physical {
            Physical::I32 => ColumnValues::I32(Vec::with_capacity(rows)),
            Physical::I64 => ColumnValues::I64(Vec::with_capacity(rows)),
            Physical::FixedBytes(width) => {
                let mut offsets = Vec::with_capacity(rows + 1);
                offsets.push(0);
                ColumnValues::Bytes {
                    offsets,
                    data: Vec::with_capacity(rows.saturating_mul(width).min(MAX_PRESIZED_BYTES)),
                }
            }
            Physical::VarBytes => {
                let mut offsets = Vec::with_capacity(rows + 1);
                offsets.push(0);
                ColumnValues::Bytes {
                    offsets,
                    data: Vec::new(),
                }
            }
        }
    }

    pub fn len(&self) -> usize {
        match self {
            ColumnValues::I32(v) => v.len(),
            ColumnValues::I64(v) => v.len(),
            ColumnValues::Bytes { offsets, .. } => offsets.len() - 1,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Bytes the decoded values take (what a decode budget charges).
    pub fn decoded_bytes(&self) -> u64 {
        let bytes = match self {
            ColumnValues::I32(v) => v.len().saturating_mul(4),
            ColumnValues::I64(v) => v.len().saturating_mul(8),
            ColumnValues::Bytes { offsets, data } => {
                offsets.len().saturating_mul(4).saturating_add(data.len())
            }
        };
        bytes as u64
    }

    /// The first value that is not UTF-8 (strings only): what Arrow refused, found
    /// again only after it did, so valid strings are checked once (by Arrow).
    fn first_non_utf8(offsets: &[u32], data: &[u8]) -> Option<usize> {
        let bad = |w: &[u32]| {
            let value = data.get(w[0] as usize..w[1] as usize);
            value.is_none_or(|v| std::str::from_utf8(v).is_err())
        };
        offsets.windows(2).position(bad)
    }

    /// Every string value's bytes in order (`None` for one whose offsets leave the
    /// data: never for values a page decoder produced); `None` for numbers.
    pub fn strings(&self) -> Option<impl Iterator<Item = Option<&[u8]>>> {
        let ColumnValues::Bytes { offsets, data } = self else {
            return None;
        };
        Some(
            offsets
                .windows(2)
                .map(|w| data.get(w[0] as usize..w[1] as usize)),
        )
    }

    /// The bytes of string value `i` (panics if this is not a string column).
    pub fn str_at(&self, i: usize) -> &[u8] {
        match self {
            ColumnValues::Bytes { offsets, data } => {
                &data[offsets[i] as usize..offsets[i + 1] as usize]
            }
            _ => panic!("str_at on a numeric column"),
        }
    }

    pub fn push_str(&mut self, s: &[u8]) -> Result<()> {
        match self {
            ColumnValues::Bytes { offsets, data } => {
                data.extend_from_slice(s);
                offsets.push(offset_u32(data.len())?);
                Ok(())
            }
            _ => Err(StorageError::Invalid(
                "string value for a numeric column".into(),
            )),
        }
    }

    /// Appends rows `range` of `other` (same physical kind).
    pub fn extend_from(
        &mut self,
        other: &ColumnValues,
        range: std::ops::Range<usize>,
    ) -> Result<()> {
        match (self, other) {
            (ColumnValues::I32(a), ColumnValues::I32(b)) => a.extend_from_slice(&b[range]),
            (ColumnValues::I64(a), ColumnValues::I64(b)) => a.extend_from_slice(&b[range]),
            (
                ColumnValues::Bytes { offsets, data },
                ColumnValues::Bytes {
                    offsets: bo,
                    data: bd,
                },
            ) => {
                let (lo, hi) = (bo[range.start] as usize, bo[range.end] as usize);
                let base = data.len() as i64 - lo as i64;
                data.extend_from_slice(&bd[lo..hi]);
                offset_u32(data.len())?;
                offsets.extend(
                    bo[range.start + 1..=range.end]
                        .iter()
                        .map(|&o| (o as i64 + base) as u32),
                );
            }
            _ => return Err(StorageError::Invalid("mismatched column kinds".into())),
        }
        Ok(())
    }

    /// Appends `n` zeros (empty strings to a string column): the values of tuples a
    /// scan already knows are out, which it need not decode.
    pub fn push_zeros(&mut self, n: usize) {
        match self {
            ColumnValues::I32(v) => v.resize(v.len() + n, 0),
            ColumnValues::I64(v) => v.resize(v.len() + n, 0),
            ColumnValues::Bytes { offsets, .. } => {
                let end = offsets.last().copied().unwrap_or(0);
                offsets.resize(offsets.len() + n, end);
            }
        }
    }

    /// Removes every row, keeping the allocations.
    pub fn clear(&mut self) {
        match self {
            ColumnValues::I32(v) => v.clear(),
            ColumnValues::I64(v) => v.clear(),
            ColumnValues::Bytes { offsets, data } => {
                offsets.truncate(1);
                data.clear();
            }
        }
    }

    /// Removes the first `n` rows.
    pub fn drain_front(&mut self, n: usize) {
        match self {
            ColumnValues::I32(v) => drop(v.drain(..n)),
            ColumnValues::I64(v) => drop(v.drain(..n)),
            ColumnValues::Bytes { offsets, data } => {
                let cut = offsets[n];
                data.drain(..cut as usize);
                offsets.drain(..n);
                for o in offsets.iter_mut() {
                    *o -= cut;
                }
            }
        }
    }

    /// Converts an Arrow array holding values of `ty`. Nulls are rejected.
    pub fn from_arrow(array: &dyn Array, ty: ColumnType, column: &str) -> Result<Self> {
        if array.null_count() > 0 {
            return Err(StorageError::Schema(format!(
                "column {column:?} contains nulls; coopscan columns are NOT NULL"
            )));
        }
        let mismatch = || {
            StorageError::Schema(format!(
                "column {column:?}: Arrow type {} does not fit {ty}",
                array.data_type()
            ))
        };
        let values = match (ty.physical(), array.data_type()) {
            (Physical::I32, DataType::Int32) => {
                ColumnValues::I32(array.as_primitive::<Int32Type>().values().to_vec())
            }
            (Physical::I32, DataType::Date32) => {
                ColumnValues::I32(array.as_primitive::<Date32Type>().values().to_vec())
            }
            (Physical::I64, DataType::Int64) => {
                ColumnValues::I64(array.as_primitive::<Int64Type>().values().to_vec())
            }
            (Physical::I64, DataType::Decimal128(_, s)) => {
                let want = match ty {
                    ColumnType::Decimal { scale, .. } => scale,
                    _ => return Err(mismatch()),
                };
                if *s != want {
                    return Err(mismatch());
                }
                let arr = array.as_primitive::<Decimal128Type>();
                let v = arr
                    .values()
                    .iter()
                    .map(|&x| {
                        i64::try_from(x).map_err(|_| {
                            StorageError::Schema(format!(
                                "column {column:?}: decimal {x} overflows 64 bits"
                            ))
                        })
                    })
                    .collect::<Result<Vec<_>>>()?;
                ColumnValues::I64(v)
            }
            (Physical::FixedBytes(_) | Physical::VarBytes, DataType::Utf8) => {
                strings_from(array.as_string::<i32>().iter().flatten())?
            }
            (Physical::FixedBytes(_) | Physical::VarBytes, DataType::LargeUtf8) => {
                strings_from(array.as_string::<i64>().iter().flatten())?
            }
            (Physical::FixedBytes(_) | Physical::VarBytes, DataType::Utf8View) => {
                strings_from(array.as_string_view().iter().flatten())?
            }
            _ => return Err(mismatch()),
        };
        if let Physical::FixedBytes(n) = ty.physical() {
            check_fixed(&values, n, column)?;
        }
        Ok(values)
    }

    /// Builds the Arrow array for `ty`. Fails (instead of panicking) on invalid UTF-8.
    pub fn into_arrow(self, ty: ColumnType) -> Result<ArrayRef> {
        Ok(match (self, ty) {
            (ColumnValues::I32(v), ColumnType::Date32) => {
                Arc::new(Date32Array::new(ScalarBuffer::from(v), None))
            }
            (ColumnValues::I32(v), _) => Arc::new(Int32Array::new(ScalarBuffer::from(v), None)),
            (ColumnValues::I64(v), ColumnType::Decimal { precision, scale }) => {
                // From a slice, not `into_iter`: the in-place-collect path that
                // `Vec::into_iter` takes (and abandons, the sizes differ) showed as 8 %
                // of a resident SLOW.
                let wide: Vec<i128> = v.iter().map(|&x| i128::from(x)).collect();
                Arc::new(
                    Decimal128Array::new(ScalarBuffer::from(wide), None)
                        .with_precision_and_scale(precision, scale)?,
                )
            }
            (ColumnValues::I64(v), _) => Arc::new(Int64Array::new(ScalarBuffer::from(v), None)),
            (ColumnValues::Bytes { offsets, data }, _) => {
                // One check of the largest offset, then a plain (vectorized) cast.
                let largest = offsets.iter().copied().max().unwrap_or(0);
                if i32::try_from(largest).is_err() {
                    return Err(StorageError::Invalid(
                        "string data over 2 GiB in one batch".into(),
                    ));
                }
                let narrow: Vec<i32> = offsets.iter().map(|&o| o as i32).collect();
                let narrow = OffsetBuffer::new(ScalarBuffer::from(narrow));
                let data = Buffer::from_vec(data);
                match StringArray::try_new(narrow, data.clone(), None) {
                    Ok(array) => Arc::new(array),
                    Err(e) => {
                        let bad = Self::first_non_utf8(&offsets, data.as_slice());
                        return Err(bad.map_or(e.into(), |value| StorageError::NotUtf8 { value }));
                    }
                }
            }
        })
    }
}

fn strings_from<'a>(values: impl Iterator<Item = &'a str>) -> Result<ColumnValues> {
    let mut out = ColumnValues::empty(Physical::VarBytes);
    for s in values {
        out.push_str(s.as_bytes())?;
    }
    Ok(out)
}

/// `CHAR(n)` values must fit `n` bytes and must not contain the zero padding byte.
fn check_fixed(values: &ColumnValues, n: usize, column: &str) -> Result<()> {
    for i in 0..values.len() {
        let s = values.str_at(i);
        if s.len() > n || s.contains(&0) {
            return Err(StorageError::Schema(format!(
                "column {column:?}: value {:?} does not fit CHAR({n})",
                String::from_utf8_lossy(s)
            )));
        }
    }
    Ok(())
}

pub(crate) fn offset_u32(len: usize) -> Result<u32> {
    u32::try_from(len)
        .map_err(|_| StorageError::Invalid("string data over 4 GiB in one batch".into()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn presized_values_equal_empty_ones_and_are_capped() {
        for physical in [
            Physical::I32,
            Physical::I64,
            Physical::FixedBytes(3),
            Physical::VarBytes,
        ] {
            assert_eq!(
                ColumnValues::with_capacity(physical, 100),
                ColumnValues::empty(physical)
            );
        }
        // A row count from a damaged file must not reserve absurd memory.
        match ColumnValues::with_capacity(Physical::I64, usize::MAX) {
            ColumnValues::I64(v) => assert!(v.capacity() <= MAX_PRESIZED_ROWS),
            other => panic!("{other:?}"),
        }
        match ColumnValues::with_capacity(Physical::FixedBytes(usize::MAX), usize::MAX) {
            ColumnValues::Bytes { offsets, data } => {
                assert!(offsets.capacity() <= MAX_PRESIZED_ROWS + 1);
                assert!(data.capacity() <= MAX_PRESIZED_BYTES);
            }
            other => panic!("{other:?}"),
        }
    }
}
