//! Calibration: keep the paper's CPU/I/O balance on our machine.
//!
//! In the paper (2 CPUs, 200 MB/s) a FAST full scan was I/O bound (F-100 standalone
//! 20.4 s ≈ 4 GB / 200 MB/s) and a SLOW full scan CPU bound (S-100 35.3 s ≈ 1.75 × the
//! table's read time; in DSM, Table 3, 71.25 s ≈ 2.69 × F-100's 26.53 s). Given the CPU
//! time of F-100 and S-100 measured here with the data in memory, we pick the device
//! bandwidth that recreates that balance (`ratio`: 1.75 or 2.69):
//!
//! ```text
//!   read_s      = slow_cpu_s / ratio                       (S-100 CPU ≈ ratio × F-100 read)
//!   read_s      = max(read_s, fast_cpu_s / FAST_CPU_OVER_READ_MAX)   (F-100 I/O bound)
//!   bandwidth   = fast_read_bytes / read_s
//! ```
//!
//! `fast_read_bytes` is what F-100 reads: the whole table in NSM/PAX, Q6's columns in
//! DSM.
//!
//! CPU seconds are divided by `query_parallelism` first: a query that spreads over two
//! cores finishes its CPU work in half its CPU time. When FAST is too expensive for
//! both rules to hold, FAST wins (it must stay I/O bound) and `note` says that SLOW
//! needs more extra arithmetic to reach the paper's 1.75.
//!
//! Each query is measured [`CALIBRATION_RUNS`] times after [`CALIBRATION_WARMUPS`]
//! unmeasured runs and the medians are used; all samples are kept in the report. A
//! previous run's calibration can be replayed exactly ([`replay`]), so that runs on
//! different days share one device.

use crate::bandwidth::{BandwidthMbS, BYTES_PER_MB};
use crate::cpu;
use crate::engine::QueryEngine;
use crate::error::BenchError;
use crate::mix::{QueryKind, QueryType};
use crate::samples::Samples;
use crate::workload::QueryInstance;
use serde::{Deserialize, Serialize};

/// S-100 CPU time over the table's read time in the paper (35.3 s vs ~20 s).
pub use coopscan_paper::table2::SLOW_CPU_OVER_READ;
/// FAST counts as I/O bound when its CPU time is at most this share of the read time.
pub const FAST_CPU_OVER_READ_MAX: f64 = 0.8;

/// Unmeasured runs of each calibration query first: they bring the table into the
/// page cache and the process's allocator and code into a steady state.
pub const CALIBRATION_WARMUPS: usize = 1;
/// Measured runs of each calibration query; the median is used.
pub const CALIBRATION_RUNS: usize = 3;

#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct CalibrationInput {
    /// CPU seconds of F-100 with the table in memory.
    pub fast_cpu_s: f64,
    /// CPU seconds of S-100 with the table in memory.
    pub slow_cpu_s: f64,
    /// Bytes F-100 reads (older reports: `table_bytes`, the same in PAX).
    #[serde(alias = "table_bytes")]
    pub fast_read_bytes: u64,
    /// Cores one query keeps busy (1 for a single-threaded plan).
    pub query_parallelism: f64,
    /// The balance to recreate: S-100 CPU over F-100's read time (older reports:
    /// Table 2's, the only one they could have).
    #[serde(default = "table2_balance")]
    pub slow_cpu_over_fast_read: f64,
}

fn table2_balance() -> f64 {
    SLOW_CPU_OVER_READ
}

/// The repeated measurements behind a [`CalibrationInput`].
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CalibrationSamples {
    pub warmups: usize,
    pub fast_cpu_s: Samples,
    pub fast_wall_s: Samples,
    pub slow_cpu_s: Samples,
    pub slow_wall_s: Samples,
}

/// The chosen bandwidth and the numbers behind it (stored in the JSON `calibration`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Calibration {
    pub input: CalibrationInput,
    /// Checked like `--bandwidth-mb` when a report is read back ([`replay`]).
    pub bandwidth_mb_s: BandwidthMbS,
    /// Time to read what F-100 reads at `bandwidth_mb_s` (older reports:
    /// `table_read_s`).
    #[serde(alias = "table_read_s")]
    pub fast_read_s: f64,
    /// F-100's CPU-bound time over `fast_read_s` (≤ 0.8: I/O bound).
    pub fast_cpu_over_read: f64,
    /// S-100's CPU-bound time over `fast_read_s` (the paper: 1.75; Table 3: 2.69).
    pub slow_cpu_over_read: f64,
    pub note: String,
    /// The measurements the medians in `input` come from (`None` if computed from
    /// given CPU times).
    #[serde(default)]
    pub samples: Option<CalibrationSamples>,
    /// The file this calibration was replayed from (`None`: measured in this run).
    #[serde(default)]
    pub replayed_from: Option<String>,
}

