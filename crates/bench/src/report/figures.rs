//! The sweep figures: each preset's x, metrics and the paper's finding (from its
//! definition in `coopscan_paper::experiments`), and which figure a set of reports
//! forms.

use super::findings;
use super::sweep::{group, group_key, single_preset, FigureSpec, Group, Metric, SweepFigure};
use crate::bench::BenchReport;
use crate::stats::PolicyStats;
use coopscan_paper::experiments as defs;

const MICROS_PER_SECOND: f64 = 1e6;
const PERCENT: f64 = 100.0;

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
