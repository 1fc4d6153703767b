//! Index selections through the ABM and the scatter read (2004 report §4.2): a chunk
//! needed only by index selections is loaded as the union of their pages; a scan that
//! needs more of it is admitted only once that piece is gone.
//!
//! Seeded random interleavings of index selections (random pages of random chunks) and
//! ordinary scans (1-2 workers) over one NSM-like table, through the one [`Driver`],
//! under every policy; invariants after every event. Every scan gets each chunk of its
//! ranges exactly once, and a scattered piece is only ever handed to an index selection
//! whose pages it holds.
#![allow(clippy::unwrap_used)] // test code: an unwrap that fails is a failed test

use coopscan_buffer::*;
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::collections::{BTreeMap, BTreeSet, HashMap};

const CHUNKS: u32 = 8;
const ROWS_PER_CHUNK: u64 = 10;
const CHUNK_BYTES: u64 = 100;
/// Ten pages a chunk.
const PAGE_BYTES: u64 = 10;
const BUDGET: u64 = 450;
const SEEDS: u64 = 12;
const EVENTS: usize = 2500;
const MAX_ROUNDS: usize = 100_000;

type TestDriver = Driver<AnyPolicy, &'static str>;

fn geometry() -> TableGeometry {
    TableGeometry::uniform(CHUNKS, ROWS_PER_CHUNK)
        .unwrap()
        .with_chunk_bytes(vec![CHUNK_BYTES; CHUNKS as usize])
        .unwrap()
        .with_page_bytes(PAGE_BYTES)
        .unwrap()
}

fn driver(kind: PolicyKind) -> TestDriver {
    let config = AbmConfig::with_budget(BufferBudget::Bytes(BUDGET));
    let catalog = Catalog::with_kind(vec![geometry()], &config, kind).unwrap();
    Driver::new(catalog, OnLoadFailure::FailScans)
}

fn rows(chunks: std::ops::Range<u32>) -> RowRanges {
    let start = u64::from(chunks.start) * ROWS_PER_CHUNK;
    let end = u64::from(chunks.end) * ROWS_PER_CHUNK;
    RowRanges::new(std::iter::once(start..end))
}

struct Run {
    wanted: BTreeSet<u32>,
    /// An index selection's pages per chunk (a chunk it does not name: all of them).
    pages: Option<BTreeMap<u32, Vec<u32>>>,
    got: BTreeSet<u32>,
    holding: BTreeMap<u16, ChunkId>,
    waiting: BTreeSet<u16>,
    finished: BTreeSet<u16>,
    workers: u16,
}

struct Harness {
    d: TestDriver,
    kind: PolicyKind,
    rng: ChaCha8Rng,
    now: u64,
    runs: HashMap<ScanId, Run>,
    loading: Vec<PieceId>,
    pooled: BTreeSet<PieceId>,
    /// Deliveries of a scattered piece.
    scattered_deliveries: usize,
}

impl Harness {
    fn new(kind: PolicyKind, seed: u64) -> Harness {
        Harness {
            d: driver(kind),
            kind,
            rng: ChaCha8Rng::seed_from_u64(seed),
            now: 0,
            runs: HashMap::new(),
            loading: Vec::new(),
            pooled: BTreeSet::new(),
            scattered_deliveries: 0,
        }
    }

    fn now(&mut self) -> Nanos {
        self.now += 1;
        Nanos(self.now)
    }