impl CalibrationInput {
    /// What [`calibrate`] needs, and what a replayed report's input must satisfy.
    fn check(&self) -> Result<(), BenchError> {
        if !(positive(self.fast_cpu_s)
            && positive(self.slow_cpu_s)
            && positive(self.query_parallelism)
            && positive(self.slow_cpu_over_fast_read))
        {
            return Err(BenchError::BadParameter(format!(
                "calibration needs positive CPU times: {self:?}"
            )));
        }
        if self.fast_read_bytes == 0 {
            return Err(BenchError::EmptyTable);
        }
        Ok(())
    }
}

fn positive(x: f64) -> bool {
    x > 0.0 && x.is_finite()
}

pub fn calibrate(input: CalibrationInput) -> Result<Calibration, BenchError> {
    input.check()?;
    let fast_s = input.fast_cpu_s / input.query_parallelism;
    let slow_s = input.slow_cpu_s / input.query_parallelism;
    let ratio = input.slow_cpu_over_fast_read;
    let balanced_read_s = slow_s / ratio;
    let io_bound_read_s = fast_s / FAST_CPU_OVER_READ_MAX;
    let fast_read_s = balanced_read_s.max(io_bound_read_s);
    let note = if io_bound_read_s > balanced_read_s {
        format!(
            "FAST is too CPU-heavy for the paper's balance: bandwidth lowered so F-100 stays \
             I/O bound; S-100 reaches only {:.2} × read time (give SLOW more extra arithmetic, \
             about {:.2}× its CPU work)",
            slow_s / fast_read_s,
            ratio * fast_read_s / slow_s
        )
    } else {
        format!("paper's balance: S-100 CPU = {ratio:.2} × F-100's read time, F-100 I/O bound")
    };
    let bandwidth_mb_s = BandwidthMbS::new(
        input.fast_read_bytes as f64 / fast_read_s / BYTES_PER_MB,
    )
    .map_err(|e| BenchError::Calibration {
        origin: "measured".to_string(),
        reason: format!("the measured CPU times give a device no run can emulate: {e}"),
    })?;
    Ok(Calibration {
        input,
        bandwidth_mb_s,
        fast_read_s,
        fast_cpu_over_read: fast_s / fast_read_s,
        slow_cpu_over_read: slow_s / fast_read_s,
        note,
        samples: None,
        replayed_from: None,
    })
}

/// Measures F-100 and S-100 on `engine` (unthrottled, over the page cache: CPU, not
/// the disk) and calibrates from the medians. The balance is in CPU-seconds, as in the
/// paper, whose machine also had 2 CPUs but ran each query on one: there CPU-seconds
/// and standalone time coincide. A query spread over two cores has a shorter wall
/// time, and calibrating on it would give the workload about twice the paper's CPU
/// demand per byte read, leaving every policy CPU-bound (docs/performance.md).
pub fn calibrate_measured(
    engine: &dyn QueryEngine,
    table: crate::table_info::TableInfo,
    slow_cpu_over_fast_read: f64,
) -> anyhow::Result<Calibration> {
    let table_rows = table.rows;
    let full = |kind| QueryInstance {
        id: 0,
        stream: 0,
        index: 0,
        query_type: QueryType { kind, percent: 100 },
        rows: 0..table_rows,
        in_order: false,
    };
    let (fast_cpu_s, fast_wall_s) = measure_query(engine, &full(QueryKind::Fast))?;
    let (slow_cpu_s, slow_wall_s) = measure_query(engine, &full(QueryKind::Slow))?;
    let mut calibration = calibrate(CalibrationInput {
        fast_cpu_s: fast_cpu_s.median(),
        slow_cpu_s: slow_cpu_s.median(),
        fast_read_bytes: table.fast_read_bytes,
        query_parallelism: 1.0,
        slow_cpu_over_fast_read,
    })?;
    calibration.samples = Some(CalibrationSamples {
        warmups: CALIBRATION_WARMUPS,
        fast_cpu_s,
        fast_wall_s,
        slow_cpu_s,
        slow_wall_s,
    });
    Ok(calibration)
}

/// Process CPU and wall seconds of `q` on `engine`, [`CALIBRATION_RUNS`] times after
/// [`CALIBRATION_WARMUPS`] unmeasured runs.
fn measure_query(
    engine: &dyn QueryEngine,
    q: &QueryInstance,
) -> anyhow::Result<(Samples, Samples)> {
    for _ in 0..CALIBRATION_WARMUPS {
        engine.run(q)?;
    }
    let (mut cpu_s, mut wall_s) = (Samples::default(), Samples::default());
    for _ in 0..CALIBRATION_RUNS {
        let (result, cpu_time, wall) = cpu::measure(|| engine.run(q));
        result?;
        cpu_s.0.push(cpu_time.as_secs_f64());
        wall_s.0.push(wall.as_secs_f64());
    }
    Ok((cpu_s, wall_s))
}

