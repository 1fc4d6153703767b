//! Query kinds, query types and the query mixes of the paper's §5 (Table 2, Figure 5).
//!
//! A mix is written `SPEED-SIZE` as in Figure 5's labels: SPEED is a string of `F`
//! (FAST = TPC-H Q6) and `S` (SLOW = Q1 plus extra arithmetic) whose letters are drawn
//! uniformly, so `FFS` draws twice as many fast as slow queries; SIZE is `S` (short:
//! 1,2,5,10,20% of the table), `M` (mixed: 1,2,10,50,100%), `L` (long: 10,30,50,100%)
//! or an explicit list such as `5,20,50`. `table2` is Table 2's mix, `FS` over
//! 1,10,50,100%.

use coopscan_paper::table4::{self, COLUMNS_PER_QUERY};
use serde::Serialize;
use std::fmt;
use std::str::FromStr;

/// Figure 5's short ranges.
pub const SIZES_SHORT: &[u32] = &[1, 2, 5, 10, 20];
/// Figure 5's mixed ranges.
pub const SIZES_MIXED: &[u32] = &[1, 2, 10, 50, 100];
/// Figure 5's long ranges.
pub const SIZES_LONG: &[u32] = &[10, 30, 50, 100];
/// Table 2's ranges.
pub const SIZES_TABLE2: &[u32] = &coopscan_paper::table2::RANGE_PERCENTS;
/// The name that selects Table 2's mix.
pub const TABLE2_MIX: &str = "table2";

/// What a query computes, and so how much CPU work it does per tuple.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub enum QueryKind {
    /// FAST: TPC-H Q6, a simple aggregation; I/O bound when scanning.
    Fast,
    /// SLOW: TPC-H Q1 with extra arithmetic; CPU bound.
    Slow,
    /// Table 4's query over the synthetic relation: sums of 3 adjacent attributes
    /// from `first` (0 = A: "ABC"); I/O bound.
    Columns { first: u8 },
}

impl QueryKind {
    /// `F`, `S`, or the attributes' letters (`ABC`).
    pub fn label(self) -> String {
        match self {
            QueryKind::Fast => "F".to_string(),
            QueryKind::Slow => "S".to_string(),
            QueryKind::Columns { first } => (0..COLUMNS_PER_QUERY as u8)
                .map(|i| char::from(b'A'.saturating_add(first).saturating_add(i)))
                .collect(),
        }
    }

    /// A Table 4 query type ("BCD"), if `name` is one.
    pub fn columns(name: &str) -> Option<QueryKind> {
        let range = table4::columns_of(name)?;
        let first = u8::try_from(range.start).ok()?;
        Some(QueryKind::Columns { first })
    }
}

/// A query kind scanning `percent`% of the table: the paper's `QUERY-PERCENTAGE`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct QueryType {
    pub kind: QueryKind,
    /// Size of the scanned range, 1..=100 % of the table's rows.
    pub percent: u32,
}

impl fmt::Display for QueryType {
    /// `F-01`, `S-10`, `F-100`: two digits at least, as in Table 2; `ABC-40`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-{:02}", self.kind.label(), self.percent)
    }
}

impl Serialize for QueryType {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// A `--mix` string that does not describe a mix.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum MixError {
    #[error("mix {0:?} must look like SPEED-SIZE (e.g. FS-M, FFS-L, F-5,20,50) or be `table2`")]
    Shape(String),
    #[error("mix {mix:?}: speed letter {letter:?} is neither F (FAST) nor S (SLOW)")]
    Speed { mix: String, letter: char },
    #[error("mix {mix:?}: size {size:?} is neither S, M, L nor a comma list of percents")]
    Size { mix: String, size: String },
    #[error("mix {mix:?}: range {value:?} is not a whole percent in 1..=100")]
    Percent { mix: String, value: String },
}

