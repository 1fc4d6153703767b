//! `check_invariants`: recomputes every derived fact of [`AbmState`] from the primary
//! data and compares. The simulator calls it after every event in tests.
//!
//! Checked (numbered as in docs/abm.md):
//! 1. the pool's own rules (bytes within budget, pins only on resident pieces, LRU and
//!    load order exact), and every chunk's residency equals its piece's state in the pool;
//! 2. pins: a piece's pins are exactly the scans processing its chunk, one each, and a
//!    chunk in process is still needed by that scan (so it cannot be evicted: the pool
//!    refuses pinned pieces);
//! 3. (LRU order is part of 1);
//! 4. interest sets only name active scans, and only for chunks of their ranges (so an
//!    unregistered scan left no interest and no pin behind);
//! 5. per-scan counters `needed`, `available`, `incoming` and the starvation sets;
//! 6. class index: every chunk sits in the class of its set, in the set of its place;
//! 7. loads in flight never exceed `max_inflight`; admission keeps room for 2 chunks
//!    per scan.

use crate::config::{ADMISSION_CHUNKS_PER_SCAN, MAX_SCANS};
use crate::index::Place;
use crate::pool::PieceState;
use crate::state::{AbmState, Residency};
use crate::transitions::place_of;
use crate::{BufferError, ChunkId, ScanOrder};

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
        self.check_limits()
    }

    fn check_residency(&self) -> Result<(), BufferError> {
        let mut pooled = 0;
        for c in 0..self.chunk_count() {
            let chunk = ChunkId(c);
            let piece = self.piece(chunk);
            let expected = match self.pool.state(piece) {
                None => Residency::Absent,
                Some(PieceState::Loading) => Residency::Loading,
                Some(PieceState::Resident) => Residency::Resident,
            };
            ensure!(
                self.residency(chunk) == expected,
                "{chunk} is {:?} but its piece is {expected:?}",
                self.residency(chunk)
            );
            if expected != Residency::Absent {
                pooled += 1;
                ensure!(
                    self.pool.bytes(piece) == Some(self.chunk_bytes(chunk)),
                    "{chunk}: pooled size differs from the chunk's"
                );
            }
        }
        ensure!(
            pooled == self.pool.len(),
            "the pool holds {} pieces, chunks account for {pooled}",
            self.pool.len()
        );
        Ok(())
    }

    fn check_pins(&self) -> Result<(), BufferError> {
        let mut pins = vec![0u32; self.chunks.len()];
        for slot in self.active_slots() {
            let scan = self.active_scan(slot);
            let Some(chunk) = scan.processing else {
                ensure!(
                    self.pool.pins_of(scan.id).is_empty(),
                    "{} holds pins without processing",
                    scan.id
                );
                continue;
            };
            ensure!(
                self.is_resident(chunk),
                "{} processes non-resident {chunk}",
                scan.id
            );
            ensure!(
                self.interest(chunk).contains(slot),
                "{} processes {chunk} it no longer needs",
                scan.id
            );
            ensure!(
                self.pool.pins_of(scan.id) == vec![(self.piece(chunk), 1)],
                "{} processes {chunk} but pins {:?}",
                scan.id,
                self.pool.pins_of(scan.id)
            );
            pins[chunk.0 as usize] += 1;
        }
        for (c, n) in pins.iter().enumerate() {
            let chunk = ChunkId(c as u32);
            ensure!(
                self.pool.pins(self.piece(chunk)) == *n,
                "{chunk}: {} pins, {n} scans processing",
                self.pool.pins(self.piece(chunk))
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
                match self.residency(chunk) {
                    Residency::Absent => {}
                    Residency::Loading => incoming[i] += 1,
                    Residency::Resident => available[i] += 1,
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
                blocked == s.blocked_since.is_some(),
                "{}: blocked bit disagrees with blocked_since",
                s.id
            );
            ensure!(
                !(blocked && s.processing.is_some()),
                "{}: blocked while processing",
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
            let member = match place_of(entry.residency) {
                Place::Absent if entry.mask.is_empty() => true,
                Place::Absent => class.absent().contains(&chunk),
                Place::Loading => true,
                Place::Resident => class.resident().contains(&chunk),
            };
            ensure!(member, "{chunk} missing from its class set");
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
        let loading = self
            .chunks
            .iter()
            .filter(|c| c.residency == Residency::Loading)
            .count();
        ensure!(
            loading as u32 == self.inflight,
            "inflight {} but {loading} chunks loading",
            self.inflight
        );
        ensure!(
            self.inflight <= self.config.max_inflight,
            "more loads in flight than allowed"
        );
        let per_scan = u64::from(ADMISSION_CHUNKS_PER_SCAN) * self.max_chunk_bytes;
        let admissible = (self.pool.capacity_bytes() / per_scan).max(1);
        ensure!(
            u64::from(self.active_count()) <= admissible,
            "{} scans admitted, limit {admissible}",
            self.active_count()
        );
        Ok(())
    }
}
