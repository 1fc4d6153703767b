//! The 22 TPC-H queries: templates in `queries/tpch/qNN.sql` with `{NAME}` placeholders
//! for the specification's substitution parameters (§2.4), filled with the validation
//! values ([`Params::validation`]) or with seeded values from the specification's
//! domains ([`Params::random`], in `qgen`).
//!
//! Templates are compiled into the binary, so the SQL a user reads in the repository is
//! the SQL the engine runs.

use std::fmt;

use crate::{Result, TpchError};

/// Number of TPC-H queries.
pub const QUERY_COUNT: u8 = 22;

/// One TPC-H query, 1 to 22.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct QueryId(u8);

impl QueryId {
    /// Query `number`, if it is 1 to 22.
    pub fn new(number: u8) -> Result<Self> {
        if (1..=QUERY_COUNT).contains(&number) {
            Ok(QueryId(number))
        } else {
            Err(TpchError::Invalid(format!(
                "TPC-H has queries 1 to {QUERY_COUNT}, not {number}"
            )))
        }
    }

    /// The query's number, 1 to 22.
    pub fn number(self) -> u8 {
        self.0
    }

    /// Q1 to Q22 in order.
    pub fn all() -> impl Iterator<Item = QueryId> {
        (1..=QUERY_COUNT).map(QueryId)
    }

    /// The query's template (`queries/tpch/qNN.sql`).
    pub fn template(self) -> &'static str {
        TEMPLATES[usize::from(self.0 - 1)]
    }
}

impl fmt::Display for QueryId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Q{}", self.0)
    }
}

impl std::str::FromStr for QueryId {
    type Err = TpchError;

    /// `6`, `q6`, `Q06`.
    fn from_str(s: &str) -> Result<Self> {
        let digits = s.trim().trim_start_matches(['q', 'Q']);
        let number = digits
            .parse::<u8>()
            .map_err(|_| TpchError::Invalid(format!("not a TPC-H query: {s:?}")))?;
        QueryId::new(number)
    }
}

const TEMPLATES: [&str; QUERY_COUNT as usize] = [
    include_str!("../../../queries/tpch/q01.sql"),
    include_str!("../../../queries/tpch/q02.sql"),
    include_str!("../../../queries/tpch/q03.sql"),
    include_str!("../../../queries/tpch/q04.sql"),
    include_str!("../../../queries/tpch/q05.sql"),
    include_str!("../../../queries/tpch/q06.sql"),
    include_str!("../../../queries/tpch/q07.sql"),
    include_str!("../../../queries/tpch/q08.sql"),
    include_str!("../../../queries/tpch/q09.sql"),
    include_str!("../../../queries/tpch/q10.sql"),
    include_str!("../../../queries/tpch/q11.sql"),
    include_str!("../../../queries/tpch/q12.sql"),
    include_str!("../../../queries/tpch/q13.sql"),
    include_str!("../../../queries/tpch/q14.sql"),
    include_str!("../../../queries/tpch/q15.sql"),
    include_str!("../../../queries/tpch/q16.sql"),
    include_str!("../../../queries/tpch/q17.sql"),
    include_str!("../../../queries/tpch/q18.sql"),
    include_str!("../../../queries/tpch/q19.sql"),
    include_str!("../../../queries/tpch/q20.sql"),
    include_str!("../../../queries/tpch/q21.sql"),
    include_str!("../../../queries/tpch/q22.sql"),
];

/// The substitution parameters of one query, by placeholder name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Params {
    query: QueryId,
    values: Vec<(&'static str, String)>,
}

