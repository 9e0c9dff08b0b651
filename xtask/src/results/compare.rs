//! Two runs side by side: every point both measured, B against A, with a verdict (as `asv compare` and `critcmp`
//! give one). `lab compare` prints it; the site's feed lists its regressions.
//!
//! - A point is a matrix, an arm and a sweep point; its reps are the records of that point with the metric that
//!   enter its median on the site: a rep that failed, failed its integrity check or ran under foreign load is
//!   set apart here too.
//! - The figure is the ratio of geometric means, B over A, with a 95% interval on the log scale (Welch's interval of the
//!   difference of the mean logarithms, mapped back with exp).
//! - The verdict is decided by the Mann–Whitney U test on the reps where their numbers allow it (its smallest
//!   two-sided p below 5%: at least 4 reps a side), else by whether that interval excludes 1. With one rep a side
//!   nothing can be told.
//! - Two runs on different machines (machine key: CPU model, cores, memory, kind, backend; not the kernel), or a point whose knobs,
//!   applied settings or placement (which CPUs the client and broker ran on) differ, are not comparable, with the
//!   reason.

use std::collections::BTreeMap;

use serde::Serialize;
use streamlab_record::Record;
use streamlab_record::stats::rank_test::mann_whitney;
use streamlab_record::stats::rank_test::smallest_rank_p;
use streamlab_record::stats::{geometric_mean, median, welch_ratio_interval};

use crate::results::load::Run;
use crate::results::model::{config_of, set_apart};

/// The significance level of the verdict.
pub const ALPHA: f64 = 0.05;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Faster,
    Slower,
    NoSignificantChange,
    NotComparable,
}

impl Verdict {
    pub fn text(self) -> &'static str {
        match self {
            Verdict::Faster => "faster",
            Verdict::Slower => "slower",
            Verdict::NoSignificantChange => "no significant change",
            Verdict::NotComparable => "not comparable",
        }
    }
}

/// One point of both runs.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    pub matrix: String,
    pub arm: String,
    pub point: String,
    pub median_a: Option<f64>,
    pub median_b: Option<f64>,
    /// Geometric mean of B over geometric mean of A (the ratio of medians where a value is not positive).
    pub ratio: Option<f64>,
    pub interval: Option<[f64; 2]>,
    pub p_value: Option<f64>,
    pub verdict: Verdict,
    /// Which test decided, or why the point is not comparable.
    pub why: String,
    /// How much worse B is, in percent (positive: worse, in the metric's own direction).
    pub worse_pct: Option<f64>,
}

impl Row {
    /// A point with its medians (A, B), before anything is judged.
    fn unjudged(key: &Key, (median_a, median_b): (Option<f64>, Option<f64>)) -> Row {
        Row {
            matrix: key.0.clone(),
            arm: key.1.clone(),
            point: key.2.clone(),
            median_a,
            median_b,
            ratio: None,
            interval: None,
            p_value: None,
            verdict: Verdict::NotComparable,
            why: String::new(),
            worse_pct: None,
        }
    }
}

/// The points significantly worse by more than `pct` percent, named.
pub fn regressions(rows: &[Row], pct: f64) -> Vec<String> {
    rows.iter()
        .filter(|r| r.verdict == Verdict::Slower && r.worse_pct.is_some_and(|w| w > pct))
        .map(|r| format!("{} {} [{}] {:.1}% worse", r.matrix, r.arm, r.point, r.worse_pct.unwrap_or_default()))
        .collect()
}

/// Every point of either run with `metric`, B against A.
pub fn compare(a: &Run, b: &Run, metric: &str) -> Vec<Row> {
    let (points_a, points_b) = (points(a, metric), points(b, metric));
    let hardware = (a.provenance.machine_key(), b.provenance.machine_key());
    let keys: Vec<&Key> = points_a.keys().chain(points_b.keys().filter(|k| !points_a.contains_key(*k))).collect();
    keys.into_iter()
        .map(|key| {
            let (side_a, side_b) = (points_a.get(key), points_b.get(key));
            let medians = (side_a.and_then(|s| median(&s.values)), side_b.and_then(|s| median(&s.values)));
            let mut row = Row::unjudged(key, medians);
            row.why = match (side_a, side_b) {
                (None, _) => format!("only run B measured it ({})", b.id),
                (_, None) => format!("only run A measured it ({})", a.id),
                _ if hardware.0 != hardware.1 => format!("different hardware: {} vs {}", hardware.0, hardware.1),
                (Some(x), Some(y)) => match config_difference(&x.config, &y.config) {
                    Some(diff) => format!("different configuration: {diff}"),
                    None => {
                        judge(&mut row, x, y);
                        return row;
                    }
                },
            };
            row
        })
        .collect()
}

/// (matrix, arm, sweep point).
type Key = (String, String, String);

