//! `Device`: validates a request, takes the exclusive gate, books the request on the
//! emulated disk and reads, releases the gate, then waits out the emulated disk's service
//! time and records the counters.

use std::io;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::Instant;

use parking_lot::{Mutex, MutexGuard};

use super::aligned::{is_io_aligned, AlignedBuf};
use super::completion::Completion;
use super::config::{DeviceConfig, DirectMode};
use super::error::DeviceError;
use super::faults::{Fault, FaultInjector, ReadRequest};
use super::file::{self, DeviceFile};
use super::pread;
use super::recycle::{Recycler, MAX_RECYCLED_BYTES};
use super::stats::{Counters, DeviceStats, RequestTimes};
use super::throttle::{Pacer, THROTTLE_BURST};

/// One storage device: all reads of the files it opened go through it. `Send + Sync`;
/// share it with `Arc`.
#[derive(Debug)]
pub struct Device {
    config: DeviceConfig,
    /// Held around a request's booking and real read when `config.exclusive`, so chunk
    /// reads never interleave (2004 report §3.2); not through the throttle sleep, which
    /// the pacer's timeline already serializes. Released fairly, so readers go in turn.
    gate: Option<Mutex<()>>,
    /// The emulated disk's timeline; `None` when neither bandwidth nor latency is emulated.
    /// Locked only to book a request, never while sleeping.
    pacer: Option<Mutex<Pacer>>,
    counters: Counters,
    /// Some file of this device fell back to buffered reads; the warning prints once.
    fell_back: AtomicBool,
    /// Tests only: decides a fault for every request (see `faults.rs`).
    faults: Option<Arc<dyn FaultInjector>>,
    /// Buffers of dropped reads, reused by the next `read`/`read_early` of their size.
    recycler: Arc<Recycler>,
}

impl Device {
    pub fn new(config: DeviceConfig) -> Device {
        let pacer = Pacer::new(config.bandwidth, config.latency_per_request, THROTTLE_BURST);
        Device {
            gate: config.exclusive.then(|| Mutex::new(())),
            pacer: (!pacer.is_unlimited()).then(|| Mutex::new(pacer)),
            config,
            counters: Counters::default(),
            fell_back: AtomicBool::new(false),
            faults: None,
            recycler: Recycler::new(MAX_RECYCLED_BYTES),
        }
    }

    /// A device whose every request first asks `faults` what should go wrong with it:
    /// for tests of everything above the device (see [`FaultInjector`]).
    pub fn with_faults(config: DeviceConfig, faults: Arc<dyn FaultInjector>) -> Device {
        Device {
            faults: Some(faults),
            ..Device::new(config)
        }
    }

    pub fn config(&self) -> &DeviceConfig {
        &self.config
    }

    /// Opens `path` read-only, with O_DIRECT as the config's [`DirectMode`] says.
    pub fn open(&self, path: &Path) -> Result<DeviceFile, DeviceError> {
        let opened = file::open(path, self.config.direct)?;
        if let Some(reason) = &opened.refused {
            self.warn_fallback(path, reason);
        }
        Ok(opened.file)
    }

    /// Reads `len` bytes at `offset` into a new aligned buffer, as one request. Both must
    /// be multiples of [`IO_ALIGN`](super::IO_ALIGN); reading past the end is an error.
    pub fn read(
        &self,
        file: &DeviceFile,
        offset: u64,
        len: usize,
    ) -> Result<AlignedBuf, DeviceError> {
        let (buf, done) = self.read_early(file, offset, len)?;
        done.wait();
        Ok(buf)
    }

    /// [`read`](Self::read) without the throttle's wait: returns right after the real
    /// read, with the emulated disk's [`Completion`], which the caller must wait on
    /// before handing the bytes on. On an error the emulated time is waited out here.
    pub fn read_early(
        &self,
        file: &DeviceFile,
        offset: u64,
        len: usize,
    ) -> Result<(AlignedBuf, Completion), DeviceError> {
        // Checked before allocating, so a bad length cannot ask for absurd memory.
        check_range(file, offset, len)?;
        let mut buf = self.recycler.take(len);
        let (result, done) = self.submit_early(file, offset, &mut [&mut buf]);
        match result {
            Ok(_) => Ok((buf, done)),
            Err(e) => {
                done.wait();
                Err(e)
            }
        }
    }

    /// An aligned buffer of `len` bytes from this device's recycler (its old bytes
    /// until overwritten): for a caller that fills part of it with
    /// [`read_into_early`](Self::read_into_early) and the rest from memory.
    pub fn buffer(&self, len: usize) -> AlignedBuf {
        self.recycler.take(len)
    }

