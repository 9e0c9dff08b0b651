//! A resumed run measured its reps in two or more sessions, perhaps on a machine that ran at another speed
//! in each. Per point, a later attempt's median over the first attempt's; across points, a sign test of
//! whether they moved together, which no single point's few reps could show.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;
use streamlab_record::Record;
use streamlab_record::provenance::Provenance;
use streamlab_record::stats::{self, rank_test::sign_test};

use crate::results::model::drawn_by_rep;

/// The sign test's p-value below which the attempts are said to differ.
const ALPHA: f64 = 0.05;

/// One later attempt's reps against the first attempt's, over the points both measured.
#[derive(Debug, Clone, PartialEq)]
pub struct AttemptShift {
    /// 1 for the run's first `--resume`.
    pub attempt: usize,
    /// The attempt it is compared with: the earliest that ran any of these records.
    pub baseline: usize,
    pub points: usize,
    /// Points whose later median is above the first attempt's, and below it.
    pub higher: usize,
    pub lower: usize,
    /// The median over points of (later attempt's median / first attempt's median); `None` with no point
    /// measured in both.
    pub median_ratio: Option<f64>,
    pub p_value: f64,
}

impl AttemptShift {
    pub fn moved(&self) -> bool {
        self.p_value < ALPHA
    }
}

/// What a page says about records that ran in more than one attempt of their run.
#[derive(Debug, Clone, Serialize)]
pub struct AttemptsNote {
    pub text: String,
    /// The machine moved between attempts: the page shows it as a warning.
    pub moved: bool,
}

/// Each later attempt that ran some of `records` against the earliest that did, on `metric`, over the drawn
/// records of every point; empty when they all ran in one attempt (or the provenance predates the list of
/// environments, which is where attempts are read from).
pub fn attempt_shifts(p: &Provenance, records: &[Record], metric: &str) -> Vec<AttemptShift> {
    let attempt_of = p.attempt_of_tasks();
    let attempt = |r: &Record| attempt_of.get(r.task_name().as_str()).copied();
    let attempts: BTreeSet<usize> = records.iter().filter_map(attempt).collect();
    let Some(&baseline) = attempts.first() else { return Vec::new() };
    let mut points: BTreeMap<(&str, &[String], &str), Vec<&Record>> = BTreeMap::new();
    for r in records {
        points.entry((r.arm.as_str(), r.variant.sweeps.as_slice(), r.variant.label.as_str())).or_default().push(r);
    }
    attempts
        .iter()
        .skip(1)
        .map(|&later| {
            let ratios: Vec<f64> = points
                .values()
                .filter_map(|point| {
                    let drawn = drawn_by_rep(point, metric);
                    let median_in = |a: usize| {
                        let values: Vec<f64> = drawn
                            .values()
                            .filter(|&&r| attempt(r) == Some(a))
                            .map(|r| r.measurement.metrics[metric].value)
                            .collect();
                        stats::median(&values)
                    };
                    stats::ratio(median_in(later)?, median_in(baseline)?)
                })
                .collect();
            let higher = ratios.iter().filter(|r| **r > 1.0).count();
            let lower = ratios.iter().filter(|r| **r < 1.0).count();
            AttemptShift {
                attempt: later,
                baseline,
                points: ratios.len(),
                higher,
                lower,
                median_ratio: stats::median(&ratios),
                p_value: sign_test(higher, lower),
            }
        })
        .collect()
}

/// The reps (by number) that ran partly in one attempt and partly in another: a ratio pairs the same rep of
/// two arms, so these are the ones whose pairs may not have been measured side by side.
pub fn reps_split_across_attempts(p: &Provenance, records: &[Record]) -> Vec<u32> {
    let attempt_of = p.attempt_of_tasks();
    let mut seen: BTreeMap<u32, BTreeSet<usize>> = BTreeMap::new();
    for r in records {
        if let Some(a) = attempt_of.get(r.task_name().as_str()) {
            seen.entry(r.rep).or_default().insert(*a);
        }
    }
    seen.into_iter().filter(|(_, attempts)| attempts.len() > 1).map(|(rep, _)| rep).collect()
}

