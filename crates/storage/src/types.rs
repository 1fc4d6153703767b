//! Column types of coopscan tables and their mapping to Arrow.
//!
//! Everything TPC-H needs: 32/64-bit integers, decimals held as scaled `i64`
//! (TPC-H's decimal(15,2)), dates (days since the epoch), fixed-width strings
//! (`CHAR(n)`, stored zero-padded to `n` bytes) and variable-length strings.
//! Columns are never null: TPC-H has no nulls and the writer rejects them.

use std::sync::Arc;

use arrow_schema::{DataType, Field, Schema, SchemaRef};
use serde::{Deserialize, Serialize};

use crate::error::{Result, StorageError};

/// Largest decimal precision that fits a scaled `i64`.
pub const MAX_DECIMAL_PRECISION: u8 = 18;
/// Most columns a table may have: far beyond TPC-H's 16, small enough that a hostile
/// manifest cannot make per-column allocations large.
pub const MAX_COLUMNS: usize = 4096;
/// Longest column name, in bytes.
pub const MAX_COLUMN_NAME_BYTES: usize = 256;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ColumnType {
    Int32,
    Int64,
    /// Scaled integer: the value `v` means `v / 10^scale`.
    Decimal {
        precision: u8,
        scale: i8,
    },
    /// Days since 1970-01-01.
    Date32,
    /// Fixed-width string of `len` bytes, right-padded with zero bytes on disk.
    Char {
        len: u16,
    },
    Utf8,
}

/// How a column's values are held in memory and in minipages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Physical {
    I32,
    I64,
    /// Fixed `n` bytes per value (zero-padded).
    FixedBytes(usize),
    /// Offsets + data.
    VarBytes,
}

impl ColumnType {
    pub fn physical(self) -> Physical {
        match self {
            ColumnType::Int32 | ColumnType::Date32 => Physical::I32,
            ColumnType::Int64 | ColumnType::Decimal { .. } => Physical::I64,
            ColumnType::Char { len } => Physical::FixedBytes(usize::from(len)),
            ColumnType::Utf8 => Physical::VarBytes,
        }
    }

    pub fn arrow_type(self) -> DataType {
        match self {
            ColumnType::Int32 => DataType::Int32,
            ColumnType::Int64 => DataType::Int64,
            ColumnType::Decimal { precision, scale } => DataType::Decimal128(precision, scale),
            ColumnType::Date32 => DataType::Date32,
            ColumnType::Char { .. } | ColumnType::Utf8 => DataType::Utf8,
        }
    }

    /// The coopscan type for an Arrow type (strings become `Utf8`; callers that know a
    /// column is `CHAR(n)` override it).
    pub fn from_arrow(dt: &DataType) -> Result<Self> {
        Ok(match dt {
            DataType::Int32 => ColumnType::Int32,
            DataType::Int64 => ColumnType::Int64,
            DataType::Date32 => ColumnType::Date32,
            DataType::Decimal128(p, s) if *p <= MAX_DECIMAL_PRECISION => ColumnType::Decimal {
                precision: *p,
                scale: *s,
            },
            DataType::Utf8 | DataType::Utf8View | DataType::LargeUtf8 => ColumnType::Utf8,
            other => {
                return Err(StorageError::Schema(format!(
                    "unsupported Arrow type {other}"
                )))
            }
        })
    }

    /// The type's own constraints. The writer and the manifest loader both run this:
    /// a type read from a file is as untrusted as one given by a caller.
    pub fn validate(self) -> Result<()> {
        match self {
            ColumnType::Decimal { precision, .. }
                if precision == 0 || precision > MAX_DECIMAL_PRECISION =>
            {
                Err(StorageError::Schema(format!(
                    "decimal precision {precision} outside 1..={MAX_DECIMAL_PRECISION}"
                )))
            }
            // Negative scales are legal in Arrow but nothing here needs them, and a
            // scale above the precision has no digits left for the integer part.
            ColumnType::Decimal { precision, scale }
                if scale < 0 || scale.unsigned_abs() > precision =>
            {
                Err(StorageError::Schema(format!(
                    "decimal({precision},{scale}): scale outside 0..={precision}"
                )))
            }
            ColumnType::Char { len: 0 } => {
                Err(StorageError::Schema("CHAR(0) is not allowed".into()))
            }
            _ => Ok(()),
        }
    }
}

impl std::fmt::Display for ColumnType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ColumnType::Int32 => write!(f, "int32"),
            ColumnType::Int64 => write!(f, "int64"),
            ColumnType::Decimal { precision, scale } => write!(f, "decimal({precision},{scale})"),
            ColumnType::Date32 => write!(f, "date"),
            ColumnType::Char { len } => write!(f, "char({len})"),
            ColumnType::Utf8 => write!(f, "varchar"),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ColumnDef {
    pub name: String,
    #[serde(rename = "type")]
    pub ty: ColumnType,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TableSchema {
    pub columns: Vec<ColumnDef>,
}

impl TableSchema {
    pub fn new(columns: Vec<ColumnDef>) -> Result<Self> {
        let schema = TableSchema { columns };
        schema.validate()?;
        Ok(schema)
    }

    /// At least one and at most [`MAX_COLUMNS`] columns, valid types, distinct
    /// non-empty names. Run on every schema, whether built by a caller or read from a
    /// manifest.
    pub fn validate(&self) -> Result<()> {
        let columns = &self.columns;
        if columns.is_empty() || columns.len() > MAX_COLUMNS {
            return Err(StorageError::Schema(format!(
                "a table needs 1..={MAX_COLUMNS} columns, found {}",
                columns.len()
            )));
        }
        let mut names = std::collections::HashSet::with_capacity(columns.len());
        for c in columns {
            if c.name.is_empty() || c.name.len() > MAX_COLUMN_NAME_BYTES {
                return Err(StorageError::Schema(format!(
                    "column name {:?} must be 1..={MAX_COLUMN_NAME_BYTES} bytes",
                    c.name
                )));
            }
            c.ty.validate().map_err(|e| match e {
                StorageError::Schema(m) => {
                    StorageError::Schema(format!("column {:?}: {m}", c.name))
                }
                other => other,
            })?;
            if !names.insert(c.name.as_str()) {
                return Err(StorageError::Schema(format!(
                    "duplicate column name {:?}",
                    c.name
                )));
            }
        }
        Ok(())
    }

    /// Schema derived from an Arrow schema (all strings as `Utf8`).
    pub fn from_arrow(schema: &Schema) -> Result<Self> {
        let columns = schema
            .fields()
            .iter()
            .map(|f| {
                Ok(ColumnDef {
                    name: f.name().clone(),
                    ty: ColumnType::from_arrow(f.data_type())?,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        TableSchema::new(columns)
    }

    pub fn len(&self) -> usize {
        self.columns.len()
    }

    pub fn is_empty(&self) -> bool {
        self.columns.is_empty()
    }

    pub fn index_of(&self, name: &str) -> Option<usize> {
        self.columns.iter().position(|c| c.name == name)
    }

    pub fn arrow_schema(&self) -> SchemaRef {
        self.arrow_projection(&(0..self.columns.len()).collect::<Vec<_>>())
    }

    pub fn arrow_projection(&self, projection: &[usize]) -> SchemaRef {
        let fields: Vec<Field> = projection
            .iter()
            .map(|&i| {
                let c = &self.columns[i];
                Field::new(&c.name, c.ty.arrow_type(), false)
            })
            .collect();
        Arc::new(Schema::new(fields))
    }
}
