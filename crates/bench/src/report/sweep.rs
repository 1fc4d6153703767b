//! The line figures of a preset's sweep (the 2007 paper's Figures 6, 7 and 8): what a
//! figure is ([`FigureSpec`]), and the values it plots per query set, x and policy. The
//! figures themselves, and whether a preset's reports form one, are in `figures`.
//!
//! A preset run gives one [`BenchReport`] per sweep point. The figure is chosen by the
//! preset's name (each figure has its own x and metrics, [`FigureSpec`]); the points are
//! grouped by query set (the mix, and the regime `bench --regimes` appends to a label
//! after ` · `) and sorted by x. Reports that do not vary x inside a group (a sweep
//! collapsed by an override) form no figure: a line through one x says nothing.

use crate::bench::BenchReport;
use crate::mix::{Mix, QueryKind};
use crate::stats::PolicyStats;

/// What `coopscan bench --regimes` puts between a run's label and its regime.
pub const REGIME_SEPARATOR: &str = " · ";

/// One plotted quantity: a panel of the figure and a block of its table.
pub struct Metric {
    /// The JSON key of its series.
    pub key: &'static str,
    /// Axis and table label.
    pub label: &'static str,
    /// Decimals in the text table.
    pub decimals: usize,
    /// `None` when the run did not measure it.
    pub value: fn(&PolicyStats) -> Option<f64>,
}

/// What one figure plots against what, and the paper's finding it reproduces.
pub struct FigureSpec {
    /// The preset that sweeps it (`fig6`, …), also the JSON `figure`.
    pub preset: &'static str,
    pub title: &'static str,
    /// The JSON name of x (a `parameters` key).
    pub x_key: &'static str,
    pub x_label: &'static str,
    /// The x column's header in the text table.
    pub x_short: &'static str,
    pub x_of: fn(&BenchReport) -> f64,
    /// Doubling sweeps (streams 1…32, chunks 0.25…8 MB) are spaced evenly on a log axis.
    pub log_x: bool,
    pub metrics: &'static [Metric],
    /// One sentence of the paper's §5 on this figure.
    pub caption: &'static str,
    /// Our side of the caption for one query set (`findings`); `None` when the runs
    /// lack what it compares (no relevance run).
    pub ours: fn(&FigureSpec, &Group) -> Option<String>,
}

/// One policy's line: its value of every metric at every x of the group.
pub struct Series {
    pub policy: String,
    /// `values[metric][i]` at the group's `xs[i]`; `None` where it has no value.
    pub values: Vec<Vec<Option<f64>>>,
}

impl Series {
    /// Metric `m` at the group's `i`-th x.
    pub fn value(&self, m: usize, i: usize) -> Option<f64> {
        self.values.get(m)?.get(i).copied().flatten()
    }

    /// Metric `m`'s (x, value) points, x ascending, where it has a value.
    pub fn points(&self, m: usize, xs: &[f64]) -> Vec<(f64, f64)> {
        xs.iter()
            .enumerate()
            .filter_map(|(i, &x)| Some((x, self.value(m, i)?)))
            .collect()
    }
}

/// One query set (a panel group): the x values in ascending order and a series per
/// policy, in the order the policies first ran.
pub struct Group {
    pub title: String,
    pub mix: String,
    pub regime: Option<String>,
    pub xs: Vec<f64>,
    pub series: Vec<Series>,
}

pub struct SweepFigure {
    pub spec: &'static FigureSpec,
    pub groups: Vec<Group>,
}

/// The preset every report belongs to, when there are two or more reports.
pub fn single_preset(reports: &[BenchReport]) -> Option<&str> {
    let first = reports.first()?;
    let preset = first.params.preset.as_str();
    (reports.len() > 1 && reports.iter().all(|r| r.params.preset == preset)).then_some(preset)
}

/// The run's regime, when `bench --regimes` appended one to its label.
pub fn regime_of(report: &BenchReport) -> Option<String> {
    report
        .params
        .label
        .rsplit_once(REGIME_SEPARATOR)
        .map(|(_, regime)| regime.to_string())
}

pub(super) fn group_key(report: &BenchReport) -> (String, Option<String>) {
    (report.params.mix.name.clone(), regime_of(report))
}

/// `members` sorted by x, all of one query set.
pub(super) fn group(
    spec: &FigureSpec,
    members: &[&BenchReport],
    key: (String, Option<String>),
) -> Group {
    let (mix, regime) = key;
    let mut policies: Vec<&str> = Vec::new();
    for p in members.iter().flat_map(|r| &r.policies) {
        if !policies.contains(&p.name.as_str()) {
            policies.push(&p.name);
        }
    }
    let series = policies
        .iter()
        .map(|&policy| Series {
            policy: policy.to_string(),
            values: spec
                .metrics
                .iter()
                .map(|m| members.iter().map(|r| value_of(r, policy, m)).collect())
                .collect(),
        })
        .collect();
    let title = members.first().map_or_else(
        || mix.clone(),
        |r| describe_set(&r.params.mix, regime.as_deref()),
    );
    Group {
        title,
        mix,
        regime,
        xs: members.iter().map(|r| (spec.x_of)(r)).collect(),
        series,
    }
}

fn value_of(report: &BenchReport, policy: &str, metric: &Metric) -> Option<f64> {
    let p = report.policies.iter().find(|p| p.name == policy)?;
    (metric.value)(&p.stats).filter(|v| v.is_finite())
}

/// The paper's names for the query sets: disk-bound = FAST only, CPU-bound = with SLOW.
fn describe_set(mix: &Mix, regime: Option<&str>) -> String {
    let bound = if mix.speeds.contains(&QueryKind::Slow) {
        "CPU-bound"
    } else {
        "disk-bound"
    };
    let sizes = match mix.percents.as_slice() {
        [one] => format!(", {one}% scans"),
        _ => String::new(),
    };
    let regime = regime.map_or(String::new(), |r| format!(", {r}"));
    format!("{bound} set {}{sizes}{regime}", mix.name)
}
