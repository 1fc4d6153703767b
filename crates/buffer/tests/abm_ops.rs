//! Property test on the ABM alone: random interleavings of every driver event
//! (register, next_chunk, release, next_load, load_completed, load_failed, unregister
//! mid-scan = cancel) under every policy, with chunks of different byte sizes (so
//! eviction must sometimes free several) and a mix of any-order and in-order scans.
//! After each event `check_invariants` holds, no scan ever gets a chunk twice or outside
//! its ranges, and an in-order scan gets its chunks ascending; finally the remaining
//! scans are drained and each must have received exactly the chunks of its ranges.

use coopscan_buffer::*;
use proptest::prelude::*;
use std::collections::{BTreeSet, HashMap};

const ROWS_PER_CHUNK: u64 = 10;
/// Bound on the drain loop: generous for tables of ≤ 40 chunks and ≤ 12 scans.
const DRAIN_STEPS: usize = 20_000;

#[derive(Default)]
struct Model {
    scans: Vec<ScanId>,
    wanted: HashMap<ScanId, BTreeSet<u32>>,
    got: HashMap<ScanId, BTreeSet<u32>>,
    holding: HashMap<ScanId, ChunkId>,
    in_order: BTreeSet<ScanId>,
    loads: Vec<PieceId>,
    /// Virtual time: each event advances it a little (PBM predicts from it).
    now: u64,
}

impl Model {
    fn take(&mut self, d: Delivery) -> Result<(), TestCaseError> {
        prop_assert!(
            self.wanted[&d.scan].contains(&d.chunk.0),
            "unwanted {:?}",
            d
        );
        prop_assert!(
            self.got.get_mut(&d.scan).unwrap().insert(d.chunk.0),
            "duplicate {:?}",
            d
        );
        if self.in_order.contains(&d.scan) {
            let last = self.got[&d.scan].iter().next_back();
            prop_assert_eq!(last, Some(&d.chunk.0), "out of order {:?}", d);
        }
        prop_assert!(self.holding.insert(d.scan, d.chunk).is_none());
        Ok(())
    }
}

type Op = (u8, u16, u16, u16);

fn step(abm: &mut Abm, m: &mut Model, op: Op, chunks: u32) -> Result<(), TestCaseError> {
    let (kind, a, b, c) = op;
    m.now += u64::from(b % 50) * 1_000_000;
    let now = Nanos(m.now);
    let mut out = Vec::new();
    let pick = |v: usize| usize::from(a) % v.max(1);
    match kind % 7 {
        0 if m.scans.len() < 12 => {
            let start = u32::from(a) % chunks;
            let end = start + 1 + u32::from(b) % (chunks - start);
            let second = u32::from(c) % chunks;
            let ranges = vec![
                u64::from(start) * ROWS_PER_CHUNK..u64::from(end) * ROWS_PER_CHUNK,
                u64::from(second) * ROWS_PER_CHUNK + 3..u64::from(second) * ROWS_PER_CHUNK + 4,
            ];
            // DSM tables have 4 columns: a scan reads a non-empty subset of them.
            let mut spec = ScanSpec::new(ranges, ColumnMask(u64::from(b % 15 + 1)));
            if c % 3 == 0 {
                spec = spec.in_order();
            }
            let scan = abm.register_scan(&spec, now).unwrap().scan;
            if c % 3 == 0 {
                m.in_order.insert(scan);
            }
            let mut wanted: BTreeSet<u32> = (start..end).collect();
            wanted.insert(second);
            m.wanted.insert(scan, wanted);
            m.got.insert(scan, BTreeSet::new());
            m.scans.push(scan);
        }
        1 | 2 if !m.scans.is_empty() => {
            let scan = m.scans[pick(m.scans.len())];
            if m.holding.contains_key(&scan) {
                abm.release_chunk(scan, now).unwrap();
                m.holding.remove(&scan);
            } else if let NextChunk::Deliver(d) = abm.next_chunk(scan, now).unwrap() {
                m.take(d)?;
            }
        }
        3 => m
            .loads
            .extend(abm.next_load(now).into_iter().flat_map(|l| l.pieces)),
        4 if !m.loads.is_empty() => {
            let piece = m.loads.swap_remove(pick(m.loads.len()));
            abm.load_completed(piece, now, &mut out).unwrap();
        }
        5 if !m.loads.is_empty() && b % 4 == 0 => {
            let piece = m.loads.swap_remove(pick(m.loads.len()));
            abm.load_failed(piece, now).unwrap();
        }
        6 if !m.scans.is_empty() && b % 3 == 0 => {
            let scan = m.scans.swap_remove(pick(m.scans.len()));
            abm.unregister_scan(scan, now, &mut out).unwrap();
            m.holding.remove(&scan);
            m.wanted.remove(&scan);
        }
        _ => {}
    }
    for d in out {
        m.take(d)?;
    }
    abm.check_invariants()
        .map_err(|e| TestCaseError::fail(e.to_string()))?;
    Ok(())
}

