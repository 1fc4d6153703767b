//! Fault injection: a hook the device consults before every real read, so tests can make
//! reads fail, come back short, return damaged bytes or stall — the damage a real disk,
//! controller or file system can do — and check that every layer above turns it into a
//! clear error (or waits it out) instead of a hang, a panic or a wrong answer.
//!
//! [`SeededFaults`] draws one fault (or none) per request from a seed; a test may also
//! implement [`FaultInjector`] itself (e.g. to fail one chunk, or to panic).

use std::fmt;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// What an injected fault does to one request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Fault {
    /// The read fails with an I/O error (nothing is read).
    Error,
    /// Only the first `got` bytes arrive, as at an unexpected end of file; the rest of
    /// the buffers is zeroed. The device reports a short read.
    Short { got: usize },
    /// Byte `at` of the request (taken modulo its length) comes back XORed with `mask`,
    /// as a bit flip the disk did not notice. Must be caught by the page checksums.
    Corrupt { at: usize, mask: u8 },
    /// The request takes this much longer (a retry inside the disk, a hiccup); it holds
    /// the device like a slow real read.
    Delay(Duration),
}

/// The request the device is about to serve.
#[derive(Clone, Copy, Debug)]
pub struct ReadRequest<'a> {
    pub path: &'a Path,
    pub offset: u64,
    pub len: usize,
}

/// Decides the fault of each request. Called once per request that reaches the file
/// system (after alignment and bounds checks), with the exclusive gate held, so the
/// calls come in the order the reads are served.
pub trait FaultInjector: Send + Sync + fmt::Debug {
    fn inject(&self, request: &ReadRequest<'_>) -> Option<Fault>;
}

/// Per-request probabilities of each kind of fault (each in 0..=1; their sum at most 1).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct FaultRates {
    pub error: f64,
    pub short: f64,
    pub corrupt: f64,
    pub delay: f64,
    /// Longest injected delay; each delay is uniform in `0..=max_delay`.
    pub max_delay: Duration,
}

/// How many faults of each kind a [`SeededFaults`] injected.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FaultCounts {
    pub requests: u64,
    pub errors: u64,
    pub short: u64,
    pub corrupt: u64,
    pub delays: u64,
}

impl FaultCounts {
    /// Faults that must make a read fail (a delay only slows it).
    pub fn damaging(&self) -> u64 {
        self.errors + self.short + self.corrupt
    }
}

/// Draws each request's fault from `(seed, request number)`: the same seed gives the same
/// sequence of faults; with concurrent readers, which request gets which fault depends on
/// the order they reach the device.
#[derive(Debug)]
pub struct SeededFaults {
    seed: u64,
    rates: FaultRates,
    requests: AtomicU64,
    errors: AtomicU64,
    short: AtomicU64,
    corrupt: AtomicU64,
    delays: AtomicU64,
}

impl SeededFaults {
    pub fn new(seed: u64, rates: FaultRates) -> SeededFaults {
        SeededFaults {
            seed,
            rates,
            requests: AtomicU64::new(0),
            errors: AtomicU64::new(0),
            short: AtomicU64::new(0),
            corrupt: AtomicU64::new(0),
            delays: AtomicU64::new(0),
        }
    }

    pub fn counts(&self) -> FaultCounts {
        let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
        FaultCounts {
            requests: get(&self.requests),
            errors: get(&self.errors),
            short: get(&self.short),
            corrupt: get(&self.corrupt),
            delays: get(&self.delays),
        }
    }