    /// [`read_into`](Self::read_into) without the throttle's wait, as
    /// [`read_early`](Self::read_early): returns the emulated disk's [`Completion`],
    /// which the caller must wait on before handing the bytes on.
    pub fn read_into_early(
        &self,
        file: &DeviceFile,
        offset: u64,
        buf: &mut [u8],
    ) -> Result<Completion, DeviceError> {
        self.read_vectored_early(file, offset, &mut [buf])
    }

    /// Fills `buf` from `offset` as one request; `buf` must start at an aligned address.
    pub fn read_into(
        &self,
        file: &DeviceFile,
        offset: u64,
        buf: &mut [u8],
    ) -> Result<(), DeviceError> {
        self.read_vectored(file, offset, &mut [buf]).map(|_| ())
    }

    /// Fills `bufs` in order from `offset` as one request (`preadv`): a chunk read straight
    /// into page frames. Every buffer must be aligned in address and length. Returns the
    /// bytes read, which is always the buffers' total.
    pub fn read_vectored(
        &self,
        file: &DeviceFile,
        offset: u64,
        bufs: &mut [&mut [u8]],
    ) -> Result<usize, DeviceError> {
        let len: usize = bufs.iter().map(|buf| buf.len()).sum();
        self.read_vectored_early(file, offset, bufs)?.wait();
        Ok(len)
    }

    /// [`read_vectored`](Self::read_vectored) without the throttle's wait, as
    /// [`read_early`](Self::read_early): returns the emulated disk's [`Completion`],
    /// which the caller must wait on before handing the bytes on.
    pub fn read_vectored_early(
        &self,
        file: &DeviceFile,
        offset: u64,
        bufs: &mut [&mut [u8]],
    ) -> Result<Completion, DeviceError> {
        let len = check_buffers(file, offset, bufs)?;
        check_range(file, offset, len)?;
        let (result, done) = self.submit_early(file, offset, bufs);
        match result {
            Ok(_) => Ok(done),
            Err(e) => {
                done.wait();
                Err(e)
            }
        }
    }

    pub fn stats(&self) -> DeviceStats {
        let fell_back = self.fell_back.load(Ordering::Relaxed);
        DeviceStats {
            buffered_fallback: fell_back,
            direct: self.config.direct != DirectMode::Off && !fell_back,
            ..self.counters.snapshot()
        }
    }

    /// Zeroes the counters; `buffered_fallback` stays, as it describes open files.
    pub fn reset_stats(&self) {
        self.counters.reset();
    }

    /// Performs one validated request: under the gate, book it on the emulated disk and
    /// do the real read; then release the gate and return with the emulated disk's
    /// completion, which the caller waits out with no lock held. Booking in gate order
    /// keeps the emulated timeline exact (requests follow each other back to back);
    /// waiting outside the gate means a reader is never stuck behind another's emulated
    /// wait — only behind its real read (issue "Reliability", item 10: a second reader
    /// could not even start its read until the first had slept out its whole emulated
    /// latency).
    fn submit_early(
        &self,
        file: &DeviceFile,
        offset: u64,
        bufs: &mut [&mut [u8]],
    ) -> (Result<usize, DeviceError>, Completion) {
        let len: usize = bufs.iter().map(|buf| buf.len()).sum();
        let arrived = Instant::now();
        let gate = self.gate.as_ref().map(Mutex::lock);
        let started = Instant::now();
        let booking = self.pacer.as_ref().map(|pacer| {
            let mut pacer = pacer.lock();
            let due = pacer.reserve(len as u64, started);
            (due.checked_sub(pacer.service_time(len as u64)), due)
        });
        let result = self.read_with_faults(file, offset, bufs);
        let io_done = Instant::now();
        if let Some(gate) = gate {
            MutexGuard::unlock_fair(gate);
        }
        let (service_start, due) = booking.map_or((None, None), |(s, d)| (s, Some(d)));
        let done = Completion::at(due);
        // The emulated disk's occupancy: from when it started on this request (not
        // before the request arrived at the gate) until the later of the emulated and
        // the real completion. Successive requests' intervals do not overlap.
        let busy_from = service_start.map_or(started, |s| s.max(started));
        let busy_to = due.map_or(io_done, |due| due.max(io_done));
        let times = RequestTimes {
            queue: started - arrived,
            busy: busy_to.saturating_duration_since(busy_from),
            io: io_done - started,
            // What the caller has left to wait (it may use part of it, see Completion).
            throttle: done.remaining(io_done),
        };
        self.counters
            .record(result.as_ref().map_or(0, |&got| got), times);
        let result = match result {
            Ok(got) if got == len => Ok(len),
            Ok(got) => Err(short_read(file, offset, len, got)),
            Err(source) => Err(DeviceError::Read {
                path: file.path().to_path_buf(),
                offset,
                len,
                source,
            }),
        };
        (result, done)
    }

