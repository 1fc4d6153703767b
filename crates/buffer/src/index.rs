//! Equivalence classes of chunks (2004 report §4.1): chunks wanted by exactly the same
//! set of scans share a class. Every relevance function of Figure 3 depends on a chunk
//! only through its interest mask and its residency, so a decision can look at classes
//! instead of chunks.
//!
//! ```text
//!  chunk:  0  1  2  3  4  5  6  7  8  9          class {A,B}: absent {2,3}  resident {4}
//!  mask:   A  A  AB AB AB B  B  -  -  B          class {A}:   absent {0}    resident {1}
//!                                                class {B}:   absent {5,9}  resident {6}
//! ```
//!
//! Masks are piecewise constant over chunk ranges, so the number of live classes is
//! bounded by the number of range boundaries plus the fragmentation left by out-of-order
//! consumption, far below the chunk count in practice (measured by the benchmark). The
//! per-class sets are ordered so a decision can also pick the chunk nearest to the disk
//! head without scanning.

use crate::{ChunkId, ScanSet};
use std::collections::{BTreeMap, BTreeSet, HashMap};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct ClassId(u32);

/// Where a chunk is, as far as the class sets are concerned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Place {
    Absent,
    Loading,
    Resident,
}

/// One equivalence class.
#[derive(Clone, Debug)]
pub struct ChunkClass {
    mask: ScanSet,
    /// Union of the columns the scans of `mask` read (DSM; `1` = the whole chunk for
    /// NSM/PAX): what a chunk of the class must have resident to serve all of them.
    columns: u64,
    /// DSM: chunks not fully resident for the class but with some column resident,
    /// which a scan reading a subset of `columns` may already process; with their
    /// resident columns, and grouped by them so a scan finds the chunks holding its
    /// columns without walking the others.
    partial: BTreeMap<ChunkId, u64>,
    partial_by_cols: BTreeMap<u64, BTreeSet<ChunkId>>,
    /// Not resident and not being loaded. Not kept for the empty mask: nobody loads those.
    absent: BTreeSet<ChunkId>,
    resident: BTreeSet<ChunkId>,
    loading: u32,
    absent_uncounted: u32,
    live_pos: usize,
}

impl ChunkClass {
    /// The set of scans (slots) that still want every chunk of this class.
    pub fn mask(&self) -> ScanSet {
        self.mask
    }

    /// Union of the columns of the class's scans.
    pub fn columns(&self) -> u64 {
        self.columns
    }

    /// Chunks with some but not all of `columns` resident (DSM only), ascending.
    pub fn partial(&self) -> impl Iterator<Item = ChunkId> + '_ {
        self.partial.keys().copied()
    }

    /// How many chunks [`partial`](Self::partial) lists.
    pub fn partial_len(&self) -> usize {
        self.partial.len()
    }

    pub fn is_partial(&self, chunk: ChunkId) -> bool {
        self.partial.contains_key(&chunk)
    }

    /// The partial chunks holding all of `cols`, as sets grouped by resident columns.
    pub fn partial_with(&self, cols: u64) -> impl Iterator<Item = &BTreeSet<ChunkId>> + '_ {
        self.partial_by_cols
            .iter()
            .filter(move |(resident, _)| cols & !**resident == 0)
            .map(|(_, chunks)| chunks)
    }

    fn unset_partial(&mut self, chunk: ChunkId) {
        let Some(resident) = self.partial.remove(&chunk) else {
            return;
        };
        if let Some(set) = self.partial_by_cols.get_mut(&resident) {
            set.remove(&chunk);
            if set.is_empty() {
                self.partial_by_cols.remove(&resident);
            }
        }
    }

    /// Chunks of the class that are neither resident nor being loaded (empty for mask 0).
    pub fn absent(&self) -> &BTreeSet<ChunkId> {
        &self.absent
    }

    /// Resident chunks of the class.
    pub fn resident(&self) -> &BTreeSet<ChunkId> {
        &self.resident
    }

    fn len(&self) -> usize {
        self.absent.len() + self.resident.len() + (self.loading + self.absent_uncounted) as usize
    }
}

