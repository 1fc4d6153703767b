//! Device options shared by the commands that read tables.

use std::time::Duration;

use anyhow::Context;
use coopscan_bench::BandwidthMbS;
use coopscan_storage::device::{Bandwidth, DeviceConfig, DirectMode};

/// Largest emulated latency per request: a minute is already far beyond any device;
/// beyond it a typo (`--latency-ms 1e15`) would make every read sleep for ages.
pub const MAX_LATENCY_MS: f64 = 60_000.0;

#[derive(clap::Args, Debug, Clone)]
pub struct DeviceArgs {
    /// Emulate a disk of this bandwidth (MB/s, 10^6 bytes) with a token-bucket throttle:
    /// 0.001 to 1000000, as `bench --bandwidth-mb`.
    #[arg(long)]
    pub bandwidth_mb: Option<BandwidthMbS>,
    /// Emulated fixed latency per request, in milliseconds.
    #[arg(long, default_value_t = 0.0)]
    pub latency_ms: f64,
    /// Read through the page cache instead of O_DIRECT.
    #[arg(long)]
    pub buffered: bool,
}

impl DeviceArgs {
    pub fn config(&self) -> anyhow::Result<DeviceConfig> {
        let bandwidth = self
            .bandwidth_mb
            .map(|b| Bandwidth::mb_per_s(b.get()))
            .transpose()
            .map_err(|e| anyhow::anyhow!("--bandwidth-mb: {e}"))?;
        anyhow::ensure!(
            (0.0..=MAX_LATENCY_MS).contains(&self.latency_ms),
            "--latency-ms must be a number of milliseconds in 0..={MAX_LATENCY_MS}"
        );
        Ok(DeviceConfig {
            direct: if self.buffered {
                DirectMode::Off
            } else {
                DirectMode::Auto
            },
            bandwidth,
            latency_per_request: Duration::try_from_secs_f64(self.latency_ms / 1000.0)
                .context("--latency-ms")?,
            ..DeviceConfig::default()
        })
    }
}
