//! Two tables under one budget smaller than either (`Catalog`): seeded random
//! interleavings of every driver event on virtual time, under every policy, an NSM-like
//! table beside a DSM one. After each event the catalog's invariants hold (the budget
//! is never exceeded) and the driver's own count of loading and resident bytes stays
//! within it; at the end every scan has received each chunk of its ranges exactly once,
//! and pieces of one table were evicted for the other's loads.
#![allow(clippy::unwrap_used)] // test code: an unwrap that fails is a failed test

use coopscan_buffer::*;
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::collections::{BTreeSet, HashMap};

const ROWS_PER_CHUNK: u64 = 10;
/// Scans per table over a run; a few are admitted at once, the rest queue.
const SCANS_PER_TABLE: usize = 5;
/// Bound on events: generous for tables of ≤ 12 chunks and 10 scans.
const MAX_EVENTS: usize = 100_000;
const SEEDS: u64 = 12;

/// Table 0: 12 chunks of 100-210 bytes, one piece each (NSM/PAX). Table 1: 10 chunks
/// of 4 columns, 20-80 bytes per piece (DSM).
fn geometries() -> Vec<TableGeometry> {
    let rows = TableGeometry::uniform(12, ROWS_PER_CHUNK).unwrap();
    let rows = rows
        .with_chunk_bytes((0..12).map(|c| 100 + 10 * c).collect())
        .unwrap();
    let columns = TableGeometry::uniform(10, ROWS_PER_CHUNK).unwrap();
    let bytes = (0..10u64)
        .map(|k| (0..4u64).map(|c| 20 + 20 * c + k).collect())
        .collect();
    vec![rows, columns.with_column_bytes(bytes).unwrap()]
}

/// Smaller than either table (1740 and 2180 bytes), room for 2 chunks of each.
const BUDGET: u64 = 700;

#[derive(Default)]
struct Run {
    table: u32,
    wanted: BTreeSet<u32>,
    got: BTreeSet<u32>,
    holding: Option<ChunkId>,
    waiting: bool,
    in_order: bool,
    done: bool,
}

struct Driver {
    catalog: Catalog,
    rng: ChaCha8Rng,
    now: u64,
    runs: HashMap<ScanId, Run>,
    to_register: Vec<usize>,
    loading: Vec<PieceId>,
    pooled: BTreeSet<PieceId>,
    /// Pieces evicted by a load of another table.
    foreign: usize,
    /// Events after which both tables had admitted scans.
    concurrent: usize,
}

impl Driver {
    fn new(kind: PolicyKind, seed: u64) -> Driver {
        let config = AbmConfig::with_budget(BufferBudget::Bytes(BUDGET));
        Driver {
            catalog: Catalog::with_kind(geometries(), &config, kind).unwrap(),
            rng: ChaCha8Rng::seed_from_u64(seed),
            now: 0,
            runs: HashMap::new(),
            to_register: vec![SCANS_PER_TABLE; 2],
            loading: Vec::new(),
            pooled: BTreeSet::new(),
            foreign: 0,
            concurrent: 0,
        }
    }

    fn bytes(&self, piece: PieceId) -> u64 {
        let abm = self.catalog.table(piece.table).unwrap();
        abm.state().piece_bytes(piece)
    }

    fn register(&mut self, table: u32) {
        let chunks = self
            .catalog
            .table(TableId(table))
            .unwrap()
            .geometry()
            .chunk_count();
        let start = self.rng.random_range(0..chunks);
        let end = self.rng.random_range(start + 1..=chunks);
        let rows = u64::from(start) * ROWS_PER_CHUNK..u64::from(end) * ROWS_PER_CHUNK;
        let mut spec = ScanSpec::new(
            RowRanges::new([rows]),
            ColumnMask(self.rng.random_range(1..16)),
        );
        spec.table = TableId(table);
        let in_order = self.rng.random_bool(0.3);
        if in_order {
            spec = spec.in_order();
        }
        let scan = self
            .catalog
            .register_scan(&spec, Nanos(self.now))
            .unwrap()
            .scan;
        assert_eq!(catalog::scan_table_id(scan), TableId(table));
        let run = Run {
            table,
            wanted: (start..end).collect(),
            in_order,
            ..Run::default()
        };
        self.runs.insert(scan, run);
    }