/// Completes every remaining scan; each must end with exactly its wanted chunks.
fn drain(abm: &mut Abm, m: &mut Model) -> Result<(), TestCaseError> {
    let now = Nanos(m.now);
    let mut out = Vec::new();
    for _ in 0..DRAIN_STEPS {
        if m.scans.is_empty() {
            return Ok(());
        }
        let mut progress = false;
        for scan in m.scans.clone() {
            if m.holding.remove(&scan).is_some() {
                abm.release_chunk(scan, now).unwrap();
                progress = true;
            }
            match abm.next_chunk(scan, now).unwrap() {
                NextChunk::Deliver(d) => {
                    m.take(d)?;
                    progress = true;
                }
                NextChunk::Finished => {
                    prop_assert_eq!(&m.got[&scan], &m.wanted[&scan]);
                    abm.unregister_scan(scan, now, &mut out).unwrap();
                    m.scans.retain(|s| *s != scan);
                    for d in out.drain(..) {
                        m.take(d)?;
                    }
                    progress = true;
                }
                NextChunk::Wait => {}
            }
        }
        let load = abm.next_load(now);
        m.loads.extend(load.into_iter().flat_map(|l| l.pieces));
        // Oldest read first, as a disk serves them: completing the newest first could
        // leave an old load's other pieces reserved forever while two starved DSM scans
        // take turns evicting each other's last missing piece (a case the property test
        // found once time advanced between events).
        if !m.loads.is_empty() {
            let piece = m.loads.remove(0);
            abm.load_completed(piece, now, &mut out).unwrap();
            progress = true;
        }
        for d in out.drain(..) {
            m.take(d)?;
        }
        abm.check_invariants()
            .map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert!(progress, "no progress with {} scans left", m.scans.len());
    }
    Err(TestCaseError::fail("drain did not finish"))
}

/// One random case: a table, a buffer, a policy and a sequence of driver events.
fn run_case(
    kind: PolicyKind,
    chunks: u32,
    frames: u32,
    inflight: u32,
    sizes: &[u64],
    dsm: bool,
    ops: &[Op],
) -> Result<(), TestCaseError> {
    let geometry = TableGeometry::uniform(chunks, ROWS_PER_CHUNK).unwrap();
    let geometry = if dsm {
        // 4 columns whose sizes differ per chunk: pieces straddle no page here,
        // but eviction must free several pieces of different sizes.
        let columns = (0..chunks as usize)
            .map(|c| (0..4).map(|k| sizes[(c + k * 7) % sizes.len()]).collect())
            .collect();
        geometry.with_column_bytes(columns).unwrap()
    } else {
        geometry
            .with_chunk_bytes(sizes[..chunks as usize].to_vec())
            .unwrap()
    };
    let config = AbmConfig::new(frames).with_max_inflight(inflight);
    let mut abm = Abm::with_kind(geometry, config, kind).unwrap();
    let mut model = Model::default();
    for &op in ops {
        step(&mut abm, &mut model, op, chunks)?;
    }
    drain(&mut abm, &mut model)?;
    prop_assert_eq!(abm.state().active_count(), 0);
    prop_assert_eq!(abm.state().pending_count(), 0);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, failure_persistence: None, ..ProptestConfig::default() })]
    #[test]
    fn random_event_sequences_keep_invariants(
        policy in 0..PolicyKind::ALL.len(),
        chunks in 1u32..40,
        frames in 2u32..12,
        inflight in 1u32..3,
        sizes in proptest::collection::vec(1u64..4, 40),
        dsm in any::<bool>(),
        ops in proptest::collection::vec((any::<u8>(), any::<u16>(), any::<u16>(), any::<u16>()), 0..300),
    ) {
        run_case(PolicyKind::ALL[policy], chunks, frames, inflight, &sizes, dsm, &ops)?;
    }
}

