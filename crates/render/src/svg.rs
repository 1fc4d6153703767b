//! A minimal SVG writer (no dependencies, no JS): the few shapes Figures 4-8 need,
//! with every text XML-escaped.

use crate::axis::{tick_label, Axis};
use std::fmt::Write;

pub struct Svg {
    out: String,
}

impl Svg {
    pub fn new(width: f64, height: f64) -> Svg {
        let mut out = String::new();
        let _ = write!(
            out,
            r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="11">"#
        );
        out.push('\n');
        Svg { out }
    }

    pub fn rect(&mut self, x: f64, y: f64, w: f64, h: f64, fill: &str) {
        let _ = writeln!(
            self.out,
            r#"<rect x="{x:.1}" y="{y:.1}" width="{w:.1}" height="{h:.1}" fill="{fill}"/>"#
        );
    }

    pub fn line(&mut self, x1: f64, y1: f64, x2: f64, y2: f64, stroke: &str) {
        let _ = writeln!(
            self.out,
            r#"<line x1="{x1:.1}" y1="{y1:.1}" x2="{x2:.1}" y2="{y2:.1}" stroke="{stroke}"/>"#
        );
    }

    /// A rectangle with an outline `stroke_width` wide.
    pub fn outlined_rect(
        &mut self,
        (x, y, w, h): (f64, f64, f64, f64),
        fill: &str,
        stroke: (&str, f64),
    ) {
        let (stroke, width) = stroke;
        let _ = writeln!(
            self.out,
            r#"<rect x="{x:.2}" y="{y:.2}" width="{w:.2}" height="{h:.2}" fill="{fill}" stroke="{stroke}" stroke-width="{width:.2}"/>"#
        );
    }

    /// A line `width` wide.
    pub fn wide_line(
        &mut self,
        (x1, y1): (f64, f64),
        (x2, y2): (f64, f64),
        stroke: &str,
        width: f64,
    ) {
        let _ = writeln!(
            self.out,
            r#"<line x1="{x1:.2}" y1="{y1:.2}" x2="{x2:.2}" y2="{y2:.2}" stroke="{stroke}" stroke-width="{width:.2}"/>"#
        );
    }

    /// A heading of `size` px starting at (`x`, `y`).
    pub fn heading(&mut self, x: f64, y: f64, size: f64, text: &str) {
        let _ = writeln!(
            self.out,
            r#"<text x="{x:.1}" y="{y:.1}" font-size="{size}">{}</text>"#,
            escape(text)
        );
    }

    pub fn circle(&mut self, cx: f64, cy: f64, r: f64, fill: &str) {
        let _ = writeln!(
            self.out,
            r#"<circle cx="{cx:.1}" cy="{cy:.1}" r="{r:.1}" fill="{fill}"/>"#
        );
    }

    /// A line through `points` (already in SVG coordinates); `title` names it (shown
    /// on hover, and how a reader or a test tells the lines apart).
    pub fn polyline(&mut self, points: &[(f64, f64)], stroke: &str, title: &str) {
        let coords: Vec<String> = points
            .iter()
            .map(|(x, y)| format!("{x:.1},{y:.1}"))
            .collect();
        let _ = writeln!(
            self.out,
            r#"<polyline points="{}" fill="none" stroke="{stroke}" stroke-width="1.5"><title>{}</title></polyline>"#,
            coords.join(" "),
            escape(title)
        );
    }

    /// A plotted data point; `title` names it on hover.
    pub fn point(&mut self, cx: f64, cy: f64, r: f64, fill: &str, title: &str) {
        let _ = writeln!(
            self.out,
            r#"<circle class="pt" cx="{cx:.1}" cy="{cy:.1}" r="{r:.1}" fill="{fill}"><title>{}</title></circle>"#,
            escape(title)
        );
    }

    /// A plotted data mark of `size` with its top left corner at (`x`, `y`).
    pub fn mark(&mut self, x: f64, y: f64, size: f64, fill: &str) {
        let _ = writeln!(
            self.out,
            r#"<rect class="pt" x="{x:.1}" y="{y:.1}" width="{size:.1}" height="{size:.1}" fill="{fill}"/>"#
        );
    }

    /// The rectangle data points are drawn in, with each axis' scale ("linear", "log").
    pub fn plot_area(&mut self, (x, y, w, h): (f64, f64, f64, f64), scales: [&str; 2]) {
        let [x_scale, y_scale] = scales;
        let _ = writeln!(
            self.out,
            r##"<rect class="plot" x="{x:.1}" y="{y:.1}" width="{w:.1}" height="{h:.1}" fill="none" stroke="#ddd" data-x-scale="{x_scale}" data-y-scale="{y_scale}"/>"##
        );
    }