/// What queries a workload draws from (see the module docs for the notation).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mix {
    /// The string it was parsed from, used as its label (Figure 5's point labels).
    pub name: String,
    /// Drawn uniformly; repeated letters weight a kind.
    pub speeds: Vec<QueryKind>,
    /// Drawn uniformly.
    pub percents: Vec<u32>,
    /// Kinds are dealt to the streams in turn (stream `i` runs `speeds[i % n]`, as
    /// Table 4) instead of drawn per query.
    pub dealt: bool,
}

impl Mix {
    /// Table 2's mix: FAST and SLOW over 1, 10, 50 and 100%.
    pub fn table2() -> Mix {
        Mix {
            name: TABLE2_MIX.to_string(),
            speeds: vec![QueryKind::Fast, QueryKind::Slow],
            percents: SIZES_TABLE2.to_vec(),
            dealt: false,
        }
    }

    /// A Table 4 family (e.g. `["ABC", "BCD"]`) over `percent`% ranges, its types
    /// dealt to the streams; `None` if a type is not 3 adjacent attributes.
    pub fn columns(family: &[&str], percent: u32) -> Option<Mix> {
        let speeds = family
            .iter()
            .map(|kind| QueryKind::columns(kind))
            .collect::<Option<Vec<QueryKind>>>()?;
        Some(Mix {
            name: format!("{}-{percent}", family.join(",")),
            speeds,
            percents: vec![percent],
            dealt: true,
        })
    }

    /// Every query type this mix can draw, sorted (FAST first, then by size).
    pub fn query_types(&self) -> Vec<QueryType> {
        let mut types: Vec<QueryType> = self
            .speeds
            .iter()
            .flat_map(|&kind| {
                self.percents
                    .iter()
                    .map(move |&percent| QueryType { kind, percent })
            })
            .collect();
        types.sort();
        types.dedup();
        types
    }
}

impl fmt::Display for Mix {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name)
    }
}

impl Serialize for Mix {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl FromStr for Mix {
    type Err = MixError;

