//! A self-contained HTML report (no JS): tables as `<table>`s (`html_table`) and
//! inline SVG plots. Figure 5 for all runs (`fig5_chart`) with its table for the
//! `fig5` preset; Figures 6-8 when the runs form their sweep (`sweep_html`); Table 4
//! and the mixed pool's table for their presets; then per run Table 2's tables
//! (`table2_html`), Figure 4 (`fig4`) and, for a run analysed for sharing, the 2012
//! paper's Figure 17 (`sharing`).

use super::html_table::STYLE;
use super::svg::escape;
use super::{mixed_pool, sharing, sweep_html, table2_html, table4};
use crate::bench::BenchReport;
use std::fmt::Write;

pub use super::fig4::figure4;
pub use super::fig5_chart::figure5;

pub fn render(reports: &[BenchReport]) -> String {
    let title = reports.first().map_or("coopscan bench".to_string(), |r| {
        format!("coopscan bench: {}", r.params.preset)
    });
    let mut out = String::new();
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>{}</title>\
         <style>{STYLE}</style></head><body>\n<h1>{}</h1>\n",
        escape(&title),
        escape(&title)
    );
    out.push_str("<h2>Figure 5: stream time and normalized latency relative to relevance</h2>\n");
    out.push_str(&figure5(reports));
    out.push_str(&sweep_html::fig5_extras(reports));
    out.push_str(&sweep_html::line_figure(reports));
    if let Some(families) = table4::table4_families(reports) {
        out.push_str("<h2>Table 4: DSM, column overlap</h2>\n");
        out.push_str(&table4::html(&families));
    }
    if let Some(rows) = mixed_pool::mixed_pool_rows(reports) {
        out.push_str("<h2>Scans and CScans in one pool</h2>\n");
        out.push_str(&mixed_pool::html(&rows));
    }
    for report in reports {
        let _ = writeln!(out, "<h2>{}</h2>", escape(&report.params.label));
        out.push_str(&table2_html::render(report));
        out.push_str(
            "<h3>Figure 4: chunk loads over time (blue: FAST, red: SLOW, grey: untagged)</h3>\n",
        );
        out.push_str(&figure4(report));
        out.push_str(&sharing::html(report));
    }
    out.push_str("</body></html>\n");
    out
}
