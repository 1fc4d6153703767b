//! A minimal SVG writer (no dependencies, no JS): the few shapes Figures 4-8 need,
//! with every text XML-escaped.

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
    pub x_max: f64,
    pub y_max: f64,
}

impl Frame {
    pub fn x(&self, value: f64) -> f64 {
        self.left + self.width * ratio(value, self.x_max)
    }

    pub fn y(&self, value: f64) -> f64 {
        self.top + self.height * (1.0 - ratio(value, self.y_max))
    }

    /// Axes with the maxima written at their ends.
    pub fn axes(&self, svg: &mut Svg, x_label: &str, y_label: &str) {
        let (bottom, right) = (self.top + self.height, self.left + self.width);
        svg.line(self.left, bottom, right, bottom, "#333");
        svg.line(self.left, self.top, self.left, bottom, "#333");
        svg.text(self.left, bottom + 14.0, "middle", "0");
        svg.text(right, bottom + 14.0, "middle", &tick(self.x_max));
        svg.text(self.left - 4.0, self.top + 4.0, "end", &tick(self.y_max));
        svg.text(
            self.left + self.width / 2.0,
            bottom + 28.0,
            "middle",
            x_label,
        );
        svg.text(
            self.left - 4.0,
            self.top + self.height / 2.0,
            "end",
            y_label,
        );
    }
}

fn ratio(value: f64, max: f64) -> f64 {
    if max > 0.0 && value.is_finite() {
        (value / max).clamp(0.0, 1.0)
    } else {
        0.0
    }
}

/// An axis label: whole numbers without decimals (chunk numbers), others with two.
fn tick(value: f64) -> String {
    if value.fract() == 0.0 {
        format!("{value:.0}")
    } else {
        format!("{value:.2}")
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
            x_max: 2.0,
            y_max: 10.0,
        };
        assert_eq!(f.x(1.0), 60.0);
        assert_eq!(f.y(10.0), 0.0);
        assert_eq!(f.y(0.0), 50.0);
        assert_eq!(f.x(f64::NAN), 10.0);
    }
}
