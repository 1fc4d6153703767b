//! Device and CPU models (2004 report §3.1): a "perfect" disk where each chunk costs the
//! same regardless of order, or bandwidth + latency; a CPU of fixed clock whose cores are
//! shared by the running queries, each query running at most on one core and all slowed
//! down in inverse proportion to their number once they exceed the cores — or, with
//! `CpuShares::ShortFirst`, in proportion to weights, as the engine's reniced feeders.
//! Optionally the loader needs the CPU too ([`LoaderCpu`]): the engine's does.

use coopscan_buffer::{CpuShares, Nanos};
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
    /// How the cores are shared among the chunks being processed (equal: the papers').
    pub shares: CpuShares,
    /// The loader's own CPU after each load (`None`: the papers' loader needs none).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub loader: Option<LoaderCpu>,
}

/// The loader as a thread that needs a core: after each load it must run — complete the
/// read, mark the chunk loaded, choose and issue the next load — and until it has, the
/// scans do not see the chunk and the device idles. When the scans saturate the cores it
/// waits for its share of them, so the device delivers less the busier the CPU: on the
/// engine a reader of 4 MB requests drops from 1.2 GB/s alone to 0.5-0.6 GB/s beside
/// sixteen busy threads on two cores (docs/performance.md, "The loader on the CPU").
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct LoaderCpu {
    /// Seconds of one core the loader runs after each load.
    pub s_per_load: f64,
    /// Its weight beside a chunk in process of weight 1 (a one-chunk scan's,
    /// `CpuShares::weight`): the runtime's feeders run a few nice levels below the
    /// loader (`coopscan_storage::device::FEEDER_NICER_BY`).
    pub weight: f64,
}

impl LoaderCpu {
    /// A loader that is a usable model: time not negative, weight positive, both finite.
    pub fn check(&self) -> Result<(), String> {
        let ok = self.s_per_load.is_finite()
            && self.s_per_load >= 0.0
            && self.weight.is_finite()
            && self.weight > 0.0;
        match ok {
            true => Ok(()),
            false => Err(format!(
                "loader CPU {} s per load at weight {}: a time ≥ 0 and a weight > 0",
                self.s_per_load, self.weight
            )),
        }
    }
}

impl CpuModel {
    /// `cores` of `hz` shared equally.
    pub fn new(hz: f64, cores: u32) -> CpuModel {
        CpuModel {
            hz,
            cores,
            shares: CpuShares::Equal,
            loader: None,
        }
    }

    /// Cycles per second each of `running` equally weighted workers gets.
    pub fn rate_per_query(&self, running: usize) -> f64 {
        if running == 0 {
            return self.hz;
        }
        self.hz * (f64::from(self.cores) / running as f64).min(1.0)
    }

    /// Cycles per second of each worker of weight `weights[i]`, as a fair scheduler
    /// shares the cores (CFS): in proportion to the weights, none more than one core,
    /// what a capped worker leaves going to the others.
    pub fn rates(&self, weights: &[f64]) -> Vec<f64> {
        if weights.windows(2).all(|w| w[0] == w[1]) {
            // Equal weights: exactly the papers' model.
            return vec![self.rate_per_query(weights.len()); weights.len()];
        }
        let mut order: Vec<usize> = (0..weights.len()).collect();
        order.sort_by(|&a, &b| weights[b].total_cmp(&weights[a]));
        let mut cores = f64::from(self.cores);
        let mut total: f64 = weights.iter().sum();
        let mut rates = vec![0.0; weights.len()];
        // Heaviest first: once one is below a core, so is every lighter one.
        for i in order {
            let share = match total > 0.0 {
                true => (cores * weights[i] / total).min(1.0),
                false => 0.0,
            };
            rates[i] = share * self.hz;
            cores = (cores - share).max(0.0);
            total -= weights[i];
        }
        rates
    }
}

pub(crate) fn nanos(seconds: f64) -> Nanos {
    Nanos::from_secs_f64(seconds)
}

#[cfg(test)]
mod tests {
    use super::*;
    use coopscan_buffer::{ChunkId, ColumnMask, PieceId};

    #[test]
    fn cores_are_shared_by_weight_and_none_gets_more_than_one() {
        let cpu = CpuModel::new(1.0, 2);
        // Equal weights: the papers' model, each min(1, cores / running).
        assert_eq!(cpu.rates(&[2.0; 4]), vec![0.5; 4]);
        assert_eq!(cpu.rates(&[1.0]), vec![1.0]);
        // Three workers of weights 4, 1, 1: the heavy one capped at a core, the other
        // core split between the light ones.
        assert_eq!(cpu.rates(&[1.0, 4.0, 1.0]), vec![0.5, 1.0, 0.5]);
        // Weights 3, 1, 1, 1 on two cores: 1.0 is 3/6 of 2 → a core; 1/3 each after.
        let r = cpu.rates(&[3.0, 1.0, 1.0, 1.0]);
        assert!((r[0] - 1.0).abs() < 1e-12 && r[1..].iter().all(|x| (x - 1.0 / 3.0).abs() < 1e-12));
        // Unequal and uncapped: in proportion, the cores all used.
        let r = cpu.rates(&[2.0, 1.0, 1.0, 1.0, 1.0]);
        assert!((r[0] - 2.0 / 3.0).abs() < 1e-12 && (r.iter().sum::<f64>() - 2.0).abs() < 1e-12);
        assert!(cpu.rates(&[]).is_empty());
    }

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
