//! Best points: an arm's best measured point is sought only among points doing the same work as the point
//! it stands beside (the same `applied` workload, format, key, compression, connections, offered load and
//! sink), never across workloads. Records that do not say what they applied have no workload to match, so
//! no best point is sought for them.

use streamlab_record::applied::{CONNECTIONS, FORMAT, KEY, OFFERED_LOAD, SINK, WORKLOAD};
use streamlab_record::stats::Summary;

use crate::results::format;
use crate::results::model::{MatrixData, Outcome, Point, label_number, outcome};

/// The `applied` keys that together name a workload.
pub const WORKLOAD_KEYS: &[&str] =
    &[WORKLOAD, FORMAT, KEY, "producer.compression.type", CONNECTIONS, OFFERED_LOAD, SINK];

/// A point's workload: the values of [`WORKLOAD_KEYS`] its first record applied; `None` without an applied map.
pub fn workload(point: &Point) -> Option<Vec<Option<String>>> {
    let r = point.records.iter().find(|r| !r.measurement.applied.is_empty())?;
    Some(WORKLOAD_KEYS.iter().map(|k| r.measurement.applied.get(*k).cloned()).collect())
}

/// The point of one arm with the best median of a metric within one workload.
pub struct Best<'r> {
    pub point: Point<'r>,
    pub sweep: String,
    pub sweep_title: String,
    pub summary: Summary,
}

impl Best<'_> {
    /// `sweep “…”, point 100k`.
    pub fn place(&self) -> String {
        let label = if self.point.label.is_empty() { String::new() } else { format!(", point {}", self.point.label) };
        format!("sweep “{}”{label}", self.sweep_title)
    }
}

/// The best point of `arm` for `metric` among every sweep's points doing the work of `like`; `None` when
/// `like` does not say what it applied or the arm measured nothing there.
pub fn best_point<'r>(
    data: &MatrixData<'r>,
    arm: &str,
    metric: &str,
    higher_is_better: bool,
    like: &Point,
) -> Option<Best<'r>> {
    let want = workload(like)?;
    let mut best: Option<Best> = None;
    for sweep in &data.info.sweeps {
        for point in data.points(sweep).into_iter().filter(|p| p.arm == arm && workload(p).as_ref() == Some(&want)) {
            let Outcome::Measured { summary, .. } = outcome(&point.records, metric) else { continue };
            // Ties keep the first point met, in the matrix's sweep order.
            let better = best.as_ref().is_none_or(|b| {
                if higher_is_better { summary.median > b.summary.median } else { summary.median < b.summary.median }
            });
            if better {
                best = Some(Best { point, sweep: sweep.name.clone(), sweep_title: sweep.title.clone(), summary });
            }
        }
    }
    best
}

/// Whether two points are the same records (the default point appears in several sweeps).
pub fn same_point(a: &Point, b: &Point) -> bool {
    a.records.len() == b.records.len() && a.records.iter().zip(&b.records).all(|(x, y)| std::ptr::eq(*x, *y))
}

/// The knobs of `point` that differ from `base`'s: `batch_max_rows = 100k, min_pause_ms = 10`.
pub fn knob_changes(base: &Point, point: &Point) -> String {
    let knobs = |p: &Point| p.records.first().map(|r| r.variant.knobs.clone()).unwrap_or_default();
    let (from, to) = (knobs(base), knobs(point));
    let changed: Vec<String> =
        to.iter().filter(|(k, v)| from.get(*k) != Some(v)).map(|(k, v)| format!("{k} = {}", knob_value(v))).collect();
    if changed.is_empty() {
        "the same knobs as the default point".into()
    } else {
        format!("knobs that differ from the default point: {}", changed.join(", "))
    }
}

/// A knob's value as a reader would write it: `100k` for 100000 when that spells it exactly.
pub fn knob_value(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::String(s) => s.clone(),
        serde_json::Value::Number(n) => match n.as_f64() {
            Some(x) if x.fract() == 0.0 && x.abs() >= 1000.0 => {
                let short = format::compact(x);
                if label_number(&short) == Some(x) { short } else { n.to_string() }
            }
            _ => n.to_string(),
        },
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn knob_values_read_as_written() {
        assert_eq!(knob_value(&serde_json::json!(100000)), "100k");
        assert_eq!(knob_value(&serde_json::json!(268435456)), "268435456");
        assert_eq!(knob_value(&serde_json::json!(10)), "10");
        assert_eq!(knob_value(&serde_json::json!(2.5)), "2.5");
        assert_eq!(knob_value(&serde_json::json!("lz4")), "lz4");
    }
}
