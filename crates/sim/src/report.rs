//! Per-policy summaries, the paper's published numbers, and the text tables.

use crate::engine::SimConfig;
use crate::result::{mean, QueryResult, RunResult};
use crate::workload::Workload;
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt::Write;

/// All policies of one preset, side by side.
#[derive(Clone, Debug, Serialize)]
pub struct PresetReport {
    pub preset: String,
    pub seed: u64,
    pub config: SimConfig,
    pub workload: Workload,
    pub policies: BTreeMap<String, PolicyReport>,
    /// Published numbers to show beside ours, where the paper gives them.
    pub paper: Option<BTreeMap<String, PaperNumbers>>,
    #[serde(skip)]
    pub runs: Vec<RunResult>,
}

#[derive(Clone, Debug, Serialize)]
pub struct PolicyReport {
    pub chunk_loads: u64,
    pub total_time_s: f64,
    pub avg_stream_time_s: f64,
    pub avg_latency_s: f64,
    pub avg_normalized_latency: Option<f64>,
    pub cpu_use: f64,
    pub scheduling_s: f64,
    pub abm_calls: u64,
    pub max_classes: usize,
    /// Checkpoints taken and old versions freed (`RunResult::checkpoints`).
    #[serde(skip_serializing_if = "is_zero")]
    pub checkpoints: u32,
    #[serde(skip_serializing_if = "is_zero")]
    pub versions_freed: u32,
    pub queries: Vec<QueryResult>,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

impl PolicyReport {
    pub fn from_run(run: &RunResult) -> Self {
        PolicyReport {
            chunk_loads: run.chunk_loads,
            total_time_s: run.total_time_s,
            avg_stream_time_s: run.avg_stream_time_s(),
            avg_latency_s: run.avg_latency_s(),
            avg_normalized_latency: run.avg_normalized_latency(),
            cpu_use: run.cpu_use,
            scheduling_s: run.scheduling_s,
            abm_calls: run.abm_calls,
            max_classes: run.max_classes,
            checkpoints: run.checkpoints,
            versions_freed: run.versions_freed,
            queries: run.queries.clone(),
        }
    }
}

/// System statistics of the 2007 paper's Table 2 or 3, per policy.
#[derive(Clone, Debug, Serialize)]
pub struct PaperNumbers {
    pub avg_stream_time_s: f64,
    pub avg_normalized_latency: f64,
    pub total_time_s: f64,
    pub cpu_use: f64,
    pub io_requests: u64,
}

pub(crate) fn table2_paper() -> BTreeMap<String, PaperNumbers> {
    paper_numbers(&coopscan_paper::table2::TABLE2_SYSTEM)
}

/// A published table's system statistics (Table 2's or 3's), by policy name.
pub(crate) fn paper_numbers(
    system: &[coopscan_paper::published::PaperSystem],
) -> BTreeMap<String, PaperNumbers> {
    system
        .iter()
        .map(|p| {
            let numbers = PaperNumbers {
                avg_stream_time_s: p.avg_stream_time_s,
                avg_normalized_latency: p.avg_normalized_latency,
                total_time_s: p.total_time_s,
                cpu_use: p.cpu_use,
                io_requests: p.io_requests,
            };
            (p.policy.to_string(), numbers)
        })
        .collect()
}

impl PresetReport {
    /// The policies in run order (normal, attach, elevator, relevance as requested).
    fn ordered(&self) -> Vec<(&str, &PolicyReport)> {
        self.runs
            .iter()
            .filter_map(|r| self.policies.get_key_value(r.policy.name()))
            .map(|(k, v)| (k.as_str(), v))
            .collect()
    }

    /// The system table with one row per policy and the per-type table (with the
    /// paper's numbers where the preset has them) when latencies are normalized (Table
    /// 2's presets and replays); else the latency of every query.
    pub fn to_text(&self) -> String {
        if self.paper.is_some() || self.normalized() {
            self.system_table()
        } else {
            self.query_table()
        }
    }

    /// Whether the queries have standalone latencies to normalize by.
    fn normalized(&self) -> bool {
        let mut queries = self.policies.values().flat_map(|p| &p.queries);
        queries.any(|q| q.standalone_s.is_some())
    }

