//! Table 2's shape as text: system statistics (one column per policy, the paper's value
//! in parentheses), then per query type our row with the paper's row under it; then
//! Figure 17's table when the run was analysed for sharing.

use crate::bench::{BenchReport, PolicyResult};
use crate::paper;
use crate::presets::published_for;
use crate::stats::{PolicyStats, QueryTypeStats};
use std::fmt::Write;

/// A preset's sweep tables (Figures 5-8), printed after its runs; "" for no sweep.
pub use super::sweep_text::render_sweep;

const LABEL_WIDTH: usize = 24;
const SYSTEM_CELL_WIDTH: usize = 20;
const BYTES_PER_MB: f64 = 1_000_000.0;
const PERCENT: f64 = 100.0;
/// A row the paper has no number for.
pub(crate) const NO_PAPER_VALUE: &str = "-";

pub fn render(report: &BenchReport) -> String {
    let mut out = header_text(report);
    system_table(&mut out, report);
    query_table(&mut out, report);
    refresh_lines(&mut out, report);
    out.push_str(&super::sharing::text(report));
    out
}

/// The refresh stream's pairs per policy, when the run had one.
fn refresh_lines(out: &mut String, r: &BenchReport) {
    let Some(refresh) = r.params.refresh else {
        return;
    };
    let _ = writeln!(
        out,
        "\nrefresh stream: a pair every {} s, RF1 inserting {} ‰ of the tuples, RF2 deleting them",
        refresh.every_s, refresh.per_mille
    );
    for p in &r.policies {
        match &p.stats.refresh {
            Some(s) => {
                let _ = writeln!(
                    out,
                    "  {:<12} {} pairs of {} tuples, median RF1 {:.3} s, RF2 {:.3} s",
                    p.name, s.pairs, s.rows_per_pair, s.insert_median_s, s.delete_median_s
                );
            }
            None => {
                let _ = writeln!(
                    out,
                    "  {:<12} no pair was due before the streams ended",
                    p.name
                );
            }
        }
    }
}

/// How many queries read in table order, when the run asked for any.
fn in_order_note(r: &BenchReport) -> String {
    if r.params.in_order_pct == 0 {
        return String::new();
    }
    // Every policy runs the same workload: the first one's runs stand for all.
    let (in_order, queries) = r
        .policies
        .first()
        .map_or((0, 0), |p| (p.in_order_queries(), p.runs.len()));
    format!(
        "; {in_order} of {queries} queries in table order (in-order Scans, each drawn \
         with p = {} %), the rest CScans",
        r.params.in_order_pct
    )
}

/// The run's parameters, calibration and standalone times: the lines above the tables.
pub(crate) fn header_text(r: &BenchReport) -> String {
    let mut out = String::new();
    header(&mut out, r);
    out
}

fn header(out: &mut String, r: &BenchReport) {
    let p = &r.params;
    let bandwidth = r
        .bandwidth_mb_s
        .map_or("unthrottled".to_string(), |b| format!("{b:.1} MB/s"));
    let _ = writeln!(
        out,
        "{} [{}]: {} streams × {} queries, mix {}, {} table, buffer {}% of {:.1} MB, \
         chunk {} MB, bandwidth {bandwidth}, stagger {:.2} s, seed {}",
        p.preset,
        p.label,
        p.streams,
        p.queries_per_stream,
        p.mix,
        p.layout.to_uppercase(),
        p.buffer_pct,
        r.table.bytes as f64 / BYTES_PER_MB,
        p.chunk_mb,
        r.stagger_s,
        p.seed
    );
    let model = match p.query_threads {
        1 => "one core per query (the paper's model)".to_string(),
        n => format!("up to {n} cores per query"),
    };
    let shares = match p.cpu_shares.as_str() {
        "equal" => "",
        _ => ", cores shared shorter scans first",
    };
    let _ = writeln!(out, "execution: {model}{shares}{}", in_order_note(r));
    if let Some(c) = &r.calibration {
        let _ = writeln!(
            out,
            "calibration: {:.1} MB/s — {}",
            c.bandwidth_mb_s, c.note
        );
        if let Some(s) = &c.samples {
            let _ = writeln!(
                out,
                "  F-100 CPU {} s, S-100 CPU {} s (median [min–max] of {} after {} warm-up)",
                s.fast_cpu_s.describe(2),
                s.slow_cpu_s.describe(2),
                s.fast_cpu_s.0.len(),
                s.warmups
            );
        }
        if let Some(file) = &c.replayed_from {
            let _ = writeln!(out, "  replayed from {file}");
        }
    }
    let alone: Vec<String> = r
        .standalone_samples
        .iter()
        .map(|(t, s)| format!("{t} {}", s.describe(2)))
        .collect();
    let _ = writeln!(
        out,
        "standalone (median [min–max] of {}): {}",
        p.standalone_runs,
        alone.join(", ")
    );
    if let (Some(got), Some(asked)) = (crate::bench::device_shortfall(r), r.bandwidth_mb_s) {
        let _ = writeln!(
            out,
            "note: a lone F-100 read at {got:.0} MB/s of the {asked:.0} MB/s asked: the disk \
             is slower than the throttle, so this run is more I/O bound than the calibration's \
             balance"
        );
    }
    let beside = published_for(&r.params).map_or(String::new(), |t| {
        format!("; (paper's {} in parentheses)", t.name)
    });
    let _ = writeln!(out, "times in seconds{beside}\n");
}

pub(crate) type SystemRow = (
    &'static str,
    fn(&PolicyStats) -> String,
    fn(&paper::PaperSystem) -> String,
);

