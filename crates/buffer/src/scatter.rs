//! Index selections and the scatter read (2004 report §4.2). An index selection
//! registers like a CScan and "cherry-picks" the tuples it wants from its chunks as they
//! arrive; it says which pages of each chunk hold them ([`ScanPages`]). When *every*
//! scan that still needs a chunk is such a selection, and their pages lie within half
//! the chunk ([`SCATTER_MAX_SPAN`]), a load of that chunk keeps only the union of their
//! pages: the report's scatter-readv, one request from the first page to the last with
//! the pages between sent to a dummy buffer.
//!
//! Such a piece is of use to those scans only. The invariant that keeps every other
//! part of the ABM unaware of it: **a scattered piece's chunk is needed by no scan
//! outside the set it serves** (`Scatter::scans`). Interest in a chunk grows only when
//! a scan is admitted, so admission upholds it (`clear_scatter_for`): a selection whose
//! pages the piece holds joins the set; any other scan is admitted only once the piece
//! is gone — evicted on the spot when no scan needs it, no worker holds it and no read
//! fills it, else the scan stays queued (the `Driver` tries again after every release
//! and load). Each scan of the set takes the piece once, so a queued scan waits for
//! finitely many such pieces.
//!
//! ```text
//!   chunk 7 wanted by index selections A {p2,p9} and B {p9,p20} only
//!       load: pages 2..=20 read with one request, {2, 9, 20} kept (3/64 of the bytes)
//!   selection D {p9} registers           → admitted, shares the piece
//!   full scan C registers, needing chunk 7:
//!       A and B done with it, unpinned   → evicted, C admitted (chunk 7 absent again)
//!       still needed, pinned or loading  → C queued until A and B have taken it
//! ```
//!
//! Only NSM/PAX chunks whose geometry knows its pages (`TableGeometry::with_page_bytes`)
//! are read so; a DSM or CSM chunk is read as its scans' column pieces, whole.

use std::collections::BTreeMap;
use std::ops::Range;

use serde::{Deserialize, Serialize};

use crate::state::{AbmState, Scatter, WHOLE_CHUNK};
use crate::{BufferError, ChunkId, ChunkRanges, PieceId, PieceState, ScanSlot};

/// The largest share of a chunk (numerator, denominator) from a scattered load's first
/// page to its last: beyond it the chunk is loaded whole. A scattered piece serves only
/// the selections it was loaded for, so a selection arriving later reads the chunk
/// again; with half the chunk or less read and kept, a second read still costs no more
/// than one whole load. Measured (docs/performance.md, "The scatter read"): eight range
/// selections of 0.05 % each, whose pages spread over nearly every chunk's whole span,
/// took 18.5 s scattered against 12.8 s whole (2.36 GB read against 1.62 GB) before
/// this bound.
pub const SCATTER_MAX_SPAN: (u64, u64) = (1, 2);

/// The pages an index selection needs of each of its chunks: page numbers within the
/// chunk's piece, ascending and distinct. A chunk of the scan's ranges without an entry
/// is needed whole.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScanPages(BTreeMap<u32, Vec<u32>>);

impl ScanPages {
    /// Pages per chunk, in any order (sorted and deduplicated here).
    pub fn new(pages: impl IntoIterator<Item = (ChunkId, Vec<u32>)>) -> ScanPages {
        let mut map: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
        for (chunk, list) in pages {
            map.entry(chunk.0).or_default().extend(list);
        }
        for list in map.values_mut() {
            list.sort_unstable();
            list.dedup();
        }
        ScanPages(map)
    }

    /// The pages wanted of `chunk`, if the selection names them.
    pub fn of(&self, chunk: ChunkId) -> Option<&[u32]> {
        self.0.get(&chunk.0).map(Vec::as_slice)
    }

