//! The forest plot that opens each matrix's headline: every headline ratio as a point (its median) with its
//! 95% interval, on a log axis with 1× marked, as inline SVG. A ratio without a number is a line of text
//! saying why. Every string is escaped here: the SVG bypasses the autoescaper.

use std::fmt::Write;

use crate::results::format::{ratio, xml_escape as esc};
use crate::results::headline::Figure;
use crate::site::chart::wrap;

const WIDTH: f64 = 900.0;
const PLOT_X: f64 = 24.0;
const PLOT_W: f64 = 700.0;
const LABEL_CHARS: usize = 120;
const LINE: f64 = 16.0;
const MARK_ROW: f64 = 20.0;
const INK: &str = "#1d4ed8";
const SEED: &str = "#6b7280";
const MISSING: &str = "#b42318";

/// One ratio of the plot.
struct Row {
    label: String,
    seed: bool,
    /// Median and interval; `None` when the ratio has no number (then `why` says so).
    value: Option<(f64, Option<(f64, f64)>)>,
    why: String,
}

/// The forest plot of a matrix's ratio figures; `None` when it has none.
pub fn render(id: &str, figures: &[Figure]) -> Option<String> {
    let rows = rows_of(figures);
    if rows.is_empty() {
        return None;
    }
    let (lo, hi) = domain(&rows);
    let scale = Scale { lo, hi };
    let heights: Vec<f64> =
        rows.iter().map(|r| wrap(&r.label, LABEL_CHARS).len() as f64 * LINE + MARK_ROW + 6.0).collect();
    let top = 10.0;
    let axis_y = top + heights.iter().sum::<f64>();
    let height = axis_y + if rows.iter().any(|r| r.value.is_some()) { 44.0 } else { 8.0 };
    let id = esc(id);
    let mut s = String::new();
    let _ = write!(
        s,
        r#"<svg class="chart forest" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {height}" width="{WIDTH}" height="{height}" role="img" aria-labelledby="{id}-t {id}-d">"#
    );
    let _ = write!(s, r#"<title id="{id}-t">Headline ratios with their 95% intervals, on a log scale</title>"#);
    let _ = write!(s, r#"<desc id="{id}-d">{}</desc>"#, esc(&describe(&rows)));
    // Without a single number there is nothing to place on an axis: the rows say why.
    let numbered = rows.iter().any(|r| r.value.is_some());
    write_axis(&mut s, &scale, (top, axis_y), numbered);
    let mut y = top;
    for (i, (row, h)) in rows.iter().zip(&heights).enumerate() {
        let mut ty = y + 12.0;
        for line in wrap(&row.label, LABEL_CHARS) {
            let _ = write!(
                s,
                r##"<text class="label" x="{PLOT_X}" y="{ty:.1}" font-size="12.5" stroke="#ffffff" stroke-width="3" paint-order="stroke">{}</text>"##,
                esc(&line)
            );
            ty += LINE;
        }
        let mid = ty + 2.0;
        match row.value {
            Some((v, ci)) => write_value(&mut s, &scale, (i, row.seed), (v, ci), mid),
            None => {
                let _ = write!(
                    s,
                    r##"<text class="missing" x="{PLOT_X}" y="{:.1}" font-size="12" font-style="italic" fill="{MISSING}" stroke="#ffffff" stroke-width="3" paint-order="stroke">{}</text>"##,
                    mid + 4.0,
                    esc(&crate::results::format::truncate(&row.why, 140))
                );
            }
        }
        y += h;
    }
    s.push_str("</svg>");
    Some(s)
}

/// The plot's rows: each ratio figure's label (the seed's comparison and a lower-is-better direction said in
/// words), its median and interval when they are numbers, and why when they are not.
fn rows_of(figures: &[Figure]) -> Vec<Row> {
    figures
        .iter()
        .filter(|f| f.ratio.is_some())
        .map(|f| {
            let lower = f.direction.starts_with("lower");
            let mut label = f.title.clone();
            if f.seed_comparison {
                label = format!("the seed's comparison: {label}");
            }
            if lower {
                label.push_str(" (lower is better)");
            }
            Row {
                label,
                seed: f.seed_comparison,
                value: f.value.filter(|v| *v > 0.0).map(|v| (v, f.ci.filter(|(lo, hi)| *lo > 0.0 && hi >= lo))),
                why: format!("{} — {}", f.text, f.detail),
            }
        })
        .collect()
}

/// Where a ratio stands on the plot: a log scale from `lo` to `hi` across its width.
struct Scale {
    lo: f64,
    hi: f64,
}

impl Scale {
    fn x(&self, v: f64) -> f64 {
        PLOT_X + (v.ln() - self.lo.ln()) / (self.hi.ln() - self.lo.ln()) * PLOT_W
    }
}

/// The ticks, 1× drawn darker, and the axis' caption, from `top` down to `axis_y`; only the group when no row
/// has a number.
fn write_axis(s: &mut String, scale: &Scale, (top, axis_y): (f64, f64), numbered: bool) {
    s.push_str(r##"<g class="axis" font-size="11" fill="#4b5563">"##);
    for t in ticks(scale.lo, scale.hi).into_iter().filter(|_| numbered) {
        let tx = scale.x(t);
        let (stroke, width) = if t == 1.0 { ("#111827", "1.5") } else { ("#e5e7eb", "1") };
        let _ = write!(
            s,
            r#"<line x1="{tx:.1}" y1="{top}" x2="{tx:.1}" y2="{axis_y}" stroke="{stroke}" stroke-width="{width}"{}/>"#,
            if t == 1.0 { r#" class="one""# } else { "" }
        );
        let _ =
            write!(s, r#"<text x="{tx:.1}" y="{}" text-anchor="middle">{}</text>"#, axis_y + 14.0, esc(&ratio_tick(t)));
    }
    if numbered {
        let _ = write!(
            s,
            r#"<text class="unit" x="{}" y="{}" text-anchor="middle" font-size="12">ratio, log scale; 1× marked: both sides equal</text>"#,
            PLOT_X + PLOT_W / 2.0,
            axis_y + 33.0
        );
    }
    s.push_str("</g>");
}

/// Row `i`'s median as a diamond (hollow for the seed's comparison) on its interval's whiskers, at height
/// `mid`, with the numbers beside it.
fn write_value(s: &mut String, scale: &Scale, (i, seed): (usize, bool), (v, ci): (f64, Option<(f64, f64)>), mid: f64) {
    let color = if seed { SEED } else { INK };
    let mut text_x = scale.x(v);
    if let Some((a, b)) = ci {
        let (xa, xb) = (scale.x(a), scale.x(b));
        let _ = write!(
            s,
            r#"<path class="interval" d="M{xa:.1} {mid:.1}H{xb:.1}M{xa:.1} {:.1}V{:.1}M{xb:.1} {:.1}V{:.1}" stroke="{color}" stroke-width="1.6" fill="none"/>"#,
            mid - 4.0,
            mid + 4.0,
            mid - 4.0,
            mid + 4.0
        );
        text_x = text_x.max(xb);
    }
    let fill = if seed { "#ffffff" } else { color };
    let _ = write!(
        s,
        r#"<rect class="forest-point" data-row="{i}" x="{:.1}" y="{:.1}" width="9" height="9" transform="rotate(45 {:.1} {mid:.1})" fill="{fill}" stroke="{color}" stroke-width="1.5"/>"#,
        scale.x(v) - 4.5,
        mid - 4.5,
        scale.x(v)
    );
    let interval = ci.map_or_else(String::new, |(a, b)| format!(" ({} – {})", ratio(a), ratio(b)));
    let _ = write!(
        s,
        r##"<text class="value" x="{:.1}" y="{:.1}" font-size="12" stroke="#ffffff" stroke-width="3" paint-order="stroke">{}{}</text>"##,
        text_x + 8.0,
        mid + 4.0,
        esc(&ratio(v)),
        esc(&interval)
    );
}

/// The axis range: powers of ten covering every point, interval and 1×.
fn domain(rows: &[Row]) -> (f64, f64) {
    let mut lo: f64 = 1.0;
    let mut hi: f64 = 1.0;
    for (v, ci) in rows.iter().filter_map(|r| r.value) {
        let (a, b) = ci.unwrap_or((v, v));
        lo = lo.min(v).min(a);
        hi = hi.max(v).max(b);
    }
    let lo = 10f64.powf(lo.log10().floor());
    let hi = 10f64.powf(hi.log10().ceil());
    // At least one decade on each side of 1× keeps the plot from collapsing onto it.
    (lo.min(0.1), hi.max(10.0))
}

/// Ticks at 1, 2 and 5 of each decade for a span of up to three decades, else at each decade.
fn ticks(lo: f64, hi: f64) -> Vec<f64> {
    let decades = (hi / lo).log10().round() as i32;
    let steps: &[f64] = if decades <= 3 { &[1.0, 2.0, 5.0] } else { &[1.0] };
    let mut out = Vec::new();
    let mut d = lo;
    while d <= hi * 1.000_001 {
        for m in steps {
            let t = d * m;
            if t <= hi * 1.000_001 {
                // Round away float noise so 1× is exactly 1.
                out.push(format!("{t:.6}").parse::<f64>().unwrap_or(t));
            }
        }
        d *= 10.0;
    }
    out
}

fn ratio_tick(t: f64) -> String {
    if t >= 1.0 { format!("{t}×") } else { format!("{}×", format!("{t:.4}").trim_end_matches('0')) }
}

fn describe(rows: &[Row]) -> String {
    let parts: Vec<String> = rows
        .iter()
        .map(|r| match r.value {
            Some((v, Some((a, b)))) => format!("{}: {} (95% CI {} – {})", r.label, ratio(v), ratio(a), ratio(b)),
            Some((v, None)) => format!("{}: {}", r.label, ratio(v)),
            None => format!("{}: {}", r.label, r.why),
        })
        .collect();
    parts.join("; ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn figure(title: &str, value: Option<f64>, ci: Option<(f64, f64)>, seed: bool) -> Figure {
        let mut f = crate::results::fixtures::ratio_figure(title);
        f.value = value;
        f.ci = ci;
        f.seed_comparison = seed;
        f.text = if value.is_some() { "x".into() } else { "no number".into() };
        f.detail = "the records do not say what they applied".into();
        f
    }

    #[test]
    fn ratios_sit_on_a_log_axis_with_one_marked_and_their_intervals() {
        let svg = render(
            "f1",
            &[
                figure("Rust / Debezium, row JSON", Some(2.5), Some((2.0, 3.2)), false),
                figure("Rust / Debezium, as the seed ran it", Some(51.0), None, true),
                figure("<b>Kafka -> MySQL</b>", None, None, false),
            ],
        )
        .unwrap();
        assert_eq!(svg.matches(r#"class="forest-point""#).count(), 2);
        assert_eq!(svg.matches(r#"class="interval""#).count(), 1);
        assert_eq!(svg.matches(r#"class="one""#).count(), 1, "1× is marked once");
        assert!(svg.contains(">2.50× (2.00× – 3.20×)<"));
        assert!(svg.contains("the seed&#39;s comparison: Rust / Debezium, as the seed ran it"));
        assert!(svg.contains("no number — the records do not say what they applied"));
        assert!(svg.contains("&lt;b&gt;Kafka -&gt; MySQL&lt;/b&gt;") && !svg.contains("<b>"));
        // 51× needs the axis to reach 100×; 1× sits where ln scales put it.
        assert_eq!(
            domain(&[Row { label: String::new(), seed: false, value: Some((51.0, None)), why: String::new() }]),
            (0.1, 100.0)
        );
        assert!(render("f2", &[]).is_none());
    }

    #[test]
    fn ticks_are_round_and_include_one() {
        assert_eq!(ticks(0.1, 10.0), [0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0]);
        assert_eq!(ticks(0.01, 100.0), [0.01, 0.1, 1.0, 10.0, 100.0]);
        assert_eq!(ratio_tick(0.5), "0.5×");
        assert_eq!(ratio_tick(20.0), "20×");
    }
}
