//! Inline SVG bar charts: horizontal bars (the median) with min–max whiskers, the default point
//! highlighted, published reference figures as hatched bars, and rows that are not drawn (withdrawn,
//! failed, not run) shown as text only. Every string is escaped here: the SVG bypasses the autoescaper.

use std::fmt::Write;

use crate::results::format::{compact, truncate, xml_escape as esc};

const WIDTH: f64 = 900.0;
/// Where row labels end, for labels of up to [`LABEL_CHARS`]; a chart with longer labels moves the plot right.
const LABEL_X: f64 = 240.0;
/// Room right of the plot for the values written after the bars.
const VALUES_W: f64 = 140.0;
/// Width of one character of a 13 px row label, near enough.
const LABEL_CHAR_W: f64 = 7.2;
const BAR_ROW: f64 = 26.0;
const REF_ROW: f64 = 19.0;
const GROUP_GAP: f64 = 10.0;
const LEGEND_X: f64 = 12.0;
const LEGEND_LINE: f64 = 17.0;
/// Characters of a row label that fit left of the plot at its widest (longer ones are cut, with a tooltip).
pub const LABEL_CHARS: usize = 32;
/// The most characters a chart widens its label column for.
const MAX_LABEL_CHARS: usize = 60;

/// The chart's columns: labels end at `label_x`, the plot runs from `plot_x` for `plot_w`.
struct Layout {
    label_chars: usize,
    label_x: f64,
    plot_x: f64,
    plot_w: f64,
}

impl Layout {
    /// Room for the chart's longest row label (at least [`LABEL_CHARS`], at most [`MAX_LABEL_CHARS`]).
    fn of(chart: &Chart) -> Layout {
        let longest = chart
            .rows
            .iter()
            .filter(|r| !matches!(r.kind, RowKind::Heading))
            .map(|r| r.label.chars().count())
            .max()
            .unwrap_or(0);
        let label_chars = longest.clamp(LABEL_CHARS, MAX_LABEL_CHARS);
        let label_x = LABEL_X + (label_chars - LABEL_CHARS) as f64 * LABEL_CHAR_W;
        let plot_x = label_x + 10.0;
        Layout { label_chars, label_x, plot_x, plot_w: WIDTH - plot_x - VALUES_W }
    }
}
/// Characters of legend text per line (12px text over the chart's width).
const LEGEND_CHARS: usize = 125;
const HIGHLIGHT: &str = "#1d4ed8";
const OTHER: &str = "#93a5c4";
const MISSING: &str = "#b42318";

/// One chart, ready to draw.
#[derive(Debug, Clone)]
pub struct Chart {
    /// Unique within the page; prefixes the SVG's element ids.
    pub id: String,
    pub title: String,
    pub unit: String,
    /// `Some(true)` for "Higher is better", `Some(false)` for "Lower is better".
    pub higher_is_better: Option<bool>,
    pub rows: Vec<Row>,
    /// What the highlighted bars are, e.g. "default settings".
    pub highlight_meaning: String,
    /// Legend lines for reference series, e.g. "published, seed 000: Apple M5 Max ...".
    pub reference_legend: Vec<String>,
}

#[derive(Debug, Clone)]
pub struct Row {
    pub label: String,
    /// Starts a new group of rows (a new sweep label): drawn with a little space above.
    pub group_start: bool,
    pub kind: RowKind,
}

#[derive(Debug, Clone)]
pub enum RowKind {
    /// A measured median with its min–max whisker.
    Bar { value: f64, whisker: Option<(f64, f64)>, highlight: bool },
    /// A published figure from a seed.
    Reference { value: f64, origin: String },
    /// Not drawn: the status (withdrawn, failed, not run) and a short reason.
    Missing { status: String, reason: String },
    /// A heading over the rows that follow (the row's label is its text), e.g. a history series.
    Heading,
}