/// The page's note on records that ran in several attempts: how each later one measured against the first,
/// whether ratios stayed within one attempt, and the calibration at each resume.
pub fn attempts_note(p: &Provenance, records: &[Record], metric: &str) -> Option<AttemptsNote> {
    let shifts = attempt_shifts(p, records, metric);
    if shifts.is_empty() {
        return None;
    }
    let mut text =
        format!("These records ran in {} attempts of the run (it was resumed with --resume).", shifts.len() + 1);
    for s in &shifts {
        let (later, first) = (s.attempt + 1, s.baseline + 1);
        match s.median_ratio {
            None => text.push_str(&format!(
                " Attempts {first} and {later} measured no point in common, so the machine's speed in each cannot \
                 be compared from the reps."
            )),
            Some(ratio) => text.push_str(&format!(
                " Attempt {later}'s reps measured {ratio:.2}× attempt {first}'s {metric} at the same point (median \
                 over {} points, {} higher and {} lower; sign test {}){}",
                s.points,
                s.higher,
                s.lower,
                p_text(s.p_value),
                if s.moved() {
                    ": the machine's speed moved between the sessions, so a median here mixes two speeds."
                } else {
                    ": no shift between the sessions detected."
                }
            )),
        }
        let calibration = p.calibration.as_ref().and_then(|c| Some((c.start?, *c.resumes.get(s.attempt - 1)?)));
        if let Some((start, resume)) = calibration {
            let (cpu, produce) = resume.change_from(&start);
            text.push_str(&format!(
                " Its calibration against the run's start: CPU loop {:+.1}%, loopback produce {:+.1}%.",
                cpu * 100.0,
                produce * 100.0
            ));
        }
    }
    let split = reps_split_across_attempts(p, records);
    text.push_str(&if split.is_empty() {
        " Each rep ran wholly within one attempt, so a ratio (the same rep of two arms) divides reps of one session."
            .to_owned()
    } else {
        let reps: Vec<String> = split.iter().map(u32::to_string).collect();
        format!(" Rep {} ran partly in each attempt: its ratios may divide reps of two sessions.", reps.join(", "))
    });
    Some(AttemptsNote { text, moved: shifts.iter().any(AttemptShift::moved) })
}

fn p_text(p: f64) -> String {
    if p < 0.001 { "p < 0.001".to_owned() } else { format!("p = {p:.3}") }
}

#[cfg(test)]
mod tests {
    use streamlab_record::provenance::{Calibration, CalibrationResult, FIRST_ENVIRONMENT, RESUMED_ENVIRONMENT};

    use super::*;
    use crate::results::fixtures;

    /// Eight points of six reps each, reps 1-3 in the run's first attempt and 4-6 in a resumed one, where
    /// point k's later reps measure `later(k)` times its earlier ones.
    fn resumed_run(later: impl Fn(usize) -> f64) -> (Provenance, Vec<Record>) {
        let mut records = Vec::new();
        for k in 0..8 {
            for rep in 1..=6 {
                let value = (1000.0 + 10.0 * k as f64 + ((rep - 1) % 3) as f64) * if rep > 3 { later(k) } else { 1.0 };
                records.push(fixtures::record("run-a", "raw", &format!("{k} cores"), &["cores"], false, rep, value));
            }
        }
        let mut p = fixtures::provenance("run-a", 1_000);
        for (env, why, reps) in [("e1", FIRST_ENVIRONMENT, 1..=3), ("e2", RESUMED_ENVIRONMENT, 4..=6)] {
            fixtures::note_environment(&mut p, env, "4.1.0", None, why);
            records.iter().filter(|r| reps.contains(&r.rep)).for_each(|r| p.note_task(&r.task_name()));
        }
        (p, records)
    }

