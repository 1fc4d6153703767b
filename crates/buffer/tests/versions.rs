//! Versions of a table in one catalog (2012 §2.1, case (iv)): a checkpoint's new image
//! shares no page with the old one, so it is added as a table of its own and the old
//! version retired; the old one's scans go on, and when the last of them leaves its
//! pieces are evicted and its metadata dropped.
//!
//! Seeded random interleavings of registrations (on a table's newest version, or on a
//! retired one not yet freed), chunk requests and releases, loads, and checkpoints of
//! two tables (an NSM-like and a DSM-like one), through the one [`Driver`], under every
//! policy. After every event the catalog's invariants hold; a version is freed exactly
//! when it is retired and idle, and then none of its pieces is left; at the end every
//! scan has had each chunk of its version's ranges exactly once.
#![allow(clippy::unwrap_used)] // test code: an unwrap that fails is a failed test

use coopscan_buffer::*;
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::collections::{BTreeSet, HashMap};

const ROWS_PER_CHUNK: u64 = 10;
const BUDGET: u64 = 900;
const SEEDS: u64 = 8;
/// Events per run before the scans are drained.
const EVENTS: usize = 3000;
const MAX_EVENTS: usize = 200_000;

type TestDriver = Driver<AnyPolicy, &'static str>;

/// A version of table `t` of `chunks` chunks: 100-170 bytes each (NSM) or 4 columns of
/// 20-65 bytes (DSM).
fn geometry(t: usize, chunks: u32) -> TableGeometry {
    let uniform = TableGeometry::uniform(chunks, ROWS_PER_CHUNK).unwrap();
    let sizes = 0..u64::from(chunks);
    match t {
        0 => uniform.with_chunk_bytes(sizes.map(|c| 100 + 10 * (c % 8)).collect()),
        _ => uniform.with_column_bytes(
            sizes
                .map(|k| (0..4).map(|c| 20 + 15 * c + k % 5).collect())
                .collect(),
        ),
    }
    .unwrap()
}

struct Run {
    version: TableId,
    wanted: BTreeSet<u32>,
    got: BTreeSet<u32>,
    holding: Option<ChunkId>,
    waiting: bool,
    done: bool,
}

struct Harness {
    d: TestDriver,
    kind: PolicyKind,
    rng: ChaCha8Rng,
    now: u64,
    runs: HashMap<ScanId, Run>,
    /// Each table's newest version.
    newest: [TableId; 2],
    /// Versions retired and not yet freed.
    retired: BTreeSet<TableId>,
    /// Every version's chunk count, while it lives.
    chunks: HashMap<TableId, u32>,
    loading: Vec<PieceId>,
    /// What the driver would keep bytes for: loaded and not evicted.
    pooled: BTreeSet<PieceId>,
    checkpoints: usize,
    freed: usize,
}

impl Harness {
    fn new(kind: PolicyKind, seed: u64) -> Harness {
        let config = AbmConfig::with_budget(BufferBudget::Bytes(BUDGET));
        let geometries = vec![geometry(0, 6), geometry(1, 6)];
        let catalog = Catalog::with_kind(geometries, &config, kind).unwrap();
        Harness {
            d: Driver::new(catalog, OnLoadFailure::FailScans),
            kind,
            rng: ChaCha8Rng::seed_from_u64(seed),
            now: 0,
            runs: HashMap::new(),
            newest: [TableId(0), TableId(1)],
            retired: BTreeSet::new(),
            chunks: [(TableId(0), 6), (TableId(1), 6)].into_iter().collect(),
            loading: Vec::new(),
            pooled: BTreeSet::new(),
            checkpoints: 0,
            freed: 0,
        }
    }

    fn now(&mut self) -> Nanos {
        self.now += 1;
        Nanos(self.now)
    }

    fn register(&mut self, version: TableId) {
        let chunks = self.chunks[&version];
        let start = self.rng.random_range(0..chunks);
        let end = self.rng.random_range(start + 1..=chunks);
        let rows = u64::from(start) * ROWS_PER_CHUNK..u64::from(end) * ROWS_PER_CHUNK;
        let cols = ColumnMask(self.rng.random_range(1..16));
        let mut spec = ScanSpec::new(RowRanges::new([rows]), cols);
        spec.table = version;
        let now = self.now();
        let scan = self.d.register(&spec, now).unwrap().scan;
        let run = Run {
            version,
            wanted: (start..end).collect(),
            got: BTreeSet::new(),
            holding: None,
            waiting: false,
            done: false,
        };
        assert!(
            self.runs.insert(scan, run).is_none(),
            "scan id {scan:?} reused"
        );
    }

