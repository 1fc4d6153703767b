//! The driver contract (`Driver`) on its own: answers reach exactly the worker that
//! waits, a failed read ends exactly the scans that needed it (or is retried), and a
//! worker left without a chunk by another worker of its scan learns it is finished.
#![allow(clippy::unwrap_used)] // test code: an unwrap that fails is a failed test

use coopscan_buffer::*;

const ROWS: u64 = 10;

fn driver(chunks: u32, frames: u32, on_failure: OnLoadFailure) -> Driver<AnyPolicy, &'static str> {
    let geometry = TableGeometry::uniform(chunks, ROWS).unwrap();
    let config = AbmConfig::new(frames);
    let catalog = Catalog::with_kind(vec![geometry], &config, PolicyKind::Relevance).unwrap();
    Driver::new(catalog, on_failure)
}

fn scan(
    d: &mut Driver<AnyPolicy, &'static str>,
    chunks: std::ops::Range<u64>,
    workers: u16,
) -> ScanId {
    let spec = ScanSpec::new(chunks.start * ROWS..chunks.end * ROWS, ColumnMask::ALL)
        .with_workers(workers);
    d.register(&spec, Nanos(0)).unwrap().scan
}

#[test]
fn a_failed_read_ends_exactly_the_scans_that_needed_it() {
    let mut d = driver(4, 4, OnLoadFailure::FailScans);
    let (a, b, c) = (
        scan(&mut d, 0..2, 1),
        scan(&mut d, 0..1, 1),
        scan(&mut d, 2..4, 1),
    );
    for s in [a, b, c] {
        assert_eq!(d.ask(s.into(), Nanos(1), false).unwrap(), Answer::Wait);
    }
    // Relevance loads chunk 0 first: two scans want it.
    let load = d.next_load(Nanos(2)).unwrap();
    assert_eq!(load.chunk, ChunkId(0));
    let mut failed = d.load_failed(load.pieces[0], Nanos(3), "bad page").unwrap();
    failed.sort();
    assert_eq!(failed, vec![a, b]);
    for s in [a, b] {
        let answer = d.ask(s.into(), Nanos(4), false).unwrap();
        assert_eq!(answer, Answer::Mail(Mail::Failed("bad page")));
        assert!(d.is_failed(s));
    }
    // The third scan is untouched and still waits; the ABM knows only it.
    assert_eq!(d.ask(c.into(), Nanos(4), false).unwrap(), Answer::Wait);
    let active: u32 = d.catalog().tables().map(|t| t.state().active_count()).sum();
    assert_eq!(active, 1);
    for s in [a, b] {
        d.unregister(s, Nanos(5)).unwrap();
        assert!(!d.is_failed(s));
    }
    let load = d.next_load(Nanos(6)).unwrap();
    assert!(
        load.chunk.0 >= 2,
        "only scan c's chunks are wanted: {load:?}"
    );
    d.loaded(load.pieces[0], Nanos(7)).unwrap();
    let mail = d.drain_mail();
    assert_eq!(mail.len(), 1);
    assert_eq!(mail[0].0, HolderId::from(c));
    assert!(matches!(mail[0].1, Mail::Chunk(Delivery { chunk, .. }) if chunk == load.chunk));
    d.catalog().check_invariants().unwrap();
}

#[test]
fn a_retried_read_keeps_the_scans_waiting_until_it_succeeds() {
    let mut d = driver(2, 2, OnLoadFailure::Retry);
    let a = scan(&mut d, 0..1, 1);
    assert_eq!(d.ask(a.into(), Nanos(1), false).unwrap(), Answer::Wait);
    let load = d.next_load(Nanos(2)).unwrap();
    assert_eq!(
        d.load_failed(load.pieces[0], Nanos(3), "transient")
            .unwrap(),
        vec![a]
    );
    assert!(!d.is_failed(a));
    assert_eq!(d.ask(a.into(), Nanos(4), false).unwrap(), Answer::Wait);
    let again = d.next_load(Nanos(5)).unwrap();
    assert_eq!(again.chunk, load.chunk);
    d.loaded(again.pieces[0], Nanos(6)).unwrap();
    let answer = d.take_mail(a.into()).unwrap();
    assert!(matches!(
        answer,
        Mail::Chunk(Delivery {
            chunk: ChunkId(0),
            ..
        })
    ));
    assert_eq!(d.release(a.into(), Nanos(7)).unwrap(), Some(ChunkId(0)));
    let done = d.ask(a.into(), Nanos(8), false).unwrap();
    assert_eq!(done, Answer::Mail(Mail::Finished));
    d.unregister(a, Nanos(9)).unwrap();
}

/// Two workers wait for a one-chunk scan: one gets the chunk, the other is told it is
/// finished, and the scan ends once both are done.
#[test]
fn the_worker_left_without_a_chunk_is_told_it_is_finished() {
    let mut d = driver(2, 4, OnLoadFailure::FailScans);
    let s = scan(&mut d, 1..2, 2);
    let (w0, w1) = (HolderId::new(s, 0), HolderId::new(s, 1));
    assert_eq!(d.ask(w0, Nanos(1), false).unwrap(), Answer::Wait);
    assert_eq!(d.ask(w1, Nanos(2), false).unwrap(), Answer::Wait);
    // Asking again while waiting keeps the first wait's time (queryRelevance ages on it).
    assert_eq!(d.ask(w1, Nanos(3), false).unwrap(), Answer::Wait);
    let waits = |d: &Driver<AnyPolicy, &str>| {
        let state = d.catalog().table(TableId(0)).unwrap().state();
        let slot = state.active_slots().next().unwrap();
        state.active_scan(slot).waiting.clone()
    };
    assert_eq!(waits(&d), vec![(0, Nanos(1)), (1, Nanos(2))]);
    let load = d.next_load(Nanos(4)).unwrap();
    d.loaded(load.pieces[0], Nanos(5)).unwrap();
    let mail = d.drain_mail();
    assert_eq!(mail.len(), 2, "{mail:?}");
    // The longest waiting worker gets the chunk.
    assert_eq!(mail[0].0, w0);
    assert!(matches!(
        mail[0].1,
        Mail::Chunk(Delivery {
            chunk: ChunkId(1),
            worker: 0,
            ..
        })
    ));
    assert_eq!(mail[1], (w1, Mail::Finished));
    assert_eq!(d.release(w0, Nanos(6)).unwrap(), Some(ChunkId(1)));
    assert_eq!(
        d.ask(w0, Nanos(7), false).unwrap(),
        Answer::Mail(Mail::Finished)
    );
    d.unregister(s, Nanos(8)).unwrap();
    d.catalog().check_invariants().unwrap();
}
