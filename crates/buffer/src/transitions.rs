//! Every mutation of [`AbmState`]. Each keeps the derived data in step: class sets,
//! per-scan `available`/`incoming` counters, the starvation masks and the LRU list.
//! `invariants.rs` recomputes all of it from scratch and compares.

use crate::config::{ADMISSION_FRAMES_PER_SCAN, MAX_SCANS, STARVED_BELOW};
use crate::index::{ClassIndex, Place};
use crate::state::{
    slots_of, AbmState, ChunkEntry, Frame, FrameContent, PendingScan, Residency, ScanState,
};
use crate::{AbmConfig, BufferError, ChunkId, FrameId, Nanos, ScanMask, ScanSlot};
use std::collections::{BTreeSet, VecDeque};

pub(crate) fn place_of(residency: Residency) -> Place {
    match residency {
        Residency::Absent => Place::Absent,
        Residency::Loading(_) => Place::Loading,
        Residency::Resident(_) => Place::Resident,
    }
}

impl AbmState {
    pub(crate) fn new(chunk_count: u32, config: AbmConfig) -> Self {
        let mut classes = ClassIndex::default();
        let chunks = (0..chunk_count)
            .map(|c| ChunkEntry {
                mask: 0,
                class: classes.insert(ChunkId(c), 0, Place::Absent),
                residency: Residency::Absent,
            })
            .collect();
        let frames = (0..config.frames)
            .map(|_| Frame {
                content: FrameContent::Empty,
                pins: 0,
                lru_tick: 0,
            })
            .collect();
        // Reversed so that `free_frames.pop()` hands out frame 0 first.
        let free_frames = (0..config.frames).rev().map(FrameId).collect();
        AbmState {
            config,
            chunks,
            classes,
            frames,
            free_frames,
            lru: BTreeSet::new(),
            tick: 0,
            scans: vec![None; MAX_SCANS],
            active: 0,
            blocked: 0,
            starved: 0,
            almost_starved: 0,
            pending: VecDeque::new(),
            next_scan_id: 0,
            inflight: 0,
            last_loaded: None,
            stats: Default::default(),
        }
    }

    /// Admission rule (docs/abm.md): at least 2 frames per active scan, at most 64 scans.
    pub(crate) fn admission_open(&self) -> bool {
        let wanted = u64::from(ADMISSION_FRAMES_PER_SCAN) * (u64::from(self.active_count()) + 1);
        (self.active_count() as usize) < MAX_SCANS && u64::from(self.config.frames) >= wanted
    }

    pub(crate) fn admit(&mut self, pending: PendingScan) -> ScanSlot {
        let free = (!self.active).trailing_zeros();
        assert!(
            (free as usize) < MAX_SCANS,
            "admit called with all slots taken"
        );
        let slot = ScanSlot(free as u8);
        let blocked_since = pending.blocked_since;
        self.scans[slot.index()] = Some(ScanState {
            id: pending.id,
            columns: pending.columns,
            needed: pending.chunks.len(),
            chunks: pending.chunks,
            available: 0,
            incoming: 0,
            processing: None,
            blocked_since,
            registered_at: pending.registered_at,
            last_served: pending.registered_at,
        });
        self.active |= slot.bit();
        if blocked_since.is_some() {
            self.blocked |= slot.bit();
        }
        let chunks = self.active_scan(slot).chunks.clone();
        for c in chunks.iter() {
            let mask = self.interest(c) | slot.bit();
            self.set_mask(c, mask);
        }
        self.refresh_starvation(slot.bit());
        slot
    }

