//! What a TPC-H throughput run measured (`coopscan bench --preset tpch-…`,
//! `coopscan tpch --streams`): per sweep point and policy the stream times, CPU-seconds,
//! bytes and pieces read and what OPT would read; the calibration that set the buffer
//! and the device; Figure 18's sharing potential. The experiment itself is defined in
//! `coopscan_paper::tpch_throughput`; the reports are drawn by `report::tpch`.

use crate::bandwidth::BandwidthMbS;
use crate::bandwidth::BYTES_PER_MB;
use coopscan_paper::sharing::SHARING_CLASSES;
use serde::{Deserialize, Serialize};

/// The prefix of a policy's name in a run the simulator made of the same streams.
pub const SIMULATED: &str = "sim:";

/// One policy's run of all streams at once.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TpchRun {
    pub policy: String,
    pub streams: usize,
    pub avg_stream_s: f64,
    pub max_stream_s: f64,
    pub stream_s: Vec<f64>,
    /// CPU-seconds of the process during the run.
    pub cpu_s: f64,
    pub bytes_read: u64,
    /// Pieces the buffer manager read (DSM: a column set of a chunk; none for plain
    /// Scans straight from storage).
    pub piece_loads: Option<u64>,
    /// Pieces and bytes Belady's OPT reads on this run's piece references in the same
    /// buffer.
    pub opt_piece_loads: Option<u64>,
    pub opt_bytes: Option<u64>,
    /// The average stream time of every round of this point and policy; the run above
    /// is the round with the median of them.
    pub rounds_avg_stream_s: Vec<f64>,
    /// Memory beyond the idle process: for coopscan the most its resident set grew
    /// over the run (buffer and operators); for a peer the budget it was given.
    pub memory_bytes: Option<u64>,
    /// The engine's version, for a peer (`None` for coopscan's policies).
    pub engine_version: Option<String>,
}

impl TpchRun {
    /// Whether the simulator made it (`sim:POLICY`), not the engine.
    pub fn simulated(&self) -> bool {
        self.policy.starts_with(SIMULATED)
    }

    /// Whether it is an LRU run (`normal`), the engine's or the simulator's.
    pub fn lru(&self) -> bool {
        self.policy.strip_prefix(SIMULATED).unwrap_or(&self.policy) == "normal"
    }

    /// Bytes read in MB (10^6 bytes, the unit of the device's bandwidth).
    pub fn mb_read(&self) -> f64 {
        self.bytes_read as f64 / BYTES_PER_MB
    }
}

/// How the buffer and the device of a preset run were chosen.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct TpchCalibration {
    /// Bytes the default streams read with every piece they touch buffered: the
    /// volume all queries touch, of which the buffer is a share.
    pub touched_bytes: u64,
    /// Their average stream time then (unthrottled): the CPU-bound time.
    pub cpu_bound_stream_s: f64,
    /// Bytes LRU read at the default buffer, unthrottled; `None` when the bandwidth
    /// was given.
    pub lru_bytes: Option<u64>,
    /// The default point's device, MB/s (the paper's 600).
    pub bandwidth_mb_s: f64,
    /// Whether `--bandwidth-mb` gave it instead of the calibration.
    pub bandwidth_given: bool,
    /// The smallest buffer the buffer manager accepts for these tables (room for two
    /// of the largest chunk); a smaller share is raised to it.
    pub least_buffer_bytes: u64,
}

/// What a calibration was measured on, which a replay must match: the touched volume
/// and the CPU-bound time depend on the data and the queries.
#[derive(Clone, Copy, Debug, PartialEq, Deserialize)]
pub struct CalibratedOn {
    pub sf: f64,
    pub seed: u64,
    pub queries_per_stream: usize,
}

impl TpchCalibration {
    /// The calibration of a previous report (`--calibration FILE`): its JSON's
    /// `calibration`, its numbers checked as the calibration's own are, refused unless
    /// the report ran on `wanted` (scale factor, seed, queries per stream).
    pub fn replay(
        json: &str,
        origin: &str,
        wanted: CalibratedOn,
    ) -> Result<TpchCalibration, String> {
        #[derive(Deserialize)]
        struct Saved {
            calibration: TpchCalibration,
            #[serde(flatten)]
            on: CalibratedOn,
        }
        let saved: Saved = serde_json::from_str(json)
            .map_err(|e| format!("{origin}: not a TPC-H throughput report: {e}"))?;
        if saved.on != wanted {
            return Err(format!(
                "{origin} was calibrated on {:?}, this run is {wanted:?}",
                saved.on
            ));
        }
        let c = saved.calibration;
        BandwidthMbS::new(c.bandwidth_mb_s).map_err(|e| format!("{origin}: bandwidth: {e}"))?;
        if c.touched_bytes == 0
            || !(c.cpu_bound_stream_s.is_finite() && c.cpu_bound_stream_s >= 0.0)
        {
            return Err(format!(
                "{origin}: touched bytes {} and CPU-bound time {} s are no calibration",
                c.touched_bytes, c.cpu_bound_stream_s
            ));
        }
        Ok(c)
    }
}

