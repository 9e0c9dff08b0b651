//! The end-of-run summary: per matrix and point (arm, sweep, label), the median of the headline metric,
//! n, the rep-to-rep coefficient of variation and the precision of the median (against the run's target), then how many records were ok, failed, not run or
//! withdrawn for integrity.

use streamlab_record::provenance::Provenance;
use streamlab_record::stats::Summary;
use streamlab_record::stats::precision::{reached_text, target_note};
use streamlab_record::{IntegrityStatus, Record, Status};

/// The line printed as each task ends; a point measured as another names it.
pub fn record_line(r: &Record) -> String {
    let mut what = r.task_name();
    if let Some(p) = &r.measured_as {
        what.push_str(&format!(", measured as [{} {}] rep {}", p.sweep, p.label, p.rep));
    }
    match (r.status, r.measurement.metrics.get("records_per_s")) {
        (Status::Ok, _) if !r.is_publishable() => {
            format!("  WITHDRAWN {what}: {}", r.reason.clone().unwrap_or_default())
        }
        (Status::Ok, Some(m)) => {
            format!("  ok {what}: {:.0} {} (integrity {:?})", m.value, m.unit, r.measurement.integrity.status)
        }
        (Status::Ok, None) => format!("  ok {what}"),
        (Status::Failed, _) => format!("  FAILED {what}: {}", r.reason.clone().unwrap_or_default()),
        (Status::NotRun, _) => format!("  not run {what}: {}", r.reason.clone().unwrap_or_default()),
    }
}

/// The metric a matrix is summarised by: records/s if its records have it, else the first one they report.
fn headline_metric(records: &[&Record]) -> Option<String> {
    if records.iter().any(|r| r.measurement.metrics.contains_key("records_per_s")) {
        return Some("records_per_s".into());
    }
    records.iter().find_map(|r| r.measurement.metrics.keys().next().cloned())
}

/// The summary's lines for one matrix's records, points in the order they first ran, each point's precision
/// against the run's `target` for the matrix.
pub fn lines(bench: &str, target: Option<f64>, records: &[Record]) -> Vec<String> {
    let records: Vec<&Record> = records.iter().filter(|r| r.bench == bench).collect();
    let Some(metric) = headline_metric(&records) else {
        return vec![format!("{bench}: no measurements"), counts(&records)];
    };
    let mut out = vec![format!("{bench}: median {metric} per point, n reps, CV = stddev/mean across reps")];
    let mut points: Vec<(&str, &str, &str)> = Vec::new();
    for r in &records {
        let p = (r.arm.as_str(), r.variant.sweeps.first().map_or("", String::as_str), r.variant.label.as_str());
        if !points.contains(&p) {
            points.push(p);
        }
    }
    for (arm, sweep, label) in points {
        let values: Vec<f64> = records
            .iter()
            .filter(|r| r.arm == arm && r.variant.sweeps.first().map_or("", String::as_str) == sweep)
            .filter(|r| r.variant.label == label && r.is_publishable())
            .filter_map(|r| r.measurement.metrics.get(&metric).map(|m| m.value))
            .collect();
        let what = format!("  {arm:<10} {sweep:<28} {label:<16}");
        out.push(match streamlab_record::stats::summarize(&values) {
            Some(s) => {
                let cv = s
                    .stddev
                    .filter(|_| s.mean != 0.0)
                    .map_or("—".to_owned(), |sd| format!("{:.1}%", 100.0 * sd / s.mean));
                format!("{what} {:>14.1}  n={}  CV {cv}  {}", s.median, s.n, precision_cell(&s, target))
            }
            None => format!("{what} {:>14}  n=0", "—"),
        });
    }
    out.push(counts(&records));
    out
}

/// For a resumed run, how each later attempt's reps of `bench` measured against the first attempt's (the
/// matrix pages say the same).
pub fn attempts_line(p: &Provenance, bench: &str, records: &[Record]) -> Option<String> {
    let records: Vec<Record> = records.iter().filter(|r| r.bench == bench).cloned().collect();
    let metric = headline_metric(&records.iter().collect::<Vec<_>>())?;
    crate::results::attempts::attempts_note(p, &records, &metric).map(|note| format!("  {}", note.text))
}

