//! A digest of a table's logical content, independent of layout, page and chunk
//! boundaries: the same rows give the same digest in NSM, PAX and DSM.
//!
//! Each column's values are hashed in row order in a canonical encoding (numbers as
//! `i64` little-endian, strings as `u64` length + bytes) with XXH3-64; the table
//! digest hashes the column digests in schema order.

use arrow_array::cast::AsArray;
use arrow_array::types::{Date32Type, Decimal128Type, Int32Type, Int64Type};
use arrow_array::{Array, RecordBatch};
use arrow_schema::DataType;
use xxhash_rust::xxh3::Xxh3;

use crate::error::{Result, StorageError};

pub struct ContentDigest {
    columns: Vec<Xxh3>,
    rows: u64,
}

impl ContentDigest {
    pub fn new(columns: usize) -> Self {
        ContentDigest {
            columns: (0..columns).map(|_| Xxh3::new()).collect(),
            rows: 0,
        }
    }

    /// Adds the next rows (all columns, in schema order).
    pub fn update(&mut self, batch: &RecordBatch) -> Result<()> {
        if batch.num_columns() != self.columns.len() {
            return Err(StorageError::Invalid(format!(
                "digest of {} columns fed a batch of {}",
                self.columns.len(),
                batch.num_columns()
            )));
        }
        for (h, array) in self.columns.iter_mut().zip(batch.columns()) {
            hash_array(h, array.as_ref())?;
        }
        self.rows += batch.num_rows() as u64;
        Ok(())
    }

    pub fn rows(&self) -> u64 {
        self.rows
    }

    pub fn finish(&self) -> u64 {
        let mut all = Xxh3::new();
        for h in &self.columns {
            all.update(&h.digest().to_le_bytes());
        }
        all.update(&self.rows.to_le_bytes());
        all.digest()
    }
}

fn hash_array(h: &mut Xxh3, array: &dyn Array) -> Result<()> {
    let mut num = |x: i64| h.update(&x.to_le_bytes());
    match array.data_type() {
        DataType::Int32 => array
            .as_primitive::<Int32Type>()
            .values()
            .iter()
            .for_each(|&x| num(i64::from(x))),
        DataType::Date32 => array
            .as_primitive::<Date32Type>()
            .values()
            .iter()
            .for_each(|&x| num(i64::from(x))),
        DataType::Int64 => array
            .as_primitive::<Int64Type>()
            .values()
            .iter()
            .for_each(|&x| num(x)),
        DataType::Decimal128(_, _) => array
            .as_primitive::<Decimal128Type>()
            .values()
            .iter()
            .for_each(|&x| num(x as i64)),
        DataType::Utf8 => array
            .as_string::<i32>()
            .iter()
            .flatten()
            .for_each(|s| hash_str(h, s)),
        DataType::Utf8View => array
            .as_string_view()
            .iter()
            .flatten()
            .for_each(|s| hash_str(h, s)),
        other => {
            return Err(StorageError::Invalid(format!(
                "digest of unsupported type {other}"
            )))
        }
    }
    Ok(())
}

fn hash_str(h: &mut Xxh3, s: &str) {
    h.update(&(s.len() as u64).to_le_bytes());
    h.update(s.as_bytes());
}