    #[test]
    fn a_later_attempt_that_measured_higher_at_every_point_is_a_machine_that_moved() {
        let (mut p, records) = resumed_run(|_| 1.9);
        let at = |cpu: f64| CalibrationResult { ts_ms: 0, cpu_loop_per_s: cpu, produce_records_per_s: 1e5 };
        p.calibration = Some(Calibration { start: Some(at(345e6)), resumes: vec![at(407.1e6)], ..Default::default() });
        let shifts = attempt_shifts(&p, &records, "records_per_s");
        assert_eq!(shifts.len(), 1);
        let s = &shifts[0];
        assert_eq!((s.attempt, s.baseline, s.points, s.higher, s.lower), (1, 0, 8, 8, 0));
        assert!((s.median_ratio.unwrap() - 1.9).abs() < 1e-9 && s.moved(), "{s:?}");
        assert!((s.p_value - 2.0 / 256.0).abs() < 1e-12, "{s:?}");
        let note = attempts_note(&p, &records, "records_per_s").unwrap();
        assert!(note.moved);
        assert!(note.text.starts_with("These records ran in 2 attempts of the run"), "{}", note.text);
        assert!(note.text.contains("Attempt 2's reps measured 1.90× attempt 1's records_per_s"), "{}", note.text);
        assert!(note.text.contains("8 higher and 0 lower; sign test p = 0.008"), "{}", note.text);
        assert!(note.text.contains("CPU loop +18.0%"), "{}", note.text);
        assert!(note.text.contains("Each rep ran wholly within one attempt"), "{}", note.text);
    }

    #[test]
    fn attempts_that_differ_only_by_noise_are_no_shift() {
        let (p, records) = resumed_run(|k| if k % 2 == 0 { 1.03 } else { 0.97 });
        let s = &attempt_shifts(&p, &records, "records_per_s")[0];
        assert_eq!((s.higher, s.lower), (4, 4));
        assert!(!s.moved(), "{s:?}");
        let note = attempts_note(&p, &records, "records_per_s").unwrap();
        assert!(!note.moved && note.text.contains("no shift between the sessions detected"), "{}", note.text);
    }

    #[test]
    fn a_failed_rep_is_left_out_of_its_attempt() {
        let (p, mut records) = resumed_run(|_| 1.0);
        // Point 0's later reps all fail: that point has no later median and leaves the comparison.
        for r in records.iter_mut().filter(|r| r.variant.label == "0 cores" && r.rep > 3) {
            r.status = streamlab_record::Status::Failed;
            r.measurement.metrics.get_mut("records_per_s").unwrap().value = 0.0;
        }
        assert_eq!(attempt_shifts(&p, &records, "records_per_s")[0].points, 7);
    }

    #[test]
    fn a_run_of_one_attempt_has_no_note_and_a_rep_run_in_two_attempts_is_named() {
        let (mut p, records) = resumed_run(|_| 1.0);
        let moved = records.iter().find(|r| r.rep == 4).unwrap().task_name();
        p.environments[1].tasks.retain(|t| *t != moved);
        p.environments[0].tasks.push(moved);
        assert_eq!(reps_split_across_attempts(&p, &records), [4]);
        let note = attempts_note(&p, &records, "records_per_s").unwrap();
        assert!(note.text.contains("Rep 4 ran partly in each attempt"), "{}", note.text);
        p.environments.truncate(1);
        p.environments[0].tasks = records.iter().map(Record::task_name).collect();
        assert!(attempts_note(&p, &records, "records_per_s").is_none());
    }

    #[test]
    fn attempts_with_no_point_in_common_say_so_and_records_of_one_attempt_have_no_note() {
        let (p, records) = resumed_run(|_| 1.0);
        // Points 0-3 only in the first attempt, 4-7 only in the second.
        let split: Vec<Record> =
            records.into_iter().filter(|r| (r.variant.label.as_str() < "4") == (r.rep <= 3)).collect();
        let note = attempts_note(&p, &split, "records_per_s").unwrap();
        assert!(!note.moved);
        assert!(note.text.contains("Attempts 1 and 2 measured no point in common"), "{}", note.text);
        // Only the second attempt's records: one attempt, nothing to say.
        let later: Vec<Record> = split.into_iter().filter(|r| r.rep > 3).collect();
        assert!(attempts_note(&p, &later, "records_per_s").is_none());
    }
}
