//! What a figure is: its title in words (a ratio's title template filled in from the point it was measured
//! at) and the configuration it was measured with, hashed into the short key that separates its history
//! series, so a change of default configuration starts a new series instead of joining the old one.

use std::collections::BTreeMap;

use sha2::{Digest, Sha256};

use crate::results::format;
use crate::results::model::Point;

/// Fill a title template: `{point}` is the point's label (dropped with its comma when the point has none),
/// `{<knob>}` the knob's value where every side agrees on it, else "each side's own".
pub fn render_title(template: &str, label: &str, knobs: &[&BTreeMap<String, serde_json::Value>]) -> String {
    let mut t = template.to_owned();
    if label.is_empty() {
        for gap in [", {point}", "{point}, ", " {point}", "{point}"] {
            t = t.replace(gap, "");
        }
    } else {
        t = t.replace("{point}", label);
    }
    let mut out = String::with_capacity(t.len());
    let mut rest = t.as_str();
    while let Some(open) = rest.find('{') {
        let Some(close) = rest[open..].find('}').map(|c| open + c) else { break };
        out.push_str(&rest[..open]);
        let name = &rest[open + 1..close];
        let values: Vec<String> = knobs.iter().filter_map(|k| k.get(name)).map(placeholder_value).collect();
        out.push_str(match values.first() {
            Some(v) if values.iter().all(|x| x == v) => v,
            Some(_) => "each side's own",
            None => "?",
        });
        rest = &rest[close + 1..];
    }
    out.push_str(rest);
    out
}

/// A knob's value in a title: integers grouped by thousands (`200,000`), anything else as written.
fn placeholder_value(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::String(s) => s.clone(),
        serde_json::Value::Number(n) if n.as_i64().is_some_and(|x| x.abs() >= 10_000) => {
            format::table_value(n.as_f64().unwrap_or_default())
        }
        other => other.to_string(),
    }
}

/// The configuration behind a figure, as `side: knob k` / `side: applied k` -> value, from the first
/// record of each side's point (reps of a point share their configuration).
pub fn config_items(metric: &str, sides: &[(&str, &Point)]) -> BTreeMap<String, String> {
    let mut out = BTreeMap::from([("metric".to_owned(), metric.to_owned())]);
    for (side, point) in sides {
        let Some(r) = point.records.first() else { continue };
        for (k, v) in &r.variant.knobs {
            out.insert(format!("{side}: knob {k}"), v.to_string());
        }
        for (k, v) in &r.measurement.applied {
            out.insert(format!("{side}: {APPLIED}{k}"), v.clone());
        }
        if let Some(shape) = r.run.environment_shape() {
            out.insert(format!("{side}: environment"), shape);
        }
    }
    out
}

const APPLIED: &str = "applied ";

/// Eight hex digits of the SHA-256 of the configuration's `key = value` lines.
pub fn config_hash(items: &BTreeMap<String, String>) -> String {
    let mut h = Sha256::new();
    for (k, v) in items {
        h.update(k.as_bytes());
        h.update(b" = ");
        h.update(v.as_bytes());
        h.update(b"\n");
    }
    hex::encode(h.finalize())[..8].to_owned()
}

/// What changed from one configuration to the next: `framework: knob pipeline_threads 1 → 4`, one item per
/// setting, added and removed ones included; a side whose records start (or stop) saying what they applied
/// is one item, not one per setting.
pub fn config_changes(from: &BTreeMap<String, String>, to: &BTreeMap<String, String>) -> Vec<String> {
    let applied_sides = |m: &BTreeMap<String, String>| -> Vec<String> {
        let mut sides: Vec<String> =
            m.keys().filter_map(|k| k.split_once(&format!(": {APPLIED}")).map(|(side, _)| side.to_owned())).collect();
        sides.dedup();
        sides
    };
    let (before, after) = (applied_sides(from), applied_sides(to));
    let whole = |k: &str| {
        k.split_once(&format!(": {APPLIED}"))
            .is_some_and(|(side, _)| before.iter().any(|s| s == side) != after.iter().any(|s| s == side))
    };
    let mut out: Vec<String> = Vec::new();
    for side in after.iter().filter(|s| !before.contains(s)) {
        out.push(format!("{side}: its records now say what they applied"));
    }
    for side in before.iter().filter(|s| !after.contains(s)) {
        out.push(format!("{side}: its records no longer say what they applied"));
    }
    let mut keys: Vec<&String> = from.keys().chain(to.keys()).filter(|k| !whole(k)).collect();
    keys.sort();
    keys.dedup();
    out.extend(keys.into_iter().filter(|k| from.get(*k) != to.get(*k)).map(|k| match (from.get(k), to.get(k)) {
        (Some(a), Some(b)) => format!("{k} {a} → {b}"),
        (None, Some(b)) => format!("{k} = {b} (new)"),
        (Some(a), None) => format!("{k} = {a} (gone)"),
        (None, None) => unreachable!("a key of one side"),
    }));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn titles_fill_points_and_knobs_in_words() {
        let a = BTreeMap::from([("batch_size".to_owned(), json!(5000)), ("rows".to_owned(), json!(200000))]);
        let b = BTreeMap::from([("batch_size".to_owned(), json!(1000))]);
        let t = "snapshot -> Kafka, {point}, batch {batch_size}, {rows} rows";
        assert_eq!(render_title(t, "batch 5000", &[&a, &a]), "snapshot -> Kafka, batch 5000, batch 5000, 200,000 rows");
        assert_eq!(render_title(t, "", &[&a]), "snapshot -> Kafka, batch 5000, 200,000 rows");
        assert_eq!(render_title("x {batch_size}", "", &[&a, &b]), "x each side's own");
        assert_eq!(render_title("x {nope} {", "", &[&a]), "x ? {");
    }

    #[test]
    fn a_change_of_any_setting_changes_the_hash_and_is_named() {
        let old = BTreeMap::from([("framework: knob pipeline_threads".to_owned(), "1".to_owned())]);
        let mut new = old.clone();
        assert_eq!(config_hash(&old), config_hash(&new));
        new.insert("framework: knob pipeline_threads".into(), "4".into());
        new.insert("framework: knob sink_queue_capacity".into(), "64".into());
        assert_ne!(config_hash(&old), config_hash(&new));
        assert_eq!(config_hash(&old).len(), 8);
        assert_eq!(
            config_changes(&old, &new),
            ["framework: knob pipeline_threads 1 → 4", "framework: knob sink_queue_capacity = 64 (new)"]
        );
        // Records that start saying what they applied are one change, not one per setting.
        let mut applied = new.clone();
        applied.insert("framework: applied format".into(), "bytes".into());
        applied.insert("framework: applied connections".into(), "1".into());
        assert_eq!(config_changes(&new, &applied), ["framework: its records now say what they applied"]);
        let mut changed = applied.clone();
        changed.insert("framework: applied connections".into(), "2".into());
        assert_eq!(config_changes(&applied, &changed), ["framework: applied connections 1 → 2"]);
    }
}