    /// The real read, with the injected fault of this request applied (if any).
    fn read_with_faults(
        &self,
        file: &DeviceFile,
        offset: u64,
        bufs: &mut [&mut [u8]],
    ) -> io::Result<usize> {
        let fault = self.faults.as_ref().and_then(|faults| {
            let len = bufs.iter().map(|buf| buf.len()).sum();
            let path = file.path();
            faults.inject(&ReadRequest { path, offset, len })
        });
        if fault == Some(Fault::Error) {
            return Err(io::Error::other("injected read error (fault injection)"));
        }
        let got = pread::read_full(file.file(), offset, bufs)?;
        match fault {
            Some(Fault::Short { got: short }) => {
                zero_from(bufs, short);
                Ok(got.min(short))
            }
            Some(Fault::Corrupt { at, mask }) => {
                flip(bufs, at, mask);
                Ok(got)
            }
            Some(Fault::Delay(delay)) => {
                thread::sleep(delay);
                Ok(got)
            }
            Some(Fault::Error) | None => Ok(got),
        }
    }

    fn warn_fallback(&self, path: &Path, reason: &std::io::Error) {
        if !self.fell_back.swap(true, Ordering::Relaxed) {
            eprintln!(
                "coopscan: warning: {}: the filesystem refuses O_DIRECT ({reason}); reading \
                 through the page cache instead, so I/O figures measure memory, not the disk \
                 (later fallbacks on this device are not reported)",
                path.display()
            );
        }
    }
}

/// Zeroes everything after the first `from` bytes of `bufs` (an injected short read).
fn zero_from(bufs: &mut [&mut [u8]], mut from: usize) {
    for buf in bufs.iter_mut() {
        let skip = from.min(buf.len());
        buf[skip..].fill(0);
        from -= skip;
    }
}

/// XORs byte `at` (modulo the total length) of `bufs` with `mask` (an injected bit flip).
fn flip(bufs: &mut [&mut [u8]], at: usize, mask: u8) {
    let total: usize = bufs.iter().map(|buf| buf.len()).sum();
    let Some(mut at) = at.checked_rem(total) else {
        return;
    };
    for buf in bufs.iter_mut() {
        if let Some(byte) = buf.get_mut(at) {
            *byte ^= mask;
            return;
        }
        at -= buf.len();
    }
}

/// Offset and length alignment, and the request lying inside the file.
fn check_range(file: &DeviceFile, offset: u64, len: usize) -> Result<(), DeviceError> {
    let misaligned = |what| DeviceError::Misaligned {
        path: file.path().to_path_buf(),
        what,
        offset,
        len,
    };
    if !is_io_aligned(offset) {
        return Err(misaligned("offset"));
    }
    if !is_io_aligned(len as u64) {
        return Err(misaligned("length"));
    }
    let available = file.len().saturating_sub(offset);
    if (len as u64) > available {
        // usize::try_from only fails when more than usize::MAX is available: then len fits.
        let got = usize::try_from(available).unwrap_or(len);
        return Err(short_read(file, offset, len, got));
    }
    Ok(())
}

/// Each buffer's address and length alignment; returns the buffers' total length. The
/// rules hold in buffered mode too, so code tested buffered also works with O_DIRECT.
fn check_buffers(file: &DeviceFile, offset: u64, bufs: &[&mut [u8]]) -> Result<usize, DeviceError> {
    let mut total = 0usize;
    for buf in bufs {
        let what = if !is_io_aligned(buf.as_ptr() as u64) {
            Some("buffer address")
        } else if !is_io_aligned(buf.len() as u64) {
            Some("buffer length")
        } else {
            None
        };
        if let Some(what) = what {
            let (path, len) = (file.path().to_path_buf(), buf.len());
            return Err(DeviceError::Misaligned {
                path,
                what,
                offset,
                len,
            });
        }
        total += buf.len();
    }
    Ok(total)
}

fn short_read(file: &DeviceFile, offset: u64, expected: usize, got: usize) -> DeviceError {
    DeviceError::ShortRead {
        path: file.path().to_path_buf(),
        offset,
        expected,
        got,
    }
}
