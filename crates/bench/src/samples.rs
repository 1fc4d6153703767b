//! Repeated measurements of one quantity: the median a statistic uses, and the spread
//! a report shows so that a reader can tell a stable number from a noisy one.
//!
//! The machines are shared and noisy (issue 10: a single calibration run moved the
//! chosen bandwidth by 20 %), so every time that normalizes or calibrates something
//! is measured several times and summarized by its median, which one outlier cannot
//! drag.

use serde::{Deserialize, Serialize};

/// Measurements of one quantity, in the order taken.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Samples(pub Vec<f64>);

impl Samples {
    /// The middle value (mean of the two middle ones for an even count); `NaN` when
    /// empty. NaN samples sort last.
    pub fn median(&self) -> f64 {
        let sorted = self.sorted();
        let n = sorted.len();
        match n {
            0 => f64::NAN,
            _ if n % 2 == 1 => sorted[n / 2],
            _ => (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0,
        }
    }

    pub fn min(&self) -> f64 {
        self.sorted().first().copied().unwrap_or(f64::NAN)
    }

    pub fn max(&self) -> f64 {
        self.sorted().last().copied().unwrap_or(f64::NAN)
    }

    /// (max − min) ÷ median, in percent: how far apart the repeats landed.
    pub fn spread_pct(&self) -> f64 {
        (self.max() - self.min()) / self.median() * 100.0
    }

    /// `median [min–max]` with `decimals` digits, for reports.
    pub fn describe(&self, decimals: usize) -> String {
        format!(
            "{:.d$} [{:.d$}–{:.d$}]",
            self.median(),
            self.min(),
            self.max(),
            d = decimals
        )
    }

    fn sorted(&self) -> Vec<f64> {
        let mut v = self.0.clone();
        v.sort_by(|a, b| a.total_cmp(b));
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_of_odd_and_even_counts() {
        assert_eq!(Samples(vec![3.0, 1.0, 2.0]).median(), 2.0);
        assert_eq!(Samples(vec![4.0, 1.0, 3.0, 2.0]).median(), 2.5);
        assert!(Samples(vec![]).median().is_nan());
    }

    #[test]
    fn one_outlier_does_not_move_the_median() {
        let s = Samples(vec![2.0, 2.1, 9.0]);
        assert_eq!(s.median(), 2.1);
        assert_eq!(s.min(), 2.0);
        assert_eq!(s.max(), 9.0);
        assert!((s.spread_pct() - 7.0 / 2.1 * 100.0).abs() < 1e-9);
        assert_eq!(s.describe(1), "2.1 [2.0–9.0]");
    }
}
