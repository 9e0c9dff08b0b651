//! Text for numbers, dates and SVG: deterministic, locale-free, so the same results give the same bytes.

/// A value for a data table: integers with thousands separators from 1,000 up, a few significant digits below.
pub fn table_value(x: f64) -> String {
    if !x.is_finite() {
        return "—".into();
    }
    let a = x.abs();
    if a >= 1000.0 {
        group_thousands(x.round() as i64)
    } else if a >= 100.0 {
        format!("{x:.1}")
    } else if a >= 1.0 {
        format!("{x:.2}")
    } else if a == 0.0 {
        "0".into()
    } else {
        format!("{x:.3}")
    }
}

/// A count of things (records, reps): an integer with thousands separators.
pub fn count(x: f64) -> String {
    if x.is_finite() { group_thousands(x.round() as i64) } else { "—".into() }
}

/// A short value for a chart label or axis tick: 2.49M, 174k, 62.0, 0.49.
pub fn compact(x: f64) -> String {
    if !x.is_finite() {
        return "—".into();
    }
    let a = x.abs();
    let (scaled, suffix) = if a >= 1e9 {
        (x / 1e9, "G")
    } else if a >= 1e6 {
        (x / 1e6, "M")
    } else if a >= 1e3 {
        (x / 1e3, "k")
    } else {
        (x, "")
    };
    let s = scaled.abs();
    let digits = if s >= 100.0 {
        0
    } else if s >= 10.0 {
        1
    } else {
        2
    };
    let text = format!("{scaled:.digits$}");
    // Ticks such as 2.00M read better as 2M.
    let text = if text.contains('.') { text.trim_end_matches('0').trim_end_matches('.').to_owned() } else { text };
    format!("{text}{suffix}")
}

/// A ratio of two medians, e.g. `0.49×`.
pub fn ratio(x: f64) -> String {
    if !x.is_finite() {
        return "—".into();
    }
    if x.abs() >= 10.0 {
        format!("{x:.1}×")
    } else if x != 0.0 && x.abs() < 0.1 {
        // Two significant digits, so a small ratio never reads as a rounder number outside its own interval.
        let digits = (-x.abs().log10().floor()) as usize + 1;
        format!("{x:.digits$}×")
    } else {
        format!("{x:.2}×")
    }
}

fn group_thousands(n: i64) -> String {
    let digits = n.unsigned_abs().to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3 + 1);
    if n < 0 {
        out.push('-');
    }
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Bytes as GiB with one decimal.
pub fn gib(bytes: u64) -> String {
    format!("{:.1} GiB", bytes as f64 / (1u64 << 30) as f64)
}

/// UTC `YYYY-MM-DD HH:MM:SS UTC` from milliseconds since the epoch.
pub fn date_time(ts_ms: u64) -> String {
    let secs = ts_ms / 1000;
    let rem = secs % 86_400;
    format!("{} {:02}:{:02}:{:02} UTC", crate::clock::date_utc(ts_ms), rem / 3600, rem % 3600 / 60, rem % 60)
}

/// RFC 3339 in UTC, `YYYY-MM-DDTHH:MM:SSZ`, from milliseconds since the epoch (Atom's and JSON's dates).
pub fn rfc3339(ts_ms: u64) -> String {
    let secs = ts_ms / 1000;
    let rem = secs % 86_400;
    format!("{}T{:02}:{:02}:{:02}Z", crate::clock::date_utc(ts_ms), rem / 3600, rem % 3600 / 60, rem % 60)
}

/// A duration in whole seconds as `1 h 02 min 03 s`, `2 min 05 s` or `7 s`.
pub fn duration(ms: u64) -> String {
    let s = ms / 1000;
    match (s / 3600, s % 3600 / 60, s % 60) {
        (0, 0, sec) => format!("{sec} s"),
        (0, min, sec) => format!("{min} min {sec:02} s"),
        (h, min, sec) => format!("{h} h {min:02} min {sec:02} s"),
    }
}