/// The reps of one point in one run.
struct Side {
    values: Vec<f64>,
    higher_is_better: bool,
    /// Knobs, applied settings and placement of its first rep, `knob k` / `applied k` / `placement` -> value.
    config: BTreeMap<String, String>,
}

/// The reps with `metric` that the site draws (not set apart), by point.
fn points(run: &Run, metric: &str) -> BTreeMap<Key, Side> {
    let mut out: BTreeMap<Key, Side> = BTreeMap::new();
    for (matrix, file) in &run.matrices {
        for r in file.records.iter().filter(|r| set_apart(r).is_none()) {
            let Some(m) = r.measurement.metrics.get(metric).filter(|m| m.value.is_finite()) else { continue };
            let key = (matrix.clone(), r.arm.clone(), point_name(r));
            let side = out.entry(key).or_insert_with(|| Side {
                values: Vec::new(),
                higher_is_better: m.higher_is_better,
                config: config_of(r),
            });
            side.values.push(m.value);
        }
    }
    out
}

fn point_name(r: &Record) -> String {
    match r.variant.sweeps.as_slice() {
        [] => r.variant.label.clone(),
        sweeps => format!("{} {}", sweeps.join("+"), r.variant.label),
    }
}

/// The first settings in which two configurations differ, named with both values.
fn config_difference(a: &BTreeMap<String, String>, b: &BTreeMap<String, String>) -> Option<String> {
    let mut keys: Vec<&String> = a.keys().chain(b.keys()).collect();
    keys.sort();
    keys.dedup();
    let differ: Vec<String> = keys
        .into_iter()
        .filter(|k| a.get(*k) != b.get(*k))
        .map(|k| {
            let v = |m: &BTreeMap<String, String>| m.get(k).cloned().unwrap_or_else(|| "not stated".into());
            format!("{k}: {} vs {}", v(a), v(b))
        })
        .collect();
    match differ.len() {
        0 => None,
        1..=2 => Some(differ.join("; ")),
        n => Some(format!("{} and {} more", differ[..2].join("; "), n - 2)),
    }
}

