//! Structural checks of a generated HTML report, read from its text: tables are
//! `<table>`s, every chart has a plot area with something plotted in it, and every
//! plotted point lies inside a plot area of its chart.

/// Pixels a coordinate may stray outside its area: the SVG writes one decimal.
const ROUNDING: f64 = 0.06;

/// A `<rect class="plot">`: x, y, width, height, and its axes' scales.
#[derive(Clone, Debug)]
pub struct PlotArea {
    pub rect: [f64; 4],
    pub x_scale: String,
    pub y_scale: String,
}

impl PlotArea {
    fn contains(&self, x: f64, y: f64) -> bool {
        let [left, top, w, h] = self.rect;
        x >= left - ROUNDING
            && x <= left + w + ROUNDING
            && y >= top - ROUNDING
            && y <= top + h + ROUNDING
    }
}

/// Each `<svg>…</svg>` of the page.
pub fn svgs(html: &str) -> Vec<&str> {
    html.split("<svg")
        .skip(1)
        .map(|s| &s[..s.find("</svg>").expect("unclosed svg")])
        .collect()
}

/// The opening tags `<name …>` in `text` with `class="…"`, without the brackets.
fn tags<'a>(text: &'a str, name: &str, class: &str) -> Vec<&'a str> {
    let open = format!("<{name} ");
    text.split(open.as_str())
        .skip(1)
        .map(|t| &t[..t.find('>').expect("unclosed tag")])
        .filter(|t| t.contains(&format!("class=\"{class}\"")))
        .collect()
}

pub fn attr<'a>(tag: &'a str, name: &str) -> Option<&'a str> {
    let key = format!(" {name}=\"");
    let start = tag.find(&key)? + key.len();
    let len = tag[start..].find('"')?;
    Some(&tag[start..start + len])
}

fn num(tag: &str, name: &str) -> f64 {
    attr(tag, name)
        .unwrap_or_else(|| panic!("no {name} in {tag}"))
        .parse()
        .unwrap_or_else(|_| panic!("{name} not a number in {tag}"))
}

pub fn plot_areas(svg: &str) -> Vec<PlotArea> {
    tags(svg, "rect", "plot")
        .into_iter()
        .map(|t| PlotArea {
            rect: [num(t, "x"), num(t, "y"), num(t, "width"), num(t, "height")],
            x_scale: attr(t, "data-x-scale").unwrap_or("").to_string(),
            y_scale: attr(t, "data-y-scale").unwrap_or("").to_string(),
        })
        .collect()
}

/// Every plotted point of a chart, as the corners or centres that must lie inside its
/// plot area: circles' centres, marks' four corners, polylines' vertices.
pub fn plotted_points(svg: &str) -> Vec<(f64, f64)> {
    let mut points: Vec<(f64, f64)> = tags(svg, "circle", "pt")
        .into_iter()
        .map(|t| (num(t, "cx"), num(t, "cy")))
        .collect();
    for t in tags(svg, "rect", "pt") {
        let (x, y, w, h) = (num(t, "x"), num(t, "y"), num(t, "width"), num(t, "height"));
        points.extend([(x, y), (x + w, y), (x, y + h), (x + w, y + h)]);
    }
    for line in svg.split("<polyline").skip(1) {
        let coords = attr(line, "points").expect("polyline without points");
        for pair in coords.split_whitespace() {
            let (x, y) = pair.split_once(',').expect("x,y");
            points.push((x.parse().expect("x"), y.parse().expect("y")));
        }
    }
    points
}

/// Checks every chart of `html` and returns their plot areas with the points inside
/// each: a chart has a plot area, no area is empty, no point lies outside all areas.
pub fn check_charts(html: &str) -> Vec<(PlotArea, Vec<(f64, f64)>)> {
    let mut charts = Vec::new();
    for svg in svgs(html) {
        let areas = plot_areas(svg);
        assert!(!areas.is_empty(), "a chart without a plot area:\n{svg}");
        let points = plotted_points(svg);
        for &(x, y) in &points {
            let inside = areas.iter().any(|a| a.contains(x, y));
            assert!(inside, "point ({x}, {y}) outside {areas:?}");
        }
        for area in areas {
            let mine: Vec<(f64, f64)> = points
                .iter()
                .copied()
                .filter(|&(x, y)| area.contains(x, y))
                .collect();
            assert!(!mine.is_empty(), "an empty chart {area:?}:\n{svg}");
            charts.push((area, mine));
        }
    }
    charts
}

/// Tables are `<table>`s with a header row, no table is preformatted text, and every
/// right-aligned cell holds a number (or the missing-value dash).
pub fn check_tables(html: &str) -> usize {
    assert!(!html.contains("<pre"), "preformatted text in the report");
    let tables: Vec<&str> = html
        .split("<table>")
        .skip(1)
        .map(|t| &t[..t.find("</table>").expect("unclosed table")])
        .collect();
    for table in &tables {
        assert!(table.contains("<thead><tr><th"), "no header row:\n{table}");
        for cell in table.split("<td class=\"num\">").skip(1) {
            let first = cell.chars().next().expect("empty numeric cell");
            assert!(
                first.is_ascii_digit() || first == '-',
                "not a number: {cell}"
            );
        }
    }
    tables.len()
}
