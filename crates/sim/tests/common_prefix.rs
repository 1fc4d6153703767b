//! Scans of snapshots with a common prefix (2012 paper §2.1, bulk appends;
//! `coopscan_paper::common_prefix`): under relevance, half the streams reading a
//! snapshot that shares 90 % of its chunks costs at most the target's extra loads over
//! all reading one snapshot, while disjoint versions (nothing shared) cost more than
//! the common prefix by far. Every query gets exactly its snapshot's chunks (the
//! simulator fails a run otherwise).
#![allow(clippy::unwrap_used)] // test code: an unwrap that fails is a failed test

use coopscan_buffer::PolicyKind;
use coopscan_paper::common_prefix::{self as def, Snapshots};

#[test]
fn a_common_prefix_is_shared_and_disjoint_versions_are_not() {
    let report = coopscan_sim::common_prefix(&[PolicyKind::Relevance]).unwrap();
    let loads = |s: Snapshots| {
        report
            .runs
            .iter()
            .find(|r| r.snapshots == s.name())
            .map(|r| r.loads)
            .unwrap()
    };
    let (one, prefix, disjoint) = (
        loads(Snapshots::One),
        loads(Snapshots::CommonPrefix),
        loads(Snapshots::Disjoint),
    );
    // Every chunk of a snapshot is read at least once.
    assert!(one >= u64::from(Snapshots::One.table_chunks()), "{one}");
    assert!(prefix >= u64::from(Snapshots::CommonPrefix.table_chunks()));
    let ratio = def::loads_over_one(prefix, one);
    assert!(
        ratio <= def::TARGET,
        "common prefix {prefix} ÷ one {one} = {ratio:.3}"
    );
    // Were the second snapshot's 180 shared chunks separate chunks, its streams would
    // share nothing with the others: the disjoint run's extra loads.
    let extra = |loads: u64| loads.saturating_sub(one);
    assert!(
        extra(disjoint) >= 4 * extra(prefix).max(1),
        "disjoint {disjoint}, common prefix {prefix}, one {one}"
    );
}
