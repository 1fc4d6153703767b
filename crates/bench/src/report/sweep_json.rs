//! The sweep figures' values in the JSON of a preset (`sweep`, docs/bench.md): what the
//! HTML plots and the text tabulates, so that a reader of the JSON needs neither to
//! regroup the runs nor to recompute the ratios.

use super::fig5_table::{fig5_table, Fig5Table, MixRow, FIG5_CAPTION, FIG5_PRESET};
use super::figures::sweep_figure;
use super::sweep::{Group, SweepFigure};
use crate::bench::BenchReport;
use serde_json::{json, Map, Value};

/// `None` when `reports` form no sweep.
pub fn sweep_json(reports: &[BenchReport]) -> Option<Value> {
    if let Some(table) = fig5_table(reports) {
        return Some(fig5(&table));
    }
    sweep_figure(reports).map(|figure| line_figure(&figure))
}

fn fig5(table: &Fig5Table) -> Value {
    let mixes: Vec<Value> = table.rows.iter().map(mix_row).collect();
    json!({
        "figure": FIG5_PRESET,
        "caption": FIG5_CAPTION,
        "policies": table.policies,
        "mixes": mixes,
        "relevance_not_best": table.relevance_not_best(),
    })
}

fn mix_row(row: &MixRow) -> Value {
    let relative = row.relative.as_ref().map(|all| {
        let map: Map<String, Value> = all
            .iter()
            .map(|r| {
                let ratios = json!({
                    "stream_time": r.stream_time,
                    "normalized_latency": r.normalized_latency,
                });
                (r.policy.clone(), ratios)
            })
            .collect();
        Value::Object(map)
    });
    let beaten: Map<String, Value> = row
        .beaten_by()
        .into_iter()
        .map(|(policy, axes)| {
            let keys: Vec<&str> = axes.iter().map(|a| a.key()).collect();
            (policy.to_string(), json!(keys))
        })
        .collect();
    json!({
        "label": row.label,
        "relative": relative,
        "relevance_beaten_on": beaten,
    })
}

fn line_figure(figure: &SweepFigure) -> Value {
    let spec = figure.spec;
    let metrics: Vec<Value> = spec
        .metrics
        .iter()
        .map(|m| json!({ "key": m.key, "label": m.label }))
        .collect();
    let groups: Vec<Value> = figure.groups.iter().map(|g| group(figure, g)).collect();
    json!({
        "figure": spec.preset,
        "title": spec.title,
        "caption": spec.caption,
        "x": spec.x_key,
        "log_x": spec.log_x,
        "metrics": metrics,
        "groups": groups,
    })
}

/// `series.<policy>.<metric>`: one value (or null) per entry of `x`.
fn group(figure: &SweepFigure, g: &Group) -> Value {
    let series: Map<String, Value> = g
        .series
        .iter()
        .map(|s| {
            let per_metric: Map<String, Value> = figure
                .spec
                .metrics
                .iter()
                .enumerate()
                .map(|(m, metric)| {
                    let values: Vec<Option<f64>> = (0..g.xs.len()).map(|i| s.value(m, i)).collect();
                    (metric.key.to_string(), json!(values))
                })
                .collect();
            (s.policy.clone(), Value::Object(per_metric))
        })
        .collect();
    let policies: Vec<&str> = g.series.iter().map(|s| s.policy.as_str()).collect();
    json!({
        "title": g.title,
        "ours": (figure.spec.ours)(figure.spec, g),
        "mix": g.mix,
        "regime": g.regime,
        "x": g.xs,
        "policies": policies,
        "series": series,
    })
}