    fn register(&mut self) {
        let start = self.rng.random_range(0..CHUNKS);
        let end = self.rng.random_range(start + 1..=CHUNKS);
        let index = self.rng.random_bool(0.6);
        let workers = if index {
            1
        } else {
            self.rng.random_range(1..=2)
        };
        let mut spec = ScanSpec::new(rows(start..end), ColumnMask::ALL).with_workers(workers);
        let pages = index.then(|| {
            let mut pages = BTreeMap::new();
            for c in start..end {
                // Now and then a chunk it needs whole.
                if self.rng.random_bool(0.9) {
                    // Pages near each other, so that unions often span half a chunk or less.
                    let n = self.rng.random_range(1..=3);
                    let base = self.rng.random_range(0..7);
                    let mut p: Vec<u32> =
                        (0..n).map(|_| base + self.rng.random_range(0..4)).collect();
                    p.sort_unstable();
                    p.dedup();
                    pages.insert(c, p);
                }
            }
            pages
        });
        if let Some(pages) = &pages {
            let list = pages.iter().map(|(c, p)| (ChunkId(*c), p.clone()));
            spec = spec.with_pages(ScanPages::new(list));
        }
        let now = self.now();
        let scan = self.d.register(&spec, now).unwrap().scan;
        let run = Run {
            wanted: (start..end).collect(),
            pages,
            got: BTreeSet::new(),
            holding: BTreeMap::new(),
            waiting: BTreeSet::new(),
            finished: BTreeSet::new(),
            workers,
        };
        assert!(self.runs.insert(scan, run).is_none(), "{scan:?} reused");
    }

    fn take(&mut self, holder: HolderId, mail: Mail<&'static str>) {
        let scattered = match &mail {
            Mail::Chunk(d) => self.scattered_pages(d.chunk),
            _ => None,
        };
        let run = self.runs.get_mut(&holder.scan).unwrap();
        run.waiting.remove(&holder.worker);
        match mail {
            Mail::Chunk(d) => {
                assert!(run.wanted.contains(&d.chunk.0), "unwanted {d:?}");
                assert!(run.got.insert(d.chunk.0), "{d:?} twice");
                assert!(run.holding.insert(holder.worker, d.chunk).is_none());
                if let Some(held) = scattered {
                    // The piece must hold every page the selection needs of the chunk.
                    let pages = run.pages.as_ref().and_then(|p| p.get(&d.chunk.0));
                    let pages = pages.unwrap_or_else(|| {
                        panic!("{d:?}: a scattered piece for a scan needing it whole")
                    });
                    assert!(
                        pages.iter().all(|p| held.contains(p)),
                        "{d:?}: {pages:?} not in {held:?}"
                    );
                    self.scattered_deliveries += 1;
                }
            }
            Mail::Finished => {
                run.finished.insert(holder.worker);
            }
            Mail::Failed(why) => panic!("{holder:?} failed: {why}"),
        }
    }

    fn scattered_pages(&self, chunk: ChunkId) -> Option<Vec<u32>> {
        let abm = self.d.catalog().table(TableId(0)).unwrap();
        abm.state().scattered_pages(chunk).map(<[u32]>::to_vec)
    }

    /// One step of one worker of `scan`: release, ask, or end the scan.
    fn step(&mut self, scan: ScanId, worker: u16) {
        let now = self.now();
        let run = &self.runs[&scan];
        if run.holding.contains_key(&worker) {
            self.d.release(HolderId::new(scan, worker), now).unwrap();
            self.runs.get_mut(&scan).unwrap().holding.remove(&worker);
        } else if run.finished.len() == usize::from(run.workers) {
            self.d.unregister(scan, now).unwrap();
            let run = self.runs.remove(&scan).unwrap();
            assert_eq!(run.got, run.wanted, "{scan:?}");
        } else if !run.waiting.contains(&worker) && !run.finished.contains(&worker) {
            let holder = HolderId::new(scan, worker);
            match self.d.ask(holder, now, false).unwrap() {
                Answer::Mail(mail) => self.take(holder, mail),
                Answer::Wait => {
                    self.runs.get_mut(&scan).unwrap().waiting.insert(worker);
                }
                Answer::Hold { .. } => unreachable!("asked unpaced"),
            }
        }
    }

    fn load(&mut self) {
        let now = self.now();
        if let Some(load) = self.d.next_load(now) {
            let whole = CHUNK_BYTES * load.pieces.len() as u64;
            let scattered = load.reads.iter().any(|r| !r.pages.is_empty());
            assert_eq!(scattered, load.bytes < whole, "{load:?}");
            self.loading.extend(&load.pieces);
        }
    }

    fn complete(&mut self, i: usize) {
        let piece = self.loading.swap_remove(i);
        let now = self.now();
        self.d.loaded(piece, now).unwrap();
        self.pooled.insert(piece);
    }

