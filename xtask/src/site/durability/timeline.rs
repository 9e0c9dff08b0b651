//! A timeline of acknowledgements per 100 ms around a fault, as an inline SVG (no JavaScript): one bar per
//! bucket, the fault's moment as a line, the longest gap between acknowledgements shaded. Every string is
//! escaped here: the SVG bypasses the template autoescaper.

use std::fmt::Write;

use crate::results::format::{compact, xml_escape as esc};

const WIDTH: f64 = 440.0;
const HEIGHT: f64 = 130.0;
const LEFT: f64 = 44.0;
const RIGHT: f64 = 10.0;
const TOP: f64 = 10.0;
const BOTTOM: f64 = 28.0;
const BUCKET_MS: f64 = 100.0;

/// What one timeline shows.
#[derive(Debug, Clone, PartialEq)]
pub struct Timeline {
    pub id: String,
    pub title: String,
    /// Acknowledgements per 100 ms from the window's start.
    pub counts: Vec<u64>,
    /// The fault's first step, ms into the window.
    pub fault_at_ms: Option<f64>,
    /// The longest gap between acknowledgements: where it starts (ms into the window) and how long it is.
    pub gap: Option<(f64, f64)>,
}

/// The counts as a record keeps them (`acks_per_100ms`: numbers separated by commas).
pub fn parse_counts(text: &str) -> Option<Vec<u64>> {
    text.split(',').map(|c| c.trim().parse().ok()).collect()
}

pub fn render(t: &Timeline) -> String {
    let (plot_w, plot_h) = (WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM);
    let span_ms = (t.counts.len().max(1) as f64) * BUCKET_MS;
    let max = t.counts.iter().copied().max().unwrap_or(0).max(1) as f64;
    let x = |ms: f64| LEFT + (ms.clamp(0.0, span_ms) / span_ms) * plot_w;
    let y = |v: f64| TOP + plot_h - (v / max) * plot_h;
    let id = esc(&t.id);
    let mut s = String::new();
    let _ = write!(
        s,
        r#"<svg class="timeline" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {HEIGHT}" width="{WIDTH}" height="{HEIGHT}" role="img" aria-labelledby="{id}-t {id}-d">"#
    );
    let _ = write!(s, r#"<title id="{id}-t">{}</title>"#, esc(&t.title));
    let _ = write!(s, r#"<desc id="{id}-d">{}</desc>"#, esc(&describe(t)));
    if let Some((from, len)) = t.gap.filter(|(_, len)| *len > 0.0) {
        let _ = write!(
            s,
            r##"<rect class="gap" x="{:.1}" y="{TOP}" width="{:.1}" height="{plot_h:.1}" fill="#fde68a"><title>longest gap: {} ms</title></rect>"##,
            x(from),
            (x(from + len) - x(from)).max(1.0),
            compact(len)
        );
    }
    let bar_w = (plot_w / t.counts.len().max(1) as f64).max(0.5);
    for (i, &c) in t.counts.iter().enumerate().filter(|(_, c)| **c > 0) {
        let top = y(c as f64);
        let _ = write!(
            s,
            r##"<rect x="{:.2}" y="{top:.2}" width="{bar_w:.2}" height="{:.2}" fill="#1d4ed8"/>"##,
            x(i as f64 * BUCKET_MS),
            TOP + plot_h - top
        );
    }
    if let Some(at) = t.fault_at_ms {
        let fx = x(at);
        let _ = write!(
            s,
            r##"<line x1="{fx:.1}" y1="{TOP}" x2="{fx:.1}" y2="{:.1}" stroke="#b42318" stroke-width="2"/><text x="{:.1}" y="{:.1}" font-size="11" fill="#b42318">fault</text>"##,
            TOP + plot_h,
            fx + 3.0,
            TOP + 10.0
        );
    }
    let axis_y = TOP + plot_h;
    let _ = write!(s, r##"<line x1="{LEFT}" y1="{axis_y}" x2="{:.1}" y2="{axis_y}" stroke="#555"/>"##, LEFT + plot_w);
    let _ = write!(
        s,
        r##"<text x="{:.1}" y="{:.1}" font-size="10" text-anchor="end" fill="#555">{}</text><text x="{:.1}" y="{:.1}" font-size="10" text-anchor="end" fill="#555">0</text>"##,
        LEFT - 4.0,
        TOP + 8.0,
        compact(max),
        LEFT - 4.0,
        axis_y
    );
    let step_s = (span_ms / 1000.0 / 6.0).ceil().max(1.0);
    let mut tick = 0.0;
    while tick * 1000.0 <= span_ms {
        let tx = x(tick * 1000.0);
        let _ = write!(
            s,
            r##"<line x1="{tx:.1}" y1="{axis_y}" x2="{tx:.1}" y2="{:.1}" stroke="#555"/><text x="{tx:.1}" y="{:.1}" font-size="10" text-anchor="middle" fill="#555">{tick} s</text>"##,
            axis_y + 4.0,
            axis_y + 15.0
        );
        tick += step_s;
    }
    let _ = write!(
        s,
        r##"<text x="{:.1}" y="{:.1}" font-size="10" text-anchor="end" fill="#555">acknowledgements per 100 ms; time from the window's start</text>"##,
        LEFT + plot_w,
        HEIGHT - 2.0
    );
    s.push_str("</svg>");
    s
}

/// The chart in words, for screen readers.
fn describe(t: &Timeline) -> String {
    let total: u64 = t.counts.iter().sum();
    let mut text = format!("{total} acknowledgements over {:.1} s in 100 ms buckets", t.counts.len() as f64 / 10.0);
    if let Some(at) = t.fault_at_ms {
        text += &format!("; the fault at {:.1} s", at / 1000.0);
    }
    if let Some((from, len)) = t.gap {
        text += &format!("; the longest gap without an acknowledgement: {len:.0} ms from {:.1} s", from / 1000.0);
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_timeline_draws_a_bar_per_non_empty_bucket_the_fault_and_the_gap() {
        let t = Timeline {
            id: "t<1>".into(),
            title: "rdkafka & kill".into(),
            counts: vec![5, 5, 0, 0, 0, 7],
            fault_at_ms: Some(150.0),
            gap: Some((200.0, 300.0)),
        };
        let svg = render(&t);
        assert_eq!(svg.matches("fill=\"#1d4ed8\"").count(), 3);
        assert!(svg.contains(">fault</text>") && svg.contains("class=\"gap\""));
        assert!(svg.contains("rdkafka &amp; kill") && svg.contains("id=\"t&lt;1&gt;-t\""), "escaped");
        assert!(svg.contains("17 acknowledgements over 0.6 s"));
        assert_eq!(parse_counts("1, 2,3"), Some(vec![1, 2, 3]));
        assert_eq!(parse_counts("1,x"), None);
    }
}