    /// Text read bottom to top, centred on (`x`, `y`): a y axis's name.
    pub fn vertical_text(&mut self, x: f64, y: f64, text: &str) {
        let _ = writeln!(
            self.out,
            r#"<text x="{x:.1}" y="{y:.1}" text-anchor="middle" transform="rotate(-90 {x:.1} {y:.1})">{}</text>"#,
            escape(text)
        );
    }

    /// `anchor`: start, middle or end.
    pub fn text(&mut self, x: f64, y: f64, anchor: &str, text: &str) {
        let _ = writeln!(
            self.out,
            r#"<text x="{x:.1}" y="{y:.1}" text-anchor="{anchor}">{}</text>"#,
            escape(text)
        );
    }

    pub fn finish(mut self) -> String {
        self.out.push_str("</svg>\n");
        self.out
    }
}

/// Escapes text for XML content and attribute values.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            _ => out.push(c),
        }
    }
    out
}

/// Maps data coordinates into a plot rectangle (y grows upwards in data space).
#[derive(Clone, Copy, Debug)]
pub struct Frame {
    pub left: f64,
    pub top: f64,
    pub width: f64,
    pub height: f64,
    pub x_axis: Axis,
    pub y_axis: Axis,
}

const AXIS_COLOR: &str = "#333";
const GRID_COLOR: &str = "#e5e5e5";
const TICK: f64 = 4.0;
const X_TICK_GAP: f64 = 14.0;
const X_LABEL_GAP: f64 = 30.0;
const Y_LABEL_GAP: f64 = 44.0;

impl Frame {
    pub fn x(&self, value: f64) -> f64 {
        self.left + self.width * self.x_axis.fraction(value)
    }

    pub fn y(&self, value: f64) -> f64 {
        self.top + self.height * (1.0 - self.y_axis.fraction(value))
    }

    /// The plot area (what a reader or a test checks points against), a grid line and
    /// a label at every tick, and the axes' names ("log scale" where one is).
    pub fn axes(&self, svg: &mut Svg, x_label: &str, y_label: &str) {
        let (bottom, right) = (self.top + self.height, self.left + self.width);
        let scales = [scale_name(self.x_axis), scale_name(self.y_axis)];
        svg.plot_area((self.left, self.top, self.width, self.height), scales);
        for value in self.x_axis.ticks() {
            let x = self.x(value);
            svg.line(x, self.top, x, bottom, GRID_COLOR);
            svg.text(x, bottom + X_TICK_GAP, "middle", &tick_label(value));
        }
        for value in self.y_axis.ticks() {
            let y = self.y(value);
            svg.line(self.left, y, right, y, GRID_COLOR);
            svg.text(self.left - TICK, y + TICK, "end", &tick_label(value));
        }
        svg.line(self.left, bottom, right, bottom, AXIS_COLOR);
        svg.line(self.left, self.top, self.left, bottom, AXIS_COLOR);
        let x_name = scale_note(x_label, self.x_axis);
        let mid_x = self.left + self.width / 2.0;
        svg.text(mid_x, bottom + X_LABEL_GAP, "middle", &x_name);
        let mid_y = self.top + self.height / 2.0;
        svg.vertical_text(
            self.left - Y_LABEL_GAP,
            mid_y,
            &scale_note(y_label, self.y_axis),
        );
    }
}

fn scale_note(label: &str, axis: Axis) -> String {
    if axis.is_log() {
        format!("{label} (log scale)")
    } else {
        label.to_string()
    }
}

pub fn scale_name(axis: Axis) -> &'static str {
    if axis.is_log() {
        "log"
    } else {
        "linear"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_escaped_and_svg_closed() {
        let mut svg = Svg::new(10.0, 10.0);
        svg.text(1.0, 1.0, "start", "a<b & \"c\"");
        let out = svg.finish();
        assert!(out.contains("a&lt;b &amp; &quot;c&quot;"));
        assert!(out.trim_end().ends_with("</svg>"));
    }

    #[test]
    fn frame_maps_data_space_upwards() {
        let f = Frame {
            left: 10.0,
            top: 0.0,
            width: 100.0,
            height: 50.0,
            x_axis: Axis::Linear {
                max: 2.0,
                step: 1.0,
            },
            y_axis: Axis::Linear {
                max: 10.0,
                step: 5.0,
            },
        };
        assert_eq!(f.x(1.0), 60.0);
        assert_eq!(f.y(10.0), 0.0);
        assert_eq!(f.y(0.0), 50.0);
        assert_eq!(f.x(f64::NAN), 10.0);
    }
}
