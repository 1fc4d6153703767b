//! The emulated disk's timeline: pure pacing arithmetic, no clock and no sleeping.
//!
//! Each request occupies the emulated disk for `latency + bytes / bandwidth`; requests are
//! served one after another. `reserve` books a request that arrives at `now` and returns
//! the instant the emulated disk would finish it. The device performs the real read first
//! and then sleeps until that instant, so the real I/O time overlaps the emulated one and a
//! 2 GB/s disk throttled to 200 MB/s delivers 200 MB/s, not 200 MB/s minus the real time.
//!
//! ```text
//!   free_at ─┐        request k+1 arrives (now)
//!            v             v
//!   ─────[ k ]─────────────┊────────────────────────────> time
//!                     ┊    ┊[ latency | bytes/bandwidth ]
//!            now-burst┘     ^start                      ^done (returned)
//! ```
//!
//! `burst` is a token bucket's depth in time: a request may start up to `burst` before its
//! arrival. That forgives a caller that arrives a little late (sleep overshoot, scheduling)
//! so the lateness does not erode the emulated bandwidth, while an idle disk cannot bank
//! more than `burst` of credit for a later burst of requests.

use std::time::{Duration, Instant};

use super::config::Bandwidth;

/// Credit an idle emulated disk keeps: about one timer slack and scheduling delay.
pub const THROTTLE_BURST: Duration = Duration::from_millis(1);

#[derive(Clone, Debug)]
pub struct Pacer {
    bandwidth: Option<Bandwidth>,
    latency: Duration,
    burst: Duration,
    /// When the emulated disk finishes the last booked request; `None` before the first.
    free_at: Option<Instant>,
}

impl Pacer {
    pub fn new(bandwidth: Option<Bandwidth>, latency: Duration, burst: Duration) -> Pacer {
        Pacer {
            bandwidth,
            latency,
            burst,
            free_at: None,
        }
    }

    /// True when the pacer never delays anything (no bandwidth limit, no latency).
    pub fn is_unlimited(&self) -> bool {
        self.bandwidth.is_none() && self.latency.is_zero()
    }

    /// How long the emulated disk is busy with a request of `bytes`.
    pub fn service_time(&self, bytes: u64) -> Duration {
        let transfer = self
            .bandwidth
            .map_or(Duration::ZERO, |bw| bw.transfer_time(bytes));
        self.latency + transfer
    }

    /// Books a request of `bytes` arriving at `now`; returns when the emulated disk
    /// finishes it. The caller must not complete the request before that instant.
    pub fn reserve(&mut self, bytes: u64, now: Instant) -> Instant {
        // Near the clock's origin `now - burst` may not exist; then there is no credit.
        let earliest = now.checked_sub(self.burst).unwrap_or(now);
        let start = self.free_at.map_or(earliest, |free| free.max(earliest));
        let done = start + self.service_time(bytes);
        self.free_at = Some(done);
        done
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MB: u64 = 1_000_000;

    fn pacer_mb_s(mb_s: f64) -> Pacer {
        let bw = Bandwidth::mb_per_s(mb_s).expect("valid bandwidth");
        Pacer::new(Some(bw), Duration::ZERO, THROTTLE_BURST)
    }

    #[test]
    fn hundred_mb_at_200_mb_s_waits_half_a_second() {
        let mut pacer = pacer_mb_s(200.0);
        let t0 = Instant::now();
        let wait = pacer.reserve(100 * MB, t0) - t0;
        assert_eq!(wait, Duration::from_millis(500) - THROTTLE_BURST);
    }

    #[test]
    fn back_to_back_requests_queue_behind_each_other() {
        let mut pacer = pacer_mb_s(200.0);
        let t0 = Instant::now();
        let first = pacer.reserve(16 * MB, t0);
        let second = pacer.reserve(16 * MB, t0);
        assert_eq!(second - first, Duration::from_millis(80));
    }

    #[test]
    fn lateness_within_burst_is_forgiven() {
        let mut pacer = pacer_mb_s(200.0);
        let t0 = Instant::now();
        let first = pacer.reserve(16 * MB, t0);
        let late = first + THROTTLE_BURST / 2;
        let second = pacer.reserve(16 * MB, late);
        assert_eq!(second - first, Duration::from_millis(80));
    }

    #[test]
    fn idle_disk_banks_at_most_one_burst() {
        let mut pacer = pacer_mb_s(200.0);
        let t0 = Instant::now();
        pacer.reserve(MB, t0);
        let much_later = t0 + Duration::from_secs(10);
        let done = pacer.reserve(16 * MB, much_later);
        assert_eq!(
            done - much_later,
            Duration::from_millis(80) - THROTTLE_BURST
        );
    }

    #[test]
    fn small_request_fits_in_the_burst() {
        let mut pacer = pacer_mb_s(200.0);
        let t0 = Instant::now();
        // 100 kB take 0.5 ms, within the 1 ms credit: no wait.
        assert!(pacer.reserve(100_000, t0) <= t0);
    }

    #[test]
    fn latency_is_charged_per_request() {
        let latency = Duration::from_millis(5);
        let mut pacer = Pacer::new(None, latency, Duration::ZERO);
        let t0 = Instant::now();
        let done = (0..3).map(|_| pacer.reserve(MB, t0)).last();
        assert_eq!(done.map(|d| d - t0), Some(3 * latency));
        assert!(!pacer.is_unlimited());
    }

    #[test]
    fn latency_and_bandwidth_add() {
        let bw = Bandwidth::mb_per_s(100.0).expect("valid");
        let pacer = Pacer::new(Some(bw), Duration::from_millis(4), THROTTLE_BURST);
        assert_eq!(pacer.service_time(MB), Duration::from_millis(14));
    }

    #[test]
    fn unlimited_pacer_never_delays() {
        let mut pacer = Pacer::new(None, Duration::ZERO, THROTTLE_BURST);
        let t0 = Instant::now();
        assert!(pacer.is_unlimited());
        assert!(pacer.reserve(1 << 40, t0) <= t0);
    }
}