#[derive(Clone, Debug, Default)]
pub(crate) struct ClassIndex {
    classes: Vec<ChunkClass>,
    free: Vec<ClassId>,
    by_mask: HashMap<ScanSet, ClassId>,
    /// Dense list of live classes, for iteration.
    live: Vec<ClassId>,
}

impl ClassIndex {
    pub(crate) fn live(&self) -> impl Iterator<Item = &ChunkClass> + '_ {
        self.live.iter().map(move |id| &self.classes[id.0 as usize])
    }

    pub(crate) fn live_count(&self) -> usize {
        self.live.len()
    }

    pub(crate) fn class(&self, id: ClassId) -> &ChunkClass {
        &self.classes[id.0 as usize]
    }

    pub(crate) fn class_of_mask(&self, mask: ScanSet) -> Option<&ChunkClass> {
        self.by_mask.get(&mask).map(|id| self.class(*id))
    }

    /// Puts `chunk` into the class of `mask` (created with `columns()` if new).
    pub(crate) fn insert(
        &mut self,
        chunk: ChunkId,
        mask: ScanSet,
        columns: impl FnOnce() -> u64,
        place: Place,
    ) -> ClassId {
        let id = self.class_for(mask, columns);
        let class = &mut self.classes[id.0 as usize];
        match place {
            Place::Absent if mask.is_empty() => class.absent_uncounted += 1,
            Place::Absent => {
                class.absent.insert(chunk);
            }
            Place::Loading => class.loading += 1,
            Place::Resident => {
                class.resident.insert(chunk);
            }
        }
        id
    }

    pub(crate) fn remove(&mut self, chunk: ChunkId, id: ClassId, place: Place) {
        let class = &mut self.classes[id.0 as usize];
        let found = match place {
            Place::Absent if class.mask.is_empty() => {
                class.absent_uncounted -= 1;
                true
            }
            Place::Absent => class.absent.remove(&chunk),
            Place::Loading => {
                class.loading -= 1;
                true
            }
            Place::Resident => class.resident.remove(&chunk),
        };
        class.unset_partial(chunk);
        assert!(found, "{chunk} missing from its class ({place:?})");
        if class.len() == 0 {
            self.retire(id);
        }
    }

    /// The columns a class of `mask` has, if it exists.
    pub(crate) fn columns_of(&self, mask: ScanSet) -> Option<u64> {
        self.class_of_mask(mask).map(ChunkClass::columns)
    }

    /// Files `chunk` as partial with `resident` columns, or not partial (`None`).
    pub(crate) fn set_partial(&mut self, chunk: ChunkId, id: ClassId, resident: Option<u64>) {
        let class = &mut self.classes[id.0 as usize];
        class.unset_partial(chunk);
        if let Some(cols) = resident {
            class.partial.insert(chunk, cols);
            class.partial_by_cols.entry(cols).or_default().insert(chunk);
        }
    }

    fn class_for(&mut self, mask: ScanSet, columns: impl FnOnce() -> u64) -> ClassId {
        if let Some(id) = self.by_mask.get(&mask) {
            return *id;
        }
        let class = ChunkClass {
            mask,
            columns: columns(),
            partial: BTreeMap::new(),
            partial_by_cols: BTreeMap::new(),
            absent: BTreeSet::new(),
            resident: BTreeSet::new(),
            loading: 0,
            absent_uncounted: 0,
            live_pos: self.live.len(),
        };
        let id = match self.free.pop() {
            Some(id) => {
                self.classes[id.0 as usize] = class;
                id
            }
            None => {
                self.classes.push(class);
                ClassId(self.classes.len() as u32 - 1)
            }
        };
        self.live.push(id);
        self.by_mask.insert(mask, id);
        id
    }

    fn retire(&mut self, id: ClassId) {
        let pos = self.classes[id.0 as usize].live_pos;
        let mask = self.classes[id.0 as usize].mask;
        self.live.swap_remove(pos);
        if let Some(moved) = self.live.get(pos) {
            self.classes[moved.0 as usize].live_pos = pos;
        }
        self.by_mask.remove(&mask);
        self.free.push(id);
    }

    /// Chunks held by all live classes, or `None` if a live class is empty (it should
    /// have been retired).
    pub(crate) fn total_len(&self) -> Option<usize> {
        self.live().map(|c| (c.len() > 0).then_some(c.len())).sum()
    }
}