    fn take(&mut self, d: Delivery) {
        let run = self.runs.get_mut(&d.scan).unwrap();
        assert_eq!(d.table, TableId(run.table), "{d:?} names another table");
        assert!(run.wanted.contains(&d.chunk.0), "unwanted {d:?}");
        assert!(run.got.insert(d.chunk.0), "duplicate {d:?}");
        if run.in_order {
            assert_eq!(run.got.last(), Some(&d.chunk.0), "out of order {d:?}");
        }
        assert!(
            run.holding.replace(d.chunk).is_none(),
            "{d:?} while holding"
        );
        run.waiting = false;
    }

    fn take_all(&mut self, out: Vec<Delivery>) {
        for d in out {
            assert!(
                self.runs[&d.scan].waiting,
                "{d:?} to a scan that did not wait"
            );
            self.take(d);
        }
    }

    /// Drops evicted pieces from the driver's own view of the pool.
    fn evicted(&mut self, table: Option<TableId>, pieces: Vec<PieceId>) {
        for p in pieces {
            assert!(self.pooled.remove(&p), "{p} evicted but not resident");
            self.foreign += usize::from(table.is_some_and(|t| t != p.table));
        }
    }

    /// One event, chosen at random among those that can happen; false when none can.
    fn step(&mut self) -> bool {
        self.now += self.rng.random_range(0..5_000_000);
        let mut kinds = [0u8, 1, 2, 3, 4];
        for i in (1..kinds.len()).rev() {
            kinds.swap(i, self.rng.random_range(0..=i));
        }
        kinds.iter().any(|k| self.try_event(*k))
    }

    fn try_event(&mut self, kind: u8) -> bool {
        let now = Nanos(self.now);
        match kind {
            0 => self.try_register(),
            1 => self.try_next_chunk(now),
            2 => self.try_release(now),
            3 => self.try_load(now),
            _ => self.try_complete(now),
        }
    }

    fn try_register(&mut self) -> bool {
        let tables: Vec<u32> = (0..2)
            .filter(|t| self.to_register[*t] > 0)
            .map(|t| t as u32)
            .collect();
        let Some(&table) = tables.get(self.rng.random_range(0..tables.len().max(1))) else {
            return false;
        };
        self.to_register[table as usize] -= 1;
        self.register(table);
        true
    }

    fn pick_scan(&mut self, want: impl Fn(&Run) -> bool) -> Option<ScanId> {
        let mut ids: Vec<ScanId> = self
            .runs
            .iter()
            .filter(|(_, r)| want(r))
            .map(|(s, _)| *s)
            .collect();
        ids.sort();
        (!ids.is_empty()).then(|| ids[self.rng.random_range(0..ids.len())])
    }

    fn try_next_chunk(&mut self, now: Nanos) -> bool {
        let idle = |r: &Run| !r.done && !r.waiting && r.holding.is_none();
        let Some(scan) = self.pick_scan(idle) else {
            return false;
        };
        match self.catalog.next_chunk(scan, now).unwrap() {
            NextChunk::Deliver(d) => {
                self.runs.get_mut(&scan).unwrap().waiting = true;
                self.take(d);
            }
            NextChunk::Wait => self.runs.get_mut(&scan).unwrap().waiting = true,
            NextChunk::Finished => {
                let run = self.runs.get_mut(&scan).unwrap();
                assert_eq!(
                    run.got, run.wanted,
                    "{scan} finished without all its chunks"
                );
                run.done = true;
                let mut out = Vec::new();
                self.catalog.unregister_scan(scan, now, &mut out).unwrap();
                self.take_all(out);
            }
        }
        true
    }

