//! `check_invariants`: recomputes every derived fact of [`AbmState`] from the primary
//! data and compares. The simulator calls it after every event in tests.
//!
//! Checked (numbered as in docs/abm.md):
//! 1. the pool's own rules (bytes within budget, pins only on resident pieces, LRU and
//!    load order exact), and every chunk's resident and loading columns equal its pieces'
//!    states in the pool, with their sizes; loads in flight cover the loading columns;
//! 2. pins: a worker processing a chunk holds exactly one pin on each piece of its
//!    scan's columns, and none elsewhere; a chunk in process is still needed by that
//!    scan (so it cannot be evicted: the pool refuses pinned pieces); a scan's ledger
//!    holds: one chunk per worker at most, no chunk held twice, no more held than
//!    needed (the delivered count is derived: released + held), and a waiting worker
//!    holds nothing;
//! 3. (LRU order is part of 1);
//! 4. interest sets only name active scans, and only for chunks of their ranges (so an
//!    unregistered scan left no interest and no pin behind);
//! 5. per-scan counters `needed`, `available`, `incoming` and the starvation sets;
//! 6. class index: every chunk sits in the class of its set, in the set of its place,
//!    and the class's columns are its scans' columns;
//! 7. loads in flight never exceed `max_inflight`; admission keeps room for 2 chunks
//!    (of its columns) per scan, and passes no queued scan more than
//!    `ADMISSION_MAX_OVERTAKES` times;
//! 8. tiled (CSM) tables: the page schemas are pairwise disjoint, each active scan's
//!    columns lie in one of them, and they hold no other columns (Clotho's Figure 4).
//!    Pieces stay one per column of a chunk, so (by 1) each attribute of a chunk is
//!    buffered at most once however the schemas group the loads.
//! 9. snapshots (`sharing.rs`): each chunk's count of active scans whose snapshot holds
//!    it, and the shared and local totals, equal a recount; a scan's chunks lie in its
//!    snapshot, which names only chunks of the table.

use crate::config::MAX_SCANS;
use crate::index::Place;
use crate::pool::PieceState;
use crate::state::{bits, AbmState};
use crate::transitions::{for_scan, place_of, ForScan};
use crate::{BufferError, ChunkId, HolderId, ScanOrder};

macro_rules! ensure {
    ($cond:expr, $($arg:tt)*) => {
        if !$cond {
            return Err(BufferError::Invariant(format!($($arg)*)));
        }
    };
}

impl AbmState {
    pub fn check_invariants(&self) -> Result<(), BufferError> {
        self.pool.check_invariants()?;
        self.check_residency()?;
        self.check_pins()?;
        self.check_interest()?;
        self.check_classes()?;
        self.check_limits()?;
        self.check_page_schemas()?;
        self.check_scatter().map_err(BufferError::Invariant)?;
        self.check_sharing()
    }

    fn check_sharing(&self) -> Result<(), BufferError> {
        let counts = self.snapshot_counts();
        for (c, count) in counts.iter().enumerate() {
            let kept = self.chunks[c].snapshots;
            ensure!(
                kept == *count,
                "chunk {c} in {kept} snapshots, recounted {count}"
            );
        }
        let local = counts.iter().filter(|n| **n == 1).count();
        let shared = counts.iter().filter(|n| **n >= 2).count();
        ensure!(
            (self.local_chunks as usize, self.shared_chunks as usize) == (local, shared),
            "local/shared chunks {}/{}, recounted {local}/{shared}",
            self.local_chunks,
            self.shared_chunks
        );
        for slot in self.active_slots() {
            let scan = self.active_scan(slot);
            let snapshot = scan.snapshot.chunks();
            ensure!(
                snapshot
                    .ranges()
                    .last()
                    .is_none_or(|r| r.end <= self.chunk_count()),
                "{}: a snapshot past the table's chunks",
                scan.id
            );
            ensure!(
                scan.chunks.iter().all(|c| snapshot.contains(c)),
                "{}: a chunk outside its snapshot",
                scan.id
            );
        }
        Ok(())
    }

    fn check_page_schemas(&self) -> Result<(), BufferError> {
        if !self.geometry.tiled() {
            ensure!(
                self.page_schemas.schemas().is_empty(),
                "page schemas on a table without tiles"
            );
            return Ok(());
        }
        let running = self.active_slots().map(|s| self.active_scan(s).cols);
        self.page_schemas
            .check(running)
            .map_err(BufferError::Invariant)
    }

