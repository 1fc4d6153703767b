//! Outcomes the papers report, checked on our simulation. Each compares policies with
//! each other on the same run; no expected number is copied from our own output.

use coopscan_buffer::PolicyKind;
use coopscan_sim::{run_preset, PresetName, PresetReport};

fn run(preset: PresetName) -> PresetReport {
    let report = run_preset(preset, &PolicyKind::ALL, 42).expect("preset runs");
    println!("{}", report.to_text());
    report
}

fn latency(report: &PresetReport, policy: &str, query: &str) -> f64 {
    let p = &report.policies[policy];
    p.queries
        .iter()
        .find(|q| q.name == query)
        .expect("query present")
        .latency_s
}

/// 2004 report Fig. 4: relevance finishes the quick query (Q2, 5 c/b) much sooner than
/// elevator (which makes it wait for the slow ones) and than attach.
#[test]
fn heterogeneous_relevance_serves_the_quick_query_first() {
    let r = run(PresetName::Heterogeneous);
    let rel = latency(&r, "relevance", "Q2");
    assert!(
        rel < latency(&r, "elevator", "Q2"),
        "relevance Q2 {rel} vs elevator"
    );
    assert!(
        rel < latency(&r, "attach", "Q2"),
        "relevance Q2 {rel} vs attach"
    );
}

/// 2004 report Fig. 3: sharing the scan loads fewer chunks than three separate scans.
#[test]
fn homogeneous_sharing_policies_load_less_than_normal() {
    let r = run(PresetName::Homogeneous);
    let loads = |p: &str| r.policies[p].chunk_loads;
    assert!(
        loads("attach") < loads("normal"),
        "attach {} vs normal {}",
        loads("attach"),
        loads("normal")
    );
    assert!(
        loads("relevance") < loads("normal"),
        "relevance {} vs normal {}",
        loads("relevance"),
        loads("normal")
    );
}

/// 2007 paper Table 2: relevance has the lowest average normalized latency, and issues
/// fewer I/Os than normal and attach.
#[test]
fn table2_relevance_has_lowest_normalized_latency_and_fewer_loads() {
    let r = run(PresetName::Table2);
    let norm = |p: &str| {
        r.policies[p]
            .avg_normalized_latency
            .expect("standalone times computed")
    };
    let loads = |p: &str| r.policies[p].chunk_loads;
    for other in ["normal", "attach", "elevator"] {
        assert!(
            norm("relevance") < norm(other),
            "relevance {} vs {other} {}",
            norm("relevance"),
            norm(other)
        );
    }
    assert!(
        loads("relevance") < loads("normal"),
        "relevance {} vs normal {}",
        loads("relevance"),
        loads("normal")
    );
    assert!(
        loads("relevance") < loads("attach"),
        "relevance {} vs attach {}",
        loads("relevance"),
        loads("attach")
    );
}

/// 2007 paper Table 4 (DSM column overlap): in every family relevance issues fewer
/// I/Os and has a lower average normalized latency than normal, and its I/O volume
/// grows as the query types share fewer columns (one type vs two disjoint types).
#[test]
fn table4_relevance_beats_normal_in_every_family() {
    let policies = [PolicyKind::Normal, PolicyKind::Relevance];
    let report = coopscan_sim::table4(&policies, 42).expect("table4 runs");
    println!("{}", coopscan_sim::table4_text(&report));
    let row = |family: &str, policy: &str| {
        report
            .rows
            .iter()
            .find(|r| r.family == family && r.policy == policy)
            .expect("row")
    };
    for family in coopscan_sim::FAMILIES.map(|f| f.join(",")) {
        let (n, r) = (row(&family, "normal"), row(&family, "relevance"));
        assert!(
            r.pieces < n.pieces,
            "{family}: {} vs {} pieces",
            r.pieces,
            n.pieces
        );
        assert!(
            r.avg_normalized_latency < n.avg_normalized_latency,
            "{family}: {} vs {}",
            r.avg_normalized_latency,
            n.avg_normalized_latency
        );
    }
    let one = row("ABC", "relevance").pieces;
    let two = row("ABC,DEF", "relevance").pieces;
    assert!(two > one, "disjoint columns share less: {two} vs {one}");
}

/// 2012 paper Figure 11: PBM never reads more than LRU (normal), OPT on PBM's trace
/// never more than PBM, and CScans (relevance) read least when the buffer is small.
#[test]
fn pbm_buffer_orders_lru_pbm_opt_as_the_2012_paper() {
    use coopscan_sim::pbm_buffer;
    let policies = [
        PolicyKind::Normal,
        PolicyKind::Pbm,
        PolicyKind::PbmLru,
        PolicyKind::Relevance,
    ];
    let report = pbm_buffer(&policies, 42, &[10, 40, 80]).expect("runs");
    println!("{}", coopscan_sim::pbm_buffer_text(&report));
    for p in &report.points {
        let loads = |name: &str| p.policies[name].loads;
        let opt = p.opt.expect("PBM ran, so OPT replayed its trace").loads;
        let at = p.buffer_pct;
        assert!(
            loads("pbm") <= loads("normal"),
            "{at}%: pbm {} lru {}",
            loads("pbm"),
            loads("normal")
        );
        assert!(opt <= loads("pbm"), "{at}%: opt {opt} pbm {}", loads("pbm"));
        assert!(
            loads("pbm-lru") <= loads("normal"),
            "{at}%: pbm-lru reads more than LRU"
        );
        // The replay of LRU reads at least what OPT reads on the same references.
        assert!(p.lru_replay.expect("replayed").loads >= opt, "{at}%");
    }
    let small = &report.points[0];
    assert!(
        small.policies["relevance"].loads < small.policies["pbm"].loads,
        "10%: CScans share more than in-order PBM"
    );
}
