//! A line chart with both axes logarithmic, as an inline SVG (no JavaScript): the paced sweep's latency against
//! offered load, and HdrHistogram's percentile distribution (latency against 1/(1 - percentile)). Latencies are
//! drawn in µs and labelled in ms. Every string is escaped here: the SVG bypasses the template autoescaper.

use std::fmt::Write;

use crate::results::format::xml_escape as esc;

const WIDTH: f64 = 560.0;
const HEIGHT: f64 = 300.0;
const LEFT: f64 = 58.0;
const RIGHT: f64 = 150.0;
const TOP: f64 = 14.0;
const BOTTOM: f64 = 40.0;
/// One colour per line, in order (distinct under the common colour-vision deficiencies).
const COLOURS: [&str; 6] = ["#1d4ed8", "#b42318", "#047857", "#7c3aed", "#b45309", "#0e7490"];

/// One line: its legend and its points (x, latency in µs); points with a value at or below zero are not drawn.
#[derive(Debug, Clone, PartialEq)]
pub struct Line {
    pub label: String,
    pub points: Vec<(f64, f64)>,
}

/// What one chart shows.
#[derive(Debug, Clone, PartialEq)]
pub struct LogLog {
    pub id: String,
    pub title: String,
    pub x_title: String,
    /// Where the x axis is labelled, and how.
    pub x_ticks: Vec<(f64, String)>,
    pub lines: Vec<Line>,
}