    /// A checkpoint of table `t`: a new version of another size, the old one retired.
    fn checkpoint(&mut self, t: usize) {
        let chunks = self.rng.random_range(3..9);
        let new = self
            .d
            .add_table_of_kind(geometry(t, chunks), self.kind)
            .unwrap();
        assert!(!self.chunks.contains_key(&new), "{new:?} is still live");
        self.chunks.insert(new, chunks);
        let old = std::mem::replace(&mut self.newest[t], new);
        self.d.retire_table(old).unwrap();
        self.retired.insert(old);
        self.checkpoints += 1;
    }

    fn take(&mut self, holder: HolderId, mail: Mail<&'static str>) {
        let run = self.runs.get_mut(&holder.scan).unwrap();
        run.waiting = false;
        match mail {
            Mail::Chunk(d) => {
                assert_eq!(d.table, run.version, "{d:?}");
                assert!(run.wanted.contains(&d.chunk.0), "unwanted {d:?}");
                assert!(run.got.insert(d.chunk.0), "{d:?} twice");
                assert!(
                    run.holding.replace(d.chunk).is_none(),
                    "{d:?} while holding"
                );
            }
            Mail::Finished => run.done = true,
            Mail::Failed(why) => panic!("{holder:?} failed: {why}"),
        }
    }

    /// One step of scan `scan`: release what it holds, else ask, else end it.
    fn step(&mut self, scan: ScanId) {
        let now = self.now();
        let run = &self.runs[&scan];
        if run.holding.is_some() {
            self.d.release(scan.into(), now).unwrap();
            self.runs.get_mut(&scan).unwrap().holding = None;
        } else if run.done {
            self.d.unregister(scan, now).unwrap();
            let run = self.runs.remove(&scan).unwrap();
            assert_eq!(run.got, run.wanted, "{scan:?} of {:?}", run.version);
        } else if !run.waiting {
            match self.d.ask(scan.into(), now, false).unwrap() {
                Answer::Mail(mail) => self.take(scan.into(), mail),
                Answer::Wait => self.runs.get_mut(&scan).unwrap().waiting = true,
                Answer::Hold { .. } => unreachable!("asked unpaced"),
            }
        }
    }

    /// Starts a load if the catalog wants one.
    fn load(&mut self) {
        let now = self.now();
        if let Some(load) = self.d.next_load(now) {
            let live = self.chunks.contains_key(&load.table);
            assert!(live, "a freed version: {load:?}");
            self.loading.extend(&load.pieces);
        }
    }

    /// Piece `i` of those loading arrived; its answers are taken by [`Harness::settle`].
    fn complete(&mut self, i: usize) {
        let piece = self.loading.swap_remove(i);
        let now = self.now();
        self.d.loaded(piece, now).unwrap();
        self.pooled.insert(piece);
    }

    /// After every event: answers posted (an unregistration may admit and serve a
    /// queued scan), evictions and frees accounted for, invariants.
    fn settle(&mut self) {
        for (holder, mail) in self.d.drain_mail() {
            self.take(holder, mail);
        }
        for piece in self.d.take_evicted() {
            assert!(self.pooled.remove(&piece), "{piece} evicted twice");
        }
        for freed in self.d.take_freed() {
            assert!(
                self.retired.remove(&freed),
                "{freed:?} freed, never retired"
            );
            assert!(
                !self.runs.values().any(|r| r.version == freed),
                "{freed:?} freed under a scan"
            );
            assert!(
                !self.pooled.iter().any(|p| p.table == freed),
                "pieces of freed {freed:?} left"
            );
            assert!(self.d.catalog().table(freed).is_err());
            self.chunks.remove(&freed);
            self.freed += 1;
        }
        self.d.catalog().check_invariants().unwrap();
    }

    fn random_event(&mut self) {
        let scans: Vec<ScanId> = self.runs.keys().copied().collect();
        match self.rng.random_range(0..100) {
            0..10 if scans.len() < 6 => {
                let t = self.rng.random_range(0..2);
                let old = self.retired.iter().copied().next();
                match old.filter(|_| self.rng.random_bool(0.3)) {
                    Some(old) => self.register(old),
                    None => self.register(self.newest[t]),
                }
            }
            10..13 => {
                let t = self.rng.random_range(0..2);
                self.checkpoint(t);
            }
            13..50 if !self.loading.is_empty() => {
                let i = self.rng.random_range(0..self.loading.len());
                self.complete(i);
            }
            _ if !scans.is_empty() => {
                let mut scans = scans;
                scans.sort();
                let scan = scans[self.rng.random_range(0..scans.len())];
                self.step(scan);
            }
            _ => {}
        }
        self.load();
    }

    /// Runs the scans out: every one ends, every retired version is freed.
    fn drain(&mut self) {
        for _ in 0..MAX_EVENTS {
            if self.runs.is_empty() && self.loading.is_empty() {
                return;
            }
            let mut scans: Vec<ScanId> = self.runs.keys().copied().collect();
            scans.sort();
            for scan in scans {
                self.step(scan);
                self.settle();
            }
            if !self.loading.is_empty() {
                self.complete(0);
            }
            self.load();
            self.settle();
        }
        panic!("{}: scans left after {MAX_EVENTS} rounds", self.kind);
    }
}

