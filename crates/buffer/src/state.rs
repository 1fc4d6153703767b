//! The shared ABM state every policy reads: frames, which chunk is where, pins, and for
//! each scan the chunks it still needs. Policies get `&AbmState` and return choices; only
//! [`crate::Abm`] mutates it (see `transitions.rs`), so a policy cannot break it.

use crate::index::{ChunkClass, ClassId, ClassIndex};
use crate::{AbmConfig, ChunkId, ChunkRanges, ColumnMask, FrameId, Nanos, ScanId, ScanSlot};
use std::collections::{BTreeSet, VecDeque};

/// Set of scans, one bit per [`ScanSlot`].
pub type ScanMask = u64;

/// Where a chunk's data is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Residency {
    Absent,
    Loading(FrameId),
    Resident(FrameId),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FrameContent {
    Empty,
    Loading(ChunkId),
    Resident(ChunkId),
}

#[derive(Clone, Debug)]
pub struct Frame {
    pub content: FrameContent,
    /// Scans currently processing the chunk in this frame (paper: processCnt).
    pub pins: u32,
    /// Recency stamp: last load completion or last unpin.
    pub lru_tick: u64,
}

#[derive(Clone, Debug)]
pub(crate) struct ChunkEntry {
    /// Scans that still need this chunk (paper: neededBy / chunkClass).
    pub(crate) mask: ScanMask,
    pub(crate) class: ClassId,
    pub(crate) residency: Residency,
}

/// An admitted scan.
#[derive(Clone, Debug)]
pub struct ScanState {
    pub id: ScanId,
    pub columns: ColumnMask,
    /// All chunks the scan's ranges touch.
    pub chunks: ChunkRanges,
    /// Chunks not yet released (paper: chunksNeeded), including the one in process.
    pub needed: u32,
    /// Needed chunks that are resident, including the one in process.
    pub available: u32,
    /// Needed chunks being loaded.
    pub incoming: u32,
    pub processing: Option<ChunkId>,
    /// Set while the scan waits for a chunk (paper: blockedSince).
    pub blocked_since: Option<Nanos>,
    pub registered_at: Nanos,
    /// Last time a chunk was delivered (or registration time).
    pub last_served: Nanos,
}

/// A scan waiting for admission.
#[derive(Clone, Debug)]
pub(crate) struct PendingScan {
    pub(crate) id: ScanId,
    pub(crate) columns: ColumnMask,
    pub(crate) chunks: ChunkRanges,
    pub(crate) registered_at: Nanos,
    pub(crate) blocked_since: Option<Nanos>,
}

/// Counters for reports.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AbmStats {
    pub loads: u64,
    pub evictions: u64,
    pub deliveries: u64,
    pub load_failures: u64,
}

#[derive(Clone, Debug)]
pub struct AbmState {
    pub(crate) config: AbmConfig,
    pub(crate) chunks: Vec<ChunkEntry>,
    pub(crate) classes: ClassIndex,
    pub(crate) frames: Vec<Frame>,
    pub(crate) free_frames: Vec<FrameId>,
    /// Resident frames with no pins, oldest stamp first: the LRU list.
    pub(crate) lru: BTreeSet<(u64, FrameId)>,
    pub(crate) tick: u64,
    pub(crate) scans: Vec<Option<ScanState>>,
    pub(crate) active: ScanMask,
    pub(crate) blocked: ScanMask,
    pub(crate) starved: ScanMask,
    pub(crate) almost_starved: ScanMask,
    pub(crate) pending: VecDeque<PendingScan>,
    pub(crate) next_scan_id: u64,
    pub(crate) inflight: u32,
    pub(crate) last_loaded: Option<ChunkId>,
    pub(crate) stats: AbmStats,
}

impl AbmState {
    pub fn config(&self) -> &AbmConfig {
        &self.config
    }

    pub fn chunk_count(&self) -> u32 {
        self.chunks.len() as u32
    }

    pub fn frame_count(&self) -> u32 {
        self.frames.len() as u32
    }

