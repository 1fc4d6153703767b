//! `IO_ALIGN` and the owned, aligned byte buffer that O_DIRECT reads land in.
//!
//! Linux rejects an O_DIRECT request with `EINVAL` unless the buffer address, the file
//! offset and the length are all multiples of the device's logical block size. This disk
//! needs 512 B; coopscan uses 4096 everywhere so files and frames stay valid on 4Kn
//! drives too (see ../shared/ECOSYSTEM.md, "Direct I/O on these machines").

use std::alloc::{self, Layout};
use std::fmt;
use std::ops::{Deref, DerefMut};
use std::ptr::NonNull;
use std::sync::Arc;

/// Alignment of buffer addresses, file offsets and request lengths for O_DIRECT.
/// Writers pad every file to a multiple of it.
pub const IO_ALIGN: usize = 4096;

/// True when `value` is a multiple of [`IO_ALIGN`].
pub fn is_io_aligned(value: u64) -> bool {
    value.is_multiple_of(IO_ALIGN as u64)
}

/// Rounds `len` up to the next multiple of [`IO_ALIGN`] (the padding a writer adds).
pub fn round_up_to_io_align(len: u64) -> u64 {
    len.div_ceil(IO_ALIGN as u64) * IO_ALIGN as u64
}

/// An allocation not owned by any `AlignedBuf` at the moment.
pub(super) struct RawAlloc {
    pub ptr: NonNull<u8>,
    pub layout: Layout,
}

// SAFETY: a `RawAlloc` is the sole owner of its allocation (it came from a dropped
// `AlignedBuf`), so moving it between threads is like moving a `Box<[u8]>`.
unsafe impl Send for RawAlloc {}

impl RawAlloc {
    pub(super) fn free(self) {
        // SAFETY: `ptr` was allocated with `layout` by the global allocator and, being
        // owned by this `RawAlloc` only, is freed exactly once, here.
        unsafe { alloc::dealloc(self.ptr.as_ptr(), self.layout) }
    }
}

/// Where a buffer's allocation goes when the buffer is dropped instead of being freed:
/// a free list (`recycle::Recycler`). Arrow requires a wrapped buffer's owner to be
/// `RefUnwindSafe`, hence the bound.
pub(super) trait Home: Send + Sync + std::panic::RefUnwindSafe {
    /// Takes over `raw`: keeps it for reuse or frees it.
    fn give_back(&self, raw: RawAlloc);
}

/// An owned, initialised, `IO_ALIGN`-aligned heap allocation of `len` bytes: zeroed when
/// new ([`AlignedBuf::zeroed`]); a buffer from a `Recycler` holds its previous owner's
/// bytes until overwritten, and goes back to the recycler when dropped.
///
/// It behaves like a `Box<[u8]>` whose start address is a multiple of [`IO_ALIGN`], so it
/// can be handed to an O_DIRECT read (when `len` is a multiple of `IO_ALIGN` too) or
/// wrapped zero-copy by Arrow (`Buffer::from_custom_allocation`).
pub struct AlignedBuf {
    ptr: NonNull<u8>,
    len: usize,
    /// The layout `ptr` was allocated with; its size is `max(len, 1)` because a zero-size
    /// allocation is not allowed, and an empty buffer should still have an aligned address.
    layout: Layout,
    /// Where the allocation goes when dropped; `None`: freed.
    home: Option<Arc<dyn Home>>,
}

// SAFETY: `AlignedBuf` owns its allocation exclusively (no aliasing pointers escape except
// through `&self`/`&mut self` borrows), exactly like `Box<[u8]>`, which is Send + Sync.
unsafe impl Send for AlignedBuf {}
// SAFETY: see `Send`; shared access only hands out `&[u8]`.
unsafe impl Sync for AlignedBuf {}

