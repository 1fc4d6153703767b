//! Pages straddling two chunks (DSM): a load copies a piece's shared boundary page from
//! the neighbouring piece of the same column exactly when that piece is resident as the
//! load starts, and reads everything else; memory reserved is unchanged.
#![allow(clippy::unwrap_used)] // test code: an unwrap that fails is a failed test

use coopscan_buffer::*;

const ROWS_PER_CHUNK: u64 = 10;
const PAGE: u64 = 4;
const CHUNKS: u32 = 5;

/// Two columns of 3 pages per chunk. Column 0 shares every boundary page (a page
/// straddles each pair of neighbours); column 1 shares none. Chunk 2 of column 0 is one
/// page, shared both ways (its tuples all sit on one page with both neighbours').
fn geometry() -> TableGeometry {
    let bytes = |k: u32| {
        if k == 2 {
            vec![PAGE, 3 * PAGE]
        } else {
            vec![3 * PAGE, 3 * PAGE]
        }
    };
    let shared = |k: u32| SharedPages {
        head: if k > 0 { PAGE } else { 0 },
        tail: if k + 1 < CHUNKS { PAGE } else { 0 },
    };
    TableGeometry::uniform(CHUNKS, ROWS_PER_CHUNK)
        .unwrap()
        .with_column_bytes((0..CHUNKS).map(bytes).collect())
        .unwrap()
        .with_shared_pages(
            (0..CHUNKS)
                .map(|k| vec![shared(k), SharedPages::default()])
                .collect(),
        )
        .unwrap()
}

/// An ABM under the normal policy with a budget of `bytes`.
fn abm(bytes: u64) -> Abm {
    let config = AbmConfig::with_budget(BufferBudget::Bytes(bytes)).with_max_inflight(CHUNKS);
    Abm::with_kind(geometry(), config, PolicyKind::Normal).unwrap()
}

/// Registers a scan of `cols` over chunk `k` alone.
fn scan_chunk(abm: &mut Abm, k: u32, cols: u64) -> ScanId {
    let rows = u64::from(k) * ROWS_PER_CHUNK..u64::from(k + 1) * ROWS_PER_CHUNK;
    let spec = ScanSpec::new(rows, ColumnMask(cols));
    let registration = abm.register_scan(&spec, Nanos(0)).unwrap();
    assert!(registration.admitted);
    registration.scan
}

/// Loads the chunks of `order` one after another (each for a scan of it alone, the
/// previous load completed first) with room for everything; returns every decision.
fn load_in_order(order: &[u32]) -> (Abm, Vec<LoadDecision>) {
    let mut abm = abm(1 << 20);
    let mut out = Vec::new();
    let decisions = order
        .iter()
        .map(|&k| {
            scan_chunk(&mut abm, k, 0b11);
            let load = abm.next_load(Nanos(0)).unwrap();
            assert_eq!(load.chunk, ChunkId(k));
            for piece in &load.pieces {
                abm.load_completed(*piece, Nanos(0), &mut out).unwrap();
            }
            abm.check_invariants().unwrap();
            load
        })
        .collect();
    (abm, decisions)
}

fn plan(load: &LoadDecision, column: u16) -> &ReadPlan {
    load.reads
        .iter()
        .find(|r| r.piece.columns.single() == Some(column))
        .unwrap()
}

fn piece(chunk: u32, column: u16) -> PieceId {
    PieceId::column(TableId::default(), ChunkId(chunk), column)
}

#[test]
fn a_load_copies_exactly_the_pages_whose_neighbour_is_resident() {
    // 0, then 1 (after 0), 3 (neighbours 2, 4 absent), 2 (both neighbours resident),
    // 4 (after 3).
    let (abm, loads) = load_in_order(&[0, 1, 3, 2, 4]);
    let full = 0..3 * PAGE;
    let expect = [
        (0, full.clone(), None, None),
        (1, PAGE..3 * PAGE, Some(piece(0, 0)), None),
        (3, full.clone(), None, None),
        // One page shared both ways: one copy, from the head's neighbour.
        (2, PAGE..PAGE, Some(piece(1, 0)), None),
        (4, PAGE..3 * PAGE, Some(piece(3, 0)), None),
    ];
    for (load, (k, read, head, tail)) in loads.iter().zip(expect) {
        assert_eq!(load.chunk, ChunkId(k));
        let p = plan(load, 0);
        assert_eq!(
            (p.read.clone(), p.head_from, p.tail_from),
            (read, head, tail),
            "chunk {k}"
        );
        // Column 1 shares nothing: always read whole.
        let q = plan(load, 1);
        assert_eq!(
            (q.read.clone(), q.head_from, q.tail_from),
            (full.clone(), None, None)
        );
        assert_eq!(
            load.pieces,
            load.reads.iter().map(|r| r.piece).collect::<Vec<_>>()
        );
    }
    // Memory: every piece keeps its own bytes. I/O: 3 pages fewer (chunk 1's head,
    // chunk 2's only page, chunk 4's head).
    let stats = abm.state().stats();
    let reserved = 4 * 6 * PAGE + (PAGE + 3 * PAGE);
    assert_eq!(stats.bytes_loaded, reserved);
    assert_eq!(stats.bytes_read, reserved - 3 * PAGE);
}