#[test]
fn versions_are_freed_when_their_last_scan_leaves_under_every_policy() {
    for kind in PolicyKind::ALL {
        let (mut checkpoints, mut freed) = (0, 0);
        for seed in 0..SEEDS {
            let mut h = Harness::new(kind, seed);
            for _ in 0..EVENTS {
                h.random_event();
                h.settle();
            }
            h.drain();
            assert!(
                h.retired.is_empty(),
                "{kind} seed {seed}: {:?} never freed",
                h.retired
            );
            assert_eq!(h.d.catalog().table_count(), 2, "{kind} seed {seed}");
            checkpoints += h.checkpoints;
            freed += h.freed;
        }
        assert_eq!(checkpoints, freed, "{kind}");
        assert!(
            checkpoints > 10 * SEEDS as usize,
            "{kind}: {checkpoints} checkpoints"
        );
    }
}

/// The paper's scenario step by step: a scan of the old version and one of the new
/// share the budget; the old version's pieces stay while its scan runs and go with
/// it; its slot is taken by the next version, whose pieces are of a new
/// [`TableVersion`], and whose scans' ids never repeat the old one's.
#[test]
fn an_old_version_lives_until_its_last_scan_leaves() {
    let config = AbmConfig::with_budget(BufferBudget::Bytes(BUDGET));
    let catalog = Catalog::with_kind(vec![geometry(0, 6)], &config, PolicyKind::Relevance);
    let mut d: TestDriver = Driver::new(catalog.unwrap(), OnLoadFailure::FailScans);
    let full = |table, chunks: u64| {
        let mut spec = ScanSpec::full(chunks * ROWS_PER_CHUNK);
        spec.table = table;
        spec
    };
    let old_scan = d.register(&full(TableId(0), 6), Nanos(0)).unwrap().scan;
    let load = |d: &mut TestDriver, scan: ScanId, at: u64| {
        assert_eq!(d.ask(scan.into(), Nanos(at), false).unwrap(), Answer::Wait);
        let load = d.next_load(Nanos(at)).unwrap();
        for p in &load.pieces {
            d.loaded(*p, Nanos(at)).unwrap();
        }
        let mail = d.take_mail(scan.into());
        assert!(matches!(mail, Some(Mail::Chunk(_))), "{mail:?}");
        d.release(scan.into(), Nanos(at)).unwrap();
        load
    };
    let first = load(&mut d, old_scan, 1);
    assert_eq!(first.table, TableId(0));

    let new = d
        .add_table_of_kind(geometry(0, 4), PolicyKind::Relevance)
        .unwrap();
    assert_eq!(new, TableId(1));
    d.retire_table(TableId(0)).unwrap();
    assert!(d.take_freed().is_empty(), "a scan still reads version 0");
    assert!(d.catalog().is_retired(TableId(0)));
    let new_scan = d.register(&full(new, 4), Nanos(2)).unwrap().scan;
    assert_eq!(load(&mut d, new_scan, 3).table, new);
    // A late registration on the old snapshot is still served.
    let late = d.register(&full(TableId(0), 6), Nanos(4)).unwrap().scan;
    let old_used = |d: &TestDriver| {
        d.catalog()
            .table(TableId(0))
            .unwrap()
            .state()
            .pool()
            .used_bytes()
    };
    assert!(old_used(&d) > 0);
    d.catalog().check_invariants().unwrap();

    for scan in [old_scan, late] {
        d.unregister(scan, Nanos(5)).unwrap();
    }
    assert_eq!(d.take_freed(), vec![TableId(0)]);
    let evicted = d.take_evicted();
    assert!(evicted.contains(&first.pieces[0]), "{evicted:?}");
    assert!(d.catalog().table(TableId(0)).is_err());
    assert!(d.register(&full(TableId(0), 6), Nanos(6)).is_err());
    d.catalog().check_invariants().unwrap();

    // The next checkpoint takes slot 0 again, with a new version of its pieces.
    let newer = d
        .add_table_of_kind(geometry(0, 5), PolicyKind::Relevance)
        .unwrap();
    assert_eq!(newer, TableId(0));
    d.retire_table(new).unwrap();
    let scan = d.register(&full(newer, 5), Nanos(7)).unwrap().scan;
    assert!(scan > late, "{scan:?} repeats an old version's id");
    let loaded = load(&mut d, scan, 8);
    assert!(
        loaded.pieces.iter().all(|p| p.version == TableVersion(1)),
        "{loaded:?}"
    );
    d.unregister(new_scan, Nanos(9)).unwrap();
    assert_eq!(d.take_freed(), vec![new]);
    d.catalog().check_invariants().unwrap();
}