    fn try_release(&mut self, now: Nanos) -> bool {
        let Some(scan) = self.pick_scan(|r| r.holding.is_some()) else {
            return false;
        };
        let chunk = self.catalog.release_chunk(scan, now).unwrap();
        assert_eq!(
            self.runs.get_mut(&scan).unwrap().holding.take(),
            Some(chunk)
        );
        true
    }

    fn try_load(&mut self, now: Nanos) -> bool {
        let Some(load) = self.catalog.next_load(now) else {
            let evicted = self.catalog.take_evicted();
            self.evicted(None, evicted);
            return false;
        };
        self.evicted(Some(load.table), load.evicted.clone());
        for p in &load.pieces {
            assert_eq!(p.table, load.table);
            assert!(self.pooled.insert(*p), "{p} loaded twice");
        }
        self.loading.extend(load.pieces);
        true
    }

    fn try_complete(&mut self, now: Nanos) -> bool {
        if self.loading.is_empty() {
            return false;
        }
        let piece = self
            .loading
            .remove(self.rng.random_range(0..self.loading.len()));
        let mut out = Vec::new();
        self.catalog.load_completed(piece, now, &mut out).unwrap();
        self.take_all(out);
        true
    }

    fn check(&mut self) {
        self.catalog.check_invariants().unwrap();
        let active = |t: u32| {
            self.catalog
                .table(TableId(t))
                .unwrap()
                .state()
                .active_count()
        };
        self.concurrent += usize::from(active(0) > 0 && active(1) > 0);
        let held: u64 = self.pooled.iter().map(|p| self.bytes(*p)).sum();
        assert_eq!(
            held,
            self.catalog.used_bytes(),
            "driver and catalog disagree"
        );
        assert!(held <= BUDGET, "{held} bytes held of {BUDGET}");
    }

    fn finished(&self) -> bool {
        self.to_register.iter().all(|n| *n == 0) && self.runs.values().all(|r| r.done)
    }
}

/// Runs one seeded simulation to its end; returns the pieces evicted across tables and
/// the events after which both tables had scans running.
fn simulate(kind: PolicyKind, seed: u64) -> (usize, usize) {
    let mut driver = Driver::new(kind, seed);
    for _ in 0..MAX_EVENTS {
        if driver.finished() {
            assert_eq!(driver.runs.len(), 2 * SCANS_PER_TABLE);
            return (driver.foreign, driver.concurrent);
        }
        assert!(
            driver.step(),
            "{kind} seed {seed}: no event can happen (stuck)"
        );
        driver.check();
    }
    panic!("{kind} seed {seed}: not finished after {MAX_EVENTS} events");
}

#[test]
fn two_tables_share_one_budget_under_every_policy() {
    for kind in PolicyKind::ALL {
        let runs: Vec<(usize, usize)> = (0..SEEDS).map(|seed| simulate(kind, seed)).collect();
        // Admission lets both tables run together only when their scans' footprints
        // fit at once, which the random column sets allow in most runs.
        let together = runs.iter().filter(|r| r.1 > 0).count();
        assert!(
            together * 2 >= runs.len(),
            "{kind}: {runs:?}: seldom together"
        );
        let foreign: usize = runs.iter().map(|r| r.0).sum();
        assert!(foreign > 0, "{kind}: no table ever made room in the other");
    }
}

/// Serves `scan` its next chunk, loading what the catalog asks for, and releases it.
fn consume_one(catalog: &mut Catalog, scan: ScanId, now: Nanos) {
    let mut out = Vec::new();
    while catalog.next_chunk(scan, now).unwrap() == NextChunk::Wait {
        out.clear();
        let load = catalog
            .next_load(now)
            .expect("a waiting scan makes the loader busy");
        for p in load.pieces {
            catalog.load_completed(p, now, &mut out).unwrap();
        }
        if out.iter().any(|d| d.scan == scan) {
            break;
        }
    }
    catalog.release_chunk(scan, now).unwrap();
}

