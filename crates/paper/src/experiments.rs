//! Every experiment both executors run, each defined once ([`crate::experiment`]):
//! the 2007 paper's Tables 2-4 and Figures 5-8, the 2012 paper's Figures 11-13 and 17,
//! and the mixed pool of its §2.3. `coopscan sim --preset NAME` and `coopscan bench
//! --preset NAME` both look a name up in [`ALL`].

use crate::experiment::{Axis, Experiment, QueryShape, Starts, WorkloadShape};
use crate::{common_prefix, mixed_pool, table2, table3, table4};

/// The 2007 paper's policies, in its column order.
const POLICIES_2007: &[&str] = &table2::TABLE2_POLICIES;
/// The 2012 paper's comparison: LRU (our `normal`: in-order scans, LRU), PBM, its
/// PBM/LRU sketch (`pbm-lru`) and CScans (`relevance`).
pub const PBM_POLICIES: &[&str] = &["normal", "pbm", "pbm-lru", "relevance"];

/// Table 2's workload: 16 streams × 4 queries, 3 s apart, FAST or SLOW over 1, 10, 50
/// or 100 % of the table.
const TABLE2_WORKLOAD: WorkloadShape = WorkloadShape {
    streams: table2::STREAMS,
    queries_per_stream: table2::QUERIES_PER_STREAM,
    queries: QueryShape::Ranges {
        speeds: "FS",
        range_percents: &table2::RANGE_PERCENTS,
    },
    starts: Starts::Staggered,
    in_order_pct: 0,
};

pub const TABLE2: Experiment = Experiment {
    name: "table2",
    source: "Zukowski et al., Cooperative Scans, VLDB 2007, §5.1-5.2, Table 2",
    workload: TABLE2_WORKLOAD,
    buffer_pct: table2::buffer_pct(),
    layout: "pax",
    sweep: &[],
    policies: POLICIES_2007,
    published: Some(&table2::PUBLISHED),
    finding: "relevance has the shortest stream time and the lowest normalized latency \
              (99.55 s, 1.96 against normal's 283.72 s, 6.42); elevator reads least \
              (1404 I/Os against 1842) but its latency is the worst",
};

pub const TABLE3: Experiment = Experiment {
    name: "table3",
    source: "Zukowski et al., Cooperative Scans, VLDB 2007, §6.3, Table 3 (DSM)",
    buffer_pct: table3::buffer_pct(),
    layout: "dsm",
    published: Some(&table3::PUBLISHED),
    finding: "in DSM too relevance has the shortest stream time and the lowest \
              normalized latency (264.82 s, 2.96 against normal's 536.18 s, 7.05); \
              elevator reads least (2297 I/Os against 3639)",
    ..TABLE2
};

pub const TABLE4: Experiment = Experiment {
    name: "table4",
    source: "Zukowski et al., Cooperative Scans, VLDB 2007, §6.3.1, Table 4",
    workload: WorkloadShape {
        streams: table4::STREAMS,
        queries_per_stream: table4::QUERIES_PER_STREAM,
        queries: QueryShape::Columns {
            family: table4::FAMILIES[0],
            range_percent: table4::RANGE_PERCENT,
        },
        starts: Starts::Staggered,
        in_order_pct: 0,
    },
    buffer_pct: table4::BUFFER_SHARE * 100.0,
    layout: "dsm",
    sweep: &[Axis::Families(&table4::FAMILIES)],
    policies: &["normal", "relevance"],
    published: None,
    finding: "with one query type relevance beats normal by a factor 4, with two \
              disjoint types by a factor 2; I/O reuse drops with decreasing column overlap",
};

pub const FIG5: Experiment = Experiment {
    name: "fig5",
    source: "Zukowski et al., Cooperative Scans, VLDB 2007, §5.2.1, Figure 5",
    sweep: &[
        Axis::Speeds(&["F", "S", "FS", "FFS", "FSS"]),
        Axis::Sizes(&[
            ("S", &[1, 2, 5, 10, 20]),
            ("M", &[1, 2, 10, 50, 100]),
            ("L", &[10, 30, 50, 100]),
        ]),
    ],
    published: None,
    finding: "relevance is the best policy on stream time and normalized latency for \
              every mix of speeds and ranges",
    ..TABLE2
};

