//! The two DSM choices the 2007 paper leaves open (§6.2), selectable per ABM so they can
//! be compared on the same runs: how relevance finds room for a load, and in which order
//! a load's columns are read.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// How relevance frees room for a load when pieces differ in size.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum EvictionStrategy {
    /// The paper's iterative loop: the lowest-keepRelevance piece, one at a time, until
    /// the load fits.
    #[default]
    Greedy,
    /// The paper's footnote: the *set* of pieces that loses the least
    /// keepRelevance-weighted value while freeing enough bytes (`replacer/knapsack.rs`).
    Knapsack,
}

/// The order in which a DSM load reads the columns of its chunk.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ColumnOrder {
    /// The paper's "crude approach": smallest column first, so the most columns arrive
    /// early and subset scans wake soonest.
    #[default]
    SmallestFirst,
    /// The paper's alternative: first the columns that complete some scan waiting for
    /// the chunk (starved scans first, then the one needing the fewest bytes), then the
    /// next scan's, and so on (`column_order.rs`).
    CompletesQuery,
}

impl EvictionStrategy {
    pub const ALL: [EvictionStrategy; 2] = [EvictionStrategy::Greedy, EvictionStrategy::Knapsack];

    pub fn name(self) -> &'static str {
        match self {
            EvictionStrategy::Greedy => "greedy",
            EvictionStrategy::Knapsack => "knapsack",
        }
    }
}

impl ColumnOrder {
    pub const ALL: [ColumnOrder; 2] = [ColumnOrder::SmallestFirst, ColumnOrder::CompletesQuery];

    pub fn name(self) -> &'static str {
        match self {
            ColumnOrder::SmallestFirst => "smallest-first",
            ColumnOrder::CompletesQuery => "completes-query",
        }
    }
}

impl fmt::Display for EvictionStrategy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.name())
    }
}

impl fmt::Display for ColumnOrder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.name())
    }
}

/// A name that is none of the choices.
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
#[error("unknown {what} {given:?}; expected one of {expected}")]
pub struct UnknownChoice {
    pub what: &'static str,
    pub given: String,
    /// The choices' names, comma separated.
    pub expected: String,
}

/// The one of `all` that `name` calls `given` (spaces around it ignored), or an error
/// listing every name: what each choice's `FromStr` does.
pub(crate) fn parse_choice<T: Copy>(
    all: &[T],
    name: fn(T) -> &'static str,
    what: &'static str,
    given: &str,
) -> Result<T, UnknownChoice> {
    let found = all.iter().copied().find(|&k| name(k) == given.trim());
    found.ok_or_else(|| UnknownChoice {
        what,
        given: given.to_string(),
        expected: all.iter().map(|&k| name(k)).collect::<Vec<_>>().join(", "),
    })
}

impl FromStr for EvictionStrategy {
    type Err = UnknownChoice;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        parse_choice(&Self::ALL, Self::name, "eviction strategy", s)
    }
}

impl FromStr for ColumnOrder {
    type Err = UnknownChoice;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        parse_choice(&Self::ALL, Self::name, "column order", s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_unknown_names_list_the_choices() {
        for e in EvictionStrategy::ALL {
            assert_eq!(e.name().parse::<EvictionStrategy>(), Ok(e));
        }
        for o in ColumnOrder::ALL {
            assert_eq!(o.name().parse::<ColumnOrder>(), Ok(o));
        }
        let err = "best".parse::<EvictionStrategy>().unwrap_err();
        assert!(err.to_string().contains("greedy, knapsack"), "{err}");
        let err = "first".parse::<ColumnOrder>().unwrap_err();
        assert!(
            err.to_string()
                .contains("expected one of smallest-first, completes-query"),
            "{err}"
        );
    }
}
