//! The buffer pool: the lower of the buffer manager's two layers.
//!
//! It holds *pieces* — the unit of residency — under one byte budget, counts who pins
//! them, and keeps the two orders replacers read (least recently used, and load order).
//! It knows nothing of scans' ranges, interest or policies: the scheduler above it
//! (`Abm`) decides what to load and asks a [`crate::Replacer`] which pieces to evict.
//!
//! ```text
//!            reserve(piece, bytes)           complete(piece)
//!   absent ─────────────────────────► loading ───────────────► resident ◄──┐
//!     ▲               abort(piece)       │                      │  pin ────┤ unpin
//!     └──────────────────────────────────┘                      │          │
//!     └─────────────────────── evict(piece) (unpinned only) ────┘──────────┘
//! ```
//!
//! Access rules (checked by `check_invariants` and by assertions on every call):
//! 1. `used_bytes` = bytes of loading + resident pieces ≤ `capacity_bytes`: a load
//!    reserves its bytes before the read starts, so memory never exceeds the budget.
//! 2. A pinned piece is resident and is never evicted; pins are counted per holder, so
//!    a holder that goes away can drop exactly its own pins.
//! 3. `recency` holds exactly the unpinned resident pieces, stamped with their last use
//!    (load completion or last unpin); `arrival` holds every loading or resident piece
//!    in the order its load started.

mod piece;

pub use piece::{PieceId, PieceState, TableId, TableVersion};

use crate::{BufferError, HolderId};
use std::collections::{BTreeSet, HashMap};

/// One piece in the pool.
#[derive(Clone, Debug)]
struct Entry {
    bytes: u64,
    state: PieceState,
    /// (holder, pins held). Few holders at once (one per scan processing the piece).
    holders: Vec<(HolderId, u32)>,
    /// Recency stamp: load completion or last unpin.
    last_use: u64,
    /// Load order stamp: when its load was reserved.
    arrived: u64,
    /// No scan that needs its chunk reads its column (set by the ABM state, DSM).
    spare: bool,
}

impl Entry {
    fn pins(&self) -> u32 {
        self.holders.iter().map(|(_, n)| n).sum()
    }
}

/// Resident and loading pieces under a byte budget.
#[derive(Clone, Debug)]
pub struct Pool {
    capacity_bytes: u64,
    used_bytes: u64,
    pieces: HashMap<PieceId, Entry>,
    recency: BTreeSet<(u64, PieceId)>,
    /// The spare pieces of `recency`, in the same order.
    spare_recency: BTreeSet<(u64, PieceId)>,
    arrival: BTreeSet<(u64, PieceId)>,
    tick: u64,
}

impl Pool {
    pub fn new(capacity_bytes: u64) -> Pool {
        Pool {
            capacity_bytes,
            used_bytes: 0,
            pieces: HashMap::new(),
            recency: BTreeSet::new(),
            spare_recency: BTreeSet::new(),
            arrival: BTreeSet::new(),
            tick: 0,
        }
    }

    pub fn capacity_bytes(&self) -> u64 {
        self.capacity_bytes
    }

    /// Sets the budget, which must cover what the pool holds: a pool sharing one
    /// budget with other tables' pools is lent its bytes plus the budget's free bytes
    /// (`catalog.rs`).
    pub(crate) fn set_capacity(&mut self, capacity_bytes: u64) {
        assert!(
            capacity_bytes >= self.used_bytes,
            "a pool's budget ({capacity_bytes}) below what it holds ({})",
            self.used_bytes
        );
        self.capacity_bytes = capacity_bytes;
    }

    /// Bytes of resident and loading pieces.
    pub fn used_bytes(&self) -> u64 {
        self.used_bytes
    }

    pub fn free_bytes(&self) -> u64 {
        self.capacity_bytes - self.used_bytes
    }

    pub fn state(&self, piece: PieceId) -> Option<PieceState> {
        self.pieces.get(&piece).map(|e| e.state)
    }

    pub fn bytes(&self, piece: PieceId) -> Option<u64> {
        self.pieces.get(&piece).map(|e| e.bytes)
    }

    pub fn pins(&self, piece: PieceId) -> u32 {
        self.pieces.get(&piece).map_or(0, Entry::pins)
    }

