//! How a [`Device`](super::Device) reads: O_DIRECT or not, emulated bandwidth and latency,
//! and whether requests are serialized.

use std::time::Duration;

use thiserror::Error;

/// Bytes in one "MB" of a bandwidth figure: decimal, as disk vendors and the papers' MB/s.
pub const BYTES_PER_MB: f64 = 1_000_000.0;

/// Slowest bandwidth a [`Bandwidth`] accepts. Below it the pacing arithmetic for a large
/// request would approach `Duration`'s range, and no experiment wants a disk that slow.
pub const BANDWIDTH_MB_S_MIN: f64 = 0.001;

/// Whether files are opened with `O_DIRECT` (bypassing the page cache).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum DirectMode {
    /// Try O_DIRECT; if the filesystem refuses it (`EINVAL`/`EOPNOTSUPP` on open or on
    /// the first read), read buffered and print one warning per device, because then the
    /// page cache distorts every measurement.
    #[default]
    Auto,
    /// O_DIRECT or an error: for benchmarks whose numbers mean nothing through a cache.
    Required,
    /// Buffered reads through the page cache.
    Off,
}

/// A validated emulated disk bandwidth (finite, at least [`BANDWIDTH_MB_S_MIN`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Bandwidth {
    bytes_per_sec: f64,
}

/// A bandwidth figure that cannot drive the throttle.
#[derive(Debug, Error)]
#[error("bandwidth {mb_s} MB/s is invalid: it must be a finite number of at least {BANDWIDTH_MB_S_MIN} MB/s")]
pub struct InvalidBandwidth {
    pub mb_s: f64,
}

impl Bandwidth {
    /// A bandwidth of `mb_s` × [`BYTES_PER_MB`] bytes per second.
    pub fn mb_per_s(mb_s: f64) -> Result<Bandwidth, InvalidBandwidth> {
        if mb_s.is_finite() && mb_s >= BANDWIDTH_MB_S_MIN {
            Ok(Bandwidth {
                bytes_per_sec: mb_s * BYTES_PER_MB,
            })
        } else {
            Err(InvalidBandwidth { mb_s })
        }
    }

    pub fn bytes_per_sec(self) -> f64 {
        self.bytes_per_sec
    }

    pub fn mb_s(self) -> f64 {
        self.bytes_per_sec / BYTES_PER_MB
    }

    /// Time this bandwidth needs to transfer `bytes`.
    pub fn transfer_time(self, bytes: u64) -> Duration {
        // Bounded: bytes ≤ u64::MAX and the rate ≥ 1 kB/s give < 2e16 s, inside Duration.
        Duration::from_secs_f64(bytes as f64 / self.bytes_per_sec)
    }
}

/// Configuration of a [`Device`](super::Device).
#[derive(Clone, Debug, PartialEq)]
pub struct DeviceConfig {
    pub direct: DirectMode,
    /// Emulated disk bandwidth; `None` reads as fast as the hardware allows.
    pub bandwidth: Option<Bandwidth>,
    /// Emulated fixed cost of every request (seek plus rotational delay of a disk).
    pub latency_per_request: Duration,
    /// Serialize all requests, as the 2004 report's exclusive chunk I/O (§3.2): concurrent
    /// large reads on one disk interfere, so only one is in flight at a time.
    pub exclusive: bool,
}

impl Default for DeviceConfig {
    fn default() -> DeviceConfig {
        DeviceConfig {
            direct: DirectMode::Auto,
            bandwidth: None,
            latency_per_request: Duration::ZERO,
            exclusive: true,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bandwidth_rejects_nonsense() {
        for bad in [0.0, -1.0, f64::NAN, f64::INFINITY, 1e-9] {
            let err = Bandwidth::mb_per_s(bad).expect_err("must be rejected");
            assert!(err.to_string().contains("invalid"), "{bad}: {err}");
        }
    }

    #[test]
    fn transfer_time_is_bytes_over_rate() {
        let bw = Bandwidth::mb_per_s(200.0).expect("valid");
        assert_eq!(bw.transfer_time(100_000_000), Duration::from_millis(500));
        assert_eq!(bw.mb_s(), 200.0);
    }
}