impl Params {
    pub(crate) fn new(query: QueryId, values: Vec<(&'static str, String)>) -> Self {
        Params { query, values }
    }

    /// The query these parameters are for.
    pub fn query(&self) -> QueryId {
        self.query
    }

    /// The value of placeholder `name`.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.values
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| v.as_str())
    }

    /// `NAME=value` pairs in the template's order, for reports.
    pub fn describe(&self) -> String {
        let pairs: Vec<String> = self
            .values
            .iter()
            .map(|(n, v)| format!("{n}={v}"))
            .collect();
        pairs.join(", ")
    }

    /// The query's SQL with every placeholder replaced. Fails if the template names a
    /// placeholder without a value, a value is never used, or a value could leave a
    /// string literal (all values come from the specification's domains, so none does).
    pub fn sql(&self) -> Result<String> {
        let template = self.query.template();
        let mut sql = String::with_capacity(template.len() + 64);
        let mut used = vec![false; self.values.len()];
        let mut rest = template;
        while let Some(open) = rest.find('{') {
            sql.push_str(&rest[..open]);
            let after = &rest[open + 1..];
            let close = after
                .find('}')
                .ok_or_else(|| self.error("an unclosed '{'"))?;
            let name = &after[..close];
            let index = self
                .values
                .iter()
                .position(|(n, _)| *n == name)
                .ok_or_else(|| self.error(&format!("no value for {{{name}}}")))?;
            let value = &self.values[index].1;
            if value.contains(['\'', '{', '}', ';']) {
                return Err(self.error(&format!("{name}={value:?} is not a plain value")));
            }
            sql.push_str(value);
            used[index] = true;
            rest = &after[close + 1..];
        }
        sql.push_str(rest);
        if let Some(unused) = used.iter().position(|u| !u) {
            return Err(self.error(&format!("{} is not in the template", self.values[unused].0)));
        }
        Ok(sql)
    }

    fn error(&self, what: &str) -> TpchError {
        TpchError::Invalid(format!("{} parameters: {what}", self.query))
    }

    /// The specification's validation parameters (the ones the published answer set was
    /// computed with). Q11's fraction is 0.0001 / SF, the rest do not depend on `sf`.
    pub fn validation(query: QueryId, sf: f64) -> Params {
        let p = |pairs: &[(&'static str, &str)]| {
            Params::new(
                query,
                pairs.iter().map(|(n, v)| (*n, (*v).to_string())).collect(),
            )
        };
        match query.0 {
            1 => p(&[("DELTA", "90")]),
            2 => p(&[("SIZE", "15"), ("TYPE", "BRASS"), ("REGION", "EUROPE")]),
            3 => p(&[("SEGMENT", "BUILDING"), ("DATE", "1995-03-15")]),
            4 => p(&[("DATE", "1993-07-01")]),
            5 => p(&[("REGION", "ASIA"), ("DATE", "1994-01-01")]),
            6 => p(&[
                ("DATE", "1994-01-01"),
                ("DISCOUNT", "0.06"),
                ("QUANTITY", "24"),
            ]),
            7 => p(&[("NATION1", "FRANCE"), ("NATION2", "GERMANY")]),
            8 => p(&[
                ("NATION", "BRAZIL"),
                ("REGION", "AMERICA"),
                ("TYPE", "ECONOMY ANODIZED STEEL"),
            ]),
            9 => p(&[("COLOR", "green")]),
            10 => p(&[("DATE", "1993-10-01")]),
            11 => Params::new(
                query,
                vec![
                    ("NATION", "GERMANY".to_string()),
                    ("FRACTION", q11_fraction(sf)),
                ],
            ),
            12 => p(&[
                ("SHIPMODE1", "MAIL"),
                ("SHIPMODE2", "SHIP"),
                ("DATE", "1994-01-01"),
            ]),
            13 => p(&[("WORD1", "special"), ("WORD2", "requests")]),
            14 => p(&[("DATE", "1995-09-01")]),
            15 => p(&[("DATE", "1996-01-01")]),
            16 => p(&[
                ("BRAND", "Brand#45"),
                ("TYPE", "MEDIUM POLISHED"),
                ("SIZE1", "49"),
                ("SIZE2", "14"),
                ("SIZE3", "23"),
                ("SIZE4", "45"),
                ("SIZE5", "19"),
                ("SIZE6", "3"),
                ("SIZE7", "36"),
                ("SIZE8", "9"),
            ]),
            17 => p(&[("BRAND", "Brand#23"), ("CONTAINER", "MED BOX")]),
            18 => p(&[("QUANTITY", "300")]),
            19 => p(&[
                ("QUANTITY1", "1"),
                ("QUANTITY2", "10"),
                ("QUANTITY3", "20"),
                ("BRAND1", "Brand#12"),
                ("BRAND2", "Brand#23"),
                ("BRAND3", "Brand#34"),
            ]),
            20 => p(&[
                ("COLOR", "forest"),
                ("DATE", "1994-01-01"),
                ("NATION", "CANADA"),
            ]),
            21 => p(&[("NATION", "SAUDI ARABIA")]),
            _ => p(&[
                ("I1", "13"),
                ("I2", "31"),
                ("I3", "23"),
                ("I4", "29"),
                ("I5", "30"),
                ("I6", "18"),
                ("I7", "17"),
            ]),
        }
    }
}

/// Q11's FRACTION, 0.0001 / SF (§2.4.11.3), as a decimal literal.
pub(crate) fn q11_fraction(sf: f64) -> String {
    let fraction = 0.0001 / sf;
    let text = format!("{fraction:.12}");
    let text = text.trim_end_matches('0');
    text.strip_suffix('.').unwrap_or(text).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_validation_set_fills_its_template_exactly() {
        for q in QueryId::all() {
            let sql = Params::validation(q, 1.0)
                .sql()
                .unwrap_or_else(|e| panic!("{q}: {e}"));
            assert!(!sql.contains('{') && !sql.contains('}'), "{q}: {sql}");
            assert!(sql.to_lowercase().contains("select"), "{q}");
        }
    }

    #[test]
    fn a_missing_or_extra_value_is_an_error() {
        let q6 = QueryId::new(6).expect("q6");
        let mut short = Params::validation(q6, 1.0);
        short.values.pop();
        assert!(short.sql().is_err());
        let mut long = Params::validation(q6, 1.0);
        long.values.push(("EXTRA", "1".into()));
        assert!(long.sql().is_err());
        let mut quoted = Params::validation(q6, 1.0);
        quoted.values[0].1 = "1994-01-01' or '1'='1".into();
        assert!(quoted.sql().is_err());
    }

    #[test]
    fn query_ids_parse_and_refuse_out_of_range() {
        assert_eq!("q6".parse::<QueryId>().expect("q6").number(), 6);
        assert_eq!("Q22".parse::<QueryId>().expect("q22").number(), 22);
        assert!("23".parse::<QueryId>().is_err());
        assert!("0".parse::<QueryId>().is_err());
        assert!("x".parse::<QueryId>().is_err());
        assert_eq!(QueryId::all().count(), 22);
    }

    #[test]
    fn q11_fraction_scales_with_sf() {
        assert_eq!(q11_fraction(1.0), "0.0001");
        assert_eq!(q11_fraction(0.1), "0.001");
        assert_eq!(q11_fraction(10.0), "0.00001");
    }
}