/// Bytes table `t` holds in the shared budget.
fn used_by(catalog: &Catalog, t: u32) -> u64 {
    catalog
        .table(TableId(t))
        .unwrap()
        .state()
        .pool()
        .used_bytes()
}

/// A scan of table 0 has filled the budget with chunks it consumed; then a scan of
/// table 1 starts: its first load evicts table 0's pieces, and only down to table 0's
/// fair share (half the budget, each table having one scan).
#[test]
fn a_new_table_takes_its_share_from_the_full_one() {
    for kind in PolicyKind::ALL {
        let config = AbmConfig::with_budget(BufferBudget::Bytes(BUDGET));
        let mut catalog = Catalog::with_kind(geometries(), &config, kind).unwrap();
        let mut spec = ScanSpec::full(120).in_order();
        spec.table = TableId(0);
        let first = catalog.register_scan(&spec, Nanos(0)).unwrap().scan;
        for _ in 0..6 {
            consume_one(&mut catalog, first, Nanos(0));
        }
        let held = used_by(&catalog, 0);
        assert!(
            held + 210 > BUDGET,
            "{kind}: table 0 holds only {held} bytes"
        );
        // Two columns: its footprint (2 × 78 bytes) and table 0's fit the budget.
        let mut spec = ScanSpec::new(RowRanges::new(std::iter::once(0..100)), ColumnMask(0b11));
        spec.table = TableId(1);
        let scan = catalog.register_scan(&spec, Nanos(1)).unwrap().scan;
        assert_eq!(catalog.next_chunk(scan, Nanos(1)).unwrap(), NextChunk::Wait);
        let load = catalog.next_load(Nanos(2)).expect("table 1 loads");
        assert_eq!(load.table, TableId(1));
        assert!(
            load.evicted.iter().all(|p| p.table == TableId(0)) && !load.evicted.is_empty(),
            "{kind}: {:?}",
            load.evicted
        );
        let left = used_by(&catalog, 0);
        assert!(
            left + 210 >= BUDGET / 2,
            "{kind}: table 0 kept only {left} bytes"
        );
        assert!(catalog.stats().foreign_evictions > 0);
        catalog.check_invariants().unwrap();
    }
}

/// A table whose fair share is smaller than one of its loads, and which holds nothing
/// of its own, still loads when another table holds the whole budget and wants nothing
/// more: that table gives pieces below its share. Before, the catalog took pieces only
/// from tables above their shares for a table below its own, so the starved scan
/// waited for ever — in the engine, while the other table's finished scan stays
/// registered until DataFusion polls its last partition, which may wait for this one.
#[test]
fn a_table_below_one_load_of_share_still_gets_room() {
    for kind in PolicyKind::ALL {
        let config = AbmConfig::with_budget(BufferBudget::Bytes(BUDGET));
        let mut catalog = Catalog::with_kind(geometries(), &config, kind).unwrap();
        // A scan of table 0's first 6 chunks reads them all and stays registered.
        let mut spec = ScanSpec::new(RowRanges::new(std::iter::once(0..60)), ColumnMask::ALL);
        spec.table = TableId(0);
        let first = catalog.register_scan(&spec, Nanos(0)).unwrap().scan;
        for _ in 0..6 {
            consume_one(&mut catalog, first, Nanos(0));
        }
        assert_eq!(
            catalog.next_chunk(first, Nanos(1)).unwrap(),
            NextChunk::Finished
        );
        // Queued scans of table 0 weigh its share: table 1's is 700 / 12 = 58 bytes,
        // less than the one column's piece (80-89 bytes) it needs.
        for _ in 0..10 {
            let queued = catalog.register_scan(&spec, Nanos(1)).unwrap();
            assert!(
                !queued.admitted,
                "{kind}: room for one more scan of table 0"
            );
        }
        let held = used_by(&catalog, 0);
        assert!(
            held + 89 > BUDGET,
            "{kind}: table 0 holds only {held} bytes"
        );
        let mut spec = ScanSpec::new(RowRanges::new(std::iter::once(0..100)), ColumnMask(0b1000));
        spec.table = TableId(1);
        let scan = catalog.register_scan(&spec, Nanos(2)).unwrap();
        assert!(scan.admitted, "{kind}");
        assert_eq!(
            catalog.next_chunk(scan.scan, Nanos(2)).unwrap(),
            NextChunk::Wait
        );
        let load = catalog.next_load(Nanos(3));
        let load = load.unwrap_or_else(|| panic!("{kind}: no load for table 1's starved scan"));
        assert_eq!(load.table, TableId(1), "{kind}");
        assert!(load.evicted.iter().all(|p| p.table == TableId(0)) && !load.evicted.is_empty());
        let mut out = Vec::new();
        for p in load.pieces {
            catalog.load_completed(p, Nanos(3), &mut out).unwrap();
        }
        assert!(
            out.iter().any(|d| d.scan == scan.scan),
            "{kind}: the chunk reaches the scan"
        );
        catalog.release_chunk(scan.scan, Nanos(4)).unwrap();
        // And it goes on: its next chunk too.
        consume_one(&mut catalog, scan.scan, Nanos(5));
        catalog.check_invariants().unwrap();
    }
}