    fn check_residency(&self) -> Result<(), BufferError> {
        let mut pooled = 0;
        let mut loading = vec![0u64; self.chunks.len()];
        for (chunk, cols) in &self.loads {
            ensure!(*cols != 0, "an empty load of {chunk} in flight");
            ensure!(
                loading[chunk.0 as usize] & cols == 0,
                "{chunk}: two loads of a column"
            );
            loading[chunk.0 as usize] |= cols;
        }
        for c in 0..self.chunk_count() {
            let chunk = ChunkId(c);
            let (mut res, mut ld) = (0, 0);
            for col in bits(self.all_cols()) {
                let piece = self.piece_of(chunk, col);
                match self.pool.state(piece) {
                    None => continue,
                    Some(PieceState::Loading) => ld |= 1 << col,
                    Some(PieceState::Resident) => res |= 1 << col,
                }
                pooled += 1;
                // A scattered piece holds its pages' bytes (`check_scatter`).
                let whole = self.geometry.piece_bytes(piece.chunk, piece.columns);
                ensure!(
                    self.scattered.contains_key(&chunk) || self.pool.bytes(piece) == Some(whole),
                    "{piece}: pooled size differs from the geometry's"
                );
            }
            ensure!(
                (res, ld) == (self.resident_cols(chunk), self.loading_cols(chunk)),
                "{chunk}: columns {res:#x}/{ld:#x} in the pool, {:#x}/{:#x} in the scheduler",
                self.resident_cols(chunk),
                self.loading_cols(chunk)
            );
            ensure!(
                ld == loading[c as usize],
                "{chunk}: loading columns not all in flight"
            );
        }
        ensure!(
            pooled == self.pool.len(),
            "the pool holds {} pieces, chunks account for {pooled}",
            self.pool.len()
        );
        Ok(())
    }

    fn check_pins(&self) -> Result<(), BufferError> {
        let mut pins = std::collections::HashMap::new();
        for slot in self.active_slots() {
            let scan = self.active_scan(slot);
            self.check_ledger(scan)?;
            for worker in 0..scan.workers {
                let holder = HolderId::new(scan.id, worker);
                let mut held = self.pool.pins_of(holder);
                let Some(chunk) = scan.held_by(worker) else {
                    ensure!(held.is_empty(), "{holder} holds pins without processing");
                    continue;
                };
                ensure!(
                    self.available_for(chunk, scan.cols),
                    "{holder} processes {chunk} whose columns are not resident"
                );
                ensure!(
                    self.interest(chunk).contains(slot),
                    "{holder} processes {chunk} its scan no longer needs"
                );
                let mut want: Vec<_> = bits(scan.cols)
                    .map(|c| (self.piece_of(chunk, c), 1))
                    .collect();
                want.sort();
                held.sort();
                ensure!(held == want, "{holder} processes {chunk} but pins {held:?}");
                for (piece, _) in want {
                    *pins.entry(piece).or_insert(0u32) += 1;
                }
            }
        }
        for c in 0..self.chunk_count() {
            for col in bits(self.resident_cols(ChunkId(c))) {
                let piece = self.piece_of(ChunkId(c), col);
                let n = pins.get(&piece).copied().unwrap_or(0);
                ensure!(
                    self.pool.pins(piece) == n,
                    "{piece}: {} pins, {n} scans processing",
                    self.pool.pins(piece)
                );
            }
        }
        Ok(())
    }

    /// A scan's exactly-once ledger: each worker holds at most one chunk, no chunk is
    /// held twice, no more are held than needed, and a waiting worker holds nothing.
    fn check_ledger(&self, scan: &crate::ScanState) -> Result<(), BufferError> {
        let id = scan.id;
        let mut workers: Vec<u16> = scan.held.iter().map(|(w, _)| *w).collect();
        let mut chunks: Vec<ChunkId> = scan.held.iter().map(|(_, c)| *c).collect();
        workers.sort_unstable();
        workers.dedup();
        chunks.sort_unstable();
        chunks.dedup();
        ensure!(
            workers.len() == scan.held.len() && chunks.len() == scan.held.len(),
            "{id}: a worker holds two chunks or a chunk is held twice: {:?}",
            scan.held
        );
        ensure!(
            workers.iter().all(|w| *w < scan.workers),
            "{id}: a worker beyond its {} holds a chunk",
            scan.workers
        );
        // Every chunk handed out and not released is held: the held ones are needed.
        ensure!(
            scan.needed <= scan.chunks.len() && scan.held.len() as u32 <= scan.needed,
            "{id}: {} needed of {} chunks with {} held",
            scan.needed,
            scan.chunks.len(),
            scan.held.len()
        );
        for (worker, _) in &scan.waiting {
            ensure!(
                scan.held_by(*worker).is_none() && *worker < scan.workers,
                "{id}: worker {worker} waits while processing, or is not a worker"
            );
        }
        Ok(())
    }

