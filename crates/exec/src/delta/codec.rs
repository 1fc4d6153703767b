//! A changed value in the delta log: encoded by its column's coopscan type, decoded as
//! the `ScalarValue` of that column's Arrow type (what scans merge).

use coopscan_delta::log::ValueCodec;
use coopscan_storage::ColumnType;
use datafusion::common::ScalarValue;

/// The column types of one table.
#[derive(Clone, Debug)]
pub struct ScalarCodec {
    pub types: Vec<ColumnType>,
}

impl ScalarCodec {
    fn ty(&self, column: usize) -> Result<ColumnType, String> {
        self.types
            .get(column)
            .copied()
            .ok_or_else(|| format!("no column {column}"))
    }
}

impl ValueCodec<ScalarValue> for ScalarCodec {
    fn encode(&self, column: usize, value: &ScalarValue, out: &mut Vec<u8>) -> Result<(), String> {
        match (self.ty(column)?, value) {
            (
                ColumnType::Int32 | ColumnType::Date32,
                ScalarValue::Int32(Some(v)) | ScalarValue::Date32(Some(v)),
            ) => out.extend_from_slice(&v.to_le_bytes()),
            (ColumnType::Int64, ScalarValue::Int64(Some(v))) => {
                out.extend_from_slice(&v.to_le_bytes())
            }
            (ColumnType::Decimal { .. }, ScalarValue::Decimal128(Some(v), _, _)) => {
                out.extend_from_slice(&v.to_le_bytes())
            }
            (
                ColumnType::Char { .. } | ColumnType::Utf8,
                ScalarValue::Utf8(Some(s))
                | ScalarValue::Utf8View(Some(s))
                | ScalarValue::LargeUtf8(Some(s)),
            ) => out.extend_from_slice(s.as_bytes()),
            (ty, value) => {
                return Err(format!("a {} value for a {ty:?} column", value.data_type()))
            }
        }
        Ok(())
    }

    fn decode(&self, column: usize, bytes: &[u8]) -> Result<ScalarValue, String> {
        let fixed = |n: usize| -> Result<&[u8], String> {
            (bytes.len() == n)
                .then_some(bytes)
                .ok_or_else(|| format!("{} bytes for a {n}-byte value", bytes.len()))
        };
        Ok(match self.ty(column)? {
            ColumnType::Int32 => ScalarValue::Int32(Some(i32::from_le_bytes(array(fixed(4)?)?))),
            ColumnType::Date32 => ScalarValue::Date32(Some(i32::from_le_bytes(array(fixed(4)?)?))),
            ColumnType::Int64 => ScalarValue::Int64(Some(i64::from_le_bytes(array(fixed(8)?)?))),
            ColumnType::Decimal { precision, scale } => ScalarValue::Decimal128(
                Some(i128::from_le_bytes(array(fixed(16)?)?)),
                precision,
                scale,
            ),
            ColumnType::Char { .. } | ColumnType::Utf8 => {
                let s = std::str::from_utf8(bytes).map_err(|e| e.to_string())?;
                ScalarValue::Utf8(Some(s.to_owned()))
            }
        })
    }
}

fn array<const N: usize>(bytes: &[u8]) -> Result<[u8; N], String> {
    bytes
        .try_into()
        .map_err(|_| format!("{} bytes where {N} belong", bytes.len()))
}