    /// Every chunk named, with its pages.
    pub fn iter(&self) -> impl Iterator<Item = (ChunkId, &[u32])> + '_ {
        self.0.iter().map(|(c, p)| (ChunkId(*c), p.as_slice()))
    }
}

/// Runs of consecutive page numbers of `pages` (ascending): one request each.
pub fn page_runs(pages: &[u32]) -> Vec<Range<u32>> {
    let mut runs: Vec<Range<u32>> = Vec::new();
    for &p in pages {
        match runs.last_mut() {
            Some(run) if run.end == p => run.end = p + 1,
            _ => runs.push(p..p.saturating_add(1)),
        }
    }
    runs
}

impl AbmState {
    /// Refuses page lists the table cannot use: pages of a chunk beyond its piece's,
    /// or any page list for a table whose pages the geometry does not know.
    pub(crate) fn check_pages(&self, pages: &ScanPages) -> Result<(), BufferError> {
        for (chunk, list) in pages.iter() {
            let Some(count) = self.geometry.pages_of(chunk) else {
                return Err(BufferError::InvalidGeometry(format!(
                    "an index selection's pages of {chunk}: the table's pages are not known \
                     (NSM/PAX geometry with a page size)"
                )));
            };
            if let Some(&last) = list.last().filter(|&&p| p >= count) {
                return Err(BufferError::InvalidGeometry(format!(
                    "page {last} of {chunk}: the chunk has {count} pages"
                )));
            }
        }
        Ok(())
    }

    /// The pages a load of `chunk` reads when every scan that needs it is an index
    /// selection naming its pages and the span from their first page to their last is
    /// at most [`SCATTER_MAX_SPAN`] of the chunk: their union.
    pub(crate) fn scatter_pages(&self, chunk: ChunkId) -> Option<Vec<u32>> {
        let count = self.geometry.pages_of(chunk)?;
        let mask = self.interest(chunk);
        if mask.is_empty() {
            return None;
        }
        let mut union: Vec<u32> = Vec::new();
        for slot in mask.iter() {
            let pages = self.active_scan(slot).pages.as_ref()?.of(chunk)?;
            union.extend_from_slice(pages);
        }
        union.sort_unstable();
        union.dedup();
        let (first, last) = (*union.first()?, *union.last()?);
        let span = u64::from(last - first + 1);
        let (numerator, denominator) = SCATTER_MAX_SPAN;
        (span * denominator <= u64::from(count) * numerator).then_some(union)
    }

    /// Records that `chunk`'s piece is loaded scattered, for the scans needing it now.
    pub(crate) fn start_scatter(&mut self, chunk: ChunkId, pages: Vec<u32>) {
        let scans = self.interest(chunk);
        self.scattered.insert(chunk, Scatter { scans, pages });
        self.stats.scatter_loads += 1;
    }

    /// The piece of `chunk` is gone (evicted, or its read failed): no longer scattered.
    pub(crate) fn end_scatter(&mut self, chunk: ChunkId) {
        self.scattered.remove(&chunk);
    }

    /// A retired scan's slot leaves every scattered piece's set (a slot is reused).
    pub(crate) fn forget_scatter_slot(&mut self, slot: ScanSlot) {
        for scatter in self.scattered.values_mut() {
            scatter.scans.remove(slot);
        }
    }

