//! Figure 5 as a table: per mix, each policy's average stream time and average
//! normalized latency ÷ relevance's (the scatter's coordinates), and the policies that
//! beat relevance on either axis — the mixes where relevance is *not* best on both.

use super::sweep::single_preset;
use crate::bench::BenchReport;

pub const FIG5_PRESET: &str = "fig5";
pub const RELEVANCE: &str = "relevance";
pub const FIG5_CAPTION: &str = "From this experiment we conclude that indeed relevance, \
    representing the (1,1) point in this scatter plot, is consistently better than all \
    other policies.";

/// An axis of Figure 5.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Axis {
    StreamTime,
    NormalizedLatency,
}

impl Axis {
    /// The JSON name.
    pub fn key(self) -> &'static str {
        match self {
            Axis::StreamTime => "stream_time",
            Axis::NormalizedLatency => "normalized_latency",
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            Axis::StreamTime => "stream time",
            Axis::NormalizedLatency => "normalized latency",
        }
    }
}

/// One policy ÷ relevance in one run; below 1 beats relevance on that axis.
#[derive(Clone, Debug, PartialEq)]
pub struct Relative {
    pub policy: String,
    pub stream_time: f64,
    pub normalized_latency: f64,
}

impl Relative {
    /// The axes on which this policy is strictly better than relevance.
    pub fn beats_relevance_on(&self) -> Vec<Axis> {
        let mut axes = Vec::new();
        if self.stream_time < 1.0 {
            axes.push(Axis::StreamTime);
        }
        if self.normalized_latency < 1.0 {
            axes.push(Axis::NormalizedLatency);
        }
        axes
    }
}

/// One run of the preset (one mix).
pub struct MixRow {
    pub label: String,
    /// `None` when the run has no relevance to divide by.
    pub relative: Option<Vec<Relative>>,
}

impl MixRow {
    /// The policies that beat relevance, each with the axes on which.
    pub fn beaten_by(&self) -> Vec<(&str, Vec<Axis>)> {
        self.relative
            .iter()
            .flatten()
            .map(|r| (r.policy.as_str(), r.beats_relevance_on()))
            .filter(|(_, axes)| !axes.is_empty())
            .collect()
    }

    /// "elevator (stream time); attach (stream time, normalized latency)", or "" when
    /// relevance is best on both axes.
    pub fn describe_beaten(&self) -> String {
        if self.relative.is_none() {
            return "no relevance run".to_string();
        }
        self.beaten_by()
            .iter()
            .map(|(policy, axes)| {
                let axes: Vec<&str> = axes.iter().map(|a| a.label()).collect();
                format!("{policy} ({})", axes.join(", "))
            })
            .collect::<Vec<_>>()
            .join("; ")
    }
}

pub struct Fig5Table {
    /// Every policy but relevance, in the order they ran.
    pub policies: Vec<String>,
    pub rows: Vec<MixRow>,
}

impl Fig5Table {
    /// Labels of the runs where some policy beats relevance on some axis.
    pub fn relevance_not_best(&self) -> Vec<&str> {
        self.rows
            .iter()
            .filter(|r| !r.beaten_by().is_empty())
            .map(|r| r.label.as_str())
            .collect()
    }
}

/// The table, when `reports` are the runs of the `fig5` preset.
pub fn fig5_table(reports: &[BenchReport]) -> Option<Fig5Table> {
    if single_preset(reports)? != FIG5_PRESET {
        return None;
    }
    let mut policies: Vec<String> = Vec::new();
    for p in reports.iter().flat_map(|r| &r.policies) {
        if p.name != RELEVANCE && !policies.contains(&p.name) {
            policies.push(p.name.clone());
        }
    }
    let rows = reports
        .iter()
        .map(|r| MixRow {
            label: r.params.label.clone(),
            relative: relative(r),
        })
        .collect();
    Some(Fig5Table { policies, rows })
}

/// Every other policy's (stream time, normalized latency) ÷ relevance's; `None`
/// without a relevance run. Ratios that are not finite (a zero base) are left out.
pub fn relative(report: &BenchReport) -> Option<Vec<Relative>> {
    let base = report.policies.iter().find(|p| p.name == RELEVANCE)?;
    let (stream, latency) = (
        base.stats.avg_stream_time_s,
        base.stats.avg_normalized_latency,
    );
    Some(
        report
            .policies
            .iter()
            .filter(|p| p.name != RELEVANCE)
            .map(|p| Relative {
                policy: p.name.clone(),
                stream_time: p.stats.avg_stream_time_s / stream,
                normalized_latency: p.stats.avg_normalized_latency / latency,
            })
            .filter(|r| r.stream_time.is_finite() && r.normalized_latency.is_finite())
            .collect(),
    )
}