    fn settle(&mut self) {
        for (holder, mail) in self.d.drain_mail() {
            self.take(holder, mail);
        }
        for piece in self.d.take_evicted() {
            assert!(self.pooled.remove(&piece), "{piece} evicted, never loaded");
        }
        self.d.catalog().check_invariants().unwrap();
    }

    fn random_worker(&mut self) -> Option<(ScanId, u16)> {
        let mut scans: Vec<ScanId> = self.runs.keys().copied().collect();
        scans.sort();
        let scan = *scans.get(self.rng.random_range(0..scans.len().max(1)))?;
        let worker = self.rng.random_range(0..self.runs[&scan].workers);
        Some((scan, worker))
    }

    fn random_event(&mut self) {
        match self.rng.random_range(0..100) {
            0..12 if self.runs.len() < 6 => self.register(),
            12..50 if !self.loading.is_empty() => {
                let i = self.rng.random_range(0..self.loading.len());
                self.complete(i);
            }
            _ => {
                if let Some((scan, worker)) = self.random_worker() {
                    self.step(scan, worker);
                }
            }
        }
        self.load();
    }

    fn drain(&mut self) {
        for _ in 0..MAX_ROUNDS {
            if self.runs.is_empty() && self.loading.is_empty() {
                return;
            }
            let mut scans: Vec<ScanId> = self.runs.keys().copied().collect();
            scans.sort();
            for scan in scans {
                for worker in 0..self.runs.get(&scan).map_or(0, |r| r.workers) {
                    if self.runs.contains_key(&scan) {
                        self.step(scan, worker);
                        self.settle();
                    }
                }
            }
            if !self.loading.is_empty() {
                self.complete(0);
            }
            self.load();
            self.settle();
        }
        panic!("{}: scans left after {MAX_ROUNDS} rounds", self.kind);
    }
}

#[test]
fn index_selections_and_scans_get_every_chunk_once_under_every_policy() {
    for kind in PolicyKind::ALL {
        let (mut scatter_loads, mut deliveries) = (0, 0);
        for seed in 0..SEEDS {
            let mut h = Harness::new(kind, seed);
            for _ in 0..EVENTS {
                h.random_event();
                h.settle();
            }
            h.drain();
            let abm = h.d.catalog().table(TableId(0)).unwrap();
            scatter_loads += abm.state().stats().scatter_loads;
            deliveries += h.scattered_deliveries;
        }
        // The mix makes scattered loads common: a test where none happened proves nothing.
        assert!(
            scatter_loads > 20 * SEEDS,
            "{kind}: {scatter_loads} scattered loads"
        );
        assert!(deliveries > 0, "{kind}: {deliveries} deliveries");
    }
}

