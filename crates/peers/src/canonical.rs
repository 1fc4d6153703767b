//! The benchmark's SQL as a peer runs it, and a peer's raw result in the canonical form
//! DataFusion's results are compared in (`crates/lab/src/engine.rs`,
//! `canonical_rows`: cells joined by `|`, rows sorted; decimals at the scale
//! DataFusion's types give them).
//!
//! The query text is the benchmark's own (`coopscan_exec::queries`) with two changes:
//! the row range `_rowid >= a AND _rowid < b` becomes the peer's row-number column
//! `l_rowid` (plus an engine-specific predicate, e.g. PostgreSQL's TID range), and
//! SLOW's `avg(x)` becomes `sum(x)`: the canonical average is computed here from the
//! exact sum and `count(*)`, truncated to 6 decimals as DataFusion's decimal average
//! is (DuckDB's `avg` of a decimal is a double, PostgreSQL's rounds to 16 digits). The
//! engines do the same work either way (an average is a sum and a count).

use crate::error::PeerError;
use coopscan_bench::{QueryInstance, QueryKind};
use std::ops::Range;

/// Scale of each of DataFusion's result columns (Decimal128(38, s)).
const FAST_SCALE: u32 = 4;
const SUM_QTY_SCALE: u32 = 2;
const SUM_PRICE_SCALE: u32 = 2;
const SUM_DISC_PRICE_SCALE: u32 = 4;
const SUM_CHARGE_SCALE: u32 = 6;
/// avg of a Decimal(15, 2) is Decimal(19, 6).
const AVG_SCALE: u32 = 6;
/// The inputs of the three averages (l_quantity, l_extendedprice, l_discount).
const AVG_INPUT_SCALE: u32 = 2;
const EXTRA_SCALE: u32 = 6;
/// SLOW's columns before the extra aggregates.
const SLOW_FIXED_COLUMNS: usize = 10;
const COUNT_COLUMN: usize = 9;

/// Rewrites the benchmark's SQL for a peer (see the module comment). `extra` is
/// appended to the row-range predicate (e.g. ` AND ctid >= ...`).
pub fn peer_sql(sql: &str, rows: &Range<u64>, extra: &str) -> Result<String, PeerError> {
    let range = format!("_rowid >= {} AND _rowid < {}", rows.start, rows.end);
    if sql.matches(&range).count() != 1 {
        return Err(PeerError::engine(
            "peers",
            format!("the benchmark's SQL no longer has the row range `{range}` once: {sql}"),
        ));
    }
    let replacement = format!(
        "l_rowid >= {} AND l_rowid < {}{extra}",
        rows.start, rows.end
    );
    Ok(sql
        .replacen(&range, &replacement, 1)
        .replace("avg(", "sum("))
}

/// One raw result row: each cell as text, `None` for SQL NULL.
pub type RawRow = Vec<Option<String>>;

/// The canonical rows of query `q` from a peer's raw rows.
pub fn canonical(q: &QueryInstance, raw: &[RawRow]) -> Result<Vec<String>, PeerError> {
    let bad = |message: String| PeerError::Result {
        query: q.to_string(),
        message,
    };
    let mut rows = Vec::with_capacity(raw.len());
    for row in raw {
        let cell = |i: usize| -> Result<Option<&str>, PeerError> {
            row.get(i).map(Option::as_deref).ok_or_else(|| {
                bad(format!(
                    "row has {} columns, wanted more than {i}",
                    row.len()
                ))
            })
        };
        let decimal = |i: usize, scale: u32| -> Result<String, PeerError> {
            match cell(i)? {
                None => Ok(String::new()),
                Some(text) => {
                    let v = parse_decimal(text, scale).map_err(bad)?;
                    Ok(format_decimal(v, scale))
                }
            }
        };
        let line = match q.query_type.kind {
            QueryKind::Fast => decimal(0, FAST_SCALE)?,
            QueryKind::Slow => {
                let text = |i: usize| cell(i).map(|c| c.unwrap_or("").to_string());
                let count: i128 = cell(COUNT_COLUMN)?
                    .ok_or_else(|| bad("count(*) is NULL".to_string()))?
                    .parse()
                    .map_err(|e| bad(format!("count(*): {e}")))?;
                let avg = |i: usize| -> Result<String, PeerError> {
                    let sum = cell(i)?.ok_or_else(|| bad(format!("sum in column {i} is NULL")))?;
                    let sum = parse_decimal(sum, AVG_INPUT_SCALE).map_err(bad)?;
                    if count == 0 {
                        return Err(bad("a group with count 0".to_string()));
                    }
                    let shift = 10i128.pow(AVG_SCALE - AVG_INPUT_SCALE);
                    // Truncating division, as DataFusion's decimal average.
                    Ok(format_decimal(sum * shift / count, AVG_SCALE))
                };
                let mut cells = vec![
                    text(0)?,
                    text(1)?,
                    decimal(2, SUM_QTY_SCALE)?,
                    decimal(3, SUM_PRICE_SCALE)?,
                    decimal(4, SUM_DISC_PRICE_SCALE)?,
                    decimal(5, SUM_CHARGE_SCALE)?,
                    avg(6)?,
                    avg(7)?,
                    avg(8)?,
                    count.to_string(),
                ];
                for i in SLOW_FIXED_COLUMNS..row.len() {
                    cells.push(decimal(i, EXTRA_SCALE)?);
                }
                cells.join("|")
            }
            // Table 4's integer sums.
            QueryKind::Columns { .. } => (0..row.len())
                .map(|i| decimal(i, 0))
                .collect::<Result<Vec<String>, PeerError>>()?
                .join("|"),
        };
        rows.push(line);
    }
    rows.sort();
    Ok(rows)
}