/// The round whose average stream time is the median of `runs` (the lower middle of
/// an even count); `None` when there are none.
pub fn median_round(runs: &[TpchRun]) -> Option<usize> {
    let mut order: Vec<usize> = (0..runs.len()).collect();
    order.sort_by(|&a, &b| runs[a].avg_stream_s.total_cmp(&runs[b].avg_stream_s));
    order.get(runs.len().saturating_sub(1) / 2).copied()
}

/// One sweep point: its settings and a run per policy.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TpchPoint {
    /// The swept value (the preset's axis); the default point's for a single point.
    pub x: f64,
    pub streams: usize,
    pub buffer_bytes: u64,
    pub bandwidth_mb_s: f64,
    pub runs: Vec<TpchRun>,
    /// Peers' runs that failed (an engine out of memory, a result that differs):
    /// reported, and the point's other runs kept.
    pub failures: Vec<TpchFailure>,
}

/// A peer's run that did not complete.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TpchFailure {
    pub engine: String,
    /// 0-based round of the point.
    pub round: usize,
    pub error: String,
}

impl TpchPoint {
    /// The run of `policy`, if it ran.
    pub fn run(&self, policy: &str) -> Option<&TpchRun> {
        self.runs.iter().find(|r| r.policy == policy)
    }

    /// `policy`'s average stream time ÷ LRU's (`normal`); a simulated run's
    /// (`sim:POLICY`) ÷ the simulated LRU's (`sim:normal`).
    pub fn over_lru(&self, policy: &str) -> Option<f64> {
        let simulated = policy.starts_with(SIMULATED);
        let lru = self
            .runs
            .iter()
            .find(|r| r.lru() && r.simulated() == simulated);
        let lru = lru?.avg_stream_s;
        let ours = self.run(policy)?.avg_stream_s;
        (lru > 0.0).then(|| ours / lru)
    }
}

/// Figure 18 for one run: the volume wanted by exactly 1, 2, 3 and ≥ 4 active scans.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TpchSharing {
    /// The run it was computed from.
    pub policy: String,
    /// Time-averaged MiB in each class.
    pub mean_mib: [f64; SHARING_CLASSES],
    /// Of the time-averaged volume wanted, the share wanted by two or more scans.
    pub shared_fraction: f64,
    pub moments: Vec<SharingMoment>,
}

/// One sample of Figure 18.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct SharingMoment {
    /// Seconds since the run started.
    pub at_s: f64,
    /// MiB wanted by exactly 1, 2, 3 and ≥ 4 active scans.
    pub mib: [f64; SHARING_CLASSES],
}

/// A preset's whole run, as `--json` writes it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TpchReport {
    pub preset: String,
    pub source: String,
    pub finding: String,
    /// The x axis (empty for a single point) and its JSON name.
    pub x_label: String,
    pub x_key: String,
    pub sf: f64,
    pub seed: u64,
    pub queries_per_stream: usize,
    pub calibration: TpchCalibration,
    pub points: Vec<TpchPoint>,
    /// Queries whose results every policy's run agreed on (per stream and position).
    pub results_checked: usize,
    pub sharing: Option<TpchSharing>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(avg: f64) -> TpchRun {
        TpchRun {
            policy: "pbm".into(),
            streams: 1,
            avg_stream_s: avg,
            max_stream_s: avg,
            stream_s: vec![avg],
            cpu_s: 0.0,
            bytes_read: 0,
            piece_loads: None,
            opt_piece_loads: None,
            opt_bytes: None,
            rounds_avg_stream_s: vec![avg],
            memory_bytes: None,
            engine_version: None,
        }
    }

    #[test]
    fn the_median_round_is_the_middle_one_by_stream_time() {
        assert_eq!(median_round(&[run(3.0), run(1.0), run(2.0)]), Some(2));
        assert_eq!(
            median_round(&[run(3.0), run(1.0)]),
            Some(1),
            "the lower middle"
        );
        assert_eq!(median_round(&[run(5.0)]), Some(0));
        assert_eq!(median_round(&[]), None);
    }

    #[test]
    fn a_replayed_calibration_is_checked() {
        let good = r#"{"calibration": {"touched_bytes": 100, "cpu_bound_stream_s": 2.0,
            "lru_bytes": 400, "bandwidth_mb_s": 50.0, "bandwidth_given": false,
            "least_buffer_bytes": 10}, "sf": 1.0, "seed": 1, "queries_per_stream": 22,
            "points": []}"#;
        let on = CalibratedOn {
            sf: 1.0,
            seed: 1,
            queries_per_stream: 22,
        };
        let replay = |json: &str| TpchCalibration::replay(json, "f", on);
        let c = replay(good).expect("a calibration");
        assert_eq!((c.touched_bytes, c.bandwidth_mb_s), (100, 50.0));
        let zero = good.replace("\"touched_bytes\": 100", "\"touched_bytes\": 0");
        assert!(replay(&zero).unwrap_err().contains("no calibration"));
        let fast = good.replace("50.0", "1e12");
        assert!(replay(&fast).unwrap_err().contains("bandwidth"));
        assert!(replay("{}").unwrap_err().contains("not a TPC-H"));
        let sf10 = good.replace("\"sf\": 1.0", "\"sf\": 10.0");
        assert!(
            replay(&sf10).unwrap_err().contains("calibrated on"),
            "another database"
        );
    }
}