#[test]
fn a_load_before_its_right_neighbour_copies_the_tail() {
    let (_, loads) = load_in_order(&[4, 3]);
    let p = plan(&loads[1], 0);
    assert_eq!(
        (p.read.clone(), p.head_from, p.tail_from),
        (0..2 * PAGE, None, Some(piece(4, 0)))
    );
}

#[test]
fn a_neighbour_still_loading_is_not_copied() {
    let mut abm = abm(1 << 20);
    scan_chunk(&mut abm, 0, 0b11);
    scan_chunk(&mut abm, 1, 0b11);
    let first = abm.next_load(Nanos(0)).unwrap();
    let second = abm.next_load(Nanos(0)).unwrap();
    assert_eq!((first.chunk, second.chunk), (ChunkId(0), ChunkId(1)));
    let p = plan(&second, 0);
    assert_eq!((p.read.clone(), p.head_from), (0..3 * PAGE, None));
}

#[test]
fn a_neighbour_evicted_by_the_load_itself_is_not_copied() {
    // The smallest budget (2 whole chunks, 12 pages): column 0 of chunks 0, 3, 4 and
    // 2 leave 2 pages free, so chunk 1 evicts the least recently used, chunk 0.
    let mut abm = abm(2 * 6 * PAGE);
    let mut out = Vec::new();
    for k in [0, 3, 4, 2] {
        let scan = scan_chunk(&mut abm, k, 0b01);
        let load = abm.next_load(Nanos(0)).unwrap();
        abm.load_completed(load.pieces[0], Nanos(0), &mut out)
            .unwrap();
        abm.unregister_scan(scan, Nanos(0), &mut out).unwrap();
    }
    scan_chunk(&mut abm, 1, 0b01);
    let load = abm.next_load(Nanos(0)).unwrap();
    assert_eq!(load.chunk, ChunkId(1));
    assert_eq!(
        load.evicted,
        vec![piece(0, 0)],
        "LRU evicts the older neighbour"
    );
    // The head's neighbour is gone; the tail's (chunk 2) is resident.
    let p = plan(&load, 0);
    let expected = (0..2 * PAGE, None, Some(piece(2, 0)));
    assert_eq!((p.read.clone(), p.head_from, p.tail_from), expected);
}

#[test]
fn shared_pages_that_cannot_exist_are_rejected() {
    let nsm = TableGeometry::uniform(2, ROWS_PER_CHUNK).unwrap();
    let none = vec![vec![SharedPages::default()]; 2];
    assert!(
        nsm.with_shared_pages(none).is_err(),
        "NSM/PAX shares no page"
    );
    let dsm = |shared: SharedPages| {
        TableGeometry::uniform(2, ROWS_PER_CHUNK)
            .unwrap()
            .with_column_bytes(vec![vec![PAGE]; 2])
            .unwrap()
            .with_shared_pages(vec![vec![shared]; 2])
    };
    let head = SharedPages {
        head: PAGE,
        tail: 0,
    };
    assert!(dsm(head).is_err(), "chunk 0 has no previous chunk");
    let tail = SharedPages {
        head: 0,
        tail: PAGE,
    };
    assert!(dsm(tail).is_err(), "the last chunk has no next chunk");
    assert!(dsm(SharedPages::default()).is_ok());
    let too_big = TableGeometry::uniform(2, ROWS_PER_CHUNK)
        .unwrap()
        .with_column_bytes(vec![vec![PAGE]; 2])
        .unwrap()
        .with_shared_pages(vec![
            vec![SharedPages {
                head: 0,
                tail: 2 * PAGE,
            }],
            vec![SharedPages {
                head: PAGE,
                tail: 0,
            }],
        ]);
    assert!(too_big.is_err(), "a page larger than its piece");
}