/// Admission counts every table's scans: with room for two scans' footprints in all,
/// a third scan queues whichever table it reads, and is admitted when one ends.
#[test]
fn admission_counts_every_table() {
    let config = AbmConfig::with_budget(BufferBudget::Bytes(900));
    let mut catalog = Catalog::with_kind(geometries(), &config, PolicyKind::Relevance).unwrap();
    let spec = |table: u32| {
        let mut spec = ScanSpec::full(100);
        spec.table = TableId(table);
        spec
    };
    // Footprints: table 0, 2 × 210 = 420 bytes; table 1 reading all columns, 2 × 236
    // (each column's largest piece: 29 + 49 + 69 + 89).
    let a = catalog.register_scan(&spec(0), Nanos(0)).unwrap();
    let b = catalog.register_scan(&spec(1), Nanos(0)).unwrap();
    let c = catalog.register_scan(&spec(0), Nanos(0)).unwrap();
    assert!(a.admitted && b.admitted && !c.admitted);
    catalog.check_invariants().unwrap();
    catalog
        .unregister_scan(b.scan, Nanos(1), &mut Vec::new())
        .unwrap();
    let state = catalog.table(TableId(0)).unwrap().state();
    assert_eq!((state.active_count(), state.pending_count()), (2, 0));
    catalog.check_invariants().unwrap();
}

#[test]
fn unknown_tables_and_scans_are_errors() {
    let config = AbmConfig::with_budget(BufferBudget::Bytes(BUDGET));
    let mut catalog = Catalog::with_kind(geometries(), &config, PolicyKind::Pbm).unwrap();
    let mut spec = ScanSpec::full(10);
    spec.table = TableId(2);
    assert_eq!(
        catalog.register_scan(&spec, Nanos(0)),
        Err(BufferError::UnknownTable(2))
    );
    let stranger = ScanId(7 << 40);
    assert!(catalog.next_chunk(stranger, Nanos(0)).is_err());
    assert!(catalog.release_chunk(ScanId(3), Nanos(0)).is_err());
}

/// Loads until `catalog` wants none now, each completed at once; returns them.
fn load_while_wanted(catalog: &mut Catalog, now: Nanos) -> Vec<LoadDecision> {
    let mut loads = Vec::new();
    while let Some(load) = catalog.next_load(now) {
        let mut out = Vec::new();
        for p in &load.pieces {
            catalog.load_completed(*p, now, &mut out).unwrap();
        }
        assert!(out.is_empty(), "no worker waits");
        loads.push(load);
    }
    loads
}

