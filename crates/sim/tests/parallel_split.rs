//! The 2012 paper's example for parallel CScans (§2.2) against a bound computed here,
//! not by the simulator: the absent chunks read one after another on the example's
//! disk plus the last one's CPU, or all chunks' CPU over the two workers.

use coopscan_buffer::{PolicyKind, Split};
use coopscan_sim::{
    split_example, SPLIT_EXAMPLE_CHUNKS, SPLIT_EXAMPLE_RESIDENT, SPLIT_EXAMPLE_WORKERS,
};

/// The example's disk: 5 MB chunks at 50 MB/s.
const READ_S: f64 = 0.1;
/// 5 MB of a 2 GHz CPU at one cycle per byte.
const CPU_S_PER_CPB: f64 = 5.0e6 / 2.0e9;

fn bound(cpb: f64) -> f64 {
    let resident: u32 = SPLIT_EXAMPLE_RESIDENT.iter().map(|r| r.end - r.start).sum();
    let absent = f64::from(SPLIT_EXAMPLE_CHUNKS - resident);
    let cpu = cpb * CPU_S_PER_CPB;
    let spread = f64::from(SPLIT_EXAMPLE_CHUNKS) * cpu / f64::from(SPLIT_EXAMPLE_WORKERS);
    (absent * READ_S + cpu).max(spread)
}

#[test]
fn the_dynamic_split_reaches_the_bound_on_the_papers_example() {
    for cpb in [5.0, 20.0, 40.0, 80.0, 160.0] {
        let dynamic = split_example(cpb, Split::Dynamic, PolicyKind::Relevance).unwrap();
        let fixed = split_example(cpb, Split::Static, PolicyKind::Relevance).unwrap();
        let bound = bound(cpb);
        assert!(
            dynamic.latency_s >= bound - 1e-6,
            "{cpb} c/b: {dynamic:?} below {bound}"
        );
        // The simulator's event granularity (a CPU step of the 1 c/b warm-up) aside.
        assert!(
            dynamic.latency_s <= bound + 0.005,
            "{cpb} c/b: dynamic {dynamic:?} above the bound {bound} (static {fixed:?})"
        );
        assert!(
            dynamic.latency_s <= fixed.latency_s + 1e-6,
            "{cpb} c/b: {dynamic:?} vs {fixed:?}"
        );
        // Each absent chunk read once, whatever the split.
        assert_eq!(dynamic.loads, 5, "{cpb} c/b");
    }
}

/// Table 2 with parallel CScans, as `coopscan sim --preset table2 --scan-workers N
/// [--static-split]` runs it: every query has the shape's workers and split, each query
/// processes exactly the chunks it does with one worker, and with four workers on the
/// paper's two CPUs no query is slower alone than with one; a preset without several
/// workers refuses a shape.
#[test]
fn table2_runs_with_parallel_scans_of_either_split() {
    use coopscan_sim::{run_preset_shaped, PresetName, QueryShape};
    let policies = [PolicyKind::Relevance];
    let table2 = |shape| run_preset_shaped(PresetName::Table2, &policies, 7, false, shape, None);
    let one = table2(QueryShape::default()).unwrap();
    let chunks = |r: &coopscan_sim::PresetReport| -> Vec<(String, u32)> {
        let mut v: Vec<(String, u32)> = r.runs[0]
            .queries
            .iter()
            .map(|q| (q.name.clone(), q.chunks))
            .collect();
        v.sort();
        v
    };
    for split in [Split::Dynamic, Split::Static] {
        let report = table2(QueryShape {
            workers: 4,
            split,
            ..QueryShape::default()
        })
        .unwrap();
        let queries = report.workload.streams.iter().flat_map(|s| &s.queries);
        assert!(queries.clone().all(|q| q.workers == 4 && q.split == split));
        assert_eq!(chunks(&report), chunks(&one), "{split:?}");
        for q in &report.runs[0].queries {
            let alone = q.standalone_s.unwrap();
            let single = one.runs[0]
                .queries
                .iter()
                .find(|o| o.name == q.name)
                .unwrap();
            assert!(
                alone <= single.standalone_s.unwrap() + 1e-9,
                "{split:?} {}: {alone} s alone",
                q.name
            );
        }
    }
    let shape = QueryShape {
        workers: 2,
        ..QueryShape::default()
    };
    let other = run_preset_shaped(PresetName::Heterogeneous, &policies, 7, false, shape, None);
    assert!(other.is_err());
}