/// Found by the property test once time advanced between events: while the drain
/// completed the newest read first, two starved DSM scans under relevance evicted each
/// other's last missing piece forever and an older load's pieces stayed reserved.
#[test]
fn relevance_dsm_drains_a_found_case() {
    let sizes = [
        1, 1, 2, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 1, 1, 2, 1, 1, 1, 2, 2, 3, 1, 3, 3, 2, 2, 2,
        1, 2, 1, 1, 2, 3, 2, 2, 1, 2,
    ];
    let ops = [
        (77, 25723, 28750, 4128),
        (58, 45813, 44734, 22176),
        (175, 35967, 15561, 46252),
        (245, 44349, 40491, 33803),
        (63, 45689, 54917, 12778),
        (210, 12701, 26452, 23935),
        (115, 7557, 50114, 40306),
        (255, 10526, 45786, 451),
        (18, 36538, 56023, 7352),
        (137, 65297, 29247, 51293),
        (168, 23614, 27571, 24979),
        (224, 16491, 30553, 11032),
        (252, 42935, 29830, 16396),
        (147, 13207, 37278, 42750),
        (175, 57982, 60687, 60744),
        (231, 65314, 53497, 46526),
    ];
    run_case(PolicyKind::Relevance, 33, 5, 2, &sizes, true, &ops).unwrap();
}

#[test]
fn policy_names_round_trip() {
    for kind in PolicyKind::ALL {
        assert_eq!(kind.to_string().parse::<PolicyKind>(), Ok(kind));
        let geometry = TableGeometry::uniform(4, ROWS_PER_CHUNK).unwrap();
        let policy = AnyPolicy::new(kind, &geometry, &AbmConfig::new(2));
        assert_eq!(policy.kind(), kind);
    }
    assert!("lru".parse::<PolicyKind>().is_err());
}

#[test]
fn admission_queues_scans_beyond_two_frames_each() {
    let geometry = TableGeometry::uniform(10, ROWS_PER_CHUNK).unwrap();
    let mut abm = Abm::with_kind(geometry, AbmConfig::new(4), PolicyKind::Relevance).unwrap();
    let spec = ScanSpec::full(10 * ROWS_PER_CHUNK);
    let admitted: Vec<bool> = (0..3)
        .map(|_| abm.register_scan(&spec, Nanos(0)).unwrap().admitted)
        .collect();
    assert_eq!(admitted, vec![true, true, false]);
    assert_eq!(abm.state().pending_count(), 1);
}

#[test]
fn driver_misuse_is_an_error_not_a_panic() {
    let geometry = TableGeometry::uniform(4, ROWS_PER_CHUNK).unwrap();
    let mut abm = Abm::with_kind(geometry, AbmConfig::new(2), PolicyKind::Normal).unwrap();
    assert!(matches!(
        abm.release_chunk(ScanId(99), Nanos(0)),
        Err(BufferError::UnknownScan(_))
    ));
    assert!(matches!(
        abm.load_completed(
            PieceId::whole(TableId(0), ChunkId(0)),
            Nanos(0),
            &mut Vec::new()
        ),
        Err(BufferError::NotLoading(_))
    ));
    let scan = abm
        .register_scan(&ScanSpec::full(4 * ROWS_PER_CHUNK), Nanos(0))
        .unwrap()
        .scan;
    assert!(matches!(
        abm.release_chunk(scan, Nanos(0)),
        Err(BufferError::NotProcessing(_))
    ));
    let bad = ScanSpec::full(5 * ROWS_PER_CHUNK);
    assert!(matches!(
        abm.register_scan(&bad, Nanos(0)),
        Err(BufferError::RangeOutOfTable { .. })
    ));
    assert!(Abm::with_kind(
        TableGeometry::uniform(4, 1).unwrap(),
        AbmConfig::new(1),
        PolicyKind::Normal
    )
    .is_err());
}

/// Regression (found reviewing the threaded runtime): a scan that needs no chunk and
/// was queued behind admission got `Wait` forever, since admission never delivers to a
/// scan with nothing to read. It must be `Finished` at once, queued or not.
#[test]
fn a_queued_scan_with_no_chunks_is_finished_not_left_waiting() {
    let geometry = TableGeometry::uniform(10, ROWS_PER_CHUNK).unwrap();
    for kind in PolicyKind::ALL {
        let mut abm = Abm::with_kind(geometry.clone(), AbmConfig::new(2), kind).unwrap();
        let full = abm
            .register_scan(&ScanSpec::full(10 * ROWS_PER_CHUNK), Nanos(0))
            .unwrap();
        assert!(full.admitted);
        let empty = ScanSpec::new(5..5, ColumnMask::ALL);
        let queued = abm.register_scan(&empty, Nanos(0)).unwrap();
        assert!(!queued.admitted, "{kind:?}: two frames admit only one scan");
        assert_eq!(
            abm.next_chunk(queued.scan, Nanos(1)).unwrap(),
            NextChunk::Finished,
            "{kind:?}"
        );
        let mut out = Vec::new();
        abm.unregister_scan(queued.scan, Nanos(2), &mut out)
            .unwrap();
        abm.check_invariants().unwrap();
    }
}