/// Relevance works ahead for a parallel scan only while no scan of any table is
/// starved and no load runs, evicting nothing; a scan of one worker keeps Figure 3's
/// rule (loads only while starved).
#[test]
fn working_ahead_yields_to_every_tables_demand() {
    let config = AbmConfig::with_budget(BufferBudget::Bytes(4000)).with_max_inflight(2);
    let mut catalog = Catalog::with_kind(geometries(), &config, PolicyKind::Relevance).unwrap();
    // One worker: exactly its threshold of 2 chunks, then nothing.
    let mut spec = ScanSpec::full(120);
    spec.table = TableId(0);
    let single = catalog.register_scan(&spec, Nanos(0)).unwrap().scan;
    assert_eq!(load_while_wanted(&mut catalog, Nanos(0)).len(), 2);
    let mut out = Vec::new();
    catalog.unregister_scan(single, Nanos(0), &mut out).unwrap();

    // Two workers over the same chunks: 2 are resident, its threshold is 3; one demand
    // load, then it works ahead up to twice the threshold (6 available or coming).
    let parallel = catalog
        .register_scan(&spec.clone().with_workers(2), Nanos(1))
        .unwrap()
        .scan;
    let first = catalog.next_load(Nanos(1)).expect("a starved scan loads");
    // A demand load runs: working ahead waits for it even with a slot free.
    assert!(
        catalog.next_load(Nanos(1)).is_none(),
        "nothing beside a running load"
    );
    let mut out = Vec::new();
    for p in &first.pieces {
        catalog.load_completed(*p, Nanos(1), &mut out).unwrap();
    }
    let ahead = load_while_wanted(&mut catalog, Nanos(2));
    assert_eq!(ahead.len(), 3, "up to 6 chunks available");
    assert!(ahead
        .iter()
        .all(|l| l.table == TableId(0) && l.evicted.is_empty()));

    // Two chunks consumed: it wants ahead again (4 of 6), but a starved scan of table
    // 1 (of one chunk) loads first, and while that load runs nothing works ahead.
    for _ in 0..2 {
        let got = catalog.next_chunk(parallel, Nanos(3)).unwrap();
        assert!(matches!(got, NextChunk::Deliver(_)), "{got:?}");
        catalog.release_chunk(parallel, Nanos(3)).unwrap();
    }
    let mut spec1 = ScanSpec::new(RowRanges::new(std::iter::once(0..10)), ColumnMask(0b11));
    spec1.table = TableId(1);
    catalog.register_scan(&spec1, Nanos(3)).unwrap();
    let demand = catalog.next_load(Nanos(3)).expect("table 1 is starved");
    assert_eq!(demand.table, TableId(1));
    assert!(
        catalog.next_load(Nanos(3)).is_none(),
        "nothing beside a running load"
    );
    let mut out = Vec::new();
    for p in &demand.pieces {
        catalog.load_completed(*p, Nanos(4), &mut out).unwrap();
    }
    let ahead = load_while_wanted(&mut catalog, Nanos(4));
    assert_eq!(ahead.len(), 2, "back up to 6 once the disk is idle");
    assert!(ahead.iter().all(|l| l.table == TableId(0)));
    catalog.check_invariants().unwrap();
}

