//! The device layer: every byte coopscan reads from disk goes through a [`Device`].
//!
//! A `Device` stands for one disk subsystem. It opens read-only [`DeviceFile`]s and serves
//! read requests on them — one chunk, or one chunk scattered into page frames with
//! [`Device::read_vectored`] — as single positional reads (`preadv`).
//!
//! Rules (docs/device.md explains each):
//! 1. **Alignment.** Offsets, lengths and buffer addresses are multiples of [`IO_ALIGN`],
//!    in every mode, so code tested with buffered reads also works with O_DIRECT. Writers
//!    pad files to `IO_ALIGN`; a request reaching past the end is a `ShortRead` error.
//! 2. **O_DIRECT.** [`DirectMode::Auto`] opens with O_DIRECT and probes one block; if the
//!    filesystem refuses (`EINVAL`/`EOPNOTSUPP`), the file is read buffered and the device
//!    prints one warning. A file's mode never changes after it is opened.
//! 3. **Exclusive I/O.** With `exclusive` (the default) one real read is in flight at a
//!    time, as the 2004 report's §3.2 prescribes for chunk reads: concurrent large reads
//!    make a disk seek between them. The throttle sleep happens outside that gate; the
//!    emulated disk's timeline serves requests one after another anyway.
//! 4. **Throttle.** An optional bandwidth and per-request latency make the device behave
//!    like a slower disk: after the real read, the calling thread sleeps (holding no
//!    lock) until the emulated disk ([`Pacer`]) would have finished. This is the only place coopscan
//!    sleeps to emulate hardware. [`Device::read_early`] returns right after the real
//!    read with a [`Completion`] to wait on, so the caller can verify the bytes while the
//!    emulated transfer runs.
//! 5. **Fault injection.** [`Device::with_faults`] consults a [`FaultInjector`] before
//!    every real read (errors, short reads, flipped bytes, delays), for tests.
//! 6. **Counters.** [`Device::stats`] reports requests, bytes and where the time went.
//! 7. **The loader first.** [`make_current_thread_nicer`]: threads that decode run
//!    [`FEEDER_NICER_BY`] nicer, so the loader gets a core between reads when queries
//!    saturate them.
//!
//! Entry points: [`Device::new`], [`Device::open`], [`Device::read`],
//! [`Device::read_into`], [`Device::read_vectored`], [`Device::read_early`], [`Device::stats`].

// The one place unsafe code is allowed (workspace lint `unsafe_code`): aligned buffers
// for O_DIRECT, the positional vectored read, and a thread's nice value (`priority.rs`:
// the threads that decode give way to the loader).
#![allow(unsafe_code)]

mod aligned;
mod completion;
mod config;
mod error;
mod faults;
mod file;
mod io;
mod pread;
mod priority;
mod recycle;
mod stats;
mod throttle;

pub use aligned::{is_io_aligned, round_up_to_io_align, AlignedBuf, IO_ALIGN};
pub use completion::Completion;
pub use config::{
    Bandwidth, DeviceConfig, DirectMode, InvalidBandwidth, BANDWIDTH_MB_S_MIN, BYTES_PER_MB,
};
pub use error::DeviceError;
pub use faults::{Fault, FaultCounts, FaultInjector, FaultRates, ReadRequest, SeededFaults};
pub use file::DeviceFile;
pub use io::Device;
pub use priority::{make_current_thread_nicer, FEEDER_NICER_BY};
pub use recycle::{Recycler, MAX_RECYCLED_BYTES};
pub use stats::DeviceStats;
pub use throttle::{Pacer, THROTTLE_BURST};