    /// Drops the scan: its pin, its interest in every chunk, its slot.
    pub(crate) fn retire(&mut self, slot: ScanSlot) -> ScanState {
        if let Some(chunk) = self.active_scan(slot).processing {
            self.unpin(chunk);
        }
        let chunks = self.active_scan(slot).chunks.clone();
        for c in chunks.iter() {
            let mask = self.interest(c);
            if mask & slot.bit() != 0 {
                self.set_mask(c, mask & !slot.bit());
            }
        }
        let bit = slot.bit();
        self.active &= !bit;
        self.blocked &= !bit;
        self.starved &= !bit;
        self.almost_starved &= !bit;
        match self.scans[slot.index()].take() {
            Some(state) => state,
            None => panic!("retire of an empty slot"),
        }
    }

    /// Hands `chunk` to the scan in `slot` and pins it (paper: processCnt++).
    pub(crate) fn deliver(&mut self, slot: ScanSlot, chunk: ChunkId, now: Nanos) -> FrameId {
        let Residency::Resident(frame) = self.residency(chunk) else {
            panic!("delivering non-resident {chunk}");
        };
        assert!(
            self.interest(chunk) & slot.bit() != 0,
            "delivering {chunk} to a scan that does not need it"
        );
        let scan = self.scans[slot.index()]
            .as_mut()
            .expect("deliver to an empty slot");
        assert!(
            scan.processing.is_none(),
            "a scan processes one chunk at a time"
        );
        scan.processing = Some(chunk);
        scan.blocked_since = None;
        scan.last_served = now;
        self.blocked &= !slot.bit();
        let f = &mut self.frames[frame.0 as usize];
        if f.pins == 0 {
            self.lru.remove(&(f.lru_tick, frame));
        }
        f.pins += 1;
        self.stats.deliveries += 1;
        frame
    }

    /// The scan is done with its chunk: it is consumed (interest bit cleared) and unpinned.
    pub(crate) fn release(&mut self, slot: ScanSlot) -> Option<ChunkId> {
        let scan = self.scans[slot.index()].as_mut()?;
        let chunk = scan.processing.take()?;
        scan.needed -= 1;
        self.unpin(chunk);
        let mask = self.interest(chunk) & !slot.bit();
        self.set_mask(chunk, mask);
        self.refresh_starvation(slot.bit());
        Some(chunk)
    }

    pub(crate) fn block(&mut self, slot: ScanSlot, now: Nanos) {
        let scan = self.scans[slot.index()]
            .as_mut()
            .expect("block on an empty slot");
        scan.blocked_since.get_or_insert(now);
        self.blocked |= slot.bit();
    }

    fn unpin(&mut self, chunk: ChunkId) {
        let Residency::Resident(frame) = self.residency(chunk) else {
            panic!("unpinning non-resident {chunk}");
        };
        self.tick += 1;
        let f = &mut self.frames[frame.0 as usize];
        assert!(f.pins > 0, "unpinning unpinned {chunk}");
        f.pins -= 1;
        if f.pins == 0 {
            f.lru_tick = self.tick;
            self.lru.insert((self.tick, frame));
        }
    }

    /// Starts loading `chunk` into `frame`, evicting what the frame holds.
    pub(crate) fn start_load(&mut self, chunk: ChunkId, frame: FrameId) -> Option<ChunkId> {
        assert!(
            self.is_absent(chunk),
            "{chunk} is resident or loading: never load it twice"
        );
        let f = &self.frames[frame.0 as usize];
        assert!(
            f.pins == 0,
            "{frame} is pinned: a chunk in process is never evicted"
        );
        let evicted = match f.content {
            FrameContent::Empty => {
                let pos = self.free_frames.iter().rposition(|x| *x == frame);
                self.free_frames
                    .swap_remove(pos.expect("empty frame missing from the free list"));
                None
            }
            FrameContent::Loading(c) => panic!("{frame} is still loading {c}"),
            FrameContent::Resident(victim) => {
                self.lru.remove(&(f.lru_tick, frame));
                self.set_residency(victim, Residency::Absent);
                self.stats.evictions += 1;
                Some(victim)
            }
        };
        self.frames[frame.0 as usize].content = FrameContent::Loading(chunk);
        self.set_residency(chunk, Residency::Loading(frame));
        self.inflight += 1;
        self.last_loaded = Some(chunk);
        self.stats.loads += 1;
        evicted
    }