/// The state the engine's TPC-H throughput run once stalled in (its buffer report): the
/// budget is full of pieces of a table nobody scans any more, and two starved scans of
/// another table, holding nothing, read overlapping columns. A load for one of them
/// may take the columns of both (relevance serves every starved scan that overlaps),
/// more than either scan's own largest load: the room made for it must be room for
/// that load, or no table ever loads again. Both scans then read every chunk.
#[test]
fn starved_scans_of_overlapping_columns_get_room_for_their_shared_load() {
    const COLUMN: u64 = 100;
    const BUDGET: u64 = 2000;
    let full = TableGeometry::uniform(20, ROWS_PER_CHUNK).unwrap();
    let full = full.with_chunk_bytes(vec![COLUMN; 20]).unwrap();
    let part = TableGeometry::uniform(7, ROWS_PER_CHUNK).unwrap();
    let part = part.with_column_bytes(vec![vec![COLUMN; 8]; 7]).unwrap();
    let mut stalled = Vec::new();
    for kind in PolicyKind::ALL {
        let config = AbmConfig::with_budget(BufferBudget::Bytes(BUDGET));
        let geometries = vec![full.clone(), part.clone()];
        let mut catalog = Catalog::with_kind(geometries, &config, kind).unwrap();
        // A scan of table 0 reads all of it, then ends: its pieces fill the budget.
        let mut spec = ScanSpec::full(200);
        spec.table = TableId(0);
        let first = catalog.register_scan(&spec, Nanos(0)).unwrap().scan;
        for _ in 0..20 {
            consume_one(&mut catalog, first, Nanos(0));
        }
        catalog
            .unregister_scan(first, Nanos(1), &mut Vec::new())
            .unwrap();
        assert_eq!(used_by(&catalog, 0), BUDGET, "{kind}");
        // Columns 0-3 and 3-6 of table 1: 400 bytes a chunk each, 700 together.
        let mut scans = Vec::new();
        for cols in [0b000_1111u64, 0b111_1000] {
            let rows = RowRanges::new(std::iter::once(0..70));
            let mut spec = ScanSpec::new(rows, ColumnMask(cols));
            spec.table = TableId(1);
            let registered = catalog.register_scan(&spec, Nanos(2)).unwrap();
            assert!(registered.admitted, "{kind}");
            scans.push(registered.scan);
        }
        if !read_to_the_end(&mut catalog, &scans, 7) {
            stalled.push(kind);
        }
        catalog.check_invariants().unwrap();
    }
    assert!(
        stalled.is_empty(),
        "starved scans stalled under {stalled:?}"
    );
}

/// Runs `scans` (one worker each) until each has had its `chunks` chunks, exactly once
/// each, loading whenever every unfinished scan waits; false if no load comes then.
fn read_to_the_end(catalog: &mut Catalog, scans: &[ScanId], chunks: usize) -> bool {
    let mut got: HashMap<ScanId, BTreeSet<ChunkId>> = HashMap::new();
    let mut holding: HashMap<ScanId, ChunkId> = HashMap::new();
    let mut waiting: BTreeSet<ScanId> = BTreeSet::new();
    let mut take = |d: Delivery, holding: &mut HashMap<ScanId, ChunkId>| {
        assert!(
            got.entry(d.scan).or_default().insert(d.chunk),
            "{d:?} twice"
        );
        holding.insert(d.scan, d.chunk);
    };
    let now = Nanos(3);
    loop {
        let mut finished = 0;
        for &scan in scans {
            if holding.remove(&scan).is_some() {
                catalog.release_chunk(scan, now).unwrap();
            }
            if waiting.contains(&scan) {
                continue;
            }
            match catalog.next_chunk(scan, now).unwrap() {
                NextChunk::Deliver(d) => take(d, &mut holding),
                NextChunk::Wait => _ = waiting.insert(scan),
                NextChunk::Finished => finished += 1,
            }
        }
        if finished == scans.len() {
            break;
        }
        if holding.is_empty() {
            let Some(load) = catalog.next_load(now) else {
                return false;
            };
            let mut out = Vec::new();
            for p in load.pieces {
                catalog.load_completed(p, now, &mut out).unwrap();
            }
            for d in out {
                assert!(waiting.remove(&d.scan), "{d:?} to a scan that did not wait");
                take(d, &mut holding);
            }
        }
    }
    assert!(scans.iter().all(|s| got[s].len() == chunks), "{got:?}");
    true
}
