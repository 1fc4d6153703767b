//! One panel of a line chart in SVG: a line per policy through its (x, value) points,
//! x ticks at the swept values (linear from 0, or log for doubling sweeps), y from 0.

use super::svg::Svg;
use super::sweep_text::format_x;

const TICK: f64 = 4.0;
const X_TICK_GAP: f64 = 13.0;
const X_LABEL_GAP: f64 = 28.0;
const TITLE_GAP: f64 = 8.0;
const MARKER_RADIUS: f64 = 2.5;
const Y_HEADROOM: f64 = 1.05;
/// The y axis ends at one of these × a power of ten, so its ticks read as round numbers.
const ROUND_STEPS: [f64; 6] = [1.0, 2.0, 2.5, 4.0, 5.0, 10.0];
/// Decimals a tick label keeps at most (its value is a round step, see [`round_up`]).
const TICK_DECIMALS: i32 = 6;
/// Ticks at 0, ½ and 1 of the y range: enough to read a value off a panel this small.
const Y_TICKS: [f64; 3] = [0.0, 0.5, 1.0];
const AXIS_COLOR: &str = "#333";
const GRID_COLOR: &str = "#e5e5e5";

/// Where a panel's plot area goes in the SVG (axes' labels go outside it).
#[derive(Clone, Copy, Debug)]
pub struct Area {
    pub left: f64,
    pub top: f64,
    pub width: f64,
    pub height: f64,
}

pub struct Line<'a> {
    pub name: &'a str,
    pub color: &'a str,
    /// Data coordinates, x ascending.
    pub points: Vec<(f64, f64)>,
}

pub struct Panel<'a> {
    pub title: &'a str,
    pub x_label: &'a str,
    /// The swept x values: the ticks.
    pub xs: &'a [f64],
    pub log_x: bool,
    pub lines: Vec<Line<'a>>,
    /// A dot at every point: for a few swept values, not for a dense time series.
    pub markers: bool,
}

/// Maps data to the area: x over the swept range, y from 0 to the largest value.
struct Scale {
    area: Area,
    x_min: f64,
    x_max: f64,
    log_x: bool,
    y_max: f64,
}

impl Scale {
    fn new(area: Area, panel: &Panel<'_>) -> Scale {
        let x_max = panel.xs.iter().copied().fold(0.0, f64::max);
        let x_min = panel.xs.iter().copied().fold(x_max, f64::min);
        // A log axis needs positive values; anything else is drawn linearly from 0.
        let log_x = panel.log_x && x_min > 0.0;
        let y_top = panel
            .lines
            .iter()
            .flat_map(|l| &l.points)
            .map(|p| p.1)
            .fold(0.0, f64::max);
        let y_max = if y_top > 0.0 {
            round_up(y_top * Y_HEADROOM)
        } else {
            1.0
        };
        Scale {
            area,
            x_min: if log_x { x_min } else { 0.0 },
            x_max,
            log_x,
            y_max,
        }
    }

    fn x(&self, value: f64) -> f64 {
        let (lo, hi, v) = if self.log_x {
            (self.x_min.log2(), self.x_max.log2(), value.log2())
        } else {
            (self.x_min, self.x_max, value)
        };
        let fraction = if hi > lo { (v - lo) / (hi - lo) } else { 0.5 };
        self.area.left + self.area.width * fraction.clamp(0.0, 1.0)
    }

    fn y(&self, value: f64) -> f64 {
        let fraction = (value / self.y_max).clamp(0.0, 1.0);
        self.area.top + self.area.height * (1.0 - fraction)
    }
}

pub fn draw(svg: &mut Svg, area: Area, panel: &Panel<'_>) {
    let scale = Scale::new(area, panel);
    axes(svg, &scale, panel);
    for line in &panel.lines {
        let points: Vec<(f64, f64)> = line
            .points
            .iter()
            .map(|&(x, y)| (scale.x(x), scale.y(y)))
            .collect();
        if points.is_empty() {
            continue;
        }
        svg.polyline(&points, line.color, line.name);
        if !panel.markers {
            continue;
        }
        for (x, y) in points {
            svg.point(x, y, MARKER_RADIUS, line.color, line.name);
        }
    }
}

fn axes(svg: &mut Svg, scale: &Scale, panel: &Panel<'_>) {
    let a = scale.area;
    let bottom = a.top + a.height;
    let x_scale = if scale.log_x { "log" } else { "linear" };
    svg.plot_area((a.left, a.top, a.width, a.height), [x_scale, "linear"]);
    for fraction in Y_TICKS {
        let value = scale.y_max * fraction;
        let y = scale.y(value);
        svg.line(a.left, y, a.left + a.width, y, GRID_COLOR);
        svg.text(a.left - TICK, y + TICK, "end", &y_tick(value));
    }
    svg.line(a.left, bottom, a.left + a.width, bottom, AXIS_COLOR);
    svg.line(a.left, a.top, a.left, bottom, AXIS_COLOR);
    for &x in panel.xs {
        let px = scale.x(x);
        svg.line(px, bottom, px, bottom + TICK, AXIS_COLOR);
        svg.text(px, bottom + X_TICK_GAP, "middle", &format_x(x));
    }
    let x_label = if scale.log_x {
        format!("{} (log scale)", panel.x_label)
    } else {
        panel.x_label.to_string()
    };
    svg.text(
        a.left + a.width / 2.0,
        bottom + X_LABEL_GAP,
        "middle",
        &x_label,
    );
    svg.text(
        a.left + a.width / 2.0,
        a.top - TITLE_GAP,
        "middle",
        panel.title,
    );
}

/// The smallest `step × 10^k` (a [`ROUND_STEPS`] entry) at or above `value` > 0.
fn round_up(value: f64) -> f64 {
    let k = value.log10().floor() as i32;
    // Dividing by 10^-k (exact for small k) keeps 0.15 from becoming 0.15000000000000002.
    let scale = |step: f64| {
        if k >= 0 {
            step * 10f64.powi(k)
        } else {
            step / 10f64.powi(-k)
        }
    };
    ROUND_STEPS
        .iter()
        .map(|&step| scale(step))
        .find(|&v| v >= value)
        .unwrap_or(value)
}

/// A round value as written: 4000, 12.5, 0.075.
fn y_tick(value: f64) -> String {
    let unit = 10f64.powi(TICK_DECIMALS);
    format!("{}", (value * unit).round() / unit)
}

/// Policy names with their colours in a row, from (`left`, `y`); returns where the
/// row ends.
pub fn legend(svg: &mut Svg, left: f64, y: f64, entries: &[(&str, &str)]) -> f64 {
    const SWATCH: f64 = 18.0;
    const CHAR_WIDTH: f64 = 7.0;
    const GAP: f64 = 16.0;
    let mut x = left;
    for (name, color) in entries {
        svg.rect(x, y - TICK - 1.0, SWATCH, 3.0, color);
        svg.text(x + SWATCH + TICK, y, "start", name);
        x += SWATCH + TICK + CHAR_WIDTH * name.chars().count() as f64 + GAP;
    }
    x
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn axis_ends_at_a_round_value() {
        assert_eq!(round_up(3968.0), 4000.0);
        assert_eq!(round_up(41.8), 50.0);
        assert_eq!(round_up(0.132), 0.2);
        assert_eq!(round_up(0.0231), 0.025);
        assert_eq!(round_up(1.0), 1.0);
        assert_eq!(y_tick(0.075), "0.075");
        assert_eq!(y_tick(12.5), "12.5");
        assert_eq!(y_tick(2000.0), "2000");
    }
}
