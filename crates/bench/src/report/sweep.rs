//! The line figures of a preset's sweep (the 2007 paper's Figures 6, 7 and 8): whether a
//! preset's reports form one, and the values it plots per query set, x and policy.
//!
//! A preset run gives one [`BenchReport`] per sweep point. The figure is chosen by the
//! preset's name (each figure has its own x and metrics, [`FigureSpec`]); the points are
//! grouped by query set (the mix, and the regime `bench --regimes` appends to a label
//! after ` · `) and sorted by x. Reports that do not vary x inside a group (a sweep
//! collapsed by an override) form no figure: a line through one x says nothing.

use super::findings;
use crate::bench::BenchReport;
use crate::mix::{Mix, QueryKind};
use crate::stats::PolicyStats;
use coopscan_paper::experiments as defs;

const MICROS_PER_SECOND: f64 = 1e6;
const PERCENT: f64 = 100.0;
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

const IO_REQUESTS: Metric = Metric {
    key: "io_requests",
    label: "I/O requests",
    decimals: 0,
    value: |s| Some(s.io_requests as f64),
};
const STREAM_TIME: Metric = Metric {
    key: "avg_stream_time_s",
    label: "avg stream time (s)",
    decimals: 2,
    value: |s| Some(s.avg_stream_time_s),
};
const NORMALIZED_LATENCY: Metric = Metric {
    key: "avg_normalized_latency",
    label: "avg normalized latency",
    decimals: 2,
    value: |s| Some(s.avg_normalized_latency),
};
const SCHEDULING_TOTAL: Metric = Metric {
    key: "scheduling_s",
    label: "scheduling time (s)",
    decimals: 3,
    value: |s| s.scheduling_s,
};
const SCHEDULING_PER_CALL: Metric = Metric {
    key: "scheduling_us_per_call",
    label: "per ABM call (µs)",
    decimals: 2,
    value: scheduling_per_call_us,
};
const SCHEDULING_SHARE: Metric = Metric {
    key: "scheduling_pct_of_run",
    label: "share of run time (%)",
    decimals: 3,
    value: scheduling_share_pct,
};

fn scheduling_per_call_us(s: &PolicyStats) -> Option<f64> {
    let (seconds, calls) = (s.scheduling_s?, s.abm_calls?);
    (calls > 0).then(|| seconds * MICROS_PER_SECOND / calls as f64)
}

/// Of the run's wall time (the paper's "fraction of execution time").
fn scheduling_share_pct(s: &PolicyStats) -> Option<f64> {
    let seconds = s.scheduling_s?;
    (s.total_time_s > 0.0).then(|| seconds / s.total_time_s * PERCENT)
}

pub const FIG6: FigureSpec = FigureSpec {
    preset: defs::FIG6.name,
    title: "Figure 6: I/O requests and average stream time against buffer size",
    x_key: "buffer_pct",
    x_label: "buffer (% of the table)",
    x_short: "buffer %",
    x_of: |r| r.params.buffer_pct,
    log_x: false,
    ours: findings::fig6,
    metrics: &[IO_REQUESTS, STREAM_TIME],
    caption: defs::FIG6.finding,
};

pub const FIG7: FigureSpec = FigureSpec {
    preset: defs::FIG7.name,
    title: "Figure 7: I/O requests, average stream time and normalized latency against \
            the number of concurrent queries",
    x_key: "streams",
    x_label: "concurrent queries (streams)",
    x_short: "streams",
    x_of: |r| r.params.streams as f64,
    log_x: true,
    ours: findings::fig7,
    metrics: &[IO_REQUESTS, STREAM_TIME, NORMALIZED_LATENCY],
    caption: defs::FIG7.finding,
};

pub const FIG8: FigureSpec = FigureSpec {
    preset: defs::FIG8.name,
    title: "Figure 8: scheduling time against chunk size",
    x_key: "chunk_mb",
    x_label: "chunk size (MB)",
    x_short: "chunk MB",
    x_of: |r| r.params.chunk_mb,
    log_x: true,
    ours: findings::fig8,
    metrics: &[SCHEDULING_TOTAL, SCHEDULING_PER_CALL, SCHEDULING_SHARE],
    caption: defs::FIG8.finding,
};

pub const PBM_BUFFER: FigureSpec = FigureSpec {
    preset: defs::PBM_BUFFER.name,
    title: "2012 paper Figure 11: I/O requests and average stream time against buffer size",
    x_key: "buffer_pct",
    x_label: "buffer (% of the table)",
    x_short: "buffer %",
    x_of: |r| r.params.buffer_pct,
    log_x: false,
    ours: findings::pbm,
    metrics: &[IO_REQUESTS, STREAM_TIME],
    caption: defs::PBM_BUFFER.finding,
};

pub const PBM_BANDWIDTH: FigureSpec = FigureSpec {
    preset: defs::PBM_BANDWIDTH.name,
    title: "2012 paper Figure 12: I/O requests and average stream time against bandwidth",
    x_key: "bandwidth_scale",
    x_label: "bandwidth ÷ the calibrated device's (1 stands for the paper's 700 MB/s)",
    x_short: "bandwidth ×",
    x_of: |r| r.params.bandwidth_scale,
    log_x: true,
    ours: findings::pbm,
    metrics: &[IO_REQUESTS, STREAM_TIME],
    caption: defs::PBM_BANDWIDTH.finding,
};

pub const PBM_STREAMS: FigureSpec = FigureSpec {
    preset: defs::PBM_STREAMS.name,
    title: "2012 paper Figure 13: I/O requests and average stream time against streams",
    x_key: "streams",
    x_label: "concurrent streams",
    x_short: "streams",
    x_of: |r| r.params.streams as f64,
    log_x: true,
    ours: findings::pbm,
    metrics: &[IO_REQUESTS, STREAM_TIME],
    caption: defs::PBM_STREAMS.finding,
};

pub const FIGURES: [&FigureSpec; 6] = [
    &FIG6,
    &FIG7,
    &FIG8,
    &PBM_BUFFER,
    &PBM_BANDWIDTH,
    &PBM_STREAMS,
];

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

/// The figure `reports` form, if they are a sweep of Figure 6, 7 or 8: two or more
/// reports of one such preset, x distinct inside every query set and varying in one.
pub fn sweep_figure(reports: &[BenchReport]) -> Option<SweepFigure> {
    let preset = single_preset(reports)?;
    let spec = FIGURES.into_iter().find(|f| f.preset == preset)?;
    // Query sets in the order the preset ran them; inside each, x ascending.
    let mut keys: Vec<(String, Option<String>)> = Vec::new();
    for r in reports {
        let key = group_key(r);
        if !keys.contains(&key) {
            keys.push(key);
        }
    }
    let groups: Vec<Group> = keys
        .into_iter()
        .map(|key| {
            let mut members: Vec<&BenchReport> =
                reports.iter().filter(|r| group_key(r) == key).collect();
            members.sort_by(|a, b| (spec.x_of)(a).total_cmp(&(spec.x_of)(b)));
            group(spec, &members, key)
        })
        .collect();
    let distinct = groups.iter().all(|g| g.xs.windows(2).all(|w| w[0] < w[1]));
    let varies = groups.iter().any(|g| g.xs.len() > 1);
    (distinct && varies).then_some(SweepFigure { spec, groups })
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

fn group_key(report: &BenchReport) -> (String, Option<String>) {
    (report.params.mix.name.clone(), regime_of(report))
}

/// `members` sorted by x, all of one query set.
fn group(spec: &FigureSpec, members: &[&BenchReport], key: (String, Option<String>)) -> Group {
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