/// Escape text for SVG/XML content and attribute values (the charts bypass the template autoescaper).
pub fn xml_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            // Control characters are not allowed in XML 1.0 text.
            c if c.is_control() && c != '\n' && c != '\t' => out.push('\u{fffd}'),
            c => out.push(c),
        }
    }
    out
}

/// A log's text as a page can show it: terminal colour codes (a harness log written with them) and other control
/// characters, which HTML does not allow, removed; lines and tabs kept.
pub fn plain_text(s: &str) -> String {
    anstream::adapter::strip_str(s).to_string()
}

/// Shorten `s` to at most `max` characters, ending with an ellipsis when cut.
pub fn truncate(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_owned();
    }
    let mut out: String = s.chars().take(max.saturating_sub(1)).collect();
    out.push('…');
    out
}

/// A fragment- and file-name-safe slug: lowercase ASCII letters, digits and dashes.
pub fn slug(s: &str) -> String {
    let mut out = String::new();
    for c in s.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else if !out.ends_with('-') && !out.is_empty() {
            out.push('-');
        }
    }
    let out = out.trim_end_matches('-');
    if out.is_empty() { "x".into() } else { out.to_owned() }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_coloured_log_line_loses_its_colour_codes_and_keeps_its_text() {
        let line = "\u{1b}[2m2026-12-01T19:52:15Z\u{1b}[0m \u{1b}[31mERROR\u{1b}[0m librdkafka: FAIL\u{7}\n\tnext";
        assert_eq!(super::plain_text(line), "2026-12-01T19:52:15Z ERROR librdkafka: FAIL\n\tnext");
        assert_eq!(super::plain_text("a\u{0}b\r\n"), "ab\r\n", "no control character but whitespace reaches a page");
    }

    use super::*;

    #[test]
    fn table_values_group_thousands_and_keep_small_figures_readable() {
        assert_eq!(table_value(2_489_626.409), "2,489,626");
        assert_eq!(table_value(-1234.0), "-1,234");
        assert_eq!(table_value(999.95), "1000.0");
        assert_eq!(table_value(62.0), "62.00");
        assert_eq!(table_value(0.4864), "0.486");
        assert_eq!(table_value(0.0), "0");
        assert_eq!(table_value(f64::NAN), "—");
    }

    #[test]
    fn compact_values_use_suffixes_without_trailing_zeros() {
        assert_eq!(compact(2_489_626.4), "2.49M");
        assert_eq!(compact(174_327.1), "174k");
        assert_eq!(compact(2_000_000.0), "2M");
        assert_eq!(compact(12_500.0), "12.5k");
        assert_eq!(compact(0.0), "0");
        assert_eq!(compact(0.486), "0.49");
        assert_eq!(ratio(0.4864), "0.49×");
        assert_eq!(ratio(12.34), "12.3×");
        assert_eq!(ratio(0.00563), "0.0056×");
        assert_eq!(ratio(0.0549), "0.055×");
        assert_eq!(ratio(0.1), "0.10×");
    }

    #[test]
    fn dates_come_from_the_timestamp_in_utc() {
        // 2026-07-13 12:34:56 UTC
        assert_eq!(date_time(1_783_946_096_000), "2026-07-13 12:34:56 UTC");
        assert_eq!(duration(3_723_000), "1 h 02 min 03 s");
        assert_eq!(duration(125_000), "2 min 05 s");
    }

    #[test]
    fn xml_escape_neutralises_markup() {
        assert_eq!(xml_escape("<script>alert(1)</script>"), "&lt;script&gt;alert(1)&lt;/script&gt;");
        assert_eq!(xml_escape("a\"b'c&\u{7}"), "a&quot;b&#39;c&amp;\u{fffd}");
        assert_eq!(truncate("abcdef", 4), "abc…");
        assert_eq!(slug("Queue: 100k <b>"), "queue-100k-b");
        assert_eq!(slug("<>"), "x");
    }
}
