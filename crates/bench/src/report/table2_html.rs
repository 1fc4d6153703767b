//! Table 2's shape in HTML (the text report's tables, as `<table>`s): the run's
//! parameters as a note, the system statistics (a column per policy), then a row per
//! query type and policy; the paper's number beside ours wherever the text has it.

use super::html_table::{html_table, note, Cell};
use super::text::{header_text, paper_system, NO_PAPER_VALUE, SYSTEM_ROWS};
use crate::bench::BenchReport;
use crate::presets::published_for;
use crate::stats::QueryTypeStats;
use coopscan_paper::published::{PaperCell, PaperQueryRow};

pub fn render(report: &BenchReport) -> String {
    let mut out = note(&header_text(report));
    out.push_str(&system_table(report));
    out.push_str(&query_table(report));
    out
}

fn system_table(r: &BenchReport) -> String {
    let mut headers = vec!["System statistics".to_string()];
    headers.extend(r.policies.iter().map(|p| p.name.clone()));
    let rows: Vec<Vec<Cell>> = SYSTEM_ROWS
        .iter()
        .map(|(label, ours, theirs)| {
            let mut row = vec![Cell::from(*label)];
            row.extend(r.policies.iter().map(|p| {
                let paper = paper_system(r, &p.name)
                    .map(theirs)
                    .filter(|v| v != NO_PAPER_VALUE);
                Cell::with_paper(ours(&p.stats), paper)
            }));
            row
        })
        .collect();
    html_table("", &headers, &rows)
}

const QUERY_HEADERS: [&str; 8] = [
    "query",
    "count",
    "alone (s)",
    "policy",
    "avg (s)",
    "stddev (s)",
    "norm",
    "I/Os",
];

/// A row per query type and policy; the type's count and standalone time on its
/// first row only. "" for a run without per-type statistics.
fn query_table(r: &BenchReport) -> String {
    let headers: Vec<String> = QUERY_HEADERS.iter().map(|h| h.to_string()).collect();
    let published = published_for(&r.params);
    let mut rows = Vec::new();
    for query_type in r.params.mix.query_types() {
        let name = query_type.to_string();
        let paper_row = published.and_then(|t| t.query_types.iter().find(|q| q.query_type == name));
        let mut first = true;
        for p in &r.policies {
            let Some(stats) = p.stats.query_types.get(&query_type) else {
                continue;
            };
            let paper = published
                .and_then(|t| t.cell_of(&name, &p.name))
                .map(|c| c.1);
            let mut row = if first {
                type_cells(&name, stats, paper_row)
            } else {
                vec![Cell::default(), Cell::default(), Cell::default()]
            };
            first = false;
            row.push(Cell::from(p.name.as_str()));
            row.extend(query_cells(stats, paper));
            rows.push(row);
        }
    }
    if rows.is_empty() {
        return String::new();
    }
    html_table("Per query type (the paper's in grey)", &headers, &rows)
}

fn type_cells(name: &str, s: &QueryTypeStats, paper: Option<&PaperQueryRow>) -> Vec<Cell> {
    vec![
        Cell::from(name),
        Cell::with_paper(
            s.count.to_string(),
            paper.and_then(|p| p.count).map(|n| n.to_string()),
        ),
        Cell::with_paper(
            format!("{:.2}", s.standalone_s),
            paper.map(|p| format!("{:.2}", p.standalone_s)),
        ),
    ]
}

fn query_cells(s: &QueryTypeStats, paper: Option<&PaperCell>) -> [Cell; 4] {
    let two = |v: f64| format!("{v:.2}");
    [
        Cell::with_paper(two(s.latency_avg_s), paper.map(|c| two(c.latency_avg_s))),
        Cell::with_paper(
            two(s.latency_stddev_s),
            paper.and_then(|c| c.latency_stddev_s).map(two),
        ),
        Cell::with_paper(
            two(s.normalized_latency),
            paper.and_then(|c| c.normalized_latency).map(two),
        ),
        Cell::with_paper(
            s.io_requests.map_or("-".to_string(), |n| format!("{n:.0}")),
            paper.and_then(|c| c.io_requests).map(|n| n.to_string()),
        ),
    ]
}