pub fn render(c: &LogLog) -> String {
    let drawn: Vec<(f64, f64)> =
        c.lines.iter().flat_map(|l| l.points.iter().copied()).filter(|(x, y)| *x > 0.0 && *y > 0.0).collect();
    let span = |values: &mut dyn Iterator<Item = f64>| {
        values.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| (lo.min(v), hi.max(v)))
    };
    let (x_lo, x_hi) = span(&mut drawn.iter().map(|p| p.0).chain(c.x_ticks.iter().map(|t| t.0)));
    let (y_lo, y_hi) = span(&mut drawn.iter().map(|p| p.1));
    // Whole decades around the data, so the gridlines fall on 0.1, 1, 10, 100 ms.
    let (y_lo, y_hi) = if drawn.is_empty() {
        (1.0, 10.0)
    } else {
        (10f64.powf(y_lo.log10().floor()), 10f64.powf(y_hi.log10().ceil().max(y_lo.log10().floor() + 1.0)))
    };
    let (x_lo, x_hi) = if x_lo < x_hi { (x_lo, x_hi) } else { (x_lo.max(1.0) / 2.0, x_lo.max(1.0) * 2.0) };
    let (plot_w, plot_h) = (WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM);
    let x = |v: f64| LEFT + (v.log10() - x_lo.log10()) / (x_hi.log10() - x_lo.log10()) * plot_w;
    let y = |v: f64| TOP + plot_h - (v.log10() - y_lo.log10()) / (y_hi.log10() - y_lo.log10()) * plot_h;
    let id = esc(&c.id);
    let mut s = String::new();
    let _ = write!(
        s,
        r#"<svg class="loglog" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {HEIGHT}" width="{WIDTH}" height="{HEIGHT}" role="img" aria-labelledby="{id}-t {id}-d">"#
    );
    let _ = write!(s, r#"<title id="{id}-t">{}</title>"#, esc(&c.title));
    let _ = write!(s, r#"<desc id="{id}-d">{}</desc>"#, esc(&describe(c)));
    let mut decade = y_lo;
    while decade <= y_hi * 1.0001 {
        let gy = y(decade);
        let _ = write!(
            s,
            r##"<line x1="{LEFT}" y1="{gy:.1}" x2="{:.1}" y2="{gy:.1}" stroke="#ddd"/><text x="{:.1}" y="{:.1}" font-size="10" text-anchor="end" fill="#555">{}</text>"##,
            LEFT + plot_w,
            LEFT - 4.0,
            gy + 3.0,
            ms_label(decade)
        );
        decade *= 10.0;
    }
    for (tx, label) in c.x_ticks.iter().filter(|(v, _)| *v >= x_lo && *v <= x_hi) {
        let gx = x(*tx);
        let _ = write!(
            s,
            r##"<line x1="{gx:.1}" y1="{TOP}" x2="{gx:.1}" y2="{:.1}" stroke="#eee"/><text x="{gx:.1}" y="{:.1}" font-size="10" text-anchor="middle" fill="#555">{}</text>"##,
            TOP + plot_h,
            TOP + plot_h + 14.0,
            esc(label)
        );
    }
    let axis_y = TOP + plot_h;
    let _ = write!(
        s,
        r##"<line x1="{LEFT}" y1="{axis_y}" x2="{:.1}" y2="{axis_y}" stroke="#555"/><line x1="{LEFT}" y1="{TOP}" x2="{LEFT}" y2="{axis_y}" stroke="#555"/>"##,
        LEFT + plot_w
    );
    let _ = write!(
        s,
        r##"<text x="{:.1}" y="{:.1}" font-size="10" text-anchor="middle" fill="#555">{}</text><text x="12" y="{:.1}" font-size="10" text-anchor="middle" fill="#555" transform="rotate(-90 12 {:.1})">latency, log scale</text>"##,
        LEFT + plot_w / 2.0,
        HEIGHT - 6.0,
        esc(&c.x_title),
        TOP + plot_h / 2.0,
        TOP + plot_h / 2.0
    );
    for (i, line) in c.lines.iter().enumerate() {
        let colour = COLOURS[i % COLOURS.len()];
        let pts: Vec<String> = line
            .points
            .iter()
            .filter(|(px, py)| *px > 0.0 && *py > 0.0)
            .map(|(px, py)| format!("{:.1},{:.1}", x(*px), y(*py)))
            .collect();
        if pts.is_empty() {
            continue;
        }
        let _ = write!(
            s,
            r##"<polyline fill="none" stroke="{colour}" stroke-width="2" points="{}"><title>{}</title></polyline>"##,
            pts.join(" "),
            esc(&line.label)
        );
        for p in &pts {
            let (cx, cy) = p.split_once(',').expect("formatted as x,y");
            let _ = write!(s, r##"<circle cx="{cx}" cy="{cy}" r="2.5" fill="{colour}"/>"##);
        }
        let ly = TOP + 12.0 + i as f64 * 16.0;
        let lx = LEFT + plot_w + 10.0;
        let _ = write!(
            s,
            r##"<line x1="{lx:.1}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="{colour}" stroke-width="2"/><text x="{:.1}" y="{ly:.1}" font-size="11" fill="#222">{}</text>"##,
            ly - 4.0,
            lx + 16.0,
            ly - 4.0,
            lx + 20.0,
            esc(&line.label)
        );
    }
    s.push_str("</svg>");
    s
}

/// A latency in µs as the axis labels it.
fn ms_label(us: f64) -> String {
    if us >= 1_000_000.0 { format!("{} s", us / 1_000_000.0) } else { format!("{} ms", us / 1_000.0) }
}

/// The chart in words, for screen readers: each line's points.
fn describe(c: &LogLog) -> String {
    let lines: Vec<String> = c
        .lines
        .iter()
        .map(|l| {
            let pts: Vec<String> = l.points.iter().map(|(px, py)| format!("{px} → {:.2} ms", py / 1_000.0)).collect();
            format!("{}: {}", l.label, pts.join(", "))
        })
        .collect();
    format!("{} against {}; {}", "latency", c.x_title, lines.join("; "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_line_is_drawn_through_its_points_on_log_axes_and_labelled() {
        let c = LogLog {
            id: "c<1>".into(),
            title: "rust-rdkafka & load".into(),
            x_title: "offered records/s".into(),
            x_ticks: vec![(10_000.0, "10k".into()), (100_000.0, "100k".into())],
            lines: vec![
                Line { label: "p50".into(), points: vec![(10_000.0, 1_000.0), (100_000.0, 2_000.0)] },
                Line { label: "p99".into(), points: vec![(10_000.0, 10_000.0), (100_000.0, 0.0)] },
            ],
        };
        let svg = render(&c);
        assert_eq!(svg.matches("<polyline").count(), 2);
        assert_eq!(svg.matches("<circle").count(), 3, "a point at zero is not drawn on a log axis");
        // Decades from 1 ms to 10 ms.
        assert!(svg.contains(">1 ms</text>") && svg.contains(">10 ms</text>"), "{svg}");
        assert!(svg.contains(">10k</text>") && svg.contains(">100k</text>"));
        assert!(svg.contains("rust-rdkafka &amp; load") && svg.contains("id=\"c&lt;1&gt;-t\""), "escaped");
        assert!(svg.contains("p50: 10000 → 1.00 ms, 100000 → 2.00 ms"));
        // The higher line is drawn above: a smaller y.
        let y_of = |label: &str| {
            let at = svg.find(&format!("<title>{label}</title>")).unwrap();
            let points = &svg[..at];
            let first = points.rfind("points=\"").unwrap() + 8;
            points[first..].split([',', ' ', '"']).nth(1).unwrap().parse::<f64>().unwrap()
        };
        assert!(y_of("p99") < y_of("p50"));
    }
}
