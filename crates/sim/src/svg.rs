//! The timeline picture of the 2004 report's Figures 3 and 4, hand-written SVG: for each
//! policy, chunks (rows) × time with loads (dark), cached intervals (white) and which
//! query processes what (coloured lines); below it waiting queries, busy CPUs, busy disk.

use crate::report::PresetReport;
use crate::result::RunResult;
use crate::timeline::{Series, Timeline};
use std::fmt::Write;

const WIDTH: f64 = 1100.0;
const LEFT: f64 = 70.0;
const PLOT_W: f64 = 1000.0;
const CHUNK_AREA_MAX_H: f64 = 360.0;
const ROW_MAX_H: f64 = 16.0;
const SERIES_H: f64 = 34.0;
const PANEL_GAP: f64 = 40.0;
const TITLE_H: f64 = 24.0;
const PALETTE: [&str; 8] = [
    "#d62728", "#1f77b4", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#8c564b", "#e377c2",
];

/// One SVG document with a panel per policy run, on a shared time axis.
pub fn timeline_svg(report: &PresetReport) -> String {
    let t_max = report
        .runs
        .iter()
        .map(|r| r.total_time_s)
        .fold(0.0, f64::max)
        .max(1e-9);
    let chunks = report.config.chunk_count;
    let row_h = (CHUNK_AREA_MAX_H / f64::from(chunks)).min(ROW_MAX_H);
    let chunk_h = row_h * f64::from(chunks);
    let panel_h = TITLE_H + chunk_h + 3.0 * (SERIES_H + 6.0) + 20.0;
    let height = PANEL_GAP + panel_h * report.runs.len() as f64;
    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height:.0}" font-family="sans-serif" font-size="11">"#
    );
    let _ = writeln!(s, r#"<rect width="100%" height="100%" fill="white"/>"#);
    let _ = writeln!(
        s,
        r#"<text x="{LEFT}" y="20" font-size="14">preset {} — chunk × time per policy</text>"#,
        report.preset
    );
    for (i, run) in report.runs.iter().enumerate() {
        let top = PANEL_GAP + panel_h * i as f64;
        panel(&mut s, run, top, row_h, chunks, t_max);
    }
    s.push_str("</svg>\n");
    s
}

fn panel(s: &mut String, run: &RunResult, top: f64, row_h: f64, chunks: u32, t_max: f64) {
    let x = |t: f64| LEFT + PLOT_W * t / t_max;
    let _ = writeln!(
        s,
        r#"<text x="{LEFT}" y="{:.1}" font-size="13">{}: {} chunk loads, finished at {:.2} s</text>"#,
        top + 14.0,
        run.policy,
        run.chunk_loads,
        run.total_time_s
    );
    let Some(tl) = run.timeline.as_ref() else {
        return;
    };
    let y0 = top + TITLE_H;
    let row_y = |c: u32| y0 + row_h * f64::from(c);
    let _ = writeln!(
        s,
        r##"<rect x="{LEFT}" y="{y0:.1}" width="{PLOT_W}" height="{:.1}" fill="#eeeeee"/>"##,
        row_h * f64::from(chunks)
    );
    for c in &tl.cached {
        let _ = writeln!(
            s,
            r##"<rect x="{:.2}" y="{:.2}" width="{:.2}" height="{:.2}" fill="white" stroke="#999" stroke-width="0.4"/>"##,
            x(c.from_s),
            row_y(c.chunk),
            (x(c.to_s) - x(c.from_s)).max(0.3),
            row_h
        );
    }
    for l in &tl.loads {
        let _ = writeln!(
            s,
            r##"<rect x="{:.2}" y="{:.2}" width="{:.2}" height="{:.2}" fill="#333"/>"##,
            x(l.from_s),
            row_y(l.chunk),
            (x(l.to_s) - x(l.from_s)).max(0.3),
            row_h
        );
    }
    processing_lines(s, tl, &x, &row_y, row_h);
    let _ = writeln!(s, r#"<text x="4" y="{:.1}">chunks</text>"#, y0 + 10.0);
    let mut y = y0 + row_h * f64::from(chunks) + 6.0;
    let series: [(&str, &Series); 3] = [
        ("I/O wait", &tl.io_waiting),
        ("CPU", &tl.cpu_busy),
        ("disk", &tl.disk_busy),
    ];
    for (label, data) in series {
        step_chart(s, label, data, y, &x, run.total_time_s);
        y += SERIES_H + 6.0;
    }
    axis(s, y, t_max);
}

fn processing_lines(
    s: &mut String,
    tl: &Timeline,
    x: &impl Fn(f64) -> f64,
    row_y: &impl Fn(u32) -> f64,
    row_h: f64,
) {
    let lanes = PALETTE.len() as f64;
    for p in &tl.processing {
        let lane = (p.query % PALETTE.len()) as f64;
        let y = row_y(p.chunk) + row_h * (lane + 0.5) / lanes;
        let _ = writeln!(
            s,
            r#"<line x1="{:.2}" y1="{y:.2}" x2="{:.2}" y2="{y:.2}" stroke="{}" stroke-width="{:.2}"/>"#,
            x(p.from_s),
            x(p.to_s),
            PALETTE[p.query % PALETTE.len()],
            (row_h / lanes).clamp(0.3, 2.0)
        );
    }
}

fn step_chart(
    s: &mut String,
    label: &str,
    data: &Series,
    top: f64,
    x: &impl Fn(f64) -> f64,
    end: f64,
) {
    let max = data.iter().map(|(_, v)| *v).max().unwrap_or(0).max(1);
    let y = |v: u32| top + SERIES_H - SERIES_H * f64::from(v) / f64::from(max);
    let _ = writeln!(
        s,
        r##"<rect x="{LEFT}" y="{top:.1}" width="{PLOT_W}" height="{SERIES_H}" fill="#f6f6f6"/>"##
    );
    let _ = writeln!(
        s,
        r#"<text x="4" y="{:.1}">{label} (max {max})</text>"#,
        top + SERIES_H / 2.0 + 4.0
    );
    let mut points = String::new();
    let mut last = 0;
    for &(t, v) in data {
        let _ = write!(
            points,
            "{:.2},{:.2} {:.2},{:.2} ",
            x(t),
            y(last),
            x(t),
            y(v)
        );
        last = v;
    }
    let _ = write!(points, "{:.2},{:.2}", x(end), y(last));
    let _ = writeln!(
        s,
        r##"<polyline points="{points}" fill="none" stroke="#1f77b4" stroke-width="1"/>"##
    );
}

fn axis(s: &mut String, top: f64, t_max: f64) {
    let step = nice_step(t_max / 10.0);
    let mut t = 0.0;
    while t <= t_max + 1e-9 {
        let x = LEFT + PLOT_W * t / t_max;
        let _ = writeln!(
            s,
            r##"<line x1="{x:.1}" y1="{top:.1}" x2="{x:.1}" y2="{:.1}" stroke="#666"/>"##,
            top + 4.0
        );
        let _ = writeln!(
            s,
            r#"<text x="{x:.1}" y="{:.1}" text-anchor="middle">{t}s</text>"#,
            top + 15.0
        );
        t += step;
    }
}

/// 1, 2 or 5 times a power of ten, at least `raw`.
fn nice_step(raw: f64) -> f64 {
    let p = 10f64.powf(raw.max(1e-9).log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|m| m * p)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * p)
}