/// Render a chart as an `<svg>` element.
pub fn render(chart: &Chart) -> String {
    let legend = legend_lines(chart);
    let legend_lines: usize = legend.iter().map(|l| wrap(&l.text, LEGEND_CHARS).len()).sum();
    let top = 8.0 + legend_lines as f64 * LEGEND_LINE + 8.0;
    let body: f64 = chart.rows.iter().map(|r| row_height(r) + if r.group_start { GROUP_GAP } else { 0.0 }).sum();
    let axis_y = top + body + 4.0;
    let height = axis_y + 46.0;
    let (max, step) = axis(chart);
    let layout = Layout::of(chart);
    let (plot_x, plot_w) = (layout.plot_x, layout.plot_w);
    let x = |v: f64| plot_x + (v.max(0.0) / max) * plot_w;
    let id = esc(&chart.id);

    let mut s = String::new();
    let _ = write!(
        s,
        r#"<svg class="chart" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {height}" width="{WIDTH}" height="{height}" role="img" aria-labelledby="{id}-t {id}-d">"#
    );
    let _ = write!(s, r#"<title id="{id}-t">{}</title>"#, esc(&chart.title));
    let _ = write!(s, r#"<desc id="{id}-d">{}</desc>"#, esc(&describe(chart)));
    let _ = write!(
        s,
        r##"<defs><pattern id="{id}-hatch" patternUnits="userSpaceOnUse" width="6" height="6" patternTransform="rotate(45)"><rect width="6" height="6" fill="#ffffff"/><line x1="0" y1="0" x2="0" y2="6" stroke="#6b7280" stroke-width="2.5"/></pattern></defs>"##
    );
    s.push_str(r#"<g class="legend" font-size="12">"#);
    let mut y = 8.0;
    for item in &legend {
        let _ = write!(s, r#"<rect x="{LEGEND_X}" y="{y}" width="16" height="11" {}/>"#, item.swatch(&id));
        for line in wrap(&item.text, LEGEND_CHARS) {
            let _ = write!(s, r#"<text x="{}" y="{}">{}</text>"#, LEGEND_X + 22.0, y + 10.0, esc(&line));
            y += LEGEND_LINE;
        }
    }
    s.push_str("</g>");

    // Grid and ticks.
    s.push_str(r##"<g class="axis" font-size="11" fill="#4b5563">"##);
    let mut tick = 0.0;
    while tick <= max + step * 1e-9 {
        let tx = x(tick);
        let _ = write!(s, r##"<line x1="{tx:.1}" y1="{top}" x2="{tx:.1}" y2="{axis_y}" stroke="#e5e7eb"/>"##);
        let _ =
            write!(s, r#"<text x="{tx:.1}" y="{}" text-anchor="middle">{}</text>"#, axis_y + 14.0, esc(&compact(tick)));
        tick += step;
    }
    let _ = write!(s, r##"<line x1="{plot_x}" y1="{top}" x2="{plot_x}" y2="{axis_y}" stroke="#374151"/>"##);
    let _ = write!(
        s,
        r#"<text class="unit" x="{}" y="{}" text-anchor="middle" font-size="12">{}</text>"#,
        plot_x + plot_w / 2.0,
        axis_y + 33.0,
        esc(&axis_title(chart))
    );
    s.push_str("</g>");

    let mut y = top;
    for (i, row) in chart.rows.iter().enumerate() {
        if row.group_start {
            y += GROUP_GAP;
        }
        draw_row(&mut s, &id, i, row, y, &layout, &x);
        y += row_height(row);
    }
    s.push_str("</svg>");
    s
}

fn draw_row(s: &mut String, id: &str, i: usize, row: &Row, y: f64, layout: &Layout, x: &dyn Fn(f64) -> f64) {
    let (label_x, plot_x) = (layout.label_x, layout.plot_x);
    let h = row_height(row);
    let mid = y + h / 2.0;
    if let RowKind::Heading = row.kind {
        let _ = write!(
            s,
            r#"<text class="heading" x="{LEGEND_X}" y="{:.1}" font-size="12" font-weight="600">{}</text>"#,
            mid + 4.0,
            esc(&truncate(&row.label, LEGEND_CHARS))
        );
        return;
    }
    let shown = truncate(&row.label, layout.label_chars);
    let _ = write!(s, r#"<text class="label" x="{label_x}" y="{:.1}" text-anchor="end" font-size="13">"#, mid + 4.5);
    if shown != row.label {
        let _ = write!(s, "<title>{}</title>", esc(&row.label));
    }
    let _ = write!(s, "{}</text>", esc(&shown));
    match &row.kind {
        RowKind::Bar { value, whisker, highlight } => {
            let (bar_h, fill, class) = if *highlight { (16.0, HIGHLIGHT, "bar default") } else { (16.0, OTHER, "bar") };
            let top = mid - bar_h / 2.0;
            let end = x(*value);
            let _ = write!(
                s,
                r#"<rect class="{class}" data-row="{i}" x="{plot_x}" y="{top:.1}" width="{:.1}" height="{bar_h}" fill="{fill}"/>"#,
                (end - plot_x).max(0.5)
            );
            let mut text_x = end;
            if let Some((lo, hi)) = whisker.filter(|(lo, hi)| hi > lo) {
                let (a, b) = (x(lo), x(hi));
                let _ = write!(
                    s,
                    r##"<path class="whisker" d="M{a:.1} {mid:.1}H{b:.1}M{a:.1} {:.1}V{:.1}M{b:.1} {:.1}V{:.1}" stroke="#111827" stroke-width="1.2" fill="none"/>"##,
                    mid - 5.0,
                    mid + 5.0,
                    mid - 5.0,
                    mid + 5.0
                );
                text_x = text_x.max(b);
            }
            let _ = write!(
                s,
                r#"<text class="value" x="{:.1}" y="{:.1}" font-size="12">{}</text>"#,
                text_x + 6.0,
                mid + 4.0,
                esc(&compact(*value))
            );
        }
        RowKind::Reference { value, origin } => {
            let end = x(*value);
            let _ = write!(
                s,
                r##"<rect class="ref" data-row="{i}" x="{plot_x}" y="{:.1}" width="{:.1}" height="10" fill="url(#{id}-hatch)" stroke="#6b7280" stroke-width="0.8"/>"##,
                mid - 5.0,
                (end - plot_x).max(0.5)
            );
            let _ = write!(
                s,
                r##"<text class="value" x="{:.1}" y="{:.1}" font-size="11" fill="#4b5563">{} ({})</text>"##,
                end + 6.0,
                mid + 4.0,
                esc(&compact(*value)),
                esc(origin)
            );
        }
        RowKind::Heading => {}
        RowKind::Missing { status, reason } => {
            let _ = write!(
                s,
                r#"<text class="missing" x="{:.1}" y="{:.1}" font-size="12" font-style="italic" fill="{MISSING}">{} — {}</text>"#,
                plot_x + 6.0,
                mid + 4.0,
                esc(status),
                esc(&truncate(reason, ((WIDTH - plot_x) / 7.7) as usize))
            );
        }
    }
}

fn row_height(row: &Row) -> f64 {
    match row.kind {
        RowKind::Reference { .. } => REF_ROW,
        _ => BAR_ROW,
    }
}

/// A nice axis: maximum and tick step covering every drawn value.
fn axis(chart: &Chart) -> (f64, f64) {
    let mut max: f64 = 0.0;
    for row in &chart.rows {
        match row.kind {
            RowKind::Bar { value, whisker, .. } => max = max.max(value).max(whisker.map_or(0.0, |w| w.1)),
            RowKind::Reference { value, .. } => max = max.max(value),
            RowKind::Missing { .. } | RowKind::Heading => {}
        }
    }
    if !(max.is_finite() && max > 0.0) {
        return (1.0, 0.2);
    }
    let rough = max / 5.0;
    let mag = 10f64.powf(rough.log10().floor());
    let step = [1.0, 2.0, 2.5, 5.0, 10.0].iter().map(|m| m * mag).find(|s| *s >= rough).unwrap_or(10.0 * mag);
    ((max / step).ceil() * step, step)
}

fn axis_title(chart: &Chart) -> String {
    let unit = if chart.unit.is_empty() { "value".to_owned() } else { chart.unit.clone() };
    match chart.higher_is_better {
        Some(true) => format!("{unit} — higher is better →"),
        Some(false) => format!("{unit} — lower is better ←"),
        None => unit,
    }
}

struct LegendItem {
    text: String,
    kind: Swatch,
}

enum Swatch {
    Fill(&'static str),
    Hatch,
}

impl LegendItem {
    fn swatch(&self, id: &str) -> String {
        match self.kind {
            Swatch::Fill(c) => format!(r#"fill="{c}""#),
            Swatch::Hatch => format!(r##"fill="url(#{id}-hatch)" stroke="#6b7280" stroke-width="0.8""##),
        }
    }
}

fn legend_lines(chart: &Chart) -> Vec<LegendItem> {
    let bars = || {
        chart.rows.iter().filter_map(|r| {
            if let RowKind::Bar { highlight, whisker, .. } = r.kind { Some((highlight, whisker)) } else { None }
        })
    };
    let mut out = Vec::new();
    if bars().any(|(h, _)| h) {
        out.push(LegendItem {
            text: format!("{} (highlighted)", chart.highlight_meaning),
            kind: Swatch::Fill(HIGHLIGHT),
        });
    }
    let whiskers = bars().any(|(_, w)| w.is_some_and(|(lo, hi)| hi > lo));
    let explain = if whiskers { ": bar = median, whiskers = min–max across reps" } else { "" };
    if bars().any(|(h, _)| !h) {
        out.push(LegendItem { text: format!("measured here{explain}"), kind: Swatch::Fill(OTHER) });
    } else if whiskers {
        out.push(LegendItem { text: format!("measured here{explain}"), kind: Swatch::Fill(HIGHLIGHT) });
    }
    for text in &chart.reference_legend {
        out.push(LegendItem { text: text.clone(), kind: Swatch::Hatch });
    }
    out
}

/// Break `text` into lines of at most `max` characters at spaces (a longer word gets a line of its own).
pub(crate) fn wrap(text: &str, max: usize) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    let mut line = String::new();
    for word in text.split_whitespace() {
        if !line.is_empty() && line.chars().count() + 1 + word.chars().count() > max {
            lines.push(std::mem::take(&mut line));
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    if !line.is_empty() || lines.is_empty() {
        lines.push(line);
    }
    lines
}

/// A plain-text summary for screen readers.
fn describe(chart: &Chart) -> String {
    let parts: Vec<String> = chart
        .rows
        .iter()
        .map(|r| match &r.kind {
            RowKind::Bar { value, .. } => format!("{}: {}", r.label, compact(*value)),
            RowKind::Reference { value, origin } => format!("{} ({origin}): {}", r.label, compact(*value)),
            RowKind::Missing { status, .. } => format!("{}: {status}", r.label),
            RowKind::Heading => r.label.clone(),
        })
        .collect();
    format!("{}. {}", axis_title(chart), parts.join("; "))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chart(rows: Vec<Row>) -> Chart {
        Chart {
            id: "c1".into(),
            title: "Throughput".into(),
            unit: "records/s".into(),
            higher_is_better: Some(true),
            rows,
            highlight_meaning: "default settings".into(),
            reference_legend: vec!["published, seed 000: Apple <M5>".into()],
        }
    }

    fn bar(label: &str, value: f64, highlight: bool) -> Row {
        Row {
            label: label.into(),
            group_start: false,
            kind: RowKind::Bar { value, whisker: Some((value * 0.9, value * 1.1)), highlight },
        }
    }

    #[test]
    fn long_row_labels_move_the_plot_right_instead_of_being_cut_up_to_a_limit() {
        let short = render(&chart(vec![bar("raw", 1.0, false)]));
        assert!(short.contains(r#"<text class="label" x="240" "#), "{short}");
        let label = "restart follower · Java producer (kafka-clients 4.1.0)";
        let long = render(&chart(vec![bar(label, 1.0, false), bar("raw", 2.0, true)]));
        assert!(long.contains(&format!(">{label}</text>")) && !long.contains("<title>restart"), "not cut: {long}");
        let layout = Layout::of(&chart(vec![bar(label, 1.0, false)]));
        assert!(layout.label_x > 240.0 && layout.plot_x + layout.plot_w + VALUES_W == WIDTH);
        let too_long = render(&chart(vec![bar(&"x".repeat(80), 1.0, false)]));
        assert!(too_long.contains(&format!("<title>{}</title>", "x".repeat(80))), "cut past the limit, with a tooltip");
    }

    #[test]
    fn bars_whiskers_references_and_missing_rows_are_drawn_as_such() {
        let svg = render(&chart(vec![
            bar("raw", 2_000_000.0, false),
            bar("framework", 1_000_000.0, true),
            Row {
                label: "raw".into(),
                group_start: false,
                kind: RowKind::Reference { value: 2_489_626.0, origin: "seed 000".into() },
            },
            Row {
                label: "4 shards".into(),
                group_start: true,
                kind: RowKind::Missing { status: "withdrawn".into(), reason: "integrity failed".into() },
            },
        ]));
        assert_eq!(svg.matches(r#"class="bar"#).count(), 2);
        assert_eq!(svg.matches(r#"class="bar default""#).count(), 1);
        assert_eq!(svg.matches(r#"class="whisker""#).count(), 2);
        assert_eq!(svg.matches(r#"class="ref""#).count(), 1);
        assert!(!svg.contains(r#"data-row="3""#), "a withdrawn row must not be a bar");
        assert!(svg.contains("withdrawn — integrity failed"));
        assert!(svg.contains("records/s — higher is better →"));
        assert!(svg.contains("Apple &lt;M5&gt;"));
        assert!(svg.contains(">2.49M (seed 000)<"));
    }

    #[test]
    fn labels_are_escaped_and_long_ones_keep_their_full_text_as_a_tooltip() {
        let hostile = "<script>alert(1)</script> and a very long variant name indeed";
        let svg = render(&chart(vec![bar(hostile, 1.0, false)]));
        assert!(!svg.contains("<script>"));
        assert!(
            svg.contains("<title>&lt;script&gt;alert(1)&lt;/script&gt; and a very long variant name indeed</title>")
        );
    }

    #[test]
    fn legend_text_wraps_at_spaces() {
        assert_eq!(wrap("aa bb cc", 5), ["aa bb", "cc"]);
        assert_eq!(wrap("abcdefgh ij", 4), ["abcdefgh", "ij"]);
        assert_eq!(wrap("", 4), [""]);
    }

    #[test]
    fn the_axis_covers_whiskers_and_references_with_round_ticks() {
        // The whisker reaches 1.1M: a step of 250k (the first nice step >= 220k) gives an axis to 1.25M.
        assert_eq!(axis(&chart(vec![bar("a", 1_000_000.0, false)])), (1_250_000.0, 250_000.0));
        assert_eq!(axis(&chart(vec![])), (1.0, 0.2));
    }
}
