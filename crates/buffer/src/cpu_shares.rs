//! How the cores are shared among the scans that decode at once: equally (the papers'
//! model: every query a process the operating system treats alike), or shorter scans
//! first.
//!
//! Relevance serves a short query's chunks early (2007 paper §4: the fewer chunks a
//! scan still needs, the higher its priority), but when the queries saturate the cores
//! a short query then waits for the CPU behind the long ones. With `ShortFirst` a scan
//! of `c` chunks runs `ilog2(c)` nice levels below one of a single chunk: under Linux's
//! CFS each level weighs 1.25 × less, so a scan of twice the chunks gets 0.8 × the
//! share of a core, and nobody starves. In the simulator this lowers relevance's
//! normalized latency on Table 2 at the paper's balance by about a fifth
//! (docs/performance.md, "Shorter scans first on the CPU").
//!
//! Pure: the runtime's feeders turn [`CpuShares::nice_steps`] into a nice value, the
//! simulator's CPU turns [`CpuShares::weight`] into a share of its cores.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

use crate::strategy::{parse_choice, UnknownChoice};

/// The most nice levels a scan is lowered by: a feeder already runs a few levels below
/// the loader, and Linux's lowest priority is nice 19.
pub const MAX_NICE_STEPS: u8 = 14;

/// How much less a thread one nice level lower weighs under Linux's CFS (its
/// `sched_prio_to_weight` table: about 10 % of a core per level).
pub const NICE_STEP_WEIGHT: f64 = 1.25;

/// How the cores are shared among scans that decode at the same time.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CpuShares {
    /// Every scan alike (the papers' model).
    #[default]
    Equal,
    /// A scan's share falls with the chunks it reads: one nice level per doubling.
    ShortFirst,
}

impl CpuShares {
    pub const ALL: [CpuShares; 2] = [CpuShares::Equal, CpuShares::ShortFirst];

    pub fn name(self) -> &'static str {
        match self {
            CpuShares::Equal => "equal",
            CpuShares::ShortFirst => "short-first",
        }
    }

    /// Nice levels below the others' a scan of `chunks` chunks runs at.
    pub fn nice_steps(self, chunks: u32) -> u8 {
        match self {
            CpuShares::Equal => 0,
            // ilog2 of a u32 is at most 31, so the cast cannot truncate.
            CpuShares::ShortFirst => (chunks.max(1).ilog2() as u8).min(MAX_NICE_STEPS),
        }
    }

    /// The weight of a scan of `chunks` chunks beside a scan of one chunk (1.0): what
    /// CFS gives a thread [`CpuShares::nice_steps`] levels lower.
    pub fn weight(self, chunks: u32) -> f64 {
        NICE_STEP_WEIGHT.powi(-i32::from(self.nice_steps(chunks)))
    }
}

impl fmt::Display for CpuShares {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.name())
    }
}

impl FromStr for CpuShares {
    type Err = UnknownChoice;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        parse_choice(&Self::ALL, Self::name, "CPU shares", s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_nice_level_per_doubling_of_the_chunks_and_never_past_the_cap() {
        let short = CpuShares::ShortFirst;
        let steps: Vec<u8> = [0, 1, 2, 3, 4, 7, 8, 200, u32::MAX]
            .iter()
            .map(|&c| short.nice_steps(c))
            .collect();
        assert_eq!(steps, [0, 0, 1, 1, 2, 2, 3, 7, MAX_NICE_STEPS]);
        assert!((short.weight(4) - 1.0 / 1.5625).abs() < 1e-12);
        assert!(short.weight(u32::MAX) > 0.0);
        for c in [0, 1, 50, u32::MAX] {
            assert_eq!(CpuShares::Equal.nice_steps(c), 0);
            assert_eq!(CpuShares::Equal.weight(c), 1.0);
        }
    }

    #[test]
    fn names_round_trip() {
        for s in CpuShares::ALL {
            assert_eq!(s.name().parse::<CpuShares>(), Ok(s));
        }
        let err = "fair".parse::<CpuShares>().unwrap_err();
        assert!(err.to_string().contains("equal, short-first"), "{err}");
    }
}