pub const FIG6: Experiment = Experiment {
    name: "fig6",
    source: "Zukowski et al., Cooperative Scans, VLDB 2007, §5.2.2, Figure 6",
    workload: WorkloadShape {
        streams: 8,
        ..TABLE2_WORKLOAD
    },
    sweep: &[
        Axis::Sets(&[("disk-bound", "F"), ("cpu-bound", "FS")]),
        Axis::BufferPct(&[12.5, 25.0, 37.5, 50.0, 62.5, 75.0, 87.5, 100.0]),
    ],
    published: None,
    finding: "Interestingly, Figure 6 shows that the performance advantages of relevance \
              over the other policies as observed in Figure 5 are maximized when tables \
              get bigger (i.e. at low buffered percentages).",
    ..TABLE2
};

pub const FIG7: Experiment = Experiment {
    name: "fig7",
    source: "Zukowski et al., Cooperative Scans, VLDB 2007, §5.2.3, Figure 7",
    sweep: &[
        Axis::Sizes(&[("FS-5", &[5]), ("FS-20", &[20]), ("FS-50", &[50])]),
        Axis::Streams(&[1, 2, 4, 8, 16, 32]),
    ],
    published: None,
    finding: "As expected, the benefit of relevance over normal grows with larger scans \
              and more concurrency.",
    ..TABLE2
};

pub const FIG8: Experiment = Experiment {
    name: "fig8",
    source: "Zukowski et al., Cooperative Scans, VLDB 2007, §5.2.4, Figure 8",
    workload: WorkloadShape {
        queries: QueryShape::Ranges {
            speeds: "F",
            range_percents: &[1, 10, 100],
        },
        ..TABLE2_WORKLOAD
    },
    // The paper's 1 GB buffer (§5) over its trimmed 2 GB table.
    buffer_pct: 50.0,
    sweep: &[Axis::Chunks {
        table_mib: 2048,
        counts: &[64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384],
    }],
    published: None,
    finding: "Still, even with the largest tested number of chunks, the scheduling \
              overhead in the worst case does not exceed 1% of the entire execution time.",
    ..TABLE2
};

/// The 2012 paper's microbenchmark (§4.1): 8 streams of 16 queries, Q1 and Q6 (our
/// SLOW and FAST) over 1, 10, 50 or 100 % from a random start, all streams at once,
/// a buffer of 40 % of the data the queries touch.
const PBM_WORKLOAD: WorkloadShape = WorkloadShape {
    streams: 8,
    queries_per_stream: 16,
    starts: Starts::Together,
    ..TABLE2_WORKLOAD
};

/// The microbenchmark's default buffer, % of the data touched.
pub const PBM_BUFFER_PCT: f64 = 40.0;

pub const PBM_BUFFER: Experiment = Experiment {
    name: "pbm-buffer",
    source: "Świtakowski et al., Predictive Buffer Management, VLDB 2012, Figure 11",
    workload: PBM_WORKLOAD,
    buffer_pct: PBM_BUFFER_PCT,
    layout: "pax",
    sweep: &[Axis::BufferPct(&[10.0, 20.0, 40.0, 60.0, 80.0, 100.0])],
    policies: PBM_POLICIES,
    published: None,
    finding: "PBM and CScans provide nearly constant performance for buffer pools holding \
              40% of data and higher. For very low buffer pool sizes, PBM and CScans start \
              to diverge.",
};

pub const PBM_BANDWIDTH: Experiment = Experiment {
    name: "pbm-bandwidth",
    source: "Świtakowski et al., Predictive Buffer Management, VLDB 2012, Figure 12",
    sweep: &[Axis::BandwidthMbS {
        default_mb_s: 700.0,
        points: &[200.0, 400.0, 700.0, 1000.0, 1400.0, 2000.0],
    }],
    finding: "The difference between PBM and CScans disappears if bandwidth exceeds about \
              1GB/s [...] However, the total I/O volume remains approximately constant for \
              all policies.",
    ..PBM_BUFFER
};

pub const PBM_STREAMS: Experiment = Experiment {
    name: "pbm-streams",
    source: "Świtakowski et al., Predictive Buffer Management, VLDB 2012, Figure 13",
    workload: WorkloadShape {
        // "To make streams more homogeneous": every query over 50 %.
        queries: QueryShape::Ranges {
            speeds: "FS",
            range_percents: &[50],
        },
        ..PBM_WORKLOAD
    },
    sweep: &[Axis::Streams(&[1, 2, 4, 8, 16, 32])],
    finding: "Both PBM and CScans cope much better in experiments using more than 4 \
              streams, confirming their usefulness in highly concurrent workloads.",
    ..PBM_BUFFER
};

