//! Table 4 of the 2007 paper from a `table4` preset's runs (one per family of column
//! types): per family and policy the I/O requests and query latencies, beside the
//! paper's, and relevance ÷ normal ours and theirs. The paper's I/Os count column
//! chunks read; ours count device requests, one per column piece, the same unit.

use super::html_table::{html_table, note, Cell};
use crate::bench::{BenchReport, PolicyResult};
use coopscan_paper::stats::mean;
use coopscan_paper::table4::{paper_of, PaperCell};
use serde::Serialize;
use std::fmt::Write;

/// One policy's numbers in one family.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Table4Cell {
    pub policy: String,
    pub io_requests: u64,
    pub avg_latency_s: f64,
    pub stddev_latency_s: f64,
    pub avg_normalized_latency: f64,
}

/// One family (one run of the preset).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Table4Family {
    /// "ABC,BCD" (the mix's name without its range).
    pub family: String,
    pub cells: Vec<Table4Cell>,
    /// The paper's (normal, relevance): I/Os, average and stddev latency (s).
    pub paper: Option<[PaperCell; 2]>,
}

impl Table4Family {
    fn cell(&self, policy: &str) -> Option<&Table4Cell> {
        self.cells.iter().find(|c| c.policy == policy)
    }

    /// Relevance issues fewer I/Os and has a lower average normalized latency than
    /// normal (`None` without both).
    pub fn relevance_wins(&self) -> Option<bool> {
        let (n, r) = (self.cell("normal")?, self.cell("relevance")?);
        Some(r.io_requests < n.io_requests && r.avg_normalized_latency < n.avg_normalized_latency)
    }
}

/// Table 4 from `reports` when they are a `table4` preset's runs.
pub fn table4_families(reports: &[BenchReport]) -> Option<Vec<Table4Family>> {
    let all_table4 = !reports.is_empty() && reports.iter().all(|r| r.params.preset == "table4");
    all_table4.then(|| reports.iter().map(family_of).collect())
}

fn family_of(report: &BenchReport) -> Table4Family {
    let name = &report.params.mix.name;
    let family = name
        .rsplit_once('-')
        .map_or(name.as_str(), |(f, _)| f)
        .to_string();
    Table4Family {
        paper: paper_of(&family).copied(),
        cells: report.policies.iter().map(cell_of).collect(),
        family,
    }
}

fn cell_of(p: &PolicyResult) -> Table4Cell {
    let latencies: Vec<f64> = p.runs.iter().map(|r| r.latency().as_secs_f64()).collect();
    let avg = mean(latencies.iter().copied());
    let variance = mean(latencies.iter().map(|l| (l - avg) * (l - avg)));
    Table4Cell {
        policy: p.name.clone(),
        io_requests: p.stats.io_requests,
        avg_latency_s: avg,
        stddev_latency_s: variance.sqrt(),
        avg_normalized_latency: p.stats.avg_normalized_latency,
    }
}

const FAMILY_WIDTH: usize = 17;

/// The families as text, then how many relevance wins on both axes.
pub fn render(families: &[Table4Family]) -> String {
    let mut out = String::from(
        "Table 4 (DSM, column overlap): I/O requests, avg ± stddev latency (s), avg \
         normalized latency; paper's I/Os and latency in parentheses\n",
    );
    let policy_width = families
        .iter()
        .flat_map(|f| f.cells.iter().map(|c| c.policy.len()))
        .max()
        .unwrap_or(0)
        + 1;
    for f in families {
        for (k, c) in f.cells.iter().enumerate() {
            let label = if k == 0 { f.family.as_str() } else { "" };
            let paper = paper_cell(f, &c.policy).map_or(String::new(), |(io, avg, sd)| {
                format!("  ({io}, {avg:.2} ± {sd:.2})")
            });
            let _ = writeln!(
                out,
                "{label:<FAMILY_WIDTH$}{:<policy_width$}{:>7} I/Os {:>8.2} ± {:>6.2} s  norm {:>5.2}{paper}",
                c.policy,
                c.io_requests,
                c.avg_latency_s,
                c.stddev_latency_s,
                c.avg_normalized_latency
            );
        }
        if let (Some(n), Some(r)) = (f.cell("normal"), f.cell("relevance")) {
            let theirs = f.paper.map_or(String::new(), |[pn, pr]| {
                format!(
                    "; paper {:.2} × / {:.2} ×",
                    pr.0 as f64 / pn.0 as f64,
                    pr.1 / pn.1
                )
            });
            let _ = writeln!(
                out,
                "{:<FAMILY_WIDTH$}relevance ÷ normal: I/Os / latency ours {:.2} × / {:.2} ×{theirs}",
                "",
                r.io_requests as f64 / n.io_requests.max(1) as f64,
                r.avg_latency_s / n.avg_latency_s
            );
        }
    }
    out.push_str(&summary(families));
    out.push('\n');
    out
}