    /// The fault of request number `n` of `len` bytes; pure, so it can be tested.
    fn fault_of(&self, n: u64, len: usize) -> Option<Fault> {
        let mut draws = Draws(mix(self.seed ^ mix(n)));
        let pick = draws.unit();
        let r = &self.rates;
        let mut threshold = r.error;
        if pick < threshold {
            return Some(Fault::Error);
        }
        threshold += r.short;
        if pick < threshold {
            // Anything from nothing to one byte short.
            let got = draws.below(len as u64) as usize;
            return Some(Fault::Short { got });
        }
        threshold += r.corrupt;
        if pick < threshold {
            let at = draws.below(len.max(1) as u64) as usize;
            // 1..=255: a zero mask would change nothing.
            let mask = 1 + draws.below(255) as u8;
            return Some(Fault::Corrupt { at, mask });
        }
        threshold += r.delay;
        if pick < threshold {
            let max_ns = u64::try_from(r.max_delay.as_nanos()).unwrap_or(u64::MAX);
            let ns = draws.below(max_ns.saturating_add(1));
            return Some(Fault::Delay(Duration::from_nanos(ns)));
        }
        None
    }
}

impl FaultInjector for SeededFaults {
    fn inject(&self, request: &ReadRequest<'_>) -> Option<Fault> {
        let n = self.requests.fetch_add(1, Ordering::Relaxed);
        let fault = self.fault_of(n, request.len);
        let counter = match &fault {
            None => return None,
            Some(Fault::Error) => &self.errors,
            Some(Fault::Short { .. }) => &self.short,
            Some(Fault::Corrupt { .. }) => &self.corrupt,
            Some(Fault::Delay(_)) => &self.delays,
        };
        counter.fetch_add(1, Ordering::Relaxed);
        fault
    }
}

/// SplitMix64's finalizer: a well-mixed 64-bit hash of `x`.
fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

/// A few random numbers derived from one request's hash.
struct Draws(u64);

impl Draws {
    fn next(&mut self) -> u64 {
        self.0 = mix(self.0);
        self.0
    }

    /// Uniform in `[0, 1)`.
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Uniform enough in `0..n` (0 when `n` is 0); the modulo bias is irrelevant here.
    fn below(&mut self, n: u64) -> u64 {
        self.next().checked_rem(n).unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LEN: usize = 1 << 16;

    fn rates() -> FaultRates {
        FaultRates {
            error: 0.1,
            short: 0.1,
            corrupt: 0.2,
            delay: 0.1,
            max_delay: Duration::from_millis(5),
        }
    }

    #[test]
    fn same_seed_same_faults_other_seed_others() {
        let (a, b, c) = (
            SeededFaults::new(7, rates()),
            SeededFaults::new(7, rates()),
            SeededFaults::new(8, rates()),
        );
        let seq = |f: &SeededFaults| (0..200).map(|n| f.fault_of(n, LEN)).collect::<Vec<_>>();
        assert_eq!(seq(&a), seq(&b));
        assert_ne!(seq(&a), seq(&c));
    }

    #[test]
    fn frequencies_follow_the_rates_and_faults_stay_in_range() {
        const N: u64 = 20_000;
        let faults = SeededFaults::new(42, rates());
        let path = Path::new("f");
        for _ in 0..N {
            let request = ReadRequest {
                path,
                offset: 0,
                len: LEN,
            };
            match faults.inject(&request) {
                Some(Fault::Short { got }) => assert!(got < LEN),
                Some(Fault::Corrupt { at, mask }) => assert!(at < LEN && mask != 0),
                Some(Fault::Delay(d)) => assert!(d <= Duration::from_millis(5)),
                Some(Fault::Error) | None => {}
            }
        }
        let counts = faults.counts();
        assert_eq!(counts.requests, N);
        // Binomial: 4 standard deviations of 20 000 draws at p = 0.1 are about 170.
        let near = |count: u64, p: f64| (count as f64 - p * N as f64).abs() < 250.0;
        assert!(near(counts.errors, 0.1), "{counts:?}");
        assert!(near(counts.short, 0.1), "{counts:?}");
        assert!(near(counts.corrupt, 0.2), "{counts:?}");
        assert!(near(counts.delays, 0.1), "{counts:?}");
        assert_eq!(
            counts.damaging(),
            counts.errors + counts.short + counts.corrupt
        );
    }

    #[test]
    fn zero_rates_inject_nothing() {
        let faults = SeededFaults::new(1, FaultRates::default());
        assert!((0..1000).all(|n| faults.fault_of(n, LEN).is_none()));
    }
}