/// Interest is a 256-bit set: a buffer with room admits 256 concurrent scans (the old
/// `u64` masks stopped at 64), the next one queues, and all of them finish with exactly
/// their chunks under every policy.
#[test]
fn two_hundred_fifty_six_scans_run_at_once() {
    let chunks = 8u32;
    for kind in PolicyKind::ALL {
        let geometry = TableGeometry::uniform(chunks, ROWS_PER_CHUNK).unwrap();
        let frames = 2 * MAX_SCANS as u32;
        let mut abm = Abm::with_kind(geometry, AbmConfig::new(frames), kind).unwrap();
        let mut m = Model::default();
        for i in 0..=MAX_SCANS as u64 {
            let start = i % u64::from(chunks);
            let spec = ScanSpec::new(
                start * ROWS_PER_CHUNK..u64::from(chunks) * ROWS_PER_CHUNK,
                ColumnMask::ALL,
            );
            let reg = abm.register_scan(&spec, Nanos(0)).unwrap();
            assert_eq!(reg.admitted, i < MAX_SCANS as u64, "{kind}: scan {i}");
            m.wanted.insert(reg.scan, (start as u32..chunks).collect());
            m.got.insert(reg.scan, BTreeSet::new());
            m.scans.push(reg.scan);
        }
        assert_eq!(abm.state().active_count() as usize, MAX_SCANS, "{kind}");
        drain(&mut abm, &mut m).unwrap_or_else(|e| panic!("{kind}: {e}"));
        assert_eq!(
            abm.state().stats().loads,
            u64::from(chunks),
            "{kind}: shared"
        );
    }
}

/// Chunks of different sizes: a load that needs more bytes than one victim frees
/// evicts several (the 2007 paper's iterative "finding space"), least recently used
/// first, and no more than it needs.
#[test]
fn a_large_chunk_evicts_as_many_small_ones_as_it_needs() {
    let geometry = TableGeometry::uniform(6, ROWS_PER_CHUNK)
        .unwrap()
        .with_chunk_bytes(vec![1, 1, 1, 1, 1, 3])
        .unwrap();
    let config = AbmConfig::with_budget(BufferBudget::Bytes(6));
    let mut abm = Abm::with_kind(geometry, config, PolicyKind::Normal).unwrap();
    let now = Nanos(0);
    let mut out = Vec::new();
    let spec = ScanSpec::new(0..6 * ROWS_PER_CHUNK, ColumnMask::ALL).in_order();
    let scan = abm.register_scan(&spec, now).unwrap().scan;
    let mut loads = Vec::new();
    for expected in 0..6 {
        // Load only when the scan blocks, so nothing is read ahead.
        if abm.next_chunk(scan, now).unwrap() == NextChunk::Wait {
            let load = abm.next_load(now).expect("a blocked scan gets a load");
            let evicted: Vec<u32> = load.evicted.iter().map(|p| p.chunk.0).collect();
            loads.push((load.chunk.0, evicted));
            abm.load_completed(load.pieces[0], now, &mut out).unwrap();
            assert_eq!(out.pop().map(|d| d.chunk.0), Some(expected));
        }
        abm.check_invariants().unwrap();
        abm.release_chunk(scan, now).unwrap();
    }
    let expected: Vec<(u32, Vec<u32>)> = vec![
        (0, vec![]),
        (1, vec![]),
        (2, vec![]),
        (3, vec![]),
        (4, vec![]),
        // 5 bytes held, 1 free: the 3-byte chunk evicts the two oldest 1-byte chunks.
        (5, vec![0, 1]),
    ];
    assert_eq!(loads, expected);
    assert_eq!(abm.state().pool().used_bytes(), 6);
}

/// Regression (issue "Reliability", item 8): an empty table (0 rows, 0 chunks) was
/// rejected by the geometry, so the cooperative policies could not answer a query the
/// in-order Scan answered with 0 rows. Now every scan of it is finished at once and the
/// loader has nothing to do.
#[test]
fn an_empty_table_is_served_under_every_policy() {
    for kind in PolicyKind::ALL {
        let geometry = TableGeometry::from_chunk_starts(vec![], 0).unwrap();
        let mut abm = Abm::with_kind(geometry, AbmConfig::new(2), kind).unwrap();
        let scan = abm
            .register_scan(&ScanSpec::full(0), Nanos(0))
            .unwrap()
            .scan;
        assert_eq!(abm.next_load(Nanos(0)), None, "{kind}");
        assert_eq!(abm.next_chunk(scan, Nanos(0)).unwrap(), NextChunk::Finished);
        abm.unregister_scan(scan, Nanos(0), &mut Vec::new())
            .unwrap();
        abm.check_invariants().unwrap();
    }
}
