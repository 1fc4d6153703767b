//! The papers' two queries as SQL (VLDB 2007 §5.1): FAST is TPC-H Q6, a simple
//! aggregation that is I/O bound; SLOW is TPC-H Q1 with extra arithmetic that makes it
//! CPU bound. Both run over a tuple range, expressed as `_rowid` bounds that the
//! provider turns into the scan's range (an Exact pushdown).
//!
//! The TPC-H substitution parameters are the validation values (Q6: 1994-01-01, 0.06,
//! 24; Q1: 90 days). Q1's `interval '90' day (3)` is written without `(3)`, which
//! DataFusion does not parse.

use std::ops::Range;

/// Extra aggregates SLOW adds to Q1 by default, the benchmark's included (the one
/// definition of SLOW). With 16, S-100 costs about 6.7× the CPU of F-100 at SF1 (3.9 s
/// vs 0.58 s, docs/performance.md), so the paper's balance — S-100 CPU at 1.75 × the
/// table's read time — leaves F-100 at about a quarter of the read time: clearly I/O
/// bound, as in the paper.
pub const SLOW_EXTRA_DEFAULT: u32 = 16;
/// Most extra aggregates SLOW may have (`bench --slow-extra`): 16× the default's extra
/// work, far past anything the paper's balance needs (the calibration sets the device
/// to whatever SLOW costs; only a FAST too heavy for it calls for more, see
/// `coopscan_bench::calibration`). Every SLOW query plans and evaluates all of them:
/// `--slow-extra 100000` was still calibrating after 45 s.
pub const SLOW_EXTRA_MAX: u32 = 256;

/// The columns FAST reads (Q6's): in DSM its scans load these only.
pub const FAST_COLUMNS: [&str; 4] = ["l_quantity", "l_extendedprice", "l_discount", "l_shipdate"];
/// The columns SLOW reads (Q1's): FAST's and three more.
pub const SLOW_COLUMNS: [&str; 7] = [
    "l_quantity",
    "l_extendedprice",
    "l_discount",
    "l_tax",
    "l_returnflag",
    "l_linestatus",
    "l_shipdate",
];

/// Which query, and for SLOW how much extra per-tuple work.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Query {
    /// TPC-H Q6.
    Fast,
    /// TPC-H Q1 plus `extra` additional sums, each of a distinct nested decimal
    /// expression over every qualifying tuple (distinct so that common-subexpression
    /// elimination cannot share them).
    Slow { extra: u32 },
    /// The 2007 paper's Table 4 query over the synthetic relation: the sums of
    /// [`COLUMNS_PER_QUERY`] adjacent attributes from `first` (0 = `a`).
    Columns { first: usize },
}

impl Query {
    /// The SQL over `table`, restricted to tuples `rows` (all tuples if `None`).
    pub fn sql(self, table: &str, rows: Option<Range<u64>>) -> String {
        match self {
            Query::Fast => fast_sql(table, rows),
            Query::Slow { extra } => slow_sql(table, rows, extra),
            Query::Columns { first } => columns_sql(table, first, rows),
        }
    }
}

pub use coopscan_paper::table4::{attribute_name, COLUMNS_PER_QUERY};

/// Table 4's query: `sum(a), sum(b), sum(c)` for `first` = 0, over `rows`.
pub fn columns_sql(table: &str, first: usize, rows: Option<Range<u64>>) -> String {
    let sums: Vec<String> = (first..first.saturating_add(COLUMNS_PER_QUERY))
        .map(|c| {
            let name = attribute_name(c);
            format!("sum({name}) AS sum_{name}")
        })
        .collect();
    let filter = rows.map_or_else(String::new, |r| {
        format!("\nWHERE _rowid >= {} AND _rowid < {}", r.start, r.end)
    });
    format!("SELECT {}\nFROM {table}{filter}", sums.join(", "))
}

/// `AND _rowid >= a AND _rowid < b`, or nothing.
fn range_predicate(rows: Option<Range<u64>>) -> String {
    rows.map_or_else(String::new, |r| {
        format!("\n  AND _rowid >= {} AND _rowid < {}", r.start, r.end)
    })
}

/// TPC-H Q6 over `rows`.
pub fn fast_sql(table: &str, rows: Option<Range<u64>>) -> String {
    format!(
        "SELECT sum(l_extendedprice * l_discount) AS revenue
FROM {table}
WHERE l_shipdate >= DATE '1994-01-01'
  AND l_shipdate < DATE '1994-01-01' + INTERVAL '1' YEAR
  AND l_discount BETWEEN 0.06 - 0.01 AND 0.06 + 0.01
  AND l_quantity < 24{}",
        range_predicate(rows)
    )
}

/// TPC-H Q1 over `rows` with `extra` additional aggregates (0 gives plain Q1).
pub fn slow_sql(table: &str, rows: Option<Range<u64>>, extra: u32) -> String {
    let extra_columns: String = (1..=extra)
        .map(|i| {
            format!(
                ",\n  sum(((l_extendedprice + {i}) * (1 - l_discount) + l_quantity * {i}) \
                 * (1 + l_tax)) AS extra_{i}"
            )
        })
        .collect();
    format!(
        "SELECT
  l_returnflag,
  l_linestatus,
  sum(l_quantity) AS sum_qty,
  sum(l_extendedprice) AS sum_base_price,
  sum(l_extendedprice * (1 - l_discount)) AS sum_disc_price,
  sum(l_extendedprice * (1 - l_discount) * (1 + l_tax)) AS sum_charge,
  avg(l_quantity) AS avg_qty,
  avg(l_extendedprice) AS avg_price,
  avg(l_discount) AS avg_disc,
  count(*) AS count_order{extra_columns}
FROM {table}
WHERE l_shipdate <= DATE '1998-12-01' - INTERVAL '90' DAY{}
GROUP BY l_returnflag, l_linestatus
ORDER BY l_returnflag, l_linestatus",
        range_predicate(rows)
    )
}