    fn from_str(text: &str) -> Result<Mix, MixError> {
        let mix = text.trim();
        if mix.eq_ignore_ascii_case(TABLE2_MIX) {
            return Ok(Mix::table2());
        }
        let (speed, size) = mix
            .split_once('-')
            .filter(|(speed, size)| !speed.is_empty() && !size.is_empty())
            .ok_or_else(|| MixError::Shape(mix.to_string()))?;
        let percents = parse_sizes(mix, size)?;
        match parse_speeds(mix, speed) {
            Ok(speeds) => Ok(Mix {
                name: mix.to_string(),
                speeds,
                percents,
                dealt: false,
            }),
            // Not F/S letters: maybe Table 4's column types, `ABC,BCD-40`.
            Err(e) => {
                let family: Vec<String> = speed.split(',').map(str::to_ascii_uppercase).collect();
                let family: Vec<&str> = family.iter().map(String::as_str).collect();
                let columns = Mix::columns(&family, 0).ok_or(e)?;
                Ok(Mix {
                    name: mix.to_string(),
                    percents,
                    ..columns
                })
            }
        }
    }
}

fn parse_speeds(mix: &str, speed: &str) -> Result<Vec<QueryKind>, MixError> {
    speed
        .chars()
        .map(|letter| match letter.to_ascii_uppercase() {
            'F' => Ok(QueryKind::Fast),
            'S' => Ok(QueryKind::Slow),
            _ => Err(MixError::Speed {
                mix: mix.to_string(),
                letter,
            }),
        })
        .collect()
}

fn parse_sizes(mix: &str, size: &str) -> Result<Vec<u32>, MixError> {
    let named = match size.to_ascii_uppercase().as_str() {
        "S" => Some(SIZES_SHORT),
        "M" => Some(SIZES_MIXED),
        "L" => Some(SIZES_LONG),
        _ => None,
    };
    if let Some(percents) = named {
        return Ok(percents.to_vec());
    }
    if !size.chars().all(|c| c.is_ascii_digit() || c == ',') {
        return Err(MixError::Size {
            mix: mix.to_string(),
            size: size.to_string(),
        });
    }
    size.split(',')
        .map(|value| parse_percent(mix, value))
        .collect()
}

fn parse_percent(mix: &str, value: &str) -> Result<u32, MixError> {
    let bad = || MixError::Percent {
        mix: mix.to_string(),
        value: value.to_string(),
    };
    let percent: u32 = value.parse().map_err(|_| bad())?;
    if (1..=100).contains(&percent) {
        Ok(percent)
    } else {
        Err(bad())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn figure5_mixes_parse() {
        let mix: Mix = "FFS-S".parse().unwrap();
        assert_eq!(
            mix.speeds,
            vec![QueryKind::Fast, QueryKind::Fast, QueryKind::Slow]
        );
        assert_eq!(mix.percents, vec![1, 2, 5, 10, 20]);
        let mix: Mix = "F-L".parse().unwrap();
        assert_eq!(mix.speeds, vec![QueryKind::Fast]);
        assert_eq!(mix.percents, vec![10, 30, 50, 100]);
        assert_eq!(
            "fss-m".parse::<Mix>().unwrap().percents,
            vec![1, 2, 10, 50, 100]
        );
        assert_eq!(
            "S-5,20,50".parse::<Mix>().unwrap().percents,
            vec![5, 20, 50]
        );
    }

    #[test]
    fn table4_families_parse_and_are_dealt() {
        let mix: Mix = "ABC,bcd-40".parse().unwrap();
        assert!(mix.dealt);
        assert_eq!(
            mix.speeds,
            vec![
                QueryKind::Columns { first: 0 },
                QueryKind::Columns { first: 1 }
            ]
        );
        let names: Vec<String> = mix.query_types().iter().map(|t| t.to_string()).collect();
        assert_eq!(names, ["ABC-40", "BCD-40"]);
        assert_eq!(
            Mix::columns(&["ABC", "DEF"], 40).unwrap().name,
            "ABC,DEF-40"
        );
        assert!(Mix::columns(&["ABD"], 40).is_none());
        // F/S first: FFS is speeds, FGH columns, FX neither.
        assert!(!"FFS-M".parse::<Mix>().unwrap().dealt);
        assert!("FGH-M".parse::<Mix>().unwrap().dealt);
        assert!(matches!("FX-M".parse::<Mix>(), Err(MixError::Speed { .. })));
    }

    #[test]
    fn table2_mix_has_eight_types() {
        let mix: Mix = "table2".parse().unwrap();
        let names: Vec<String> = mix.query_types().iter().map(|t| t.to_string()).collect();
        assert_eq!(
            names,
            ["F-01", "F-10", "F-50", "F-100", "S-01", "S-10", "S-50", "S-100"]
        );
    }

    #[test]
    fn bad_mixes_say_what_is_wrong() {
        assert_eq!("".parse::<Mix>(), Err(MixError::Shape(String::new())));
        assert_eq!("FS".parse::<Mix>(), Err(MixError::Shape("FS".into())));
        assert_eq!("-M".parse::<Mix>(), Err(MixError::Shape("-M".into())));
        assert_eq!(
            "FX-M".parse::<Mix>(),
            Err(MixError::Speed {
                mix: "FX-M".into(),
                letter: 'X'
            })
        );
        assert_eq!(
            "FS-Q".parse::<Mix>(),
            Err(MixError::Size {
                mix: "FS-Q".into(),
                size: "Q".into()
            })
        );
        assert_eq!(
            "FS-0,10".parse::<Mix>(),
            Err(MixError::Percent {
                mix: "FS-0,10".into(),
                value: "0".into()
            })
        );
        assert_eq!(
            "FS-10,,20".parse::<Mix>(),
            Err(MixError::Percent {
                mix: "FS-10,,20".into(),
                value: "".into()
            })
        );
        let message = "FS-101".parse::<Mix>().unwrap_err().to_string();
        assert!(
            message.contains("101") && message.contains("1..=100"),
            "{message}"
        );
    }
}