pub const PBM_SHARING: Experiment = Experiment {
    name: "pbm-sharing",
    source: "Świtakowski et al., Predictive Buffer Management, VLDB 2012, Figure 17",
    sweep: &[],
    finding: "in the microbenchmark large volumes are wanted by 2 or more scans (much \
              reuse potential); in TPC-H most data is wanted by one scan only",
    ..PBM_BUFFER
};

pub const MIXED_POOL: Experiment = Experiment {
    name: "mixed-pool",
    source: "Świtakowski et al., Predictive Buffer Management, VLDB 2012, §2.3 and §5 \
             (proposed, not built there)",
    sweep: &[
        Axis::BufferPct(&[10.0, 40.0, 80.0]),
        Axis::InOrderPct(&mixed_pool::IN_ORDER_PCT),
    ],
    policies: &mixed_pool::MIX_POLICIES,
    finding: "one temperature for Scans and CScans: the mix's loads within 5 % of the \
              better of all-Scans under PBM and all-CScans under relevance",
    ..PBM_BUFFER
};

pub const COMMON_PREFIX: Experiment = Experiment {
    name: "common-prefix",
    source: "Świtakowski et al., Predictive Buffer Management, VLDB 2012, §2.1, Bulk \
             Appends (described, not measured there)",
    workload: WorkloadShape {
        streams: common_prefix::STREAMS,
        queries_per_stream: common_prefix::QUERIES_PER_STREAM,
        // FAST and SLOW alternate (`common_prefix::is_slow`), every query a full scan
        // of its stream's snapshot.
        queries: QueryShape::Ranges {
            speeds: "FS",
            range_percents: &[100],
        },
        starts: Starts::Staggered,
        in_order_pct: 0,
    },
    buffer_pct: common_prefix::buffer_pct(),
    layout: "pax",
    sweep: &[],
    policies: &[common_prefix::POLICY],
    published: None,
    finding: "scans of two snapshots sharing 90 % of their chunks do I/O within 15 % of \
              the same scans on one snapshot",
};

/// Every experiment, by preset name.
pub const ALL: [&Experiment; 13] = [
    &TABLE2,
    &TABLE3,
    &TABLE4,
    &FIG5,
    &FIG6,
    &FIG7,
    &FIG8,
    &PBM_BUFFER,
    &PBM_BANDWIDTH,
    &PBM_STREAMS,
    &PBM_SHARING,
    &MIXED_POOL,
    &COMMON_PREFIX,
];

/// Experiments only the simulator runs so far: the real engine's tables cannot take
/// bulk appends yet, so it has no second snapshot to scan.
pub const SIMULATOR_ONLY: [&str; 1] = [COMMON_PREFIX.name];

/// Every experiment's name, in [`ALL`]'s order.
pub fn names() -> Vec<&'static str> {
    ALL.iter().map(|e| e.name).collect()
}

/// The experiment named `name`.
pub fn by_name(name: &str) -> Option<&'static Experiment> {
    ALL.iter().copied().find(|e| e.name == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_found() {
        for e in ALL {
            assert_eq!(by_name(e.name).map(|f| f.name), Some(e.name));
            assert!(
                !e.policies.is_empty() && !e.finding.is_empty(),
                "{}",
                e.name
            );
        }
        let mut names: Vec<&str> = ALL.iter().map(|e| e.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), ALL.len());
        assert!(by_name("fig9").is_none());
    }

    #[test]
    fn sweeps_have_the_papers_points() {
        let len = |e: &Experiment| e.points().len();
        assert_eq!(len(&TABLE2), 1);
        assert_eq!(len(&FIG5), 15);
        assert_eq!(len(&FIG6), 16);
        assert_eq!(len(&FIG7), 18);
        assert_eq!(len(&TABLE4), 5);
        assert_eq!(len(&MIXED_POOL), 15);
        let fig5 = FIG5.points();
        assert_eq!(fig5[0].label, "F-S");
        assert_eq!(fig5[14].label, "FSS-L");
        let streams: Vec<usize> = PBM_STREAMS
            .points()
            .iter()
            .map(|p| p.workload.streams)
            .collect();
        assert_eq!(streams, [1, 2, 4, 8, 16, 32]);
        assert!(PBM_STREAMS
            .points()
            .iter()
            .all(|p| p.buffer_pct == PBM_BUFFER_PCT && p.workload.starts == Starts::Together));
    }
}