/// The calibration of a previous run, read from its JSON report (`calibration`, or
/// the first run's in a sweep's `runs`) or from a bare calibration object, to be used
/// exactly as it was. `origin` names the file in errors and in the result.
pub fn replay(json: &str, origin: &str) -> Result<Calibration, BenchError> {
    let fail = |reason: String| BenchError::Calibration {
        origin: origin.to_string(),
        reason,
    };
    let doc: serde_json::Value =
        serde_json::from_str(json).map_err(|e| fail(format!("not JSON: {e}")))?;
    let found = doc
        .get("calibration")
        .or_else(|| doc.pointer("/runs/0/calibration"))
        .unwrap_or(&doc);
    if found.is_null() {
        return Err(fail(
            "the report has no calibration (its run was given --bandwidth-mb)".to_string(),
        ));
    }
    // The bandwidth first, so that its own message says what is wrong with it (the
    // typed parse below would call the whole object "not a calibration").
    if let Some(b) = found
        .get("bandwidth_mb_s")
        .and_then(serde_json::Value::as_f64)
    {
        BandwidthMbS::new(b).map_err(|e| fail(format!("bandwidth_mb_s: {e}")))?;
    }
    let mut calibration: Calibration = serde_json::from_value(found.clone())
        .map_err(|e| fail(format!("not a calibration: {e}")))?;
    calibration
        .input
        .check()
        .map_err(|e| fail(format!("input: {e}")))?;
    for (name, value) in [
        ("fast_read_s", calibration.fast_read_s),
        ("fast_cpu_over_read", calibration.fast_cpu_over_read),
        ("slow_cpu_over_read", calibration.slow_cpu_over_read),
    ] {
        if !positive(value) {
            return Err(fail(format!("{name} {value:?} is not a positive number")));
        }
    }
    calibration.replayed_from = Some(origin.to_string());
    Ok(calibration)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paper_like_costs_give_the_paper_bandwidth() {
        // 4 GB table, S-100 CPU 35 s, F-100 CPU 10 s: read = 35/1.75 = 20 s → 200 MB/s.
        let input = CalibrationInput {
            fast_cpu_s: 10.0,
            slow_cpu_s: 35.0,
            fast_read_bytes: 4_000_000_000,
            query_parallelism: 1.0,
            slow_cpu_over_fast_read: SLOW_CPU_OVER_READ,
        };
        let c = calibrate(input).unwrap();
        assert!((c.fast_read_s - 20.0).abs() < 1e-9);
        assert!((c.bandwidth_mb_s.get() - 200.0).abs() < 1e-9);
        assert!((c.fast_cpu_over_read - 0.5).abs() < 1e-9);
        assert!((c.slow_cpu_over_read - 1.75).abs() < 1e-9);
        assert!(c.note.starts_with("paper's balance"));
    }

    #[test]
    fn expensive_fast_query_keeps_fast_io_bound() {
        // FAST 8 s, SLOW 10 s on 1 GB with 2-core queries: 4 s and 5 s of CPU-bound time.
        // Balanced read 5/1.75 = 2.857 s < FAST's 4/0.8 = 5 s → read 5 s, 200 MB/s.
        let input = CalibrationInput {
            fast_cpu_s: 8.0,
            slow_cpu_s: 10.0,
            fast_read_bytes: 1_000_000_000,
            query_parallelism: 2.0,
            slow_cpu_over_fast_read: SLOW_CPU_OVER_READ,
        };
        let c = calibrate(input).unwrap();
        assert!((c.fast_read_s - 5.0).abs() < 1e-9);
        assert!((c.bandwidth_mb_s.get() - 200.0).abs() < 1e-9);
        assert!((c.fast_cpu_over_read - 0.8).abs() < 1e-9);
        assert!((c.slow_cpu_over_read - 1.0).abs() < 1e-9);
        assert!(c.note.contains("1.75×"), "{}", c.note);
    }

    #[test]
    fn table3s_balance_is_relative_to_what_fast_reads() {
        // DSM: F-100 reads 53.06 MB of Q6's columns; S-100 CPU 71.25 s; Table 3's
        // ratio 71.25 / 26.53 puts F-100's read at 26.53 s: 2 MB/s.
        let input = CalibrationInput {
            fast_cpu_s: 3.0,
            slow_cpu_s: 71.25,
            fast_read_bytes: 53_060_000,
            query_parallelism: 1.0,
            slow_cpu_over_fast_read: coopscan_paper::table3::slow_cpu_over_fast_read(),
        };
        let c = calibrate(input).unwrap();
        assert!((c.fast_read_s - 26.53).abs() < 1e-9, "{c:?}");
        assert!((c.bandwidth_mb_s.get() - 2.0).abs() < 1e-9);
        assert!(c.note.contains("2.69 ×"), "{}", c.note);
    }

    #[test]
    fn a_report_written_before_the_balance_was_a_parameter_replays_as_table2() {
        let old = r#"{"calibration": {"input": {"fast_cpu_s": 1.0, "slow_cpu_s": 3.5,
            "table_bytes": 700000000, "query_parallelism": 1.0}, "bandwidth_mb_s": 350.0,
            "table_read_s": 2.0, "fast_cpu_over_read": 0.5, "slow_cpu_over_read": 1.75,
            "note": "n"}}"#;
        let c = replay(old, "old.json").unwrap();
        assert_eq!(c.input.fast_read_bytes, 700_000_000);
        assert_eq!(c.input.slow_cpu_over_fast_read, SLOW_CPU_OVER_READ);
        assert_eq!(c.fast_read_s, 2.0);
    }

    #[test]
    fn nonsense_inputs_are_rejected() {
        let input = CalibrationInput {
            fast_cpu_s: 0.0,
            slow_cpu_s: 1.0,
            fast_read_bytes: 1,
            query_parallelism: 1.0,
            slow_cpu_over_fast_read: SLOW_CPU_OVER_READ,
        };
        assert!(calibrate(input).is_err());
        let input = CalibrationInput {
            fast_read_bytes: 0,
            fast_cpu_s: 1.0,
            ..input
        };
        assert!(matches!(calibrate(input), Err(BenchError::EmptyTable)));
    }

    #[test]
    fn a_report_calibration_replays_exactly() {
        let input = CalibrationInput {
            fast_cpu_s: 1.25,
            slow_cpu_s: 3.5,
            fast_read_bytes: 800_000_000,
            query_parallelism: 1.0,
            slow_cpu_over_fast_read: SLOW_CPU_OVER_READ,
        };
        let original = calibrate(input).unwrap();
        let report = serde_json::json!({ "schema_version": 1, "calibration": original });
        let replayed = replay(&report.to_string(), "old.json").unwrap();
        assert_eq!(replayed.bandwidth_mb_s, original.bandwidth_mb_s);
        assert_eq!(replayed.input, original.input);
        assert_eq!(replayed.replayed_from.as_deref(), Some("old.json"));
        // A sweep's report: the first run's calibration.
        let sweep = serde_json::json!({ "runs": [{ "calibration": original }] });
        assert_eq!(
            replay(&sweep.to_string(), "s").unwrap().bandwidth_mb_s,
            original.bandwidth_mb_s
        );
        // A bare calibration object.
        let bare = serde_json::to_string(&original).unwrap();
        assert_eq!(replay(&bare, "b").unwrap().input, original.input);
    }

    #[test]
    fn replay_refuses_what_is_not_a_usable_calibration() {
        for (json, says) in [
            ("{", "not JSON"),
            (r#"{"calibration": null}"#, "--bandwidth-mb"),
            (
                r#"{"calibration": {"bandwidth_mb_s": 5}}"#,
                "not a calibration",
            ),
        ] {
            let e = replay(json, "f.json").unwrap_err().to_string();
            assert!(e.contains("f.json") && e.contains(says), "{e}");
        }
        let c = calibrate(CalibrationInput {
            fast_cpu_s: 1.0,
            slow_cpu_s: 3.5,
            fast_read_bytes: 1_000_000,
            query_parallelism: 1.0,
            slow_cpu_over_fast_read: SLOW_CPU_OVER_READ,
        })
        .unwrap();
        let mut report = serde_json::to_value(&c).unwrap();
        for bad in [-1.0, 0.0, 1e-300, 1e300] {
            report["bandwidth_mb_s"] = bad.into();
            let e = replay(&report.to_string(), "bad.json")
                .unwrap_err()
                .to_string();
            assert!(
                e.contains("bad.json") && e.contains("outside"),
                "{bad}: {e}"
            );
        }
        let mut report = serde_json::to_value(&c).unwrap();
        report["input"]["slow_cpu_s"] = (-3.5).into();
        let e = replay(&report.to_string(), "cpu.json")
            .unwrap_err()
            .to_string();
        assert!(e.contains("positive CPU times"), "{e}");
        let mut report = serde_json::to_value(&c).unwrap();
        report["fast_read_s"] = 0.0.into();
        let e = replay(&report.to_string(), "read.json")
            .unwrap_err()
            .to_string();
        assert!(e.contains("fast_read_s"), "{e}");
    }
}
