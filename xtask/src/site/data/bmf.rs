//! `runs/<id>/bmf.json`: a run's figures in the Bencher Metric Format
//! (<https://bencher.dev/docs/reference/bencher-metric-format/>), which `bencher run --adapter json --file` reads as
//! it is. One benchmark per point of a sweep (`matrix/sweep/point/arm`, the point left out in a sweep of arms
//! alone), one measure per metric: the site's median of the point's reps, with its distribution-free 95% interval
//! where it has one (6 reps or more). A point the site does not draw (every rep failed, not run, withdrawn or
//! measured under foreign load) has no number to give, so it is not in the file; the run's CSV rows keep it.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::results::load::Run;
use crate::results::model::{self, MatrixData};

/// Benchmark name -> measure (the metric's name) -> its figure.
pub type Bmf = BTreeMap<String, BTreeMap<String, BmfMetric>>;

/// One measure's figure: the median, and the bounds of its interval.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BmfMetric {
    pub value: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lower_value: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upper_value: Option<f64>,
}

/// The run's figures, every matrix it measured.
pub fn of_run(run: &Run) -> Bmf {
    let mut out = Bmf::new();
    for (name, file) in &run.matrices {
        let info = run.provenance.matrices.iter().find(|m| &m.name == name);
        let data = MatrixData::new(name, info, &file.records);
        for sweep in &data.info.sweeps {
            for point in data.points(sweep) {
                let metrics = metric_names(&point.records);
                let figures: BTreeMap<String, BmfMetric> = metrics
                    .into_iter()
                    .filter_map(|metric| {
                        let s = model::outcome(&point.records, &metric).summary().cloned()?;
                        let [lower_value, upper_value] =
                            s.median_ci95.map_or([None, None], |[lo, hi]| [Some(lo), Some(hi)]);
                        Some((metric, BmfMetric { value: s.median, lower_value, upper_value }))
                    })
                    .collect();
                if !figures.is_empty() {
                    out.insert(benchmark_name(name, &sweep.name, &point.label, &point.arm), figures);
                }
            }
        }
    }
    out
}

/// `matrix/sweep/point/arm`, or `matrix/sweep/arm` where the sweep has no point labels.
pub fn benchmark_name(matrix: &str, sweep: &str, point: &str, arm: &str) -> String {
    [matrix, sweep, point, arm].iter().filter(|part| !part.is_empty()).copied().collect::<Vec<_>>().join("/")
}

fn metric_names(records: &[&streamlab_record::Record]) -> Vec<String> {
    let mut names: Vec<String> = records.iter().flat_map(|r| r.measurement.metrics.keys().cloned()).collect();
    names.sort();
    names.dedup();
    names
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::fixtures;
    use crate::results::load::load_results;

    /// The fixture: the framework's default point in four sweeps (500/600/700 rec/s), a withdrawn 100k batch point,
    /// a shards=2 point not run.
    #[test]
    fn each_drawn_point_is_a_benchmark_with_the_site_s_median_and_a_point_not_drawn_gives_no_number() {
        let dir = tempfile::tempdir().unwrap();
        fixtures::write_run(dir.path(), "run-b", 1, &fixtures::kafka_sink_records("run-b"));
        let runs = load_results(dir.path()).unwrap();
        let bmf = of_run(&runs[0]);
        let names: Vec<&String> = bmf.keys().collect();
        let defaults: Vec<f64> = bmf
            .iter()
            .filter(|(name, _)| name.ends_with("/framework"))
            .filter_map(|(_, measures)| measures.get("records_per_s").map(|m| m.value))
            .filter(|v| *v == 600.0)
            .collect();
        assert_eq!(defaults.len(), 4, "the default point's median in each of its four sweeps: {names:?}");
        assert!(!names.iter().any(|k| k.contains("batch_max_rows/100k")), "a withdrawn point has no number: {names:?}");
        assert!(!names.iter().any(|k| k.starts_with("kafka_sink/shards/2")), "nor one not run: {names:?}");
        let rows = bmf.values().flat_map(|m| m.values());
        assert!(rows.clone().all(|m| m.lower_value.is_none() && m.upper_value.is_none()), "3 reps give no interval");
        // Bencher's limits: a benchmark's name up to 1024 characters, a measure's up to 64.
        assert!(bmf.iter().all(|(b, m)| b.len() <= 1024 && m.keys().all(|k| !k.is_empty() && k.len() <= 64)));
    }
}
