//! The emulated device's bandwidth, in MB/s (10^6 bytes per second): one validated type
//! for every number that sets it — the `--bandwidth-mb` flag, a preset's fixed disk, a
//! measured calibration and a calibration replayed from a report file. Each goes
//! through [`BandwidthMbS::new`], so a report cannot hold a bandwidth the flag would
//! refuse (a report's `1e-300` used to print a 300-digit estimate and then panic on the
//! stagger; its `1e300` ran unthrottled under a nonsense estimate).

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// Bytes in a MB of bandwidth (decimal, as the device's throttle).
pub const BYTES_PER_MB: f64 = 1_000_000.0;

/// Slowest bandwidth: the device's own floor (`coopscan_storage::device::
/// BANDWIDTH_MB_S_MIN`, where the throttle's pacing of a large request nears
/// `Duration`'s range). Equal by a test in the CLI, which sees both crates.
pub const BANDWIDTH_MB_S_MIN: f64 = 0.001;
/// Fastest bandwidth: 1 TB/s, beyond any disk and any memory bus this runs on (the
/// paper's disk did 200 MB/s, the 2012 paper's sweep reaches 2 GB/s). Above it the
/// throttle never throttles, a full read rounds to microseconds and the stagger and
/// the announced duration with it: a typo, not an experiment.
pub const BANDWIDTH_MB_S_MAX: f64 = 1_000_000.0;

/// A bandwidth in `BANDWIDTH_MB_S_MIN..=BANDWIDTH_MB_S_MAX` MB/s; never NaN or infinite.
/// (De)serialized as the bare number, checked on the way in.
#[derive(Clone, Copy, Debug, PartialEq, PartialOrd, Serialize, Deserialize)]
#[serde(try_from = "f64", into = "f64")]
pub struct BandwidthMbS(f64);

/// A bandwidth figure outside the range the benchmark can emulate.
#[derive(Clone, Copy, Debug, PartialEq, thiserror::Error)]
#[error(
    "bandwidth {mb_s:?} MB/s is outside {BANDWIDTH_MB_S_MIN}..={BANDWIDTH_MB_S_MAX} MB/s \
     (BANDWIDTH_MB_S_MIN..=BANDWIDTH_MB_S_MAX: the emulated device's floor, and 1 TB/s)"
)]
pub struct BandwidthOutOfRange {
    /// As given (printed with `{:?}`, so 1e300 stays short).
    pub mb_s: f64,
}

impl BandwidthMbS {
    /// `mb_s` if it is a number in range (NaN, infinities, zero and negatives are not).
    pub fn new(mb_s: f64) -> Result<BandwidthMbS, BandwidthOutOfRange> {
        Self::checked(mb_s).ok_or(BandwidthOutOfRange { mb_s })
    }

    /// [`Self::new`] for constants: `const X: BandwidthMbS = match checked(…)`.
    pub const fn checked(mb_s: f64) -> Option<BandwidthMbS> {
        // `>=` and `<=` are false for NaN.
        if mb_s >= BANDWIDTH_MB_S_MIN && mb_s <= BANDWIDTH_MB_S_MAX {
            Some(BandwidthMbS(mb_s))
        } else {
            None
        }
    }

    pub fn get(self) -> f64 {
        self.0
    }

    /// Seconds to read `bytes` at this bandwidth (finite: the rate is at least 1 kB/s).
    pub fn read_seconds(self, bytes: u64) -> f64 {
        bytes as f64 / (self.0 * BYTES_PER_MB)
    }
}

impl TryFrom<f64> for BandwidthMbS {
    type Error = BandwidthOutOfRange;

    fn try_from(mb_s: f64) -> Result<Self, Self::Error> {
        BandwidthMbS::new(mb_s)
    }
}

impl From<BandwidthMbS> for f64 {
    fn from(b: BandwidthMbS) -> f64 {
        b.0
    }
}

/// Parses a flag's value (`--bandwidth-mb 350`).
impl FromStr for BandwidthMbS {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let mb_s: f64 = s
            .trim()
            .parse()
            .map_err(|e| format!("{s:?} is not a number of MB/s: {e}"))?;
        BandwidthMbS::new(mb_s).map_err(|e| e.to_string())
    }
}

impl fmt::Display for BandwidthMbS {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0, f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_numbers_in_range_are_bandwidths() {
        for ok in [BANDWIDTH_MB_S_MIN, 1.0, 350.0, BANDWIDTH_MB_S_MAX] {
            assert_eq!(BandwidthMbS::new(ok).map(BandwidthMbS::get), Ok(ok));
        }
        for bad in [
            0.0,
            -1.0,
            0.000_999,
            1e-300,
            1e300,
            BANDWIDTH_MB_S_MAX * 1.000_001,
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
        ] {
            assert!(BandwidthMbS::new(bad).is_err(), "{bad}");
        }
        let e = BandwidthMbS::new(1e300).unwrap_err().to_string();
        assert!(e.len() < 200 && e.contains("1e300"), "short: {e}");
    }

    #[test]
    fn flags_and_json_go_through_the_same_check() {
        assert_eq!(
            "350".parse::<BandwidthMbS>().map(BandwidthMbS::get),
            Ok(350.0)
        );
        for bad in ["1e300", "NaN", "inf", "-5", "0", "fast"] {
            assert!(bad.parse::<BandwidthMbS>().is_err(), "{bad}");
        }
        let b: BandwidthMbS = serde_json::from_str("200").unwrap();
        assert_eq!(b.get(), 200.0);
        assert_eq!(serde_json::to_string(&b).unwrap(), "200.0");
        for bad in ["1e-300", "1e300", "-5", "0"] {
            let e = serde_json::from_str::<BandwidthMbS>(bad).unwrap_err();
            assert!(e.to_string().contains("outside"), "{bad}: {e}");
        }
    }
}