    fn query_table(&self) -> String {
        let policies = self.ordered();
        let mut s = format!("preset {} — latency per query (s)\n", self.preset);
        let _ = write!(s, "{:<8} {:>8}", "query", "start");
        for (name, _) in &policies {
            let _ = write!(s, " {name:>10}");
        }
        s.push('\n');
        let Some((_, first)) = policies.first() else {
            return s;
        };
        for q in &first.queries {
            let _ = write!(s, "{:<8} {:>8.2}", q.name, q.start_s);
            for (_, p) in &policies {
                let latency = p
                    .queries
                    .iter()
                    .find(|x| x.name == q.name)
                    .map_or(f64::NAN, |x| x.latency_s);
                let _ = write!(s, " {latency:>10.3}");
            }
            s.push('\n');
        }
        let _ = write!(s, "{:<8} {:>8}", "loads", "");
        for (_, p) in &policies {
            let _ = write!(s, " {:>10}", p.chunk_loads);
        }
        let _ = write!(s, "\n{:<8} {:>8}", "total", "");
        for (_, p) in &policies {
            let _ = write!(s, " {:>10.3}", p.total_time_s);
        }
        s.push('\n');
        s
    }

    fn system_table(&self) -> String {
        let paper = self.paper.clone().unwrap_or_default();
        let mut s = match self.paper {
            Some(_) => format!(
                "preset {} (seed {}) — ours vs paper\n",
                self.preset, self.seed
            ),
            None => format!("preset {}\n", self.preset),
        };
        let _ = writeln!(
            s,
            "{:<10} {:>17} {:>17} {:>17} {:>15} {:>13}",
            "policy", "avg stream (s)", "avg norm. lat.", "total (s)", "CPU use", "I/Os"
        );
        for (name, p) in self.ordered() {
            let paper = paper.get(name);
            let pair = |ours: f64, theirs: Option<f64>, prec: usize| match theirs {
                Some(t) => format!("{ours:.prec$} / {t:.prec$}"),
                None => format!("{ours:.prec$}"),
            };
            let _ = writeln!(
                s,
                "{:<10} {:>17} {:>17} {:>17} {:>15} {:>13}",
                name,
                pair(p.avg_stream_time_s, paper.map(|x| x.avg_stream_time_s), 1),
                pair(
                    p.avg_normalized_latency.unwrap_or(f64::NAN),
                    paper.map(|x| x.avg_normalized_latency),
                    2
                ),
                pair(p.total_time_s, paper.map(|x| x.total_time_s), 1),
                pair(p.cpu_use * 100.0, paper.map(|x| x.cpu_use * 100.0), 0),
                match paper {
                    Some(x) => format!("{} / {}", p.chunk_loads, x.io_requests),
                    None => p.chunk_loads.to_string(),
                },
            );
        }
        for (name, p) in self
            .ordered()
            .into_iter()
            .filter(|(_, p)| p.checkpoints > 0)
        {
            let _ = writeln!(
                s,
                "{name:<10} {} checkpoints, {} old versions freed",
                p.checkpoints, p.versions_freed
            );
        }
        s.push_str(&self.kind_table());
        s
    }

    /// Per query type: count, standalone time, average latency and normalized latency.
    fn kind_table(&self) -> String {
        let policies = self.ordered();
        let mut s = format!("\n{:<6} {:>5} {:>10}", "type", "count", "alone (s)");
        for (name, _) in &policies {
            let _ = write!(s, " {:>21}", format!("{name} lat / norm"));
        }
        s.push('\n');
        let Some((_, first)) = policies.first() else {
            return s;
        };
        let mut kinds: Vec<&str> = first.queries.iter().map(|q| q.kind.as_str()).collect();
        kinds.sort_unstable();
        kinds.dedup();
        for kind in kinds {
            let of = |p: &PolicyReport| -> Vec<QueryResult> {
                p.queries
                    .iter()
                    .filter(|q| q.kind == kind)
                    .cloned()
                    .collect()
            };
            let base = of(first);
            let alone = mean(base.iter().filter_map(|q| q.standalone_s));
            let _ = write!(s, "{kind:<6} {:>5} {alone:>10.2}", base.len());
            for (_, p) in &policies {
                let qs = of(p);
                let lat = mean(qs.iter().map(|q| q.latency_s));
                let norm = mean(qs.iter().filter_map(QueryResult::normalized_latency));
                let _ = write!(s, " {:>21}", format!("{lat:.2} / {norm:.2}"));
            }
            s.push('\n');
        }
        s
    }
}
