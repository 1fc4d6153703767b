//! The timeline picture of the 2004 report's Figures 3 and 4, drawn with the reports'
//! one renderer (`coopscan_render`): for each policy, chunks (rows) × time with loads
//! (dark), cached intervals (white) and which query processes what (coloured lines);
//! below it waiting queries, busy CPUs, busy disk, and the time axis.

use crate::report::PresetReport;
use crate::result::RunResult;
use crate::timeline::{Series, Timeline};
use coopscan_render::axis::{tick_label, Axis};
use coopscan_render::palette::{nth_color, SERIES_COLORS};
use coopscan_render::svg::Svg;

const WIDTH: f64 = 1100.0;
const LEFT: f64 = 70.0;
const PLOT_W: f64 = 1000.0;
const CHUNK_AREA_MAX_H: f64 = 360.0;
const ROW_MAX_H: f64 = 16.0;
const SERIES_H: f64 = 34.0;
const PANEL_GAP: f64 = 40.0;
const TITLE_H: f64 = 24.0;
/// The narrowest interval drawn, so an instant still shows.
const MIN_W: f64 = 0.3;

/// One panel's chunk rows: where they start and how tall each is.
struct Rows {
    top: f64,
    height: f64,
}

impl Rows {
    fn y(&self, chunk: u32) -> f64 {
        self.top + self.height * f64::from(chunk)
    }
}

/// One SVG document with a panel per policy run, on a shared time axis.
pub fn timeline_svg(report: &PresetReport) -> String {
    let t_max = report
        .runs
        .iter()
        .map(|r| r.total_time_s)
        .fold(0.0, f64::max)
        .max(1e-9);
    let time = Axis::linear(t_max);
    let chunks = report.config.chunk_count;
    let row_h = (CHUNK_AREA_MAX_H / f64::from(chunks)).min(ROW_MAX_H);
    let panel_h = TITLE_H + row_h * f64::from(chunks) + 3.0 * (SERIES_H + 6.0) + 20.0;
    let height = PANEL_GAP + panel_h * report.runs.len() as f64;
    let mut svg = Svg::new(WIDTH, height.ceil());
    svg.rect(0.0, 0.0, WIDTH, height.ceil(), "white");
    let title = format!("preset {} — chunk × time per policy", report.preset);
    svg.heading(LEFT, 20.0, 14.0, &title);
    for (i, run) in report.runs.iter().enumerate() {
        let top = PANEL_GAP + panel_h * i as f64;
        panel(&mut svg, run, top, row_h, chunks, time);
    }
    svg.finish()
}

fn panel(svg: &mut Svg, run: &RunResult, top: f64, row_h: f64, chunks: u32, time: Axis) {
    let x = |t: f64| LEFT + PLOT_W * time.fraction(t);
    let title = format!(
        "{}: {} chunk loads, finished at {:.2} s",
        run.policy, run.chunk_loads, run.total_time_s
    );
    svg.heading(LEFT, top + 14.0, 13.0, &title);
    let Some(tl) = run.timeline.as_ref() else {
        return;
    };
    let rows = Rows {
        top: top + TITLE_H,
        height: row_h,
    };
    let chunk_h = row_h * f64::from(chunks);
    svg.rect(LEFT, rows.top, PLOT_W, chunk_h, "#eeeeee");
    for c in &tl.cached {
        let w = (x(c.to_s) - x(c.from_s)).max(MIN_W);
        let area = (x(c.from_s), rows.y(c.chunk), w, row_h);
        svg.outlined_rect(area, "white", ("#999", 0.4));
    }
    for l in &tl.loads {
        let w = (x(l.to_s) - x(l.from_s)).max(MIN_W);
        svg.rect(x(l.from_s), rows.y(l.chunk), w, row_h, "#333");
    }
    processing_lines(svg, tl, &x, &rows);
    svg.text(4.0, rows.top + 10.0, "start", "chunks");
    let mut y = rows.top + chunk_h + 6.0;
    let series: [(&str, &Series); 3] = [
        ("I/O wait", &tl.io_waiting),
        ("CPU", &tl.cpu_busy),
        ("disk", &tl.disk_busy),
    ];
    for (label, data) in series {
        step_chart(svg, label, data, y, &x, run.total_time_s);
        y += SERIES_H + 6.0;
    }
    time_axis(svg, y, time);
}

/// A line per (query, chunk) processed, in the query's lane of the chunk's row.
fn processing_lines(svg: &mut Svg, tl: &Timeline, x: &impl Fn(f64) -> f64, rows: &Rows) {
    let lanes = SERIES_COLORS as f64;
    let width = (rows.height / lanes).clamp(0.3, 2.0);
    for p in &tl.processing {
        let lane = (p.query % SERIES_COLORS) as f64;
        let y = rows.y(p.chunk) + rows.height * (lane + 0.5) / lanes;
        svg.wide_line((x(p.from_s), y), (x(p.to_s), y), nth_color(p.query), width);
    }
}

fn step_chart(
    svg: &mut Svg,
    label: &str,
    data: &Series,
    top: f64,
    x: &impl Fn(f64) -> f64,
    end: f64,
) {
    let max = data.iter().map(|(_, v)| *v).max().unwrap_or(0).max(1);
    let y = |v: u32| top + SERIES_H - SERIES_H * f64::from(v) / f64::from(max);
    svg.rect(LEFT, top, PLOT_W, SERIES_H, "#f6f6f6");
    let name = format!("{label} (max {max})");
    svg.text(4.0, top + SERIES_H / 2.0 + 4.0, "start", &name);
    let mut points = Vec::with_capacity(2 * data.len() + 1);
    let mut last = 0;
    for &(t, v) in data {
        points.push((x(t), y(last)));
        points.push((x(t), y(v)));
        last = v;
    }
    points.push((x(end), y(last)));
    svg.polyline(&points, "#1f77b4", label);
}

/// Ticks and labels of the time axis (the renderer's, as every chart's).
fn time_axis(svg: &mut Svg, top: f64, time: Axis) {
    for t in time.ticks() {
        let x = LEFT + PLOT_W * time.fraction(t);
        svg.line(x, top, x, top + 4.0, "#666");
        svg.text(x, top + 15.0, "middle", &format!("{}s", tick_label(t)));
    }
}
