//! Clotho's page schemas on a tiled (CSM) table: scans whose columns overlap share
//! C-pages — a load of a chunk brings the columns of the page schema its scan's columns
//! meet, for the scans that still need the chunk — while scans of disjoint columns do
//! not widen each other's loads. Each column of a chunk is still loaded once.
#![allow(clippy::unwrap_used)] // test code: an unwrap that fails is a failed test

use coopscan_buffer::*;

const CHUNKS: u32 = 12;
const ROWS_PER_CHUNK: u64 = 10;
const Q1: u64 = 0b0011;
const Q2: u64 = 0b0110;
const Q3: u64 = 0b1000;
const SHARED: u64 = Q1 | Q2;

fn abm(tiled: bool, kind: PolicyKind) -> Abm {
    let geometry = TableGeometry::uniform(CHUNKS, ROWS_PER_CHUNK)
        .unwrap()
        .with_column_bytes(vec![vec![100, 200, 300, 400]; CHUNKS as usize])
        .unwrap();
    let geometry = if tiled {
        geometry.with_tiles().unwrap()
    } else {
        geometry
    };
    let config = AbmConfig::with_budget(BufferBudget::Bytes(1 << 30));
    Abm::with_kind(geometry, config, kind).unwrap()
}

/// Runs scans of Q1, Q2 and Q3 over the whole table to the end; returns the columns
/// of every load, checking the invariants after every event.
fn run(tiled: bool, kind: PolicyKind) -> Vec<u64> {
    let mut abm = abm(tiled, kind);
    let rows = 0..u64::from(CHUNKS) * ROWS_PER_CHUNK;
    let scans: Vec<ScanId> = [Q1, Q2, Q3]
        .iter()
        .map(|&cols| {
            let spec = ScanSpec::new(rows.clone(), ColumnMask(cols));
            abm.register_scan(&spec, Nanos(0)).unwrap().scan
        })
        .collect();
    if tiled {
        let mut schemas = abm.state().page_schemas().schemas().to_vec();
        schemas.sort_unstable();
        assert_eq!(
            schemas,
            [SHARED, Q3],
            "Figure 4: Q1 and Q2 merged, Q3 apart"
        );
    }
    let (mut loads, mut out) = (Vec::new(), Vec::new());
    let mut running = scans.clone();
    for step in 0.. {
        assert!(step < 10_000, "{kind}: no progress");
        if running.is_empty() {
            break;
        }
        if let Some(load) = abm.next_load(Nanos(step)) {
            loads.push(load.pieces.iter().fold(0, |a, p| a | p.columns.0));
            for piece in &load.pieces {
                abm.load_completed(*piece, Nanos(step), &mut out).unwrap();
                abm.check_invariants().unwrap();
            }
        }
        // Chunks handed to waiting scans: processed at once.
        for delivery in out.drain(..) {
            abm.release_chunk(delivery.holder(), Nanos(step)).unwrap();
        }
        for &scan in &running.clone() {
            match abm.next_chunk(scan, Nanos(step)).unwrap() {
                NextChunk::Deliver(_) => {
                    abm.release_chunk(scan, Nanos(step)).unwrap();
                }
                NextChunk::Finished => {
                    abm.unregister_scan(scan, Nanos(step), &mut out).unwrap();
                    running.retain(|s| *s != scan);
                }
                NextChunk::Wait => {}
            }
            abm.check_invariants().unwrap();
        }
    }
    assert!(abm.state().page_schemas().schemas().is_empty());
    loads
}

#[test]
fn relevance_loads_c_pages_that_overlapping_scans_share() {
    let loads = run(true, PolicyKind::Relevance);
    for &cols in &loads {
        if cols & SHARED != 0 {
            assert_eq!(cols & SHARED, SHARED, "a load of {cols:#b}");
        }
        assert!(
            cols & SHARED == 0 || cols & Q3 == 0,
            "disjoint schemas stay apart"
        );
    }
    let shared = loads.iter().filter(|&&l| l & SHARED != 0).count();
    assert_eq!(shared, CHUNKS as usize, "one C-page load per chunk");
}

#[test]
fn every_policy_loads_each_column_of_each_chunk_once_on_tiles() {
    for kind in PolicyKind::ALL {
        let loads = run(true, kind);
        let loaded: Vec<u32> = (0..4)
            .map(|c| loads.iter().filter(|&&l| l >> c & 1 == 1).count() as u32)
            .collect();
        assert_eq!(loaded, [CHUNKS; 4], "{kind}");
    }
}

#[test]
fn normal_loads_its_scans_own_columns_on_tiles_as_on_dsm() {
    // LRU would evict the columns loaded for other scans before they come.
    for tiled in [true, false] {
        let loads = run(tiled, PolicyKind::Normal);
        assert!(
            loads.iter().all(|&l| l & Q1 == l || l & Q2 == l || l == Q3),
            "tiled={tiled}: {loads:?}"
        );
    }
}

#[test]
fn a_load_takes_the_page_schema_columns_that_scans_of_the_chunk_read() {
    for tiled in [true, false] {
        let mut abm = abm(tiled, PolicyKind::Relevance);
        let rows = |k: u64| k * ROWS_PER_CHUNK..(k + 1) * ROWS_PER_CHUNK;
        // Q1 over chunks 0-1, Q2 over chunk 1 only, Q3 over both.
        for (cols, range) in [
            (Q1, 0..2 * ROWS_PER_CHUNK),
            (Q2, rows(1)),
            (Q3, 0..2 * ROWS_PER_CHUNK),
        ] {
            let spec = ScanSpec::new(range, ColumnMask(cols));
            abm.register_scan(&spec, Nanos(0)).unwrap();
        }
        let state = abm.state();
        let (c0, c1) = (ChunkId(0), ChunkId(1));
        if tiled {
            // Chunk 0: nobody reads column 2 there; chunk 1: Q2 does. Q3's schema is apart.
            assert_eq!(state.load_cols(c0, Q1), Q1);
            assert_eq!(state.load_cols(c1, Q1), SHARED);
            assert_eq!(state.load_cols(c1, 0b0001), SHARED);
            assert_eq!(state.load_cols(c1, Q3), Q3);
        } else {
            assert_eq!(state.load_cols(c1, Q1), Q1);
            assert!(state.page_schemas().schemas().is_empty());
        }
    }
}
