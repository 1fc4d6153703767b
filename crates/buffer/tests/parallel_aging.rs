//! Relevance ages a parallel scan as one query: its waiting time runs from its last
//! delivery, not from when one of its workers began to idle. Otherwise a scan of two
//! workers, one of them always waiting while the other is served, ages for its whole
//! life and outranks a shorter query that has really waited longer.
#![allow(clippy::unwrap_used)] // test code: an unwrap that fails is a failed test

use coopscan_buffer::*;

const ROWS: u64 = 10;
const MS: u64 = 1_000_000;

fn scan(
    d: &mut Driver<AnyPolicy, ()>,
    chunks: std::ops::Range<u64>,
    workers: u16,
    at: Nanos,
) -> ScanId {
    let spec = ScanSpec::new(chunks.start * ROWS..chunks.end * ROWS, ColumnMask::ALL)
        .with_workers(workers);
    d.register(&spec, at).unwrap().scan
}

#[test]
fn a_parallel_scan_ages_from_its_last_delivery() {
    let geometry = TableGeometry::uniform(16, ROWS).unwrap();
    let config = AbmConfig::new(16);
    assert_eq!(config.aging_unit, Nanos(MS));
    let catalog = Catalog::with_kind(vec![geometry], &config, PolicyKind::Relevance).unwrap();
    let mut d = Driver::new(catalog, OnLoadFailure::FailScans);

    // A scan of eight chunks and two workers; both wait from 0 ms.
    let parallel = scan(&mut d, 0..8, 2, Nanos(0));
    for worker in 0..2 {
        let holder = HolderId::new(parallel, worker);
        assert_eq!(d.ask(holder, Nanos(0), false).unwrap(), Answer::Wait);
    }
    // Its first chunk arrives at 5 ms and goes to one worker; the other still waits.
    let load = d.next_load(Nanos(0)).unwrap();
    assert!(load.chunk.0 < 8);
    d.loaded(load.pieces[0], Nanos(5 * MS)).unwrap();
    assert_eq!(d.drain_mail().len(), 1);

    // A one-worker scan of eight other chunks waits from 2 ms.
    let single = scan(&mut d, 8..16, 1, Nanos(2 * MS));
    assert_eq!(
        d.ask(single.into(), Nanos(2 * MS), false).unwrap(),
        Answer::Wait
    );

    // At 20 ms both are starved and need eight chunks: the single scan has waited
    // 18 ms, the parallel one 15 ms since it was last served (20 ms since its idle
    // worker began to wait, which would win). The loader serves the single scan.
    let load = d.next_load(Nanos(20 * MS)).unwrap();
    assert!(
        (8..16).contains(&load.chunk.0),
        "loaded {:?} for the parallel scan",
        load.chunk
    );
    d.catalog().check_invariants().unwrap();
}