/// The report's case step by step: two selections of chunk 0 share one load of the
/// union of their pages (a span of half the chunk), and a third whose pages it holds
/// shares it too; a full scan
/// arriving while one of them processes it waits for the release, then the chunk is
/// read whole for it.
#[test]
fn a_scan_needing_more_of_a_scattered_chunk_waits_for_it_to_go() {
    let mut d = driver(PolicyKind::Relevance);
    let now = Nanos(1);
    let selection = |pages: Vec<u32>| {
        ScanSpec::new(rows(0..1), ColumnMask::ALL).with_pages(ScanPages::new([(ChunkId(0), pages)]))
    };
    let a = d.register(&selection(vec![2, 5]), now).unwrap().scan;
    let b = d.register(&selection(vec![5, 3]), now).unwrap().scan;
    for scan in [a, b] {
        assert!(matches!(
            d.ask(scan.into(), now, false).unwrap(),
            Answer::Wait
        ));
    }
    let load = d.next_load(now).unwrap();
    assert_eq!(load.bytes, 3 * PAGE_BYTES, "pages 2, 3 and 5 of 10");
    assert_eq!(load.reads[0].pages, vec![2..4, 5..6]);
    assert_eq!(
        load.reads[0].read,
        20..60,
        "one request from page 2 to page 5"
    );
    d.loaded(load.pieces[0], now).unwrap();
    let served: Vec<ScanId> = d.drain_mail().into_iter().map(|(h, _)| h.scan).collect();
    assert_eq!(served.len(), 2, "both selections served from the one read");
    // A third selection whose pages the piece holds shares it, no read.
    let c = d.register(&selection(vec![3]), now).unwrap();
    assert!(c.admitted);
    assert!(matches!(
        d.ask(c.scan.into(), now, false).unwrap(),
        Answer::Mail(Mail::Chunk(_))
    ));
    d.release(c.scan.into(), now).unwrap();
    d.release(a.into(), now).unwrap();

    // A full scan of chunk 0: b still holds the scattered piece, so it is queued.
    let full = d
        .register(&ScanSpec::new(rows(0..1), ColumnMask::ALL), now)
        .unwrap();
    assert!(
        !full.admitted,
        "admitted beside a scattered piece it cannot use"
    );
    assert!(matches!(
        d.ask(full.scan.into(), now, false).unwrap(),
        Answer::Wait
    ));
    assert!(
        d.next_load(now).is_none(),
        "nothing to load while it is queued"
    );
    d.release(b.into(), now).unwrap();
    assert_eq!(
        d.take_evicted(),
        vec![load.pieces[0]],
        "evicted to admit the scan"
    );
    let whole = d.next_load(now).unwrap();
    assert_eq!(
        (whole.bytes, whole.reads[0].pages.clone()),
        (CHUNK_BYTES, vec![])
    );
    d.loaded(whole.pieces[0], now).unwrap();
    let mail = d.drain_mail();
    assert!(matches!(mail.as_slice(), [(h, Mail::Chunk(_))] if h.scan == full.scan));
    d.catalog().check_invariants().unwrap();
}

#[test]
fn page_lists_the_table_cannot_use_are_refused() {
    let mut d = driver(PolicyKind::Relevance);
    let beyond = ScanPages::new([(ChunkId(1), vec![3, 10])]);
    let spec = ScanSpec::new(rows(0..2), ColumnMask::ALL).with_pages(beyond);
    let e = d.register(&spec, Nanos(1)).unwrap_err().to_string();
    assert!(
        e.contains("page 10 of chunk 1") && e.contains("10 pages"),
        "{e}"
    );

    let dsm = TableGeometry::uniform(2, ROWS_PER_CHUNK)
        .unwrap()
        .with_column_bytes(vec![vec![10, 20]; 2])
        .unwrap();
    assert!(dsm.clone().with_page_bytes(PAGE_BYTES).is_err());
    let config = AbmConfig::with_budget(BufferBudget::Bytes(BUDGET));
    let catalog = Catalog::with_kind(vec![dsm], &config, PolicyKind::Relevance).unwrap();
    let mut d: TestDriver = Driver::new(catalog, OnLoadFailure::FailScans);
    let spec = ScanSpec::new(rows(0..2), ColumnMask::ALL)
        .with_pages(ScanPages::new([(ChunkId(0), vec![0])]));
    let e = d.register(&spec, Nanos(1)).unwrap_err().to_string();
    assert!(e.contains("pages are not known"), "{e}");
}

/// A union spanning more than half a chunk is loaded whole (`SCATTER_MAX_SPAN`): a later
/// selection could not share a scattered piece, and a second read of so much would
/// cost more than the one whole load.
#[test]
fn a_union_spanning_most_of_a_chunk_is_loaded_whole() {
    let mut d = driver(PolicyKind::Relevance);
    let now = Nanos(1);
    let pages = ScanPages::new([(ChunkId(0), vec![1, 7])]);
    let spec = ScanSpec::new(rows(0..1), ColumnMask::ALL).with_pages(pages);
    let scan = d.register(&spec, now).unwrap().scan;
    assert!(matches!(
        d.ask(scan.into(), now, false).unwrap(),
        Answer::Wait
    ));
    let load = d.next_load(now).unwrap();
    assert_eq!(
        (load.bytes, load.reads[0].pages.clone()),
        (CHUNK_BYTES, vec![])
    );
}