pub(crate) const SYSTEM_ROWS: &[SystemRow] = &[
    (
        "Avg. stream time",
        |s| format!("{:.2}", s.avg_stream_time_s),
        |p| format!("{:.2}", p.avg_stream_time_s),
    ),
    (
        "Avg. normalized latency",
        |s| format!("{:.2}", s.avg_normalized_latency),
        |p| format!("{:.2}", p.avg_normalized_latency),
    ),
    (
        "Total time",
        |s| format!("{:.2}", s.total_time_s),
        |p| format!("{:.2}", p.total_time_s),
    ),
    (
        "CPU use",
        |s| format!("{:.2}%", s.cpu_use * PERCENT),
        |p| format!("{:.2}%", p.cpu_use * PERCENT),
    ),
    (
        "I/O requests",
        |s| s.io_requests.to_string(),
        |p| p.io_requests.to_string(),
    ),
    (
        "I/O MB",
        |s| format!("{:.1}", s.io_bytes as f64 / BYTES_PER_MB),
        |_| NO_PAPER_VALUE.to_string(),
    ),
    (
        "Chunk loads",
        |s| s.chunk_loads.to_string(),
        |_| NO_PAPER_VALUE.to_string(),
    ),
    (
        "OPT loads (same refs)",
        |s| s.opt_chunk_loads.map_or("-".to_string(), |n| n.to_string()),
        |_| NO_PAPER_VALUE.to_string(),
    ),
    (
        "Scheduling s (calls)",
        |s| match (s.scheduling_s, s.abm_calls) {
            (Some(t), Some(n)) => format!("{t:.3} ({n})"),
            _ => "-".to_string(),
        },
        |_| NO_PAPER_VALUE.to_string(),
    ),
    (
        "Results checked",
        |s| format!("{}/{}", s.results_checked, s.queries),
        |_| NO_PAPER_VALUE.to_string(),
    ),
];

fn system_table(out: &mut String, r: &BenchReport) {
    let _ = write!(out, "{:<LABEL_WIDTH$}", "System statistics");
    for p in &r.policies {
        let _ = write!(out, "{:>SYSTEM_CELL_WIDTH$}", p.name);
    }
    out.push('\n');
    for (label, ours, theirs) in SYSTEM_ROWS {
        let _ = write!(out, "{label:<LABEL_WIDTH$}");
        for p in &r.policies {
            let paper = paper_system(r, &p.name)
                .map(theirs)
                .filter(|v| v != NO_PAPER_VALUE)
                .map_or(String::new(), |v| format!(" ({v})"));
            let _ = write!(
                out,
                "{:>SYSTEM_CELL_WIDTH$}",
                format!("{}{paper}", ours(&p.stats))
            );
        }
        out.push('\n');
    }
    out.push('\n');
}

/// The paper's numbers apply to Table 2's mix only (Table 3's in DSM).
pub(crate) fn paper_system(r: &BenchReport, policy: &str) -> Option<&'static paper::PaperSystem> {
    published_for(&r.params)?.system_of(policy)
}

fn query_table(out: &mut String, r: &BenchReport) {
    let _ = write!(out, "{:<8}{:>6}{:>9} ", "query", "count", "alone");
    for p in &r.policies {
        let _ = write!(out, "| {:<31}", p.name);
    }
    out.push('\n');
    let _ = write!(out, "{:<24}", "");
    for _ in &r.policies {
        let _ = write!(
            out,
            "|{:>8}{:>8}{:>8}{:>7} ",
            "avg", "stddev", "norm", "I/Os"
        );
    }
    out.push('\n');
    for query_type in r.params.mix.query_types() {
        let ours: Vec<Option<&QueryTypeStats>> = r
            .policies
            .iter()
            .map(|p| p.stats.query_types.get(&query_type))
            .collect();
        let Some(first) = ours.iter().flatten().next() else {
            continue;
        };
        let name = query_type.to_string();
        let _ = write!(
            out,
            "{name:<8}{:>6}{:>9.2} ",
            first.count, first.standalone_s
        );
        for stats in &ours {
            out.push_str(&our_cell(*stats));
        }
        out.push('\n');
        paper_row(out, r, &name);
    }
}

fn our_cell(stats: Option<&QueryTypeStats>) -> String {
    match stats {
        Some(s) => {
            let io = s.io_requests.map_or("-".to_string(), |n| format!("{n:.0}"));
            format!(
                "|{:>8.2}{:>8.2}{:>8.2}{:>7} ",
                s.latency_avg_s, s.latency_stddev_s, s.normalized_latency, io
            )
        }
        None => format!("|{:>31} ", "-"),
    }
}

fn paper_row(out: &mut String, r: &BenchReport, name: &str) {
    let Some(table) = published_for(&r.params) else {
        return;
    };
    let Some(row) = table.query_types.iter().find(|row| row.query_type == name) else {
        return;
    };
    let count = row
        .count
        .map_or(NO_PAPER_VALUE.to_string(), |n| n.to_string());
    let _ = write!(out, "{:<8}{count:>6}{:>9.2} ", " (paper)", row.standalone_s);
    let or_dash = |v: Option<f64>| v.map_or(NO_PAPER_VALUE.to_string(), |v| format!("{v:.2}"));
    for p in &r.policies {
        match table.cell_of(name, policy_name(p)) {
            Some((_, c)) => {
                let io = c.io_requests.map_or("-".to_string(), |n| n.to_string());
                let _ = write!(
                    out,
                    "|{:>8.2}{:>8}{:>8}{:>7} ",
                    c.latency_avg_s,
                    or_dash(c.latency_stddev_s),
                    or_dash(c.normalized_latency),
                    io
                );
            }
            None => {
                let _ = write!(out, "|{:>31} ", "-");
            }
        }
    }
    out.push('\n');
}

fn policy_name(p: &PolicyResult) -> &str {
    &p.name
}