/// `precision ±3.2% (target ±5%: met)`: how precisely the median is known, and whether the run's target was met.
fn precision_cell(s: &Summary, target: Option<f64>) -> String {
    let reached = s.precision();
    let text = format!("precision {}", reached_text(reached));
    match target {
        None => text,
        Some(t) => format!("{text} ({})", target_note(reached, t).0),
    }
}

/// Records that failed or failed their integrity check; a not-run record with its reason is not a failure.
pub fn failures(records: &[Record]) -> usize {
    records
        .iter()
        .filter(|r| r.status == Status::Failed || r.measurement.integrity.status == IntegrityStatus::Failed)
        .count()
}

fn counts(records: &[&Record]) -> String {
    let count = |f: &dyn Fn(&Record) -> bool| records.iter().filter(|r| f(r)).count();
    format!(
        "  ok {}, failed {}, not run {}, integrity failed {}",
        count(&|r| r.is_publishable()),
        count(&|r| r.status == Status::Failed),
        count(&|r| r.status == Status::NotRun),
        count(&|r| r.status == Status::Ok && r.measurement.integrity.status == IntegrityStatus::Failed),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(arm: &str, sweep: &str, label: &str, rep: u32, value: Option<f64>, status: &str) -> Record {
        let metrics = value.map_or(
            serde_json::json!({}),
            |v| serde_json::json!({"records_per_s": {"value": v, "unit": "records/s", "higher_is_better": true}}),
        );
        serde_json::from_value(serde_json::json!({
            "schema": streamlab_record::SCHEMA, "bench": "toy", "kind": "produce",
            "run": {"id": "r", "ts_ms": 0, "commit": "c", "dirty": false, "host": "h", "cpu": "c", "cores": 2,
                    "os": "o", "profile": "quick", "env": "native"},
            "arm": arm, "variant": {"label": label, "sweeps": [sweep]}, "status": status, "metrics": metrics,
            "integrity": {"status": "verified", "method": "m"}, "rep": rep, "reproduce": "x",
        }))
        .unwrap()
    }

    #[test]
    fn each_point_gets_its_median_n_and_cv_and_the_statuses_are_counted() {
        let records = vec![
            record("fast", "mode", "fast arm", 1, Some(90.0), "ok"),
            record("slow", "mode", "slow arm", 1, Some(10.0), "ok"),
            record("fast", "mode", "fast arm", 2, Some(100.0), "ok"),
            record("slow", "mode", "slow arm", 2, None, "failed"),
            record("fast", "mode", "fast arm", 3, Some(110.0), "ok"),
            record("slow", "batch", "100", 1, None, "not_run"),
        ];
        let out = lines("toy", None, &records);
        assert!(out[0].contains("median records_per_s"), "{out:?}");
        // 90, 100, 110: median 100, stddev 10, CV 10%.
        assert!(out[1].contains("fast") && out[1].contains("100.0") && out[1].contains("n=3  CV 10.0%"), "{out:?}");
        assert!(out[2].contains("slow arm") && out[2].contains("n=1  CV —"), "{out:?}");
        assert!(out[3].contains("batch") && out[3].contains("n=0"), "{out:?}");
        assert_eq!(out[4], "  ok 4, failed 1, not run 1, integrity failed 0");
        assert!(out[1].ends_with("precision — (n < 6)"), "{out:?}");
    }

    #[test]
    fn a_point_says_how_precisely_its_median_is_known_and_whether_the_target_was_met() {
        let rep_of = |value: f64, rep: u32| record("fast", "mode", "fast arm", rep, Some(value), "ok");
        // Six reps: the interval is [min, max] = [98, 103] around the median 100.
        let tight: Vec<Record> =
            [100.0, 98.0, 103.0, 101.0, 99.0, 100.0].iter().zip(1..).map(|(v, rep)| rep_of(*v, rep)).collect();
        let out = lines("toy", Some(0.05), &tight);
        assert!(out[1].ends_with("precision ±3.0% (target ±5.0%: met)"), "{out:?}");
        let loose: Vec<Record> =
            [100.0, 80.0, 103.0, 101.0, 99.0, 100.0].iter().zip(1..).map(|(v, rep)| rep_of(*v, rep)).collect();
        let out = lines("toy", Some(0.05), &loose);
        assert!(out[1].ends_with("precision ±20.0% (target ±5.0%: not met)"), "{out:?}");
    }
}