impl AlignedBuf {
    /// Allocates `len` zero bytes at an `IO_ALIGN`-aligned address.
    ///
    /// # Panics
    /// If `len` is so large that no layout exists (over `isize::MAX`), like
    /// `Vec::with_capacity`; aborts through `handle_alloc_error` if memory runs out.
    pub fn zeroed(len: usize) -> AlignedBuf {
        let layout = match Layout::from_size_align(len.max(1), IO_ALIGN) {
            Ok(layout) => layout,
            Err(_) => panic!("AlignedBuf: {len} bytes exceed the largest possible allocation"),
        };
        // SAFETY: `layout` has a non-zero size (at least 1) and a valid power-of-two alignment.
        let raw = unsafe { alloc::alloc_zeroed(layout) };
        let Some(ptr) = NonNull::new(raw) else {
            alloc::handle_alloc_error(layout)
        };
        AlignedBuf {
            ptr,
            len,
            layout,
            home: None,
        }
    }

    /// This buffer, returned to `home` instead of freed when dropped.
    pub(super) fn returning_to(mut self, home: Arc<dyn Home>) -> AlignedBuf {
        self.home = Some(home);
        self
    }

    /// A kept allocation reused for `len` bytes (`raw.layout.size() == max(len, 1)`).
    pub(super) fn from_recycled(raw: RawAlloc, len: usize, home: Arc<dyn Home>) -> AlignedBuf {
        debug_assert_eq!(raw.layout.size(), len.max(1));
        debug_assert_eq!(raw.layout.align(), IO_ALIGN);
        AlignedBuf {
            ptr: raw.ptr,
            len,
            layout: raw.layout,
            home: Some(home),
        }
    }

    /// Number of usable bytes (not the padded allocation size).
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when the buffer holds no bytes.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl Deref for AlignedBuf {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        // SAFETY: `ptr` points to an allocation of at least `len` bytes that was zeroed at
        // its creation (so every byte is initialised; a recycled one has only been written
        // since) and lives as long as `self`.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

impl DerefMut for AlignedBuf {
    fn deref_mut(&mut self) -> &mut [u8] {
        // SAFETY: as in `deref`; `&mut self` guarantees this is the only live reference.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }
}

impl Drop for AlignedBuf {
    fn drop(&mut self) {
        let raw = RawAlloc {
            ptr: self.ptr,
            layout: self.layout,
        };
        match self.home.take() {
            // The allocation changes owner; this buffer never touches it again.
            Some(home) => home.give_back(raw),
            // SAFETY (inside `free`): `ptr` was returned by `alloc_zeroed(self.layout)`
            // and this buffer, its only owner, frees it once.
            None => raw.free(),
        }
    }
}

impl fmt::Debug for AlignedBuf {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AlignedBuf")
            .field("len", &self.len)
            .field("addr", &self.ptr)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allocations_are_io_aligned_and_zeroed() {
        for len in [0, 1, 511, IO_ALIGN, 3 * IO_ALIGN + 17, 4 << 20] {
            let buf = AlignedBuf::zeroed(len);
            assert_eq!(buf.len(), len);
            assert_eq!(buf.as_ptr() as usize % IO_ALIGN, 0, "len {len}");
            assert!(buf.iter().all(|&b| b == 0), "len {len} not zeroed");
        }
    }

    #[test]
    fn writes_are_visible_through_deref() {
        let mut buf = AlignedBuf::zeroed(IO_ALIGN);
        buf[0] = 7;
        buf[IO_ALIGN - 1] = 9;
        assert_eq!((buf[0], buf[1], buf[IO_ALIGN - 1]), (7, 0, 9));
    }

    #[test]
    fn buffer_moves_between_threads() {
        let mut buf = AlignedBuf::zeroed(IO_ALIGN);
        buf.fill(3);
        let sum = std::thread::spawn(move || buf.iter().map(|&b| u64::from(b)).sum::<u64>())
            .join()
            .expect("thread panicked");
        assert_eq!(sum, 3 * IO_ALIGN as u64);
    }

    #[test]
    fn alignment_helpers() {
        assert!(is_io_aligned(0) && is_io_aligned(8192));
        assert!(!is_io_aligned(4095));
        assert_eq!(round_up_to_io_align(0), 0);
        assert_eq!(round_up_to_io_align(1), 4096);
        assert_eq!(round_up_to_io_align(4096), 4096);
    }
}
