//! This host's between-run spread of a ratio, from the committed history: how much a ratio of two points of one
//! run moves from run to run beyond what its reps explain. Every pair of points of one sweep (any arms, any
//! labels) of one matrix measured in two or more runs on the same hardware, with the same configuration on both
//! sides, is one group; their per-rep-pair log ratios go to `stats::equivalence::between_run_spread`.
//!
//! One spread per matrix: how much runs differ is the matrix's own (measured here: kafka_sink's framework path
//! moves from run to run well beyond its reps, the clients' points hardly do), and a matrix with many points
//! would otherwise outvote another's (its sweeps give the most pairs of points).

use std::collections::BTreeMap;

use streamlab_record::Record;
use streamlab_record::stats::equivalence::{Spread, between_run_spread};

use crate::results::load::Run;
use crate::results::model::{config_of, drawn_by_rep};

/// A point of one sweep in one run: its arm and label, its configuration, its drawn value by rep.
struct Point<'r> {
    id: (String, String),
    config: BTreeMap<String, String>,
    by_rep: BTreeMap<u32, &'r Record>,
}

/// Memoised spreads, one per hardware fingerprint, matrix and metric.
#[derive(Default)]
pub struct SpreadCache {
    spreads: BTreeMap<(String, String, String), Option<Spread>>,
}

impl SpreadCache {
    pub fn get(&mut self, runs: &[Run], fingerprint: &str, matrix: &str, metric: &str) -> Option<Spread> {
        let key = (fingerprint.to_owned(), matrix.to_owned(), metric.to_owned());
        *self.spreads.entry(key).or_insert_with(|| host_spread(runs, fingerprint, matrix, metric))
    }
}

/// The between-run spread of ratios of `metric` in `matrix` over the runs on the hardware `fingerprint`; `None`
/// when no ratio was measured in two comparable runs there.
pub fn host_spread(runs: &[Run], fingerprint: &str, matrix: &str, metric: &str) -> Option<Spread> {
    // (sweep, both points' ids and configurations) -> each run's log ratios.
    let mut groups: BTreeMap<String, Vec<Vec<f64>>> = BTreeMap::new();
    for run in runs.iter().filter(|r| r.provenance.hardware_fingerprint() == fingerprint) {
        if let Some(file) = run.matrices.get(matrix) {
            for (sweep, points) in sweep_points(&file.records, metric) {
                for (i, a) in points.iter().enumerate() {
                    for b in &points[i + 1..] {
                        let logs = log_ratios(a, b, metric);
                        if logs.len() < 2 {
                            continue;
                        }
                        let key = format!("{sweep}|{:?}|{:?}|{:?}|{:?}", a.id, b.id, a.config, b.config);
                        groups.entry(key).or_default().push(logs);
                    }
                }
            }
        }
    }
    let groups: Vec<Vec<Vec<f64>>> = groups.into_values().filter(|runs| runs.len() >= 2).collect();
    between_run_spread(&groups)
}

/// A matrix's points with `metric`, by the sweep they belong to.
fn sweep_points<'r>(records: &'r [Record], metric: &str) -> BTreeMap<String, Vec<Point<'r>>> {
    let mut by_point: BTreeMap<(String, String, String), Vec<&'r Record>> = BTreeMap::new();
    for r in records {
        let Some(sweep) = r.variant.sweeps.first() else { continue };
        by_point.entry((sweep.clone(), r.arm.clone(), r.variant.label.clone())).or_default().push(r);
    }
    let mut out: BTreeMap<String, Vec<Point<'r>>> = BTreeMap::new();
    for ((sweep, arm, label), records) in by_point {
        let by_rep = drawn_by_rep(&records, metric);
        let Some(first) = by_rep.values().next() else { continue };
        out.entry(sweep).or_default().push(Point { id: (arm, label), config: config_of(first), by_rep });
    }
    out
}

/// ln(a / b) for every rep both points drew.
fn log_ratios(a: &Point, b: &Point, metric: &str) -> Vec<f64> {
    let value = |r: &Record| r.measurement.metrics[metric].value;
    a.by_rep
        .iter()
        .filter_map(|(rep, x)| b.by_rep.get(rep).map(|y| (value(x), value(y))))
        .filter(|(x, y)| *x > 0.0 && *y > 0.0)
        .map(|(x, y)| (x / y).ln())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::fixtures;
    use crate::results::load::load_results;

    /// Runs of raw and framework at the mode sweep, framework at `ratios[run][rep]` of raw.
    fn history(ratios: &[&[f64]]) -> (tempfile::TempDir, Vec<Run>) {
        let dir = tempfile::tempdir().unwrap();
        for (i, run_ratios) in ratios.iter().enumerate() {
            let id = format!("r{i}");
            let mut records = Vec::new();
            for (rep, ratio) in (1..).zip(run_ratios.iter()) {
                records.push(fixtures::record(&id, "raw", "raw rdkafka", &["mode"], true, rep, 1000.0));
                records.push(fixtures::record(
                    &id,
                    "framework",
                    "framework path",
                    &["mode"],
                    false,
                    rep,
                    1000.0 * ratio,
                ));
            }
            fixtures::write_run(dir.path(), &id, 1_000 + i as u64, &records);
        }
        let runs = load_results(dir.path()).unwrap();
        (dir, runs)
    }

    #[test]
    fn a_ratio_that_moves_between_runs_beyond_its_reps_gives_the_hosts_spread() {
        // Run means ln 0.4 and ln 0.5 around reps ±1%: the spread is about |ln 0.5 − ln 0.4| / √2.
        let (_dir, runs) = history(&[&[0.396, 0.404, 0.4], &[0.495, 0.505, 0.5]]);
        let fp = runs[0].provenance.hardware_fingerprint();
        let s = host_spread(&runs, &fp, "kafka_sink", "records_per_s").unwrap();
        let expected = (0.5_f64 / 0.4).ln() / 2.0_f64.sqrt();
        assert!((s.log_sd - expected).abs() < 0.01, "{s:?} vs {expected}");
        assert_eq!((s.groups, s.df), (1, 1.0));
        // One run says nothing of runs; another machine's history is not this one's.
        let (_dir, one) = history(&[&[0.4, 0.41, 0.39]]);
        assert!(host_spread(&one, &fp, "kafka_sink", "records_per_s").is_none());
        assert!(host_spread(&runs, "another machine", "kafka_sink", "records_per_s").is_none());
        // Another matrix's runs say nothing of this one's.
        assert!(host_spread(&runs, &fp, "clients", "records_per_s").is_none());
        let mut cache = SpreadCache::default();
        assert_eq!(cache.get(&runs, &fp, "kafka_sink", "records_per_s"), Some(s));
    }
}
