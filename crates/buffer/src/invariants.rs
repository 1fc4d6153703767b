//! `check_invariants`: recomputes every derived fact of [`AbmState`] from the primary
//! data and compares. The simulator calls it after every event in tests.
//!
//! Checked (numbered as in docs/abm.md):
//! 1. frames and chunk residency agree; each chunk is in at most one frame; the free
//!    list is exactly the empty frames;
//! 2. pins: a frame's pin count is the number of scans processing its chunk, and a
//!    chunk in process is resident and still needed by that scan (so it cannot be
//!    evicted: `start_load` refuses pinned frames);
//! 3. the LRU list holds exactly the unpinned resident frames;
//! 4. interest masks only name active scans, and only for chunks of their ranges (so
//!    an unregistered scan left no interest and no pin behind);
//! 5. per-scan counters `needed`, `available`, `incoming` and the starvation masks;
//! 6. class index: every chunk sits in the class of its mask, in the set of its place;
//! 7. loads in flight never exceed `max_inflight`; admission keeps 2 frames per scan.

use crate::config::ADMISSION_FRAMES_PER_SCAN;
use crate::index::Place;
use crate::state::{slots_of, AbmState, FrameContent, Residency};
use crate::transitions::{place_of, starvation};
use crate::{BufferError, ChunkId, FrameId};
use std::collections::BTreeSet;

macro_rules! ensure {
    ($cond:expr, $($arg:tt)*) => {
        if !$cond {
            return Err(BufferError::Invariant(format!($($arg)*)));
        }
    };
}

impl AbmState {
    pub fn check_invariants(&self) -> Result<(), BufferError> {
        self.check_frames()?;
        self.check_pins_and_lru()?;
        self.check_interest()?;
        self.check_classes()?;
        self.check_limits()
    }

    fn check_frames(&self) -> Result<(), BufferError> {
        let free: BTreeSet<FrameId> = self.free_frames.iter().copied().collect();
        ensure!(
            free.len() == self.free_frames.len(),
            "duplicate frame in the free list"
        );
        for (i, frame) in self.frames.iter().enumerate() {
            let f = FrameId(i as u32);
            let expected = match frame.content {
                FrameContent::Empty => None,
                FrameContent::Loading(c) => Some((c, Residency::Loading(f))),
                FrameContent::Resident(c) => Some((c, Residency::Resident(f))),
            };
            ensure!(
                free.contains(&f) == expected.is_none(),
                "{f}: free list disagrees with content"
            );
            if let Some((c, residency)) = expected {
                ensure!(
                    self.residency(c) == residency,
                    "{f} holds {c} but the chunk says {:?}",
                    self.residency(c)
                );
            }
        }
        for c in 0..self.chunk_count() {
            let chunk = ChunkId(c);
            let ok = match self.residency(chunk) {
                Residency::Absent => true,
                Residency::Loading(f) => self.frame(f).content == FrameContent::Loading(chunk),
                Residency::Resident(f) => self.frame(f).content == FrameContent::Resident(chunk),
            };
            ensure!(ok, "{chunk} points at a frame that does not hold it");
        }
        Ok(())
    }

    fn check_pins_and_lru(&self) -> Result<(), BufferError> {
        let mut pins = vec![0u32; self.frames.len()];
        for slot in self.active_slots() {
            let scan = self.active_scan(slot);
            let Some(chunk) = scan.processing else {
                continue;
            };
            let Residency::Resident(f) = self.residency(chunk) else {
                return Err(BufferError::Invariant(format!(
                    "{} processes non-resident {chunk}",
                    scan.id
                )));
            };
            ensure!(
                self.interest(chunk) & slot.bit() != 0,
                "{} processes {chunk} it no longer needs",
                scan.id
            );
            pins[f.0 as usize] += 1;
        }
        let mut lru = BTreeSet::new();
        for (i, frame) in self.frames.iter().enumerate() {
            ensure!(
                frame.pins == pins[i],
                "frame {i}: {} pins, {} scans processing",
                frame.pins,
                pins[i]
            );
            if matches!(frame.content, FrameContent::Resident(_)) && frame.pins == 0 {
                lru.insert((frame.lru_tick, FrameId(i as u32)));
            }
        }
        ensure!(
            lru == self.lru,
            "LRU list is not the set of unpinned resident frames"
        );
        Ok(())
    }

    fn check_interest(&self) -> Result<(), BufferError> {
        let (mut needed, mut available, mut incoming) = ([0u32; 64], [0u32; 64], [0u32; 64]);
        for c in 0..self.chunk_count() {
            let chunk = ChunkId(c);
            let mask = self.interest(chunk);
            ensure!(
                mask & !self.active == 0,
                "{chunk} is wanted by inactive scans {:#x}",
                mask & !self.active
            );
            for slot in slots_of(mask) {
                let i = slot.index();
                ensure!(
                    self.active_scan(slot).chunks.contains(chunk),
                    "{chunk} outside the ranges of slot {i}"
                );
                needed[i] += 1;
                match self.residency(chunk) {
                    Residency::Absent => {}
                    Residency::Loading(_) => incoming[i] += 1,
                    Residency::Resident(_) => available[i] += 1,
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
            let (starved, almost) = starvation(s);
            ensure!(
                (self.starved & slot.bit() != 0) == starved,
                "{}: stale starved bit",
                s.id
            );
            ensure!(
                (self.almost_starved & slot.bit() != 0) == almost,
                "{}: stale almost-starved bit",
                s.id
            );
            let blocked = self.blocked & slot.bit() != 0;
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
        let stray = (self.blocked | self.starved | self.almost_starved) & !self.active;
        ensure!(stray == 0, "masks name inactive scans {stray:#x}");
        Ok(())
    }

    fn check_classes(&self) -> Result<(), BufferError> {
        for c in 0..self.chunk_count() {
            let (chunk, entry) = (ChunkId(c), &self.chunks[c as usize]);
            let class = self.classes.class(entry.class);
            ensure!(
                class.mask() == entry.mask,
                "{chunk}: class mask differs from chunk mask"
            );
            let member = match place_of(entry.residency) {
                Place::Absent if entry.mask == 0 => true,
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
            .frames
            .iter()
            .filter(|f| matches!(f.content, FrameContent::Loading(_)))
            .count();
        ensure!(
            loading as u32 == self.inflight,
            "inflight {} but {loading} frames loading",
            self.inflight
        );
        ensure!(
            self.inflight <= self.config.max_inflight,
            "more loads in flight than allowed"
        );
        let admissible = (self.config.frames / ADMISSION_FRAMES_PER_SCAN).max(1);
        ensure!(
            self.active_count() <= admissible,
            "{} scans admitted, limit {admissible}",
            self.active_count()
        );
        Ok(())
    }
}
