//! Device and CPU models (2004 report §3.1): a "perfect" disk where each chunk costs the
//! same regardless of order, or bandwidth + latency; a CPU of fixed clock whose cores are
//! shared by the running queries, each query running at most on one core and all slowed
//! down in inverse proportion to their number once they exceed the cores.

use coopscan_buffer::Nanos;
use serde::Serialize;

/// Clock of the simulated CPU in both papers' setups.
pub const CPU_HZ_2GHZ: f64 = 2.0e9;

#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub enum DeviceModel {
    /// Every chunk read costs the same.
    FixedPerChunk { seconds: f64 },
    /// `latency + bytes / bytes_per_sec` per chunk read.
    Bandwidth { bytes_per_sec: f64, latency_s: f64 },
}

impl DeviceModel {
    pub fn chunk_read_s(&self, chunk_bytes: u64) -> f64 {
        match *self {
            DeviceModel::FixedPerChunk { seconds } => seconds,
            DeviceModel::Bandwidth {
                bytes_per_sec,
                latency_s,
            } => latency_s + chunk_bytes as f64 / bytes_per_sec,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct CpuModel {
    pub hz: f64,
    pub cores: u32,
}

impl CpuModel {
    /// Cycles per second each of `running` queries gets.
    pub fn rate_per_query(&self, running: usize) -> f64 {
        if running == 0 {
            return self.hz;
        }
        self.hz * (f64::from(self.cores) / running as f64).min(1.0)
    }
}

pub(crate) fn nanos(seconds: f64) -> Nanos {
    Nanos::from_secs_f64(seconds)
}