/// The ratio, its interval, the test and the verdict of a comparable point.
fn judge(row: &mut Row, a: &Side, b: &Side) {
    // The ratio of geometric means, the centre of the log-scale interval below (the estimator the verdicts and
    // headlines print); the ratio of medians where a value is not positive.
    row.ratio = geometric_mean(&b.values).zip(geometric_mean(&a.values)).map(|(y, x)| y / x).or(
        match (row.median_a, row.median_b) {
            (Some(x), Some(y)) if x != 0.0 => Some(y / x),
            _ => None,
        },
    );
    row.interval = welch_ratio_interval(&a.values, &b.values);
    let rank = mann_whitney(&b.values, &a.values);
    row.p_value = rank.map(|t| t.p_value);
    let (n, m) = (a.values.len(), b.values.len());
    let (significant, why) = if smallest_rank_p(n, m) < ALPHA {
        (row.p_value.is_some_and(|p| p < ALPHA), format!("Mann-Whitney U on {n} and {m} reps"))
    } else if let Some([lo, hi]) = row.interval {
        (lo > 1.0 || hi < 1.0, format!("95% interval of the ratio ({n} and {m} reps: too few for the rank test)"))
    } else {
        (false, format!("{n} and {m} reps: too few to tell"))
    };
    row.why = why;
    row.worse_pct = row.ratio.map(|r| if a.higher_is_better { (1.0 - r) * 100.0 } else { (r - 1.0) * 100.0 });
    row.verdict = match (significant, row.worse_pct) {
        (true, Some(w)) if w > 0.0 => Verdict::Slower,
        (true, Some(_)) => Verdict::Faster,
        _ => Verdict::NoSignificantChange,
    };
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::lab::compare::table;
    use crate::results::fixtures;
    use crate::results::load::load_run;

    /// Two synthetic runs of five reps a point: B is 20% slower than A on `slow` points and the same elsewhere.
    fn runs(dir: &Path, slow: &[&str]) -> (Run, Run) {
        let noise = [1.00, 1.02, 0.98, 1.01, 0.99];
        let records = |run: &str, factor: &dyn Fn(&str) -> f64| -> Vec<Record> {
            ["framework", "raw"]
                .iter()
                .flat_map(|arm| {
                    noise.iter().enumerate().map(move |(rep, n)| {
                        fixtures::record(run, arm, "defaults", &[], true, rep as u32 + 1, 100_000.0 * n * factor(arm))
                    })
                })
                .collect()
        };
        let a =
            fixtures::write_run(dir, "20261201T000000Z-a", 1_795_857_300_000, &records("20261201T000000Z-a", &|_| 1.0));
        let b_records = records("20261201T010000Z-b", &|arm| if slow.contains(&arm) { 0.8 } else { 1.0 });
        let b = fixtures::write_run(dir, "20261201T010000Z-b", 1_795_860_900_000, &b_records);
        (load_run(&a).unwrap(), load_run(&b).unwrap())
    }

    #[test]
    fn a_known_twenty_percent_slowdown_is_slower_on_exactly_those_points() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = runs(dir.path(), &["raw"]);
        let rows = compare(&a, &b, "records_per_s");
        let verdicts: Vec<(&str, Verdict)> = rows.iter().map(|r| (r.arm.as_str(), r.verdict)).collect();
        assert_eq!(verdicts, [("framework", Verdict::NoSignificantChange), ("raw", Verdict::Slower)], "{rows:#?}");
        let raw = &rows[1];
        assert!((raw.ratio.unwrap() - 0.8).abs() < 1e-9 && raw.p_value.unwrap() < 0.05, "{raw:?}");
        let [lo, hi] = raw.interval.unwrap();
        assert!(lo < 0.8 && 0.8 < hi && hi < 1.0, "{lo} {hi}");
        assert!(raw.why.contains("Mann-Whitney"), "{}", raw.why);
        assert_eq!(regressions(&rows, 10.0).len(), 1);
        assert!(regressions(&rows, 25.0).is_empty(), "20% is within a 25% budget");
        let text = table(&a.id, &b.id, "records_per_s", &rows);
        assert!(
            text.lines().any(|l| l.starts_with("kafka_sink") && l.contains("raw") && l.contains("slower")),
            "{text}"
        );
        assert!(
            text.ends_with(
                "1 of 2 comparable points differ at the 5% level; with no real change about 0.1 would by \
                            chance alone\n"
            ),
            "{text}"
        );
        // The other way round B is faster.
        let back = compare(&b, &a, "records_per_s");
        assert_eq!(back[1].verdict, Verdict::Faster);
    }

    #[test]
    fn other_hardware_or_configuration_is_not_comparable_and_says_why() {
        let dir = tempfile::tempdir().unwrap();
        let (a, mut b) = runs(dir.path(), &[]);
        b.provenance.host.logical_cores = 8;
        let rows = compare(&a, &b, "records_per_s");
        assert!(rows.iter().all(|r| r.verdict == Verdict::NotComparable && r.why.contains("different hardware")));
        let (a, mut b) = runs(dir.path(), &[]);
        for file in b.matrices.values_mut() {
            for r in file.records.iter_mut().filter(|r| r.arm == "raw") {
                r.variant.knobs.insert("payload_bytes".into(), serde_json::json!(1024));
            }
        }
        let rows = compare(&a, &b, "records_per_s");
        assert_eq!(rows[0].verdict, Verdict::NoSignificantChange);
        assert_eq!(rows[1].verdict, Verdict::NotComparable);
        assert_eq!(rows[1].why, "different configuration: knob payload_bytes: 256 vs 1024");
    }

    #[test]
    fn reps_the_site_sets_apart_are_left_out_of_the_comparison() {
        let dir = tempfile::tempdir().unwrap();
        let (a, mut b) = runs(dir.path(), &[]);
        for file in b.matrices.values_mut() {
            for r in file.records.iter_mut().filter(|r| r.arm == "raw" && r.rep <= 2) {
                match r.rep {
                    1 => r.measurement.integrity = streamlab_record::Integrity::compare(10, 9, "hwm"),
                    _ => r.conditions = Some(fixtures::conditions(true, None)),
                }
                r.measurement.metrics.get_mut("records_per_s").unwrap().value *= 10.0;
            }
        }
        let rows = compare(&a, &b, "records_per_s");
        let raw = &rows[1];
        // B's reps 3 to 5: 98, 101 and 99 thousand.
        assert_eq!((raw.verdict, raw.median_b), (Verdict::NoSignificantChange, Some(99_000.0)), "{raw:?}");
        assert!(raw.why.contains("on 5 and 3 reps"), "{}", raw.why);
    }

    #[test]
    fn three_reps_a_side_are_judged_by_the_interval_and_one_rep_cannot_tell() {
        assert!((smallest_rank_p(3, 3) - 0.1).abs() < 1e-12 && smallest_rank_p(4, 4) < ALPHA);
        let side = |values: &[f64]| Side { values: values.to_vec(), higher_is_better: true, config: BTreeMap::new() };
        let key = ("m".to_owned(), "a".to_owned(), "p".to_owned());
        let row = || Row::unjudged(&key, (Some(100.0), Some(70.0)));
        let mut three = row();
        judge(&mut three, &side(&[100.0, 101.0, 99.0]), &side(&[70.0, 71.0, 69.0]));
        assert_eq!(three.verdict, Verdict::Slower);
        assert!(three.why.contains("95% interval") && three.why.contains("too few for the rank test"), "{}", three.why);
        let mut one = row();
        judge(&mut one, &side(&[100.0]), &side(&[70.0]));
        assert_eq!((one.verdict, one.why.as_str()), (Verdict::NoSignificantChange, "1 and 1 reps: too few to tell"));
    }
}
