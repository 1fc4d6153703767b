//! Property test on the ABM alone: random interleavings of every driver event
//! (register, next_chunk, release, next_load, load_completed, load_failed, unregister
//! mid-scan = cancel) under every policy. After each event `check_invariants` holds and
//! no scan ever gets a chunk twice or outside its ranges; finally the remaining scans are
//! drained and each must have received exactly the chunks of its ranges.

use coopscan_buffer::*;
use proptest::prelude::*;
use std::collections::{BTreeSet, HashMap};

const ROWS_PER_CHUNK: u64 = 10;
/// Bound on the drain loop: generous for tables of ≤ 40 chunks and ≤ 12 scans.
const DRAIN_STEPS: usize = 100_000;

#[derive(Default)]
struct Model {
    scans: Vec<ScanId>,
    wanted: HashMap<ScanId, BTreeSet<u32>>,
    got: HashMap<ScanId, BTreeSet<u32>>,
    holding: HashMap<ScanId, ChunkId>,
    loads: Vec<ChunkId>,
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
        prop_assert!(self.holding.insert(d.scan, d.chunk).is_none());
        Ok(())
    }
}

type Op = (u8, u16, u16, u16);

fn step(abm: &mut Abm, m: &mut Model, op: Op, chunks: u32) -> Result<(), TestCaseError> {
    let now = Nanos(0);
    let mut out = Vec::new();
    let (kind, a, b, c) = op;
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
            let scan = abm
                .register_scan(&ScanSpec::new(ranges, ColumnMask::ALL), now)
                .unwrap()
                .scan;
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
        3 => m.loads.extend(abm.next_load(now).map(|l| l.chunk)),
        4 if !m.loads.is_empty() => {
            let chunk = m.loads.swap_remove(pick(m.loads.len()));
            abm.load_completed(chunk, now, &mut out).unwrap();
        }
        5 if !m.loads.is_empty() && b % 4 == 0 => {
            let chunk = m.loads.swap_remove(pick(m.loads.len()));
            abm.load_failed(chunk, now).unwrap();
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
    let now = Nanos(0);
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
        m.loads.extend(abm.next_load(now).map(|l| l.chunk));
        if let Some(chunk) = m.loads.pop() {
            abm.load_completed(chunk, now, &mut out).unwrap();
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

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, failure_persistence: None, ..ProptestConfig::default() })]
    #[test]
    fn random_event_sequences_keep_invariants(
        policy in 0usize..4,
        chunks in 1u32..40,
        frames in 2u32..12,
        inflight in 1u32..3,
        ops in proptest::collection::vec((any::<u8>(), any::<u16>(), any::<u16>(), any::<u16>()), 0..300),
    ) {
        let geometry = TableGeometry::uniform(chunks, ROWS_PER_CHUNK).unwrap();
        let config = AbmConfig::new(frames).with_max_inflight(inflight);
        let mut abm = Abm::with_kind(geometry, config, PolicyKind::ALL[policy]).unwrap();
        let mut model = Model::default();
        for op in ops {
            step(&mut abm, &mut model, op, chunks)?;
        }
        drain(&mut abm, &mut model)?;
        prop_assert_eq!(abm.state().active_count(), 0);
        prop_assert_eq!(abm.state().pending_count(), 0);
    }
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
        abm.load_completed(ChunkId(0), Nanos(0), &mut Vec::new()),
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
        let empty = ScanSpec::new(vec![5..5], ColumnMask::ALL);
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