    /// Scans that still need `chunk`.
    pub fn interest(&self, chunk: ChunkId) -> ScanMask {
        self.chunks[chunk.0 as usize].mask
    }

    pub fn residency(&self, chunk: ChunkId) -> Residency {
        self.chunks[chunk.0 as usize].residency
    }

    pub fn is_resident(&self, chunk: ChunkId) -> bool {
        matches!(self.residency(chunk), Residency::Resident(_))
    }

    pub fn is_absent(&self, chunk: ChunkId) -> bool {
        self.residency(chunk) == Residency::Absent
    }

    pub fn frame(&self, frame: FrameId) -> &Frame {
        &self.frames[frame.0 as usize]
    }

    /// Pinned = some scan processes it right now (paper: currentlyUsed).
    pub fn is_pinned(&self, chunk: ChunkId) -> bool {
        match self.residency(chunk) {
            Residency::Resident(f) => self.frame(f).pins > 0,
            _ => false,
        }
    }

    /// An empty frame, if any.
    pub fn free_frame(&self) -> Option<FrameId> {
        self.free_frames.last().copied()
    }

    /// Unpinned resident frames, least recently used first.
    pub fn lru_frames(&self) -> impl Iterator<Item = FrameId> + '_ {
        self.lru.iter().map(|(_, f)| *f)
    }

    pub fn scan(&self, slot: ScanSlot) -> Option<&ScanState> {
        self.scans.get(slot.index()).and_then(Option::as_ref)
    }

    /// The state of an admitted scan; panics on an empty slot (a policy bug).
    pub fn active_scan(&self, slot: ScanSlot) -> &ScanState {
        match self.scan(slot) {
            Some(s) => s,
            None => panic!("slot {} is not active", slot.0),
        }
    }

    pub fn active_mask(&self) -> ScanMask {
        self.active
    }

    pub fn active_count(&self) -> u32 {
        self.active.count_ones()
    }

    /// Scans waiting in `next_chunk` for a chunk.
    pub fn blocked_mask(&self) -> ScanMask {
        self.blocked
    }

    /// Paper: queryStarved. Fewer than `min(2, needed)` chunks available or arriving.
    pub fn starved_mask(&self) -> ScanMask {
        self.starved
    }

    /// Starved or one eviction away from it (keepRelevance's "almost starved").
    pub fn almost_starved_mask(&self) -> ScanMask {
        self.almost_starved
    }

    /// Live equivalence classes (see `index.rs`).
    pub fn classes(&self) -> impl Iterator<Item = &ChunkClass> + '_ {
        self.classes.live()
    }

    pub fn class_count(&self) -> usize {
        self.classes.live_count()
    }

    /// Class of chunks nobody needs any more, if such chunks exist.
    pub fn unneeded_class(&self) -> Option<&ChunkClass> {
        self.classes.class_of_mask(0)
    }

    pub fn inflight(&self) -> u32 {
        self.inflight
    }

    /// The chunk most recently chosen for loading: the disk head, for locality.
    pub fn last_loaded(&self) -> Option<ChunkId> {
        self.last_loaded
    }

    pub fn pending_count(&self) -> usize {
        self.pending.len()
    }

    pub fn stats(&self) -> &AbmStats {
        &self.stats
    }

    /// Active slots, ascending.
    pub fn active_slots(&self) -> impl Iterator<Item = ScanSlot> + '_ {
        slots_of(self.active)
    }

    pub(crate) fn slot_of(&self, id: ScanId) -> Option<ScanSlot> {
        self.active_slots().find(|s| self.active_scan(*s).id == id)
    }
}

/// The slots whose bits are set in `mask`, ascending.
pub fn slots_of(mut mask: ScanMask) -> impl Iterator<Item = ScanSlot> {
    std::iter::from_fn(move || {
        if mask == 0 {
            return None;
        }
        let bit = mask.trailing_zeros();
        mask &= mask - 1;
        Some(ScanSlot(bit as u8))
    })
}