/// The paper's (I/Os, avg, stddev) for `policy` in family `f`.
fn paper_cell(f: &Table4Family, policy: &str) -> Option<PaperCell> {
    let [normal, relevance] = f.paper?;
    match policy {
        "normal" => Some(normal),
        "relevance" => Some(relevance),
        _ => None,
    }
}

fn summary(families: &[Table4Family]) -> String {
    let judged: Vec<bool> = families
        .iter()
        .filter_map(Table4Family::relevance_wins)
        .collect();
    let wins = judged.iter().filter(|w| **w).count();
    format!(
        "relevance: fewer I/Os and lower normalized latency than normal in {wins} of {} \
         families (paper: all 5)\n",
        judged.len()
    )
}

const HTML_HEADERS: [&str; 6] = [
    "family",
    "policy",
    "I/Os",
    "avg latency (s)",
    "stddev (s)",
    "avg normalized latency",
];

/// The families as an HTML table, the paper's numbers beside ours, then the summary.
pub fn html(families: &[Table4Family]) -> String {
    let headers: Vec<String> = HTML_HEADERS.iter().map(|h| h.to_string()).collect();
    let mut rows = Vec::new();
    for f in families {
        for (k, c) in f.cells.iter().enumerate() {
            let family = if k == 0 { f.family.as_str() } else { "" };
            let paper = paper_cell(f, &c.policy);
            rows.push(vec![
                Cell::from(family),
                Cell::from(c.policy.as_str()),
                Cell::with_paper(c.io_requests.to_string(), paper.map(|p| p.0.to_string())),
                Cell::with_paper(
                    format!("{:.2}", c.avg_latency_s),
                    paper.map(|p| format!("{:.2}", p.1)),
                ),
                Cell::with_paper(
                    format!("{:.2}", c.stddev_latency_s),
                    paper.map(|p| format!("{:.2}", p.2)),
                ),
                Cell::from(format!("{:.2}", c.avg_normalized_latency)),
            ]);
        }
        rows.extend(ratio_row(f));
    }
    let caption = "I/O requests and latencies per family; the paper's in grey";
    let mut out = html_table(caption, &headers, &rows);
    out.push_str(&note(&summary(families)));
    out
}

/// Relevance ÷ normal, ours and the paper's.
fn ratio_row(f: &Table4Family) -> Option<Vec<Cell>> {
    let (n, r) = (f.cell("normal")?, f.cell("relevance")?);
    let times = |x: f64| format!("{x:.2} ×");
    let paper = f
        .paper
        .map(|[pn, pr]| (pr.0 as f64 / pn.0.max(1) as f64, pr.1 / pn.1));
    Some(vec![
        Cell::default(),
        Cell::from("relevance ÷ normal"),
        Cell::with_paper(
            times(r.io_requests as f64 / n.io_requests.max(1) as f64),
            paper.map(|p| times(p.0)),
        ),
        Cell::with_paper(
            times(r.avg_latency_s / n.avg_latency_s),
            paper.map(|p| times(p.1)),
        ),
        Cell::default(),
        Cell::default(),
    ])
}
