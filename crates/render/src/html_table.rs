//! The one writer of the HTML report's tables: a header row and rows of cells, numbers
//! right-aligned, the paper's published number (where there is one) beside ours in
//! grey. [`STYLE`] is the report's whole stylesheet.

use crate::svg::escape;
use std::fmt::Write;

/// The report's inline stylesheet: readable tables, grey paper numbers and notes.
pub const STYLE: &str = "body{font-family:sans-serif;margin:2em;max-width:1400px}\
    table{border-collapse:collapse;margin:0.5em 0 1.5em;font-size:13px}\
    caption{text-align:left;font-weight:bold;padding:4px 0}\
    th,td{padding:3px 10px;border-bottom:1px solid #ddd;text-align:left;vertical-align:top}\
    th{background:#f2f2f2}\
    .num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}\
    .paper{color:#888;margin-left:0.4em}\
    p.note{color:#555;font-size:13px}\
    figure{margin:1em 0}";

/// One cell: our value and, where the paper published one, the paper's.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Cell {
    pub ours: String,
    pub paper: Option<String>,
}

impl Cell {
    pub fn with_paper(ours: impl Into<String>, paper: Option<String>) -> Cell {
        Cell {
            ours: ours.into(),
            paper,
        }
    }

    /// A cell is a number (right-aligned) when it starts with a digit, a sign before
    /// a digit, or is the missing-value dash.
    fn is_numeric(&self) -> bool {
        let t = self.ours.trim();
        let unsigned = t.strip_prefix(['-', '+', '÷', '×']).unwrap_or(t);
        t == "-" || unsigned.starts_with(|c: char| c.is_ascii_digit())
    }
}

impl From<String> for Cell {
    fn from(ours: String) -> Cell {
        Cell { ours, paper: None }
    }
}

impl From<&str> for Cell {
    fn from(ours: &str) -> Cell {
        Cell::from(ours.to_string())
    }
}

/// A `<table>` with `caption` (none when empty), a header row and `rows`. A header is
/// right-aligned when the column's cells are all numbers.
pub fn html_table(caption: &str, headers: &[String], rows: &[Vec<Cell>]) -> String {
    let mut out = String::from("<table>\n");
    if !caption.is_empty() {
        let _ = writeln!(out, "<caption>{}</caption>", escape(caption));
    }
    out.push_str("<thead><tr>");
    for (i, h) in headers.iter().enumerate() {
        let numeric =
            !rows.is_empty() && rows.iter().all(|r| r.get(i).is_none_or(|c| c.is_numeric()));
        let _ = write!(out, "<th{}>{}</th>", class(numeric), escape(h));
    }
    out.push_str("</tr></thead>\n<tbody>\n");
    for row in rows {
        out.push_str("<tr>");
        for cell in row {
            out.push_str(&td(cell));
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</tbody></table>\n");
    out
}

fn class(numeric: bool) -> &'static str {
    if numeric {
        " class=\"num\""
    } else {
        ""
    }
}

fn td(cell: &Cell) -> String {
    let paper = cell.paper.as_deref().map_or(String::new(), |p| {
        format!("<span class=\"paper\">({})</span>", escape(p))
    });
    format!(
        "<td{}>{}{paper}</td>",
        class(cell.is_numeric()),
        escape(&cell.ours)
    )
}

/// Lines of text as a grey paragraph (a table's notes), escaped.
pub fn note(lines: &str) -> String {
    let escaped: Vec<String> = lines
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(escape)
        .collect();
    if escaped.is_empty() {
        return String::new();
    }
    format!("<p class=\"note\">{}</p>\n", escaped.join("<br>"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_align_right_and_the_paper_sits_beside_ours() {
        let headers = vec!["policy".to_string(), "time".to_string()];
        let rows = vec![vec![
            Cell::from("a<b"),
            Cell::with_paper("12.5", Some("20.1".to_string())),
        ]];
        let out = html_table("T", &headers, &rows);
        assert!(out.contains("<caption>T</caption>"));
        assert!(out.contains("<th>policy</th><th class=\"num\">time</th>"));
        assert!(out.contains("<td>a&lt;b</td>"));
        assert!(out.contains("<td class=\"num\">12.5<span class=\"paper\">(20.1)</span></td>"));
        assert!(Cell::from("-").is_numeric() && Cell::from("-0.5").is_numeric());
        assert!(!Cell::from("F-01").is_numeric());
    }
}
