//! One axis of a chart: linear from 0, or logarithmic when the values it must show span
//! [`LOG_SPAN`] or more (one outlier then no longer flattens every other point against
//! the axis). Ticks fall on round values: 1, 2, 5 × a power of ten.

/// max ÷ min of the plotted values from which an axis is logarithmic.
pub const LOG_SPAN: f64 = 10.0;
/// Round tick steps within a decade.
const STEPS: [f64; 3] = [1.0, 2.0, 5.0];
/// A linear axis has about this many intervals between its ticks.
const LINEAR_INTERVALS: f64 = 4.0;

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Axis {
    /// From 0 to `max` > 0, a tick every `step` (`max` is a multiple of it).
    Linear { max: f64, step: f64 },
    /// From `min` to `max`, both > 0.
    Log { min: f64, max: f64 },
}

impl Axis {
    /// The axis for `values` (non-finite ones ignored): log when the positive values
    /// span [`LOG_SPAN`] or more and none is ≤ 0, else linear from 0; with `headroom`
    /// (a factor ≥ 1) beyond the extreme values, out to round ticks.
    pub fn fit(values: &[f64], headroom: f64) -> Axis {
        let finite: Vec<f64> = values.iter().copied().filter(|v| v.is_finite()).collect();
        let max = finite.iter().copied().fold(0.0, f64::max);
        let min = finite.iter().copied().fold(f64::INFINITY, f64::min);
        if min > 0.0 && max / min >= LOG_SPAN {
            return Axis::Log {
                min: round_down(min / headroom),
                max: round_up(max * headroom),
            };
        }
        Axis::linear(max * headroom)
    }

    /// Linear from 0 to the first round tick at or above `top`.
    pub fn linear(top: f64) -> Axis {
        if !(top > 0.0 && top.is_finite()) {
            return Axis::Linear {
                max: 1.0,
                step: 0.25,
            };
        }
        let step = round_up(top / LINEAR_INTERVALS);
        Axis::Linear {
            max: (top / step - 1e-9).ceil() * step,
            step,
        }
    }

    pub fn is_log(self) -> bool {
        matches!(self, Axis::Log { .. })
    }

    /// Where `value` falls along the axis, 0 at its start and 1 at its end (clamped).
    pub fn fraction(self, value: f64) -> f64 {
        let f = match self {
            Axis::Linear { max, .. } => value / max,
            Axis::Log { min, max } => (value.ln() - min.ln()) / (max.ln() - min.ln()),
        };
        if f.is_finite() {
            f.clamp(0.0, 1.0)
        } else {
            0.0
        }
    }

    /// The values to label: every 1-2-5 step of a log axis, quarters of a linear one.
    pub fn ticks(self) -> Vec<f64> {
        match self {
            Axis::Linear { max, step } => {
                let count = (max / step).round() as usize;
                (0..=count).map(|i| i as f64 * step).collect()
            }
            Axis::Log { min, max } => {
                let first = min.log10().floor() as i32;
                let last = max.log10().ceil() as i32;
                (first..=last)
                    .flat_map(|k| STEPS.iter().map(move |s| step_value(*s, k)))
                    .filter(|v| *v >= min * (1.0 - 1e-9) && *v <= max * (1.0 + 1e-9))
                    .collect()
            }
        }
    }
}

/// `step × 10^k`, exact for the small `k` of a chart (dividing for negative `k` keeps
/// 0.2 from becoming 0.20000000000000004).
fn step_value(step: f64, k: i32) -> f64 {
    if k >= 0 {
        step * 10f64.powi(k)
    } else {
        step / 10f64.powi(-k)
    }
}

/// The smallest 1-2-5 step at or above `value` > 0.
pub fn round_up(value: f64) -> f64 {
    let k = value.log10().floor() as i32;
    (k..=k + 1)
        .flat_map(|k| STEPS.iter().map(move |s| step_value(*s, k)))
        .find(|v| *v >= value * (1.0 - 1e-12))
        .unwrap_or(value)
}

/// The largest 1-2-5 step at or below `value` > 0.
fn round_down(value: f64) -> f64 {
    let k = value.log10().floor() as i32;
    (k - 1..=k)
        .rev()
        .flat_map(|k| STEPS.iter().rev().map(move |s| step_value(*s, k)))
        .find(|v| *v <= value * (1.0 + 1e-12))
        .unwrap_or(value)
}

/// A tick as written: 1, 2.5, 0.05, 2000 (no float noise).
pub fn tick_label(value: f64) -> String {
    const UNIT: f64 = 1e6;
    format!("{}", (value * UNIT).round() / UNIT)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wide_span_is_logarithmic_with_round_ticks() {
        let axis = Axis::fit(&[0.8, 1.0, 1.3, 44.0], 1.1);
        assert_eq!(
            axis,
            Axis::Log {
                min: 0.5,
                max: 50.0
            }
        );
        let labels: Vec<String> = axis.ticks().into_iter().map(tick_label).collect();
        assert_eq!(labels, ["0.5", "1", "2", "5", "10", "20", "50"]);
        assert_eq!(axis.fraction(0.5), 0.0);
        assert_eq!(axis.fraction(50.0), 1.0);
        assert!((axis.fraction(5.0) - 0.5).abs() < 1e-9);
    }

    #[test]
    fn a_narrow_span_is_linear_from_zero() {
        let axis = Axis::fit(&[0.9, 1.0, 1.4], 1.1);
        assert_eq!(
            axis,
            Axis::Linear {
                max: 2.0,
                step: 0.5
            }
        );
        assert_eq!(axis.ticks(), [0.0, 0.5, 1.0, 1.5, 2.0]);
        // 5.1 s of loads: ticks every 2 s up to 6, not an axis to 10.
        assert_eq!(
            Axis::fit(&[5.1], 1.0),
            Axis::Linear {
                max: 6.0,
                step: 2.0
            }
        );
        assert_eq!(
            Axis::fit(&[], 1.0),
            Axis::Linear {
                max: 1.0,
                step: 0.25
            }
        );
        assert!(
            !Axis::fit(&[0.0, 30.0], 1.0).is_log(),
            "zero cannot be on a log axis"
        );
        assert_eq!(Axis::fit(&[f64::NAN], 1.0).fraction(f64::NAN), 0.0);
    }
}
