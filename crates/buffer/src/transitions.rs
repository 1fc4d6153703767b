//! Every mutation of [`AbmState`]. Each keeps the derived data in step: the pool and
//! each chunk's residency, class sets, per-scan `available`/`incoming` counters and the
//! starvation sets. `invariants.rs` recomputes all of it from scratch and compares.

use crate::config::{ADMISSION_CHUNKS_PER_SCAN, MAX_SCANS, STARVED_BELOW};
use crate::index::{ClassIndex, Place};
use crate::pool::{PieceId, Pool};
use crate::state::{AbmState, ChunkEntry, PendingScan, Residency, ScanState};
use crate::{AbmConfig, BufferError, ChunkId, Nanos, ScanOrder, ScanSet, ScanSlot, TableGeometry};
use std::collections::VecDeque;

pub(crate) fn place_of(residency: Residency) -> Place {
    match residency {
        Residency::Absent => Place::Absent,
        Residency::Loading => Place::Loading,
        Residency::Resident => Place::Resident,
    }
}

impl AbmState {
    pub(crate) fn new(geometry: &TableGeometry, config: AbmConfig) -> Result<Self, BufferError> {
        let max_chunk_bytes = geometry.max_chunk_bytes();
        let pool = Pool::new(config.capacity_bytes(max_chunk_bytes)?);
        let mut classes = ClassIndex::default();
        let chunks = (0..geometry.chunk_count())
            .map(|c| ChunkEntry {
                mask: ScanSet::EMPTY,
                class: classes.insert(ChunkId(c), ScanSet::EMPTY, Place::Absent),
                residency: Residency::Absent,
            })
            .collect();
        Ok(AbmState {
            config,
            table: Default::default(),
            chunks,
            chunk_bytes: geometry.chunk_bytes().to_vec(),
            max_chunk_bytes,
            classes,
            pool,
            scans: vec![None; MAX_SCANS],
            active: ScanSet::EMPTY,
            blocked: ScanSet::EMPTY,
            starved: ScanSet::EMPTY,
            almost_starved: ScanSet::EMPTY,
            in_order: ScanSet::EMPTY,
            pending: VecDeque::new(),
            next_scan_id: 0,
            inflight: 0,
            last_loaded: None,
            stats: Default::default(),
        })
    }

    /// Admission rule (docs/abm.md): room for 2 of the largest chunks per active scan,
    /// at most [`MAX_SCANS`] scans.
    pub(crate) fn admission_open(&self) -> bool {
        let active = u64::from(self.active_count());
        let wanted = u64::from(ADMISSION_CHUNKS_PER_SCAN)
            .saturating_mul(active + 1)
            .saturating_mul(self.max_chunk_bytes);
        (active as usize) < MAX_SCANS && self.pool.capacity_bytes() >= wanted
    }

    pub(crate) fn admit(&mut self, pending: PendingScan) -> ScanSlot {
        let Some(slot) = self.active.first_free() else {
            panic!("admit called with all slots taken");
        };
        let blocked_since = pending.blocked_since;
        self.scans[slot.index()] = Some(ScanState {
            id: pending.id,
            columns: pending.columns,
            order: pending.order,
            needed: pending.chunks.len(),
            chunks: pending.chunks,
            available: 0,
            incoming: 0,
            processing: None,
            blocked_since,
            registered_at: pending.registered_at,
            last_served: pending.registered_at,
        });
        self.active.insert(slot);
        self.blocked.set(slot, blocked_since.is_some());
        self.in_order.set(slot, pending.order == ScanOrder::InOrder);
        let chunks = self.active_scan(slot).chunks.clone();
        for c in chunks.iter() {
            let mut mask = self.interest(c);
            mask.insert(slot);
            self.set_mask(c, mask);
        }
        self.refresh_starvation(ScanSet::single(slot));
        slot
    }

    /// Drops the scan: its pin, its interest in every chunk, its slot.
    pub(crate) fn retire(&mut self, slot: ScanSlot) -> ScanState {
        if let Some(chunk) = self.active_scan(slot).processing {
            self.unpin(chunk, slot);
        }
        let chunks = self.active_scan(slot).chunks.clone();
        for c in chunks.iter() {
            let mut mask = self.interest(c);
            if mask.contains(slot) {
                mask.remove(slot);
                self.set_mask(c, mask);
            }
        }
        for set in [
            &mut self.active,
            &mut self.blocked,
            &mut self.starved,
            &mut self.almost_starved,
            &mut self.in_order,
        ] {
            set.remove(slot);
        }
        match self.scans[slot.index()].take() {
            Some(state) => state,
            None => panic!("retire of an empty slot"),
        }
    }

