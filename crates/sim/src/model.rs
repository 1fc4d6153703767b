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
        self.load_read_s(chunk_bytes, 1)
    }

    /// A load of `bytes` in `requests` device requests: the latency is paid per request
    /// (a DSM load reads one extent per column, a CSM load one per run of adjacent
    /// columns); a fixed-cost device charges per chunk whatever the requests.
    pub fn load_read_s(&self, bytes: u64, requests: u32) -> f64 {
        match *self {
            DeviceModel::FixedPerChunk { seconds } => seconds,
            DeviceModel::Bandwidth {
                bytes_per_sec,
                latency_s,
            } => latency_s * f64::from(requests.max(1)) + bytes as f64 / bytes_per_sec,
        }
    }
}

/// Device requests a load of `pieces` takes: one for a row-page chunk (one piece of
/// every column), one per column for DSM, one per run of adjacent columns for CSM
/// tiles (the runtime's loader reads them so).
pub fn load_requests(pieces: &[coopscan_buffer::PieceId], tiled: bool) -> u32 {
    let mut columns: Vec<u16> = pieces.iter().filter_map(|p| p.columns.single()).collect();
    if columns.len() < pieces.len() || columns.is_empty() {
        return 1;
    }
    if !tiled {
        return u32::try_from(columns.len()).unwrap_or(u32::MAX);
    }
    columns.sort_unstable();
    let runs = 1 + columns.windows(2).filter(|w| w[1] != w[0] + 1).count();
    u32::try_from(runs).unwrap_or(u32::MAX)
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

#[cfg(test)]
mod tests {
    use super::*;
    use coopscan_buffer::{ChunkId, ColumnMask, PieceId};

    fn piece(columns: ColumnMask) -> PieceId {
        PieceId {
            table: Default::default(),
            version: Default::default(),
            chunk: ChunkId(0),
            columns,
        }
    }

    #[test]
    fn a_load_pays_the_latency_once_per_request() {
        let rows = [piece(ColumnMask::ALL)];
        let dsm: Vec<PieceId> = [3u16, 0, 1].map(|c| piece(ColumnMask::column(c))).to_vec();
        assert_eq!(load_requests(&rows, false), 1);
        assert_eq!(load_requests(&dsm, false), 3);
        // Columns 0 and 1 are adjacent runs of a tile, 3 is apart.
        assert_eq!(load_requests(&dsm, true), 2);
        let device = DeviceModel::Bandwidth {
            bytes_per_sec: 1000.0,
            latency_s: 0.5,
        };
        assert_eq!(device.load_read_s(1000, 3), 2.5);
        assert_eq!(device.chunk_read_s(1000), 1.5);
        let fixed = DeviceModel::FixedPerChunk { seconds: 2.0 };
        assert_eq!(fixed.load_read_s(1000, 3), 2.0);
    }
}