    fn check_interest(&self) -> Result<(), BufferError> {
        let (mut needed, mut available, mut incoming) = (
            vec![0u32; MAX_SCANS],
            vec![0u32; MAX_SCANS],
            vec![0u32; MAX_SCANS],
        );
        for c in 0..self.chunk_count() {
            let chunk = ChunkId(c);
            let mask = self.interest(chunk);
            let stray = mask - self.active;
            ensure!(
                stray.is_empty(),
                "{chunk} is wanted by inactive scans {stray:?}"
            );
            for slot in mask.iter() {
                let i = slot.index();
                ensure!(
                    self.active_scan(slot).chunks.contains(chunk),
                    "{chunk} outside the ranges of slot {i}"
                );
                needed[i] += 1;
                let cols = self.active_scan(slot).cols;
                match for_scan(cols, self.resident_cols(chunk), self.loading_cols(chunk)) {
                    ForScan::Missing => {}
                    ForScan::Incoming => incoming[i] += 1,
                    ForScan::Available => available[i] += 1,
                }
            }
        }
        for slot in self.active_slots() {
            let (s, i) = (self.active_scan(slot), slot.index());
            ensure!(
                s.needed == needed[i],
                "{}: needed {} but {} chunks want it",
                s.id,
                s.needed,
                needed[i]
            );
            ensure!(
                s.available == available[i],
                "{}: available {} != {}",
                s.id,
                s.available,
                available[i]
            );
            ensure!(
                s.incoming == incoming[i],
                "{}: incoming {} != {}",
                s.id,
                s.incoming,
                incoming[i]
            );
            let (starved, almost) = self.starvation(s);
            ensure!(
                self.starved.contains(slot) == starved,
                "{}: stale starved bit",
                s.id
            );
            ensure!(
                self.almost_starved.contains(slot) == almost,
                "{}: stale almost-starved bit",
                s.id
            );
            ensure!(
                self.in_order.contains(slot) == (s.order == ScanOrder::InOrder),
                "{}: stale in-order bit",
                s.id
            );
            let blocked = self.blocked.contains(slot);
            ensure!(
                blocked != s.waiting.is_empty(),
                "{}: blocked bit disagrees with its waiting workers",
                s.id
            );
        }
        let stray =
            (self.blocked | self.starved | self.almost_starved | self.in_order) - self.active;
        ensure!(stray.is_empty(), "sets name inactive scans {stray:?}");
        Ok(())
    }

    fn check_classes(&self) -> Result<(), BufferError> {
        for c in 0..self.chunk_count() {
            let (chunk, entry) = (ChunkId(c), &self.chunks[c as usize]);
            let class = self.classes.class(entry.class);
            ensure!(
                class.mask() == entry.mask,
                "{chunk}: class set differs from chunk set"
            );
            let needed = self.columns_of_scans(entry.mask);
            ensure!(class.columns() == needed, "{chunk}: stale class columns");
            let place = place_of(needed, entry.resident_cols, entry.loading_cols);
            ensure!(
                entry.place == place,
                "{chunk}: place {:?}, expected {place:?}",
                entry.place
            );
            let member = match place {
                Place::Absent if entry.mask.is_empty() => true,
                Place::Absent => class.absent().contains(&chunk),
                Place::Loading => true,
                Place::Resident => class.resident().contains(&chunk),
            };
            ensure!(member, "{chunk} missing from its class set");
            let spare = entry.resident_cols & !needed != 0;
            ensure!(
                self.spare.contains(&chunk) == spare,
                "{chunk}: spare set disagrees"
            );
            for c in bits(entry.resident_cols) {
                let piece = self.piece_of(chunk, c);
                ensure!(
                    self.pool.is_spare(piece) == (needed >> c & 1 == 0),
                    "{piece}: spare mark disagrees"
                );
            }
            let partial =
                !entry.mask.is_empty() && place != Place::Resident && entry.resident_cols != 0;
            ensure!(
                class.is_partial(chunk) == partial,
                "{chunk}: partial set disagrees"
            );
        }
        let held = self.classes.total_len();
        ensure!(
            held == Some(self.chunks.len()),
            "class sets hold {held:?} of {} chunks",
            self.chunks.len()
        );
        Ok(())
    }

    fn check_limits(&self) -> Result<(), BufferError> {
        ensure!(
            self.inflight() <= self.config.max_inflight,
            "more loads in flight than allowed"
        );
        let reserved = self.reserved_bytes();
        ensure!(
            reserved <= self.admission_bytes,
            "admitted scans reserve {reserved} bytes of {}",
            self.admission_bytes
        );
        let passed = self.pending.iter().map(|p| p.overtaken).max();
        ensure!(
            passed.unwrap_or(0) <= crate::ADMISSION_MAX_OVERTAKES,
            "a queued scan was passed {passed:?} times"
        );
        Ok(())
    }
}