    pub(crate) fn finish_load(&mut self, chunk: ChunkId) -> Result<FrameId, BufferError> {
        let Residency::Loading(frame) = self.residency(chunk) else {
            return Err(BufferError::NotLoading(chunk));
        };
        self.tick += 1;
        let f = &mut self.frames[frame.0 as usize];
        f.content = FrameContent::Resident(chunk);
        f.lru_tick = self.tick;
        self.lru.insert((self.tick, frame));
        self.set_residency(chunk, Residency::Resident(frame));
        self.inflight -= 1;
        Ok(frame)
    }

    /// A failed load leaves the chunk absent (it may be loaded again) and frees the frame.
    pub(crate) fn fail_load(&mut self, chunk: ChunkId) -> Result<ScanMask, BufferError> {
        let Residency::Loading(frame) = self.residency(chunk) else {
            return Err(BufferError::NotLoading(chunk));
        };
        self.frames[frame.0 as usize].content = FrameContent::Empty;
        self.free_frames.push(frame);
        self.set_residency(chunk, Residency::Absent);
        self.inflight -= 1;
        self.stats.load_failures += 1;
        Ok(self.interest(chunk))
    }

    /// Moves a chunk to another class, keeping the scans' counters in step.
    fn set_mask(&mut self, chunk: ChunkId, mask: ScanMask) {
        let entry = &self.chunks[chunk.0 as usize];
        let (old, residency, class) = (entry.mask, entry.residency, entry.class);
        let place = place_of(residency);
        self.classes.remove(chunk, class, place);
        self.chunks[chunk.0 as usize].class = self.classes.insert(chunk, mask, place);
        self.chunks[chunk.0 as usize].mask = mask;
        self.count(old & !mask, residency, -1);
        self.count(mask & !old, residency, 1);
        self.refresh_starvation(old ^ mask);
    }

    fn set_residency(&mut self, chunk: ChunkId, residency: Residency) {
        let entry = &self.chunks[chunk.0 as usize];
        let (mask, old, class) = (entry.mask, entry.residency, entry.class);
        self.classes.remove(chunk, class, place_of(old));
        self.chunks[chunk.0 as usize].class = self.classes.insert(chunk, mask, place_of(residency));
        self.chunks[chunk.0 as usize].residency = residency;
        self.count(mask, old, -1);
        self.count(mask, residency, 1);
        self.refresh_starvation(mask);
    }

    fn count(&mut self, mask: ScanMask, residency: Residency, delta: i32) {
        for slot in slots_of(mask) {
            let scan = self.scans[slot.index()]
                .as_mut()
                .expect("interest of an empty slot");
            match residency {
                Residency::Absent => {}
                Residency::Loading(_) => scan.incoming = scan.incoming.wrapping_add_signed(delta),
                Residency::Resident(_) => {
                    scan.available = scan.available.wrapping_add_signed(delta)
                }
            }
        }
    }

    pub(crate) fn refresh_starvation(&mut self, mask: ScanMask) {
        for slot in slots_of(mask & self.active) {
            let (starved, almost) = starvation(self.active_scan(slot));
            let bit = slot.bit();
            self.starved = if starved {
                self.starved | bit
            } else {
                self.starved & !bit
            };
            self.almost_starved = if almost {
                self.almost_starved | bit
            } else {
                self.almost_starved & !bit
            };
        }
    }
}

/// (starved, almost starved) for a scan. A scan whose every remaining chunk is already
/// available is not starved: no load can help it (the threshold is `min(2, needed)`).
pub(crate) fn starvation(scan: &ScanState) -> (bool, bool) {
    if scan.needed == 0 {
        return (false, false);
    }
    let threshold = STARVED_BELOW.min(scan.needed);
    let have = scan.available + scan.incoming;
    (have < threshold, have <= threshold)
}
