//! Query results compared with the TPC-H kit's answer set (`queries/tpch/answers-sf1`,
//! `qNN.out`) or with another engine's rows.
//!
//! An answer file has a header line, then one row per line, `|`-separated and
//! space-padded, numbers rounded to two decimals. A cell matches when its trimmed text is
//! equal, or when both are numbers within the column's [`Tolerance`]. Against the answer
//! set that is the specification's validation rule (§2.1.3.5) for averages and ratios
//! (within 1 %: the published Q17 says 348406.02 where the exact average of the same
//! data is 348406.05) and one unit of the last printed digit for everything else, which
//! is stricter than the rule's $100 for sums.

use std::fmt;
use std::path::{Path, PathBuf};

use arrow_array::RecordBatch;
use arrow_cast::display::{ArrayFormatter, FormatOptions};

use crate::queries::QueryId;
use crate::{Result, TpchError};

/// How far two numbers of one column may differ.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Tolerance {
    /// Largest absolute difference.
    pub absolute: f64,
    /// Largest difference relative to the expected value.
    pub relative: f64,
}

impl Tolerance {
    /// The answer files' rounding: one unit of the last printed digit.
    pub const ROUNDED: Tolerance = Tolerance {
        absolute: 0.01,
        relative: 0.0,
    };
    /// The specification's rule for averages and ratios: 1 %, after rounding.
    pub const RATIO: Tolerance = Tolerance {
        absolute: 0.01,
        relative: 0.01,
    };
    /// Two engines' own output: floating-point values summed in another order.
    pub const ENGINES: Tolerance = Tolerance {
        absolute: 0.0,
        relative: 1e-9,
    };

    fn admits(self, expected: f64, actual: f64) -> bool {
        let diff = (expected - actual).abs();
        // The small slack keeps 0.01 apart from rounding error of the parse itself.
        diff <= self.absolute * (1.0 + 1e-9) || diff <= self.relative * expected.abs()
    }
}

/// The columns, by query, that are averages or ratios (§2.1.3.5): Q1's three averages,
/// Q8's market share, Q14's promotion revenue share, Q17's yearly average.
const RATIO_COLUMNS: [(u8, &[usize]); 4] = [(1, &[6, 7, 8]), (8, &[1]), (14, &[0]), (17, &[0])];

/// The tolerance of `column` of `query`'s answer.
pub fn answer_tolerance(query: QueryId, column: usize) -> Tolerance {
    let ratio = RATIO_COLUMNS
        .iter()
        .any(|(q, columns)| *q == query.number() && columns.contains(&column));
    if ratio {
        Tolerance::RATIO
    } else {
        Tolerance::ROUNDED
    }
}
/// Largest answer file read (the largest of the kit's, Q16, is under 1 MiB).
const MAX_ANSWER_BYTES: u64 = 64 << 20;

/// The answer set shipped with the repository.
pub fn answers_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../queries/tpch/answers-sf1")
}

/// The expected rows of one query.
#[derive(Clone, Debug, PartialEq)]
pub struct Answer {
    /// Column names of the header line, trimmed.
    pub columns: Vec<String>,
    /// Rows of trimmed cells.
    pub rows: Vec<Vec<String>>,
}

impl Answer {
    /// The answer of `query` in directory `dir` (`qNN.out`).
    pub fn load(dir: &Path, query: QueryId) -> Result<Answer> {
        let path = dir.join(format!("q{:02}.out", query.number()));
        let invalid = |what: String| TpchError::Invalid(format!("{}: {what}", path.display()));
        let meta = std::fs::metadata(&path).map_err(|e| invalid(e.to_string()))?;
        if !meta.is_file() || meta.len() > MAX_ANSWER_BYTES {
            return Err(invalid(format!(
                "not a regular file of at most {MAX_ANSWER_BYTES} bytes"
            )));
        }
        let text = std::fs::read_to_string(&path).map_err(|e| invalid(e.to_string()))?;
        Answer::parse(&text).map_err(|e| invalid(e.to_string()))
    }

    /// Parses the kit's format.
    pub fn parse(text: &str) -> Result<Answer> {
        let mut lines = text.lines().filter(|l| !l.trim().is_empty());
        let header = lines
            .next()
            .ok_or_else(|| TpchError::Invalid("an empty answer".into()))?;
        let columns: Vec<String> = split(header);
        let mut rows = Vec::new();
        for (i, line) in lines.enumerate() {
            let row = split(line);
            if row.len() != columns.len() {
                return Err(TpchError::Invalid(format!(
                    "row {} has {} cells, the header {}",
                    i + 1,
                    row.len(),
                    columns.len()
                )));
            }
            rows.push(row);
        }
        Ok(Answer { columns, rows })
    }

    /// `Ok` if `actual`, `query`'s result, has the same rows in the same order, cell by
    /// cell as the module says; otherwise the first difference.
    pub fn check(
        &self,
        query: QueryId,
        actual: &[Vec<String>],
    ) -> std::result::Result<(), Mismatch> {
        compare_rows(&self.rows, actual, |column| answer_tolerance(query, column))
    }
}

fn split(line: &str) -> Vec<String> {
    line.split('|').map(|c| c.trim().to_string()).collect()
}

/// The first difference between expected and actual rows.
#[derive(Clone, Debug, PartialEq)]
pub enum Mismatch {
    /// Different numbers of rows.
    RowCount { expected: usize, actual: usize },
    /// Row `row` has a different number of cells.
    Width {
        row: usize,
        expected: usize,
        actual: usize,
    },
    /// Cell (`row`, `column`) differs.
    Cell {
        row: usize,
        column: usize,
        expected: String,
        actual: String,
    },
}