    /// Hands `chunk` to the scan in `slot` and pins it (paper: processCnt++).
    pub(crate) fn deliver(&mut self, slot: ScanSlot, chunk: ChunkId, now: Nanos) {
        assert!(self.is_resident(chunk), "delivering non-resident {chunk}");
        assert!(
            self.interest(chunk).contains(slot),
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
        let holder = scan.id;
        self.blocked.remove(slot);
        let pinned = self.pool.pin(PieceId::whole(self.table, chunk), holder);
        assert!(pinned.is_ok(), "pinning resident {chunk}: {pinned:?}");
        self.stats.deliveries += 1;
    }

    /// The scan is done with its chunk: it is consumed (interest bit cleared) and unpinned.
    pub(crate) fn release(&mut self, slot: ScanSlot) -> Option<ChunkId> {
        let scan = self.scans[slot.index()].as_mut()?;
        let chunk = scan.processing.take()?;
        scan.needed -= 1;
        self.unpin(chunk, slot);
        let mut mask = self.interest(chunk);
        mask.remove(slot);
        self.set_mask(chunk, mask);
        self.refresh_starvation(ScanSet::single(slot));
        Some(chunk)
    }

    pub(crate) fn block(&mut self, slot: ScanSlot, now: Nanos) {
        let scan = self.scans[slot.index()]
            .as_mut()
            .expect("block on an empty slot");
        scan.blocked_since.get_or_insert(now);
        self.blocked.insert(slot);
    }

    fn unpin(&mut self, chunk: ChunkId, slot: ScanSlot) {
        let holder = self.active_scan(slot).id;
        let unpinned = self.pool.unpin(self.piece(chunk), holder);
        assert!(unpinned.is_ok(), "unpinning {chunk}: {unpinned:?}");
    }

    /// Evicts `victims` (each resident and unpinned) and starts loading `chunk`.
    pub(crate) fn start_load(
        &mut self,
        chunk: ChunkId,
        victims: &[PieceId],
    ) -> Result<Vec<ChunkId>, BufferError> {
        if !self.is_absent(chunk) {
            return Err(BufferError::PieceState(
                self.piece(chunk),
                "resident or loading: never load it twice",
            ));
        }
        let mut evicted = Vec::with_capacity(victims.len());
        for victim in victims {
            self.pool.evict(*victim)?;
            self.set_residency(victim.chunk, Residency::Absent);
            self.stats.evictions += 1;
            evicted.push(victim.chunk);
        }
        let bytes = self.chunk_bytes(chunk);
        self.pool.reserve(self.piece(chunk), bytes)?;
        self.set_residency(chunk, Residency::Loading);
        self.inflight += 1;
        self.last_loaded = Some(chunk);
        self.stats.loads += 1;
        self.stats.bytes_loaded += bytes;
        Ok(evicted)
    }

    pub(crate) fn finish_load(&mut self, chunk: ChunkId) -> Result<(), BufferError> {
        if self.residency(chunk) != Residency::Loading {
            return Err(BufferError::NotLoading(chunk));
        }
        self.pool.complete(self.piece(chunk))?;
        self.set_residency(chunk, Residency::Resident);
        self.inflight -= 1;
        Ok(())
    }

    /// A failed load leaves the chunk absent (it may be loaded again) and frees its bytes.
    pub(crate) fn fail_load(&mut self, chunk: ChunkId) -> Result<ScanSet, BufferError> {
        if self.residency(chunk) != Residency::Loading {
            return Err(BufferError::NotLoading(chunk));
        }
        self.pool.abort(self.piece(chunk))?;
        self.set_residency(chunk, Residency::Absent);
        self.inflight -= 1;
        self.stats.load_failures += 1;
        Ok(self.interest(chunk))
    }

    /// Moves a chunk to another class, keeping the scans' counters in step.
    fn set_mask(&mut self, chunk: ChunkId, mask: ScanSet) {
        let entry = &self.chunks[chunk.0 as usize];
        let (old, residency, class) = (entry.mask, entry.residency, entry.class);
        let place = place_of(residency);
        self.classes.remove(chunk, class, place);
        self.chunks[chunk.0 as usize].class = self.classes.insert(chunk, mask, place);
        self.chunks[chunk.0 as usize].mask = mask;
        self.count(old - mask, residency, -1);
        self.count(mask - old, residency, 1);
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

    fn count(&mut self, mask: ScanSet, residency: Residency, delta: i32) {
        for slot in mask.iter() {
            let scan = self.scans[slot.index()]
                .as_mut()
                .expect("interest of an empty slot");
            match residency {
                Residency::Absent => {}
                Residency::Loading => scan.incoming = scan.incoming.wrapping_add_signed(delta),
                Residency::Resident => scan.available = scan.available.wrapping_add_signed(delta),
            }
        }
    }

    pub(crate) fn refresh_starvation(&mut self, mask: ScanSet) {
        for slot in (mask & self.active).iter() {
            let (starved, almost) = self.starvation(self.active_scan(slot));
            self.starved.set(slot, starved);
            self.almost_starved.set(slot, almost);
        }
    }

    /// (starved, almost starved) for a scan. A scan whose every remaining chunk is
    /// already available is not starved: no load can help it (the threshold is
    /// `min(2, needed)`). An in-order scan can only use its next chunks, so only those
    /// count: the next `threshold` for starved, one more for almost starved.
    pub(crate) fn starvation(&self, scan: &ScanState) -> (bool, bool) {
        if scan.needed == 0 {
            return (false, false);
        }
        let threshold = STARVED_BELOW.min(scan.needed);
        if scan.order == ScanOrder::InOrder {
            let here = |k: u32| scan.in_order_ahead(k).is_some_and(|c| !self.is_absent(c));
            let near = (0..threshold).filter(|k| here(*k)).count() as u32;
            let window = near + u32::from(here(threshold));
            return (near < threshold, window <= threshold);
        }
        let have = scan.available + scan.incoming;
        (have < threshold, have <= threshold)
    }
}
