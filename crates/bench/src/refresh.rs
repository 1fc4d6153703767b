//! A refresh stream beside the query streams: the 2012 paper's updates (§2.1) in the
//! shape of TPC-H's refresh functions. Every `every_s` seconds one pair runs: RF1
//! inserts a share of the table's tuples (copies of existing ones under new keys), RF2
//! deletes what RF1 inserted. New tuples land after the last one, so the tuples every
//! query of the workload reads (RID ranges of the table as generated) keep their RIDs
//! and values: results stay comparable with the references, while scans merge the
//! changes and compete with the refreshes' own scans for the buffer. (TPC-H's RF2
//! deletes old orders instead, which would change the queries' answers.)

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde::Serialize;

/// TPC-H's refresh size: RF1 adds SF × 1500 orders to SF × 1.5 M, 0.1 % of the table.
pub const TPCH_REFRESH_PER_MILLE: f64 = 1.0;

/// When refresh pairs run and how big they are.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Refresh {
    /// Seconds from one pair's due time to the next's (the first is due this long
    /// after the run starts); a pair that takes longer delays the next.
    pub every_s: f64,
    /// Tuples RF1 inserts (and RF2 deletes), per mille of the table's.
    pub per_mille: f64,
}

/// Runs refresh pairs for one policy's run.
pub trait Refresher: Sync {
    /// Runs pair `round`: RF1, then RF2, each committed.
    fn refresh(&self, round: u64) -> anyhow::Result<RefreshTimes>;
}

/// What one pair took.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct RefreshTimes {
    /// RF1's wall time, its scan of the copied tuples and its commit included.
    pub insert_s: f64,
    /// RF2's wall time, its commit included.
    pub delete_s: f64,
    /// Tuples RF1 inserted.
    pub rows: u64,
}

/// One pair of a run: when it started (since the run's start) and what it took.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct RefreshRun {
    pub start_s: f64,
    #[serde(flatten)]
    pub times: RefreshTimes,
}

/// What the refresh stream of a run did, for the report.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RefreshStats {
    pub pairs: usize,
    pub rows_per_pair: u64,
    pub insert_median_s: f64,
    pub delete_median_s: f64,
}

impl RefreshStats {
    /// `None` for a run without refreshes.
    pub fn of(runs: &[RefreshRun]) -> Option<RefreshStats> {
        let first = runs.first()?;
        let median = |f: fn(&RefreshRun) -> f64| {
            let mut v: Vec<f64> = runs.iter().map(f).collect();
            v.sort_by(f64::total_cmp);
            v[v.len() / 2]
        };
        Some(RefreshStats {
            pairs: runs.len(),
            rows_per_pair: first.times.rows,
            insert_median_s: median(|r| r.times.insert_s),
            delete_median_s: median(|r| r.times.delete_s),
        })
    }
}

/// Runs pairs every `every` from `t0` until no query stream is `left` or `abort` is
/// set; a failing pair sets `abort` and ends the stream with its error and round.
pub(crate) fn run_refreshes(
    refresher: &dyn Refresher,
    every: Duration,
    t0: Instant,
    left: &AtomicUsize,
    abort: &AtomicBool,
) -> Result<Vec<RefreshRun>, (u64, anyhow::Error)> {
    let mut runs = Vec::new();
    for round in 0u64.. {
        let due = u32::try_from(round + 1)
            .ok()
            .and_then(|n| every.checked_mul(n))
            .and_then(|d| t0.checked_add(d));
        let Some(due) = due else { break };
        if !wait_until(due, left, abort) {
            break;
        }
        let start_s = t0.elapsed().as_secs_f64();
        match refresher.refresh(round) {
            Ok(times) => runs.push(RefreshRun { start_s, times }),
            Err(e) => {
                abort.store(true, Ordering::Relaxed);
                return Err((round, e));
            }
        }
    }
    Ok(runs)
}

/// Waits until `due`; `false` when the query streams ended or failed first.
fn wait_until(due: Instant, left: &AtomicUsize, abort: &AtomicBool) -> bool {
    const POLL: Duration = Duration::from_millis(10);
    loop {
        if left.load(Ordering::Relaxed) == 0 || abort.load(Ordering::Relaxed) {
            return false;
        }
        let now = Instant::now();
        if now >= due {
            return true;
        }
        std::thread::sleep(POLL.min(due - now));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicU64;

    /// Counts its pairs; the third fails when `fail`.
    struct Counting {
        calls: AtomicU64,
        fail: bool,
    }

    impl Refresher for Counting {
        fn refresh(&self, round: u64) -> anyhow::Result<RefreshTimes> {
            self.calls.fetch_add(1, Ordering::Relaxed);
            anyhow::ensure!(!(self.fail && round == 2), "disk full");
            Ok(RefreshTimes {
                insert_s: round as f64,
                delete_s: 1.0,
                rows: 6,
            })
        }
    }

    /// Pairs run on schedule while a stream is left, stop when none is, and a failing
    /// pair aborts the run naming its round.
    #[test]
    fn pairs_run_while_streams_do_and_a_failure_aborts() {
        let every = Duration::from_millis(5);
        let (left, abort) = (AtomicUsize::new(1), AtomicBool::new(false));
        let counting = Counting {
            calls: AtomicU64::new(0),
            fail: false,
        };
        let runs = std::thread::scope(|s| {
            let h = s.spawn(|| run_refreshes(&counting, every, Instant::now(), &left, &abort));
            while counting.calls.load(Ordering::Relaxed) < 4 {
                std::thread::sleep(Duration::from_millis(1));
            }
            left.store(0, Ordering::Relaxed);
            h.join().expect("joins")
        });
        let runs = runs.expect("no failure");
        assert!(runs.len() >= 4, "{runs:?}");
        assert!(runs.windows(2).all(|w| w[0].start_s < w[1].start_s));
        let stats = RefreshStats::of(&runs).expect("pairs");
        assert_eq!((stats.pairs, stats.rows_per_pair), (runs.len(), 6));
        assert_eq!(stats.delete_median_s, 1.0);
        assert_eq!(RefreshStats::of(&[]), None);

        let (left, abort) = (AtomicUsize::new(1), AtomicBool::new(false));
        let failing = Counting {
            calls: AtomicU64::new(0),
            fail: true,
        };
        let err = run_refreshes(&failing, every, Instant::now(), &left, &abort).expect_err("fails");
        assert_eq!(err.0, 2);
        assert!(abort.load(Ordering::Relaxed), "the run is aborted");
    }
}