/// `text` (`-12.345`, `7`, `0.50`) as an integer scaled by 10^`scale`; an error if it
/// has nonzero digits beyond `scale` (the value would change).
pub fn parse_decimal(text: &str, scale: u32) -> Result<i128, String> {
    let t = text.trim();
    let (negative, digits) = match t.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, t.strip_prefix('+').unwrap_or(t)),
    };
    let (int, frac) = digits.split_once('.').unwrap_or((digits, ""));
    let all_digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    if int.is_empty() && frac.is_empty() || !all_digits(int) || !all_digits(frac) {
        return Err(format!("{text:?} is not a decimal number"));
    }
    let scale = scale as usize;
    let (kept, dropped) = frac.split_at(frac.len().min(scale));
    if dropped.bytes().any(|b| b != b'0') {
        return Err(format!("{text:?} has more than {scale} decimals"));
    }
    let mut value: i128 = 0;
    for b in int
        .bytes()
        .chain(kept.bytes())
        .chain(std::iter::repeat_n(b'0', scale - kept.len()))
    {
        value = value
            .checked_mul(10)
            .and_then(|v| v.checked_add(i128::from(b - b'0')))
            .ok_or_else(|| format!("{text:?} overflows 128 bits"))?;
    }
    Ok(if negative { -value } else { value })
}

/// `value` / 10^`scale` with exactly `scale` decimals, as Arrow displays a decimal.
pub fn format_decimal(value: i128, scale: u32) -> String {
    let digits = value.unsigned_abs().to_string();
    let scale = scale as usize;
    let padded = if digits.len() <= scale {
        format!("{}{digits}", "0".repeat(scale + 1 - digits.len()))
    } else {
        digits
    };
    let (int, frac) = padded.split_at(padded.len() - scale);
    let sign = if value < 0 { "-" } else { "" };
    if scale == 0 {
        format!("{sign}{int}")
    } else {
        format!("{sign}{int}.{frac}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use coopscan_bench::QueryType;

    #[test]
    fn decimals_round_trip_at_a_scale() {
        assert_eq!(parse_decimal("12.5", 4), Ok(125_000));
        assert_eq!(parse_decimal("-0.0700", 2), Ok(-7));
        assert_eq!(parse_decimal("3", 2), Ok(300));
        assert!(parse_decimal("1.005", 2).is_err());
        assert!(parse_decimal("1e5", 2).is_err());
        assert!(parse_decimal("", 2).is_err());
        assert_eq!(format_decimal(125_000, 4), "12.5000");
        assert_eq!(format_decimal(-7, 2), "-0.07");
        assert_eq!(format_decimal(5, 0), "5");
        assert_eq!(format_decimal(0, 6), "0.000000");
    }

    #[test]
    fn rewrites_the_range_and_averages() {
        let sql = "SELECT avg(l_quantity) FROM t WHERE x\n  AND _rowid >= 5 AND _rowid < 9";
        let got = peer_sql(sql, &(5..9), " AND ctid < '(3,0)'").unwrap();
        assert_eq!(
            got,
            "SELECT sum(l_quantity) FROM t WHERE x\n  AND l_rowid >= 5 AND l_rowid < 9 AND ctid < '(3,0)'"
        );
        assert!(peer_sql(sql, &(5..10), "").is_err());
    }

    fn query(kind: QueryKind) -> QueryInstance {
        QueryInstance {
            id: 1,
            stream: 0,
            index: 0,
            query_type: QueryType { kind, percent: 10 },
            rows: 0..10,
            in_order: false,
        }
    }

    #[test]
    fn slow_rows_get_truncated_averages_and_scales() {
        let s = |v: &str| Some(v.to_string());
        let raw = vec![vec![
            s("N"),
            s("O"),
            s("10"),
            s("20.5"),
            s("1.25"),
            s("1"),
            s("10.00"),
            s("20.50"),
            s("0.10"),
            s("3"),
            s("7.1234560"),
        ]];
        let got = canonical(&query(QueryKind::Slow), &raw).unwrap();
        assert_eq!(
            got,
            vec!["N|O|10.00|20.50|1.2500|1.000000|3.333333|6.833333|0.033333|3|7.123456"]
        );
        let fast = canonical(&query(QueryKind::Fast), &[vec![None]]).unwrap();
        assert_eq!(fast, vec![String::new()]);
    }
}