    pub fn is_pinned(&self, piece: PieceId) -> bool {
        self.pins(piece) > 0
    }

    /// Recency stamp of a resident piece (larger = used more recently).
    pub fn last_use(&self, piece: PieceId) -> Option<u64> {
        self.pieces.get(&piece).map(|e| e.last_use)
    }

    /// Can `piece` be evicted now: resident and unpinned.
    pub fn is_evictable(&self, piece: PieceId) -> bool {
        self.pieces
            .get(&piece)
            .is_some_and(|e| e.state == PieceState::Resident && e.pins() == 0)
    }

    /// Unpinned resident pieces, least recently used first.
    pub fn lru(&self) -> impl Iterator<Item = PieceId> + '_ {
        self.recency.iter().map(|(_, p)| *p)
    }

    /// Unpinned resident pieces marked spare ([`Pool::set_spare`]), least recently used
    /// first.
    pub fn spare_lru(&self) -> impl Iterator<Item = PieceId> + '_ {
        self.spare_recency.iter().map(|(_, p)| *p)
    }

    /// Marks a piece spare or not (no scan that needs its chunk reads its column); a
    /// piece not in the pool is ignored.
    pub fn set_spare(&mut self, piece: PieceId, spare: bool) {
        let Some(e) = self.pieces.get_mut(&piece) else {
            return;
        };
        if e.spare == spare {
            return;
        }
        e.spare = spare;
        let key = (e.last_use, piece);
        if !spare {
            self.spare_recency.remove(&key);
        } else if self.recency.contains(&key) {
            self.spare_recency.insert(key);
        }
    }

    pub fn is_spare(&self, piece: PieceId) -> bool {
        self.pieces.get(&piece).is_some_and(|e| e.spare)
    }

    /// Loading and resident pieces in the order their loads started, oldest first.
    pub fn load_order(&self) -> impl Iterator<Item = PieceId> + '_ {
        self.arrival.iter().map(|(_, p)| *p)
    }

    pub fn len(&self) -> usize {
        self.pieces.len()
    }

    pub fn is_empty(&self) -> bool {
        self.pieces.is_empty()
    }

    /// Pieces `holder` has pinned, with the count (for unregistering and checks).
    pub fn pins_of(&self, holder: HolderId) -> Vec<(PieceId, u32)> {
        let mut out: Vec<(PieceId, u32)> = self
            .pieces
            .iter()
            .filter_map(|(p, e)| {
                let n = e.holders.iter().find(|(h, _)| *h == holder)?.1;
                Some((*p, n))
            })
            .collect();
        out.sort();
        out
    }

    /// Starts loading `piece`: reserves its bytes. The caller evicts first if needed.
    pub fn reserve(&mut self, piece: PieceId, bytes: u64) -> Result<(), BufferError> {
        if self.pieces.contains_key(&piece) {
            return Err(BufferError::PieceState(
                piece,
                "already loading or resident",
            ));
        }
        if bytes > self.free_bytes() {
            return Err(BufferError::NoSpace {
                piece,
                bytes,
                free: self.free_bytes(),
            });
        }
        self.tick += 1;
        self.used_bytes += bytes;
        self.arrival.insert((self.tick, piece));
        let entry = Entry {
            bytes,
            state: PieceState::Loading,
            holders: Vec::new(),
            last_use: self.tick,
            arrived: self.tick,
            spare: false,
        };
        self.pieces.insert(piece, entry);
        Ok(())
    }

    /// The read finished: the piece is resident and the most recently used.
    pub fn complete(&mut self, piece: PieceId) -> Result<(), BufferError> {
        self.tick += 1;
        let tick = self.tick;
        let entry = self.loading_entry(piece)?;
        entry.state = PieceState::Resident;
        entry.last_use = tick;
        let spare = entry.spare;
        self.recency.insert((tick, piece));
        if spare {
            self.spare_recency.insert((tick, piece));
        }
        Ok(())
    }

    /// The read failed: the piece is absent again and its bytes are free.
    pub fn abort(&mut self, piece: PieceId) -> Result<(), BufferError> {
        self.loading_entry(piece)?;
        self.remove(piece);
        Ok(())
    }

    /// Drops an unpinned resident piece.
    pub fn evict(&mut self, piece: PieceId) -> Result<(), BufferError> {
        if !self.is_evictable(piece) {
            return Err(BufferError::PieceState(piece, "not resident and unpinned"));
        }
        self.remove(piece);
        Ok(())
    }

    /// `holder` starts using a resident piece.
    pub fn pin(&mut self, piece: PieceId, holder: HolderId) -> Result<(), BufferError> {
        let entry = self.pieces.get_mut(&piece);
        let entry = entry.filter(|e| e.state == PieceState::Resident);
        let entry = entry.ok_or(BufferError::PieceState(piece, "pinned while not resident"))?;
        if entry.pins() == 0 {
            self.recency.remove(&(entry.last_use, piece));
            self.spare_recency.remove(&(entry.last_use, piece));
        }
        match entry.holders.iter_mut().find(|(h, _)| *h == holder) {
            Some((_, n)) => *n += 1,
            None => entry.holders.push((holder, 1)),
        }
        Ok(())
    }

    /// `holder` is done with one pin of `piece`; the last unpin makes it most recent.
    pub fn unpin(&mut self, piece: PieceId, holder: HolderId) -> Result<(), BufferError> {
        self.tick += 1;
        let tick = self.tick;
        let entry = self.pieces.get_mut(&piece);
        let entry = entry.ok_or(BufferError::PieceState(piece, "unpinned while absent"))?;
        let at = entry.holders.iter().position(|(h, _)| *h == holder);
        let at = at.ok_or(BufferError::PieceState(piece, "unpinned by a non-holder"))?;
        entry.holders[at].1 -= 1;
        if entry.holders[at].1 == 0 {
            entry.holders.swap_remove(at);
        }
        if entry.pins() == 0 {
            entry.last_use = tick;
            self.recency.insert((tick, piece));
            if entry.spare {
                self.spare_recency.insert((tick, piece));
            }
        }
        Ok(())
    }

    fn loading_entry(&mut self, piece: PieceId) -> Result<&mut Entry, BufferError> {
        self.pieces
            .get_mut(&piece)
            .filter(|e| e.state == PieceState::Loading)
            .ok_or(BufferError::PieceState(piece, "not loading"))
    }

    fn remove(&mut self, piece: PieceId) {
        if let Some(e) = self.pieces.remove(&piece) {
            self.used_bytes -= e.bytes;
            self.recency.remove(&(e.last_use, piece));
            self.spare_recency.remove(&(e.last_use, piece));
            self.arrival.remove(&(e.arrived, piece));
        }
    }

    /// Recomputes rules 1-3 of the module doc from the entries.
    pub fn check_invariants(&self) -> Result<(), BufferError> {
        let invariant = |m: String| Err(BufferError::Invariant(m));
        let used: u64 = self.pieces.values().map(|e| e.bytes).sum();
        if used != self.used_bytes || used > self.capacity_bytes {
            return invariant(format!(
                "pool holds {used} bytes, counted {} of {}",
                self.used_bytes, self.capacity_bytes
            ));
        }
        let mut recency = BTreeSet::new();
        let mut arrival = BTreeSet::new();
        for (p, e) in &self.pieces {
            if e.pins() > 0 && e.state != PieceState::Resident {
                return invariant(format!("{p} is pinned while {:?}", e.state));
            }
            if e.holders.iter().any(|(_, n)| *n == 0) {
                return invariant(format!("{p} lists a holder with no pins"));
            }
            if e.state == PieceState::Resident && e.pins() == 0 {
                recency.insert((e.last_use, *p));
            }
            arrival.insert((e.arrived, *p));
        }
        if recency != self.recency {
            return invariant("LRU order is not the set of unpinned resident pieces".into());
        }
        let spare: BTreeSet<(u64, PieceId)> = recency
            .into_iter()
            .filter(|(_, p)| self.pieces.get(p).is_some_and(|e| e.spare))
            .collect();
        if spare != self.spare_recency {
            return invariant("spare LRU order is not the unpinned resident spare pieces".into());
        }
        if arrival != self.arrival {
            return invariant("load order is not the set of pooled pieces".into());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