impl fmt::Display for Mismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Mismatch::RowCount { expected, actual } => {
                write!(f, "{actual} rows where {expected} were expected")
            }
            Mismatch::Width {
                row,
                expected,
                actual,
            } => {
                write!(
                    f,
                    "row {row} has {actual} columns where {expected} were expected"
                )
            }
            Mismatch::Cell {
                row,
                column,
                expected,
                actual,
            } => write!(
                f,
                "row {row}, column {column}: {actual:?} where {expected:?} was expected"
            ),
        }
    }
}

/// Rows compared in order, cell by cell (trimmed text equal, or numbers within the
/// column's tolerance).
pub fn compare_rows(
    expected: &[Vec<String>],
    actual: &[Vec<String>],
    tolerance: impl Fn(usize) -> Tolerance,
) -> std::result::Result<(), Mismatch> {
    if expected.len() != actual.len() {
        return Err(Mismatch::RowCount {
            expected: expected.len(),
            actual: actual.len(),
        });
    }
    for (row, (e, a)) in expected.iter().zip(actual).enumerate() {
        if e.len() != a.len() {
            return Err(Mismatch::Width {
                row,
                expected: e.len(),
                actual: a.len(),
            });
        }
        for (column, (ec, ac)) in e.iter().zip(a).enumerate() {
            if !cells_match(ec, ac, tolerance(column)) {
                return Err(Mismatch::Cell {
                    row,
                    column,
                    expected: ec.clone(),
                    actual: ac.clone(),
                });
            }
        }
    }
    Ok(())
}

fn cells_match(expected: &str, actual: &str, tolerance: Tolerance) -> bool {
    let (e, a) = (expected.trim(), actual.trim());
    if e == a {
        return true;
    }
    match (e.parse::<f64>(), a.parse::<f64>()) {
        (Ok(e), Ok(a)) if e.is_finite() && a.is_finite() => tolerance.admits(e, a),
        _ => false,
    }
}

/// Rows of `batches` as text cells, in order (nulls as `NULL`, dates as `YYYY-MM-DD`,
/// decimals with their scale's digits).
pub fn rows_of(batches: &[RecordBatch]) -> Result<Vec<Vec<String>>> {
    rows_with_null(batches, "NULL")
}

/// [`rows_of`] with nulls written as `null`.
pub fn rows_with_null(batches: &[RecordBatch], null: &str) -> Result<Vec<Vec<String>>> {
    let options = FormatOptions::default().with_null(null);
    let mut rows = Vec::new();
    for batch in batches {
        let formatters = batch
            .columns()
            .iter()
            .map(|c| ArrayFormatter::try_new(c.as_ref(), &options))
            .collect::<std::result::Result<Vec<_>, _>>()
            .map_err(|e| TpchError::Invalid(format!("formatting a result: {e}")))?;
        for r in 0..batch.num_rows() {
            rows.push(formatters.iter().map(|f| f.value(r).to_string()).collect());
        }
    }
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_shipped_answer_parses() {
        for q in QueryId::all() {
            let answer = Answer::load(&answers_dir(), q).unwrap_or_else(|e| panic!("{q}: {e}"));
            assert!(!answer.rows.is_empty(), "{q}");
        }
        let q1 = Answer::load(&answers_dir(), QueryId::new(1).expect("q1")).expect("q1");
        assert_eq!(q1.rows.len(), 4);
        assert_eq!(q1.rows[0][0], "A");
        assert_eq!(q1.rows[0][9], "1478493");
    }

    #[test]
    fn numbers_match_within_their_columns_tolerance_and_text_exactly() {
        let q17 = QueryId::new(17).expect("q17");
        let q1 = QueryId::new(1).expect("q1");
        let ratio = answer_tolerance(q17, 0);
        assert!(cells_match("348406.02", "348406.05", ratio));
        assert!(cells_match(
            "25.52",
            "25.522005853257337",
            answer_tolerance(q1, 6)
        ));
        assert!(!cells_match("25.52", "25.90", answer_tolerance(q1, 6)));
        let sum = answer_tolerance(q1, 3);
        assert!(cells_match("0.05", "0.049985", sum));
        assert!(cells_match("1995", "1995.0", sum));
        assert!(cells_match("53758257134.87", "53758257134.88", sum));
        assert!(!cells_match("56586554400.73", "56586554401.73", sum));
        assert!(!cells_match("1478493", "1478494", sum));
        assert!(!cells_match(
            "Supplier#000005359",
            "Supplier#000005358",
            sum
        ));
        assert!(!cells_match("inf", "inf1", sum));
        let engines = Tolerance::ENGINES;
        assert!(cells_match("0.30000000000000004", "0.3", engines));
        assert!(!cells_match("0.31", "0.3", engines));
    }

    #[test]
    fn a_difference_names_its_place() {
        let expected = vec![vec!["A".to_string(), "1.00".to_string()]];
        let wrong = vec![vec!["A".to_string(), "2.00".to_string()]];
        let exact = |_| Tolerance::ENGINES;
        assert!(matches!(
            compare_rows(&expected, &wrong, exact),
            Err(Mismatch::Cell {
                row: 0,
                column: 1,
                ..
            })
        ));
        assert!(matches!(
            compare_rows(&expected, &[], exact),
            Err(Mismatch::RowCount {
                expected: 1,
                actual: 0
            })
        ));
    }

    #[test]
    fn malformed_answers_are_errors() {
        assert!(Answer::parse("").is_err());
        assert!(Answer::parse("a|b\n1|2|3\n").is_err());
        assert!(Answer::load(Path::new("/dev"), QueryId::new(1).expect("q1")).is_err());
    }
}
