//! Clotho (VLDB 2004) §7.2's microbenchmarks, defined once: the relation, the queries,
//! the points swept and what the paper found. `coopscan bench --preset clotho-…` runs
//! them on the real engine over NSM, PAX, DSM and CSM (`coopscan_lab::clotho`).
//!
//! The relation (§7.2): 15 attributes of 8-byte integers, 8 M tuples, values uniform;
//! here the 2007 paper's synthetic relation (`coopscan gen --synthetic`), whose first
//! attribute `a` is uniform in [0, 2^32) and is the one predicates and indexes use.

/// Attributes of the microbenchmark relation.
pub const ATTRIBUTES: usize = 15;
/// Tuples of the microbenchmark relation.
pub const ROWS: u64 = 8_000_000;
/// The attribute's values lie in [0, VALUE_RANGE).
pub const VALUE_RANGE: u64 = 1 << 32;
/// The disk the experiments read from unless told otherwise: the bandwidth and the
/// per-request time of the paper's era of disks (the Atlas 10k III streams about
/// 50-80 MB/s; a random access costs a few ms), as the other Clotho figures here use.
pub const BANDWIDTH_MB_S: f64 = 150.0;
pub const LATENCY_MS: f64 = 4.0;

/// What is swept, and how each point's query reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClothoQuery {
    /// Figure 7a: a full scan projecting the first k attributes (points: k).
    Projectivity,
    /// Figure 7c: a range selection on `a` of the given selected percentage with a
    /// payload of four attributes, as an S-scan and as an SI-scan (points: percent).
    Selectivity,
    /// Figure 8a: point queries through a non-clustered index on `a`, fetching the
    /// first k attributes of one record each (points: k).
    Point,
}

/// One of Clotho's microbenchmark figures.
#[derive(Clone, Copy, Debug)]
pub struct ClothoExperiment {
    /// The preset's name.
    pub name: &'static str,
    pub figure: &'static str,
    pub query: ClothoQuery,
    pub points: &'static [f64],
    /// What the paper found, in its words where it has them.
    pub finding: &'static str,
}

/// Point queries per measurement of [`ClothoQuery::Point`] (their times added).
pub const POINT_QUERIES: usize = 20;
/// The payload of [`ClothoQuery::Selectivity`]: `a` and the next three attributes.
pub const SELECTIVITY_PAYLOAD: usize = 4;

pub const PROJECTIVITY: ClothoExperiment = ClothoExperiment {
    name: "clotho-projectivity",
    figure: "Clotho Figure 7a",
    query: ClothoQuery::Projectivity,
    points: &[1.0, 2.0, 4.0, 8.0, 15.0],
    finding: "CSM performs like DSM for a few attributes and like NSM/PAX for all of \
              them; DSM degrades with more attributes; \"Clotho performs a full-record \
              scan over 3x faster when compared to DSM\"",
};

pub const SELECTIVITY: ClothoExperiment = ClothoExperiment {
    name: "clotho-selectivity",
    figure: "Clotho Figure 7c",
    query: ClothoQuery::Selectivity,
    points: &[0.001, 0.01, 0.1, 1.0],
    finding: "\"SI-scan exhibits better performance at low selectivities, whereas S-scan \
              wins as the selectivity increases\" (payload of four attributes, 0.0001 % \
              to 20 %; at 1.6 % every page holds a qualifying record)",
};

pub const POINT: ClothoExperiment = ClothoExperiment {
    name: "clotho-point",
    figure: "Clotho Figure 8a",
    query: ClothoQuery::Point,
    points: &[1.0, 2.0, 4.0, 8.0, 15.0],
    finding: "\"when the payload is only a few attributes, CSM performs closely to NSM \
              and PAX. As the payload increases the CSM performance becomes slightly \
              worse, although it deteriorates much less than DSM performance\"",
};

/// Every Clotho microbenchmark, by preset name.
pub const ALL: [ClothoExperiment; 3] = [PROJECTIVITY, SELECTIVITY, POINT];

/// The experiment of preset `name`, if it is one.
pub fn by_name(name: &str) -> Option<&'static ClothoExperiment> {
    ALL.iter().find(|e| e.name == name)
}

/// Clotho's Figure 9 (§7.3): TPC-H queries over one database stored in each layout,
/// each query cold, times relative to NSM. Not in [`ALL`]: it runs SQL over a TPC-H
/// database (`coopscan bench --preset clotho-tpch`, the CLI's `cmd_tpch::clotho`), not
/// the synthetic relation.
#[derive(Clone, Copy, Debug)]
pub struct ClothoTpch {
    pub name: &'static str,
    pub figure: &'static str,
    /// The TPC-H queries: "two sequential scans and two joins".
    pub queries: &'static [u8],
    pub finding: &'static str,
}

pub const TPCH: ClothoTpch = ClothoTpch {
    name: "clotho-tpch",
    figure: "Clotho Figure 9",
    queries: &[1, 6, 12, 14],
    finding: "\"NSM and PAX perform the worst by a factor of 1.24× – 2.0× (except for DSM in \
              Q1) because they must access all attributes. The performance of DSM is better \
              for all queries except Q1 [...] CSM performs best because it benefits from \
              projectivity and avoids the cost of the joins that DSM must do to reconstruct \
              records.\"",
};

/// The bound `X` of `a < X` selecting `percent` % of uniform values in
/// [0, [`VALUE_RANGE`]).
pub fn selection_bound(percent: f64) -> u64 {
    (percent / 100.0 * VALUE_RANGE as f64).round() as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_preset_is_found_by_its_name_and_sweeps_ascending_points() {
        for e in ALL {
            assert_eq!(by_name(e.name).map(|f| f.name), Some(e.name));
            assert!(e.points.windows(2).all(|w| w[0] < w[1]), "{}", e.name);
        }
        assert!(by_name("clotho-tpch").is_none());
        assert_eq!(selection_bound(100.0), VALUE_RANGE);
        assert_eq!(selection_bound(1.0), 42_949_673);
    }
}
