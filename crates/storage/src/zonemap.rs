//! Min/max zonemaps per chunk and column, for pruning chunks by predicates.

use serde::{Deserialize, Serialize};

use crate::column::ColumnValues;

/// Strings longer than this are not summarised (a truncated max would be wrong).
pub const ZONEMAP_MAX_STR_BYTES: usize = 32;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Zonemap {
    /// Integers, dates (days) and decimals (scaled) as `i64`.
    Int {
        min: i64,
        max: i64,
    },
    Str {
        min: String,
        max: String,
    },
}

/// Accumulates a zonemap over appended values.
#[derive(Debug, Clone, Default)]
pub struct ZonemapBuilder {
    int: Option<(i64, i64)>,
    str: Option<(Vec<u8>, Vec<u8>)>,
    /// Set once a string too long to summarise was seen.
    too_long: bool,
}

impl ZonemapBuilder {
    pub fn add(&mut self, values: &ColumnValues, rows: std::ops::Range<usize>) {
        match values {
            ColumnValues::I32(v) => v[rows].iter().for_each(|&x| self.add_int(i64::from(x))),
            ColumnValues::I64(v) => v[rows].iter().for_each(|&x| self.add_int(x)),
            ColumnValues::Bytes { .. } => rows.for_each(|i| self.add_str(values.str_at(i))),
        }
    }

    fn add_int(&mut self, x: i64) {
        self.int = Some(match self.int {
            None => (x, x),
            Some((lo, hi)) => (lo.min(x), hi.max(x)),
        });
    }

    fn add_str(&mut self, s: &[u8]) {
        if self.too_long || s.len() > ZONEMAP_MAX_STR_BYTES {
            self.too_long = true;
            return;
        }
        match &mut self.str {
            None => self.str = Some((s.to_vec(), s.to_vec())),
            Some((lo, hi)) => {
                if s < lo.as_slice() {
                    *lo = s.to_vec();
                }
                if s > hi.as_slice() {
                    *hi = s.to_vec();
                }
            }
        }
    }

    pub fn finish(self) -> Option<Zonemap> {
        if let Some((min, max)) = self.int {
            return Some(Zonemap::Int { min, max });
        }
        match (self.too_long, self.str) {
            (false, Some((lo, hi))) => Some(Zonemap::Str {
                min: String::from_utf8_lossy(&lo).into_owned(),
                max: String::from_utf8_lossy(&hi).into_owned(),
            }),
            _ => None,
        }
    }
}