    /// Whether a scan of `chunks` (an index selection if it has `pages`) may be
    /// admitted as far as scattered pieces go. A piece holding every page it needs of
    /// its chunk it will share (`join_scatter`). Any other piece of its chunks must go
    /// first: evicted now (reported by `take_scatter_evicted`) if no scan needs it any
    /// more, no worker holds it and no read fills it; false while one remains. A piece
    /// its scans still need is left to them rather than read again for all: they are
    /// active, so they take it.
    pub(crate) fn clear_scatter_for(
        &mut self,
        chunks: &ChunkRanges,
        pages: Option<&ScanPages>,
    ) -> bool {
        if self.scattered.is_empty() {
            return true;
        }
        let subsumed = |chunk: ChunkId, held: &[u32]| {
            let wanted = pages.and_then(|p| p.of(chunk));
            wanted.is_some_and(|w| w.iter().all(|p| held.binary_search(p).is_ok()))
        };
        let blocking: Vec<ChunkId> = (self.scattered.iter())
            .filter(|(c, s)| chunks.contains(**c) && !subsumed(**c, &s.pages))
            .map(|(c, _)| *c)
            .collect();
        let mut clear = true;
        for chunk in blocking {
            let piece = self.piece(chunk);
            if self.interest(chunk).is_empty() && self.pool.is_evictable(piece) {
                // Resident, unpinned and needed by nobody: the pool agrees.
                if let Err(e) = self.evict(&[piece]) {
                    panic!("evicting the scattered {piece}: {e}");
                }
                self.scatter_evicted.push(piece);
            } else {
                clear = false;
            }
        }
        clear
    }

    /// A scan just admitted shares the scattered pieces of its chunks
    /// (`clear_scatter_for` let only those holding its pages stay).
    pub(crate) fn join_scatter(&mut self, slot: ScanSlot) {
        let chunks = self.active_scan(slot).chunks.clone();
        for (chunk, scatter) in self.scattered.iter_mut() {
            if chunks.contains(*chunk) {
                scatter.scans.insert(slot);
            }
        }
    }

    /// Scattered pieces evicted to admit a scan, since the last call.
    pub(crate) fn take_scatter_evicted(&mut self) -> Vec<PieceId> {
        std::mem::take(&mut self.scatter_evicted)
    }

    /// Whether a queued scan may be waiting for a scattered piece to go.
    pub(crate) fn queued_behind_scatter(&self) -> bool {
        !self.pending.is_empty() && !self.scattered.is_empty()
    }

    /// The pages a scattered piece of `chunk` holds, if it is one.
    pub fn scattered_pages(&self, chunk: ChunkId) -> Option<&[u32]> {
        self.scattered.get(&chunk).map(|s| s.pages.as_slice())
    }

    /// The rules of this module, for `check_invariants`.
    pub(crate) fn check_scatter(&self) -> Result<(), String> {
        for (&chunk, scatter) in &self.scattered {
            let piece = self.piece(chunk);
            let state = self.pool.state(piece);
            if self.columnar() || !matches!(state, Some(PieceState::Loading | PieceState::Resident))
            {
                return Err(format!(
                    "scattered {piece} is {state:?} (columnar: {})",
                    self.columnar()
                ));
            }
            let outside = self.interest(chunk) - scatter.scans;
            if !outside.is_empty() {
                return Err(format!(
                    "{chunk}'s scattered piece is needed by scans it does not serve ({outside:?})"
                ));
            }
            let lacking = self.interest(chunk).iter().find(|&slot| {
                let wanted = self
                    .active_scan(slot)
                    .pages
                    .as_ref()
                    .and_then(|p| p.of(chunk));
                !wanted.is_some_and(|w| w.iter().all(|p| scatter.pages.binary_search(p).is_ok()))
            });
            if let Some(slot) = lacking {
                return Err(format!(
                    "{chunk}'s scattered piece lacks pages scan {slot:?} needs"
                ));
            }
            let bytes = self.geometry.bytes_of_pages(chunk, &scatter.pages);
            if self.pool.bytes(piece) != Some(bytes) {
                return Err(format!(
                    "scattered {piece} holds {:?} bytes, its {} pages {bytes}",
                    self.pool.bytes(piece),
                    scatter.pages.len()
                ));
            }
            if self.chunks[chunk.0 as usize].loading_cols & WHOLE_CHUNK == 0
                && self.chunks[chunk.0 as usize].resident_cols & WHOLE_CHUNK == 0
            {
                return Err(format!(
                    "{chunk} is scattered but neither loading nor resident"
                ));
            }
        }
        Ok(())
    }
}
