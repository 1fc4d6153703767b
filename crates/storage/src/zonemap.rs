//! Min/max zonemaps per chunk and column, for pruning chunks by predicates.

use serde::{Deserialize, Serialize};

use crate::column::ColumnValues;
use crate::types::ColumnType;

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

impl Zonemap {
    /// The zonemap covering both (`None` if their kinds differ): how per-chunk maps
    /// combine into a table-wide one.
    pub fn union(&self, other: &Zonemap) -> Option<Zonemap> {
        match (self, other) {
            (Zonemap::Int { min: a, max: b }, Zonemap::Int { min: c, max: d }) => {
                Some(Zonemap::Int {
                    min: *a.min(c),
                    max: *b.max(d),
                })
            }
            (Zonemap::Str { min: a, max: b }, Zonemap::Str { min: c, max: d }) => {
                Some(Zonemap::Str {
                    min: a.min(c).clone(),
                    max: b.max(d).clone(),
                })
            }
            _ => None,
        }
    }

    /// Human-readable bounds for a column of type `ty`: dates as ISO dates, decimals
    /// with their scale.
    pub fn render(&self, ty: ColumnType) -> (String, String) {
        match self {
            Zonemap::Int { min, max } => (render_int(*min, ty), render_int(*max, ty)),
            Zonemap::Str { min, max } => (min.clone(), max.clone()),
        }
    }
}

fn render_int(v: i64, ty: ColumnType) -> String {
    match ty {
        ColumnType::Date32 => civil_date(v),
        ColumnType::Decimal { scale, .. } if scale > 0 => {
            // A validated scale is at most 18; a larger one prints the scaled integer
            // rather than overflow.
            let Some(p) = 10i64.checked_pow(u32::from(scale.unsigned_abs())) else {
                return v.to_string();
            };
            let sign = if v < 0 { "-" } else { "" };
            format!(
                "{sign}{}.{:0width$}",
                (v / p).abs(),
                (v % p).abs(),
                width = scale as usize
            )
        }
        _ => v.to_string(),
    }
}

/// `YYYY-MM-DD` for days since 1970-01-01 (proleptic Gregorian; Howard Hinnant's
/// `civil_from_days`).
pub fn civil_date(days: i64) -> String {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn civil_date_matches_known_days() {
        assert_eq!(civil_date(0), "1970-01-01");
        assert_eq!(civil_date(8035), "1992-01-01"); // TPC-H STARTDATE
        assert_eq!(civil_date(10_591), "1998-12-31");
        assert_eq!(civil_date(-1), "1969-12-31");
    }

    #[test]
    fn union_covers_both_maps_and_refuses_mixed_kinds() {
        let a = Zonemap::Int { min: 3, max: 9 };
        let b = Zonemap::Int { min: -2, max: 5 };
        assert_eq!(a.union(&b), Some(Zonemap::Int { min: -2, max: 9 }));
        let s = Zonemap::Str {
            min: "b".into(),
            max: "d".into(),
        };
        let t = Zonemap::Str {
            min: "a".into(),
            max: "c".into(),
        };
        assert_eq!(
            s.union(&t),
            Some(Zonemap::Str {
                min: "a".into(),
                max: "d".into()
            })
        );
        assert_eq!(a.union(&s), None);
    }

    #[test]
    fn decimals_render_with_their_scale() {
        let ty = ColumnType::Decimal {
            precision: 15,
            scale: 2,
        };
        assert_eq!(
            Zonemap::Int {
                min: -5,
                max: 90_105
            }
            .render(ty),
            ("-0.05".to_string(), "901.05".to_string())
        );
    }
}
