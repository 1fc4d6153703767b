//! Chunk buffers handed back for the next read instead of freed.
//!
//! A fresh `AlignedBuf` of a chunk (4 MB) costs the loader a memset and a page fault per
//! 4 KiB page: measured with `perf` on a lone SF1 F-100 (issue 10), 35 % of the process's
//! samples and ~3.5 ms per chunk, spent before the read is booked on the emulated disk,
//! so the disk idled that long after every load and a lone I/O-bound scan took 1.25× the
//! table's read time. Buffers of evicted chunks come back here when their last reader
//! drops them (`AlignedBuf`'s `Drop`) and the next read of the same size reuses one. The
//! list is bounded ([`MAX_RECYCLED_BYTES`]); beyond it buffers are freed as before.

use std::sync::Arc;

use parking_lot::Mutex;

use super::aligned::{AlignedBuf, Home, RawAlloc};

/// Most bytes of free buffers kept for reuse per device: a few chunks. The loader has
/// one load in flight and evicts about one chunk per load, so a handful always suffices.
pub const MAX_RECYCLED_BYTES: usize = 64 << 20;

#[derive(Default)]
struct FreeList {
    bufs: Vec<RawAlloc>,
    bytes: usize,
}

/// A bounded free list of I/O buffers (see the module docs).
pub struct Recycler {
    free: Mutex<FreeList>,
    max_bytes: usize,
}

impl Recycler {
    pub fn new(max_bytes: usize) -> Arc<Recycler> {
        Arc::new(Recycler {
            free: Mutex::new(FreeList::default()),
            max_bytes,
        })
    }

    /// A buffer of `len` bytes that returns here when dropped: a kept one of the same
    /// size if any (its contents are the previous owner's: the caller overwrites them),
    /// else a new zeroed one.
    pub fn take(self: &Arc<Self>, len: usize) -> AlignedBuf {
        let reused = {
            let mut free = self.free.lock();
            let size = len.max(1);
            let found = free.bufs.iter().rposition(|r| r.layout.size() == size);
            found.map(|i| {
                let raw = free.bufs.swap_remove(i);
                free.bytes -= raw.layout.size();
                raw
            })
        };
        match reused {
            Some(raw) => AlignedBuf::from_recycled(raw, len, Arc::clone(self) as Arc<dyn Home>),
            None => AlignedBuf::zeroed(len).returning_to(Arc::clone(self) as Arc<dyn Home>),
        }
    }

    /// Bytes of free buffers kept now.
    pub fn kept_bytes(&self) -> usize {
        self.free.lock().bytes
    }
}

impl Home for Recycler {
    /// Keeps `raw` for reuse if there is room; frees it otherwise.
    fn give_back(&self, raw: RawAlloc) {
        let mut free = self.free.lock();
        if free.bytes + raw.layout.size() <= self.max_bytes {
            free.bytes += raw.layout.size();
            free.bufs.push(raw);
        } else {
            drop(free);
            raw.free();
        }
    }
}

// Arrow wraps chunk buffers zero-copy and requires its owners to be `RefUnwindSafe`. A
// panic inside `take` or `give_back` cannot leave the list in a state later calls would
// misread: each allocation is either in the list (counted in `bytes`) or owned by one
// buffer, and both fields change under one lock with no call that can panic between.
impl std::panic::RefUnwindSafe for Recycler {}
impl std::panic::UnwindSafe for Recycler {}

impl Drop for Recycler {
    fn drop(&mut self) {
        for raw in self.free.get_mut().bufs.drain(..) {
            raw.free();
        }
    }
}

impl std::fmt::Debug for Recycler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Recycler")
            .field("kept_bytes", &self.kept_bytes())
            .field("max_bytes", &self.max_bytes)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CHUNK: usize = 4 << 20;

    #[test]
    fn a_dropped_buffer_is_reused_by_the_next_take_of_its_size() {
        let recycler = Recycler::new(MAX_RECYCLED_BYTES);
        let mut first = recycler.take(CHUNK);
        first[0] = 42;
        let addr = first.as_ptr();
        drop(first);
        assert_eq!(recycler.kept_bytes(), CHUNK);
        let second = recycler.take(CHUNK);
        assert_eq!(second.as_ptr(), addr);
        assert_eq!(second.len(), CHUNK);
        assert_eq!(recycler.kept_bytes(), 0);
        // A different size is not served from the kept buffer.
        drop(second);
        let other = recycler.take(CHUNK / 2);
        assert_eq!(recycler.kept_bytes(), CHUNK);
        assert_eq!(other.len(), CHUNK / 2);
        assert_eq!(other.as_ptr() as usize % super::super::IO_ALIGN, 0);
    }

    #[test]
    fn the_free_list_never_exceeds_its_bound() {
        let recycler = Recycler::new(3 * CHUNK);
        let bufs: Vec<AlignedBuf> = (0..5).map(|_| recycler.take(CHUNK)).collect();
        drop(bufs);
        assert_eq!(recycler.kept_bytes(), 3 * CHUNK);
    }

    #[test]
    fn buffers_outliving_the_recycler_handle_keep_it_until_the_last_is_dropped() {
        let recycler = Recycler::new(MAX_RECYCLED_BYTES);
        let weak = Arc::downgrade(&recycler);
        let buf = recycler.take(CHUNK);
        drop(recycler.take(CHUNK)); // one allocation kept in the list
        drop(recycler);
        // The live buffer still has somewhere to go back to ...
        assert!(weak.upgrade().is_some_and(|r| r.kept_bytes() == CHUNK));
        drop(buf);
        // ... and once it went, the recycler and its list (two buffers) are freed.
        assert!(weak.upgrade().is_none());
    }
}
