//! The JSON report. Its schema is documented in docs/bench.md; bump
//! [`SCHEMA_VERSION`] when a key changes meaning or disappears.

use crate::bench::{BenchReport, PolicyResult, TableInfo};
use crate::calibration::Calibration;
use crate::mix::QueryType;
use crate::presets::{published_for, Params};
use crate::samples::Samples;
use crate::stats::PolicyStats;
use coopscan_paper::published::{PaperQueryRow, PaperSystem};
use serde::ser::SerializeMap;
use serde::{Serialize, Serializer};
use serde_json::{Map, Value};

use super::sweep_json::sweep_json;
use std::collections::BTreeMap;

pub const SCHEMA_VERSION: u32 = 2;

#[derive(Serialize)]
struct JsonReport<'a> {
    schema_version: u32,
    parameters: &'a Params,
    table: TableInfo,
    bandwidth_mb_s: Option<f64>,
    stagger_s: f64,
    calibration: Option<&'a Calibration>,
    standalone_s: &'a BTreeMap<QueryType, f64>,
    standalone_samples_s: &'a BTreeMap<QueryType, Samples>,
    reference_queries: usize,
    policies: Policies<'a>,
    paper: Option<Paper>,
}

/// `policies.<name>` in run order (a JSON object, not sorted).
struct Policies<'a>(&'a [PolicyResult]);

impl Serialize for Policies<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(self.0.len()))?;
        for p in self.0 {
            map.serialize_entry(&p.name, &JsonPolicy::new(p))?;
        }
        map.end()
    }
}

#[derive(Serialize)]
struct JsonPolicy<'a> {
    #[serde(flatten)]
    stats: &'a PolicyStats,
    query_runs: Vec<JsonRun>,
    loads: Vec<JsonLoad>,
}

#[derive(Serialize)]
struct JsonRun {
    id: u64,
    stream: usize,
    index: usize,
    query_type: QueryType,
    row_start: u64,
    row_end: u64,
    /// Read in table order (an in-order Scan) rather than as a CScan.
    in_order: bool,
    start_s: f64,
    end_s: f64,
}

#[derive(Serialize)]
struct JsonLoad {
    at_s: f64,
    chunk: u32,
    tag: Option<u64>,
    bytes: u64,
}

impl<'a> JsonPolicy<'a> {
    fn new(p: &'a PolicyResult) -> Self {
        let query_runs = p
            .runs
            .iter()
            .map(|r| JsonRun {
                id: r.query.id,
                stream: r.query.stream,
                index: r.query.index,
                query_type: r.query.query_type,
                row_start: r.query.rows.start,
                row_end: r.query.rows.end,
                in_order: r.query.in_order,
                start_s: r.start.as_secs_f64(),
                end_s: r.end.as_secs_f64(),
            })
            .collect();
        let loads = p
            .loads
            .iter()
            .map(|l| JsonLoad {
                at_s: l.at.as_secs_f64(),
                chunk: l.chunk,
                tag: l.tag,
                bytes: l.bytes,
            })
            .collect();
        JsonPolicy {
            stats: &p.stats,
            query_runs,
            loads,
        }
    }
}

#[derive(Serialize)]
struct Paper {
    source: &'static str,
    system: &'static [PaperSystem],
    query_types: &'static [PaperQueryRow],
}

/// The report as pretty JSON. The paper's table is included for Table 2's mix only
/// (Table 3 for a DSM run).
pub fn to_json(report: &BenchReport) -> serde_json::Result<String> {
    serde_json::to_string_pretty(&json_report(report))
}

/// A preset's reports as one JSON document: one run is its report itself; more are
/// `{ "runs": [report…] }`, with `"sweep"` when they form one (Figures 5-8: what the
/// HTML plots, grouped and in x order; see docs/bench.md).
pub fn preset_to_json(reports: &[BenchReport]) -> serde_json::Result<String> {
    if let [one] = reports {
        return to_json(one);
    }
    let runs = reports
        .iter()
        .map(|r| serde_json::to_value(json_report(r)))
        .collect::<serde_json::Result<Vec<Value>>>()?;
    let mut doc = Map::new();
    doc.insert("runs".to_string(), Value::Array(runs));
    if let Some(sweep) = sweep_json(reports) {
        doc.insert("sweep".to_string(), sweep);
    }
    if let Some(families) = super::table4::table4_families(reports) {
        doc.insert("table4".to_string(), serde_json::to_value(families)?);
    }
    if let Some(rows) = super::mixed_pool::mixed_pool_rows(reports) {
        doc.insert("mixed_pool".to_string(), serde_json::to_value(rows)?);
    }
    serde_json::to_string_pretty(&Value::Object(doc))
}

fn json_report(report: &BenchReport) -> JsonReport<'_> {
    let paper = published_for(&report.params).map(|t| Paper {
        source: t.source,
        system: t.system,
        query_types: t.query_types,
    });
    JsonReport {
        schema_version: SCHEMA_VERSION,
        parameters: &report.params,
        table: report.table,
        bandwidth_mb_s: report.bandwidth_mb_s,
        stagger_s: report.stagger_s,
        calibration: report.calibration.as_ref(),
        standalone_s: &report.standalone,
        standalone_samples_s: &report.standalone_samples,
        reference_queries: report.reference_queries,
        policies: Policies(&report.policies),
        paper,
    }
}
