//! Device counters: relaxed atomics bumped once per request, and their snapshot.
//!
//! The fields are independent statistics, so a snapshot taken while requests run may mix
//! a request's bytes with the previous request's times; totals are exact once reads stop.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// A snapshot of a device's counters since it was created or last reset.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct DeviceStats {
    /// Requests that reached the file system (failed ones included).
    pub requests: u64,
    /// Bytes read.
    pub bytes: u64,
    /// Time the (emulated) disk was occupied by requests: per request, from when the
    /// disk starts serving it to the later of its emulated and real completion.
    /// Requests' intervals do not overlap, so it never exceeds wall time when requests
    /// are exclusive.
    pub busy_time: Duration,
    /// Time inside the read system calls only.
    pub io_time: Duration,
    /// Time the emulated disk took beyond the real read, to emulate latency and
    /// bandwidth (and to wait for earlier requests on its timeline): what a caller
    /// sleeps, less what a `read_early` caller spent on the bytes meanwhile.
    pub throttle_wait: Duration,
    /// Time callers waited for the exclusive gate: another request's real read (not its
    /// throttle sleep, which happens outside the gate).
    pub queue_wait: Duration,
    /// A file of this device fell back from O_DIRECT to buffered reads.
    pub buffered_fallback: bool,
    /// The device reads with O_DIRECT: its mode is not `Off` and nothing fell back.
    pub direct: bool,
}

impl DeviceStats {
    /// Delivered bandwidth while busy, in MB/s (10^6 bytes); 0 when nothing was read.
    pub fn busy_mb_s(&self) -> f64 {
        let secs = self.busy_time.as_secs_f64();
        if secs > 0.0 {
            self.bytes as f64 / secs / super::config::BYTES_PER_MB
        } else {
            0.0
        }
    }
}

/// How one request spent its time.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct RequestTimes {
    pub queue: Duration,
    pub busy: Duration,
    pub io: Duration,
    pub throttle: Duration,
}

#[derive(Debug, Default)]
pub(super) struct Counters {
    requests: AtomicU64,
    bytes: AtomicU64,
    busy_ns: AtomicU64,
    io_ns: AtomicU64,
    throttle_ns: AtomicU64,
    queue_ns: AtomicU64,
}

impl Counters {
    pub fn record(&self, bytes: usize, times: RequestTimes) {
        self.requests.fetch_add(1, Ordering::Relaxed);
        self.bytes.fetch_add(bytes as u64, Ordering::Relaxed);
        add_duration(&self.busy_ns, times.busy);
        add_duration(&self.io_ns, times.io);
        add_duration(&self.throttle_ns, times.throttle);
        add_duration(&self.queue_ns, times.queue);
    }

    /// The counters as `DeviceStats`; the caller fills in the mode flags.
    pub fn snapshot(&self) -> DeviceStats {
        let load_duration = |ns: &AtomicU64| Duration::from_nanos(ns.load(Ordering::Relaxed));
        DeviceStats {
            requests: self.requests.load(Ordering::Relaxed),
            bytes: self.bytes.load(Ordering::Relaxed),
            busy_time: load_duration(&self.busy_ns),
            io_time: load_duration(&self.io_ns),
            throttle_wait: load_duration(&self.throttle_ns),
            queue_wait: load_duration(&self.queue_ns),
            buffered_fallback: false,
            direct: false,
        }
    }

    pub fn reset(&self) {
        for counter in [
            &self.requests,
            &self.bytes,
            &self.busy_ns,
            &self.io_ns,
            &self.throttle_ns,
            &self.queue_ns,
        ] {
            counter.store(0, Ordering::Relaxed);
        }
    }
}

fn add_duration(counter: &AtomicU64, duration: Duration) {
    // u64 nanoseconds last 584 years; saturate rather than wrap if that is ever exceeded.
    let ns = u64::try_from(duration.as_nanos()).unwrap_or(u64::MAX);
    counter.fetch_add(ns, Ordering::Relaxed);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn record_snapshot_reset() {
        let counters = Counters::default();
        let times = RequestTimes {
            queue: Duration::from_millis(1),
            busy: Duration::from_millis(10),
            io: Duration::from_millis(4),
            throttle: Duration::from_millis(6),
        };
        counters.record(4096, times);
        counters.record(8192, times);
        let stats = counters.snapshot();
        assert_eq!((stats.requests, stats.bytes), (2, 12288));
        assert_eq!(stats.busy_time, Duration::from_millis(20));
        assert_eq!(stats.io_time, Duration::from_millis(8));
        assert_eq!(stats.throttle_wait, Duration::from_millis(12));
        assert_eq!(stats.queue_wait, Duration::from_millis(2));
        assert!((stats.busy_mb_s() - 0.6144).abs() < 1e-9);
        counters.reset();
        assert_eq!(counters.snapshot(), DeviceStats::default());
    }
}
