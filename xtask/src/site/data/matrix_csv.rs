//! `data/<matrix>.csv`: one row per sweep a record sits in and metric it reports, grouped into points exactly as
//! the site's tables group them, so a program recomputes every figure the site shows from this file alone: a point's
//! median is the nearest-rank median (the ⌈n/2⌉-th smallest) of `value` over the rows of one `run`, `sweep`,
//! `point`, `arm` and `metric` whose `set_apart` is empty. Its columns are `data/csv.schema.json`'s.

use std::collections::BTreeMap;

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};
use streamlab_record::Record;

use crate::results::load::Run;
use crate::results::model::{MatrixData, set_apart};

/// One row: one metric of one record, as a point of one sweep.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CsvRow {
    pub run: String,
    pub machine: String,
    pub commit: String,
    pub arm: String,
    /// The sweep this row is a point of: a record in several sweeps (a matrix's default point) has rows in each;
    /// `unswept` for a record outside every sweep.
    pub sweep: String,
    /// The point's label in this sweep, as the site's table names it; empty in a sweep of arms alone.
    pub point: String,
    /// The record's own label, the one `--point` and `measured_as` name.
    pub label: String,
    pub rep: u32,
    /// The block of its run the rep was measured in; empty in runs measured without blocks.
    pub block: Option<u32>,
    /// `sweep/label/rep` of the point whose task made this measurement where it is another point of the same
    /// configuration (the rows are that measurement again, not another); empty where this point's own task made it.
    pub measured_as: String,
    /// Measured while other work loaded the machine.
    pub foreign_load: bool,
    /// Why the site leaves the row out of its point's figures: `withdrawn` (its integrity check failed), `failed`,
    /// `not_run`, `foreign_load` or `no_metric`; empty where the row counts.
    pub set_apart: String,
    /// `ok`, `failed` or `not_run`.
    pub status: String,
    /// `verified`, `failed` or `not_checked` (the task did not get far enough to check).
    pub integrity: String,
    /// Empty for a record with no metric (not run, failed), which still gets one row, so it is seen.
    pub metric: String,
    /// Empty where there is no finite value.
    pub value: Option<f64>,
    pub unit: String,
    pub higher_is_better: bool,
}

/// Each matrix's CSV, every run's records in run order, each run's sweeps in the matrix's order.
pub fn csv_files(runs: &[Run]) -> Result<BTreeMap<String, Vec<u8>>> {
    let mut writers: BTreeMap<String, csv::Writer<Vec<u8>>> = BTreeMap::new();
    for run in runs {
        for (name, file) in &run.matrices {
            let w = writers.entry(name.clone()).or_insert_with(|| csv::Writer::from_writer(Vec::new()));
            let info = run.provenance.matrices.iter().find(|m| &m.name == name);
            let data = MatrixData::new(name, info, &file.records);
            for sweep in &data.info.sweeps {
                for point in data.points(sweep) {
                    for r in &point.records {
                        for row in rows(run, r, &sweep.name, &point.label)? {
                            w.serialize(row)?;
                        }
                    }
                }
            }
        }
    }
    writers
        .into_iter()
        .map(|(name, w)| Ok((format!("data/{name}.csv"), w.into_inner().context("writing a CSV")?)))
        .collect()
}

/// A record's rows as a point of `sweep` labelled `point`: one per metric, or one with no metric.
fn rows(run: &Run, r: &Record, sweep: &str, point: &str) -> Result<Vec<CsvRow>> {
    let apart = set_apart(r).map(|(missing, _)| missing.key());
    let base = CsvRow {
        run: run.id.clone(),
        machine: run.provenance.machine_key(),
        commit: run.provenance.git.commit.clone(),
        arm: r.arm.clone(),
        sweep: sweep.to_owned(),
        point: point.to_owned(),
        label: r.variant.label.clone(),
        rep: r.rep,
        block: r.block,
        measured_as: r.measured_as.as_ref().map_or_else(String::new, |p| format!("{}/{}/{}", p.sweep, p.label, p.rep)),
        foreign_load: r.conditions.as_ref().is_some_and(|c| c.foreign_load),
        set_apart: apart.unwrap_or("no_metric").to_owned(),
        status: word(r.status)?,
        integrity: word(r.measurement.integrity.status)?,
        metric: String::new(),
        value: None,
        unit: String::new(),
        higher_is_better: false,
    };
    if r.measurement.metrics.is_empty() {
        return Ok(vec![base]);
    }
    Ok(r.measurement
        .metrics
        .iter()
        .map(|(metric, m)| {
            let value = Some(m.value).filter(|v| v.is_finite());
            CsvRow {
                set_apart: apart.unwrap_or(if value.is_some() { "" } else { "no_metric" }).to_owned(),
                metric: metric.clone(),
                value,
                unit: m.unit.clone(),
                higher_is_better: m.higher_is_better,
                ..base.clone()
            }
        })
        .collect())
}

/// An enum's word as the records spell it (empty for none).
fn word<T: Serialize>(value: T) -> Result<String> {
    Ok(serde_json::to_value(value)?.as_str().unwrap_or_default().to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::paths::repo_root;
    use crate::results::config::SiteConfig;
    use crate::results::load::load_results;
    use crate::site::pages::matrix_page;

    /// (run, sweep, point, arm, metric) -> the values of the rows that count, read from the CSV's text alone.
    type Groups = BTreeMap<[String; 5], Vec<f64>>;

    fn counted_rows(csv_text: &[u8]) -> Groups {
        let mut reader = ::csv::Reader::from_reader(csv_text);
        let headers = reader.headers().unwrap().clone();
        let col = |name: &str| headers.iter().position(|h| h == name).unwrap_or_else(|| panic!("no column {name}"));
        let key = ["run", "sweep", "point", "arm", "metric"].map(col);
        let (apart, value) = (col("set_apart"), col("value"));
        let mut groups = Groups::new();
        for row in reader.records() {
            let row = row.unwrap();
            if row[apart].is_empty() {
                groups.entry(key.map(|k| row[k].to_owned())).or_default().push(row[value].parse().unwrap());
            }
        }
        groups
    }

    /// The nearest-rank median, as README's "For programs" states it: the ⌈n/2⌉-th smallest.
    fn nearest_rank_median(values: &[f64]) -> f64 {
        let mut sorted = values.to_vec();
        sorted.sort_by(f64::total_cmp);
        sorted[sorted.len().div_ceil(2) - 1]
    }

    /// Compares every table of every run's matrix pages with the CSV: how many medians, and how many of them with a
    /// rep set apart for foreign load.
    fn compare_with_the_pages(runs: &[Run]) -> (usize, usize) {
        let cfg = SiteConfig::builtin().unwrap();
        let mut groups = Groups::new();
        for text in csv_files(runs).unwrap().values() {
            groups.extend(counted_rows(text));
        }
        let (mut checked, mut set_apart_seen) = (0, 0);
        for run in runs {
            for (name, file) in &run.matrices {
                let page = matrix_page(run, name, runs, &cfg, false);
                let info = run.provenance.matrices.iter().find(|m| &m.name == name);
                let data = MatrixData::new(name, info, &file.records);
                // A chart names its metric by its title.
                let metric_of: BTreeMap<String, &String> = file
                    .records
                    .iter()
                    .flat_map(|r| r.measurement.metrics.keys())
                    .map(|m| (crate::results::words::metric_title(m), m))
                    .collect();
                for section in &page.sections {
                    let sweep = data
                        .info
                        .sweeps
                        .iter()
                        .find(|s| section.anchor == format!("sweep-{}", crate::results::format::slug(&s.name)))
                        .unwrap();
                    for chart in &section.charts {
                        let metric = metric_of.get(&chart.metric);
                        for row in chart.rows.iter().filter(|r| !r.reference && r.status == "measured") {
                            let metric = metric.unwrap_or_else(|| panic!("no record reports {}", chart.metric));
                            let point = if row.label == "—" { "" } else { row.label.as_str() };
                            let arm = data.info.arms.iter().find(|a| a.title == row.arm).map_or(&row.arm, |a| &a.name);
                            let key = [&run.id, &sweep.name, point, arm, metric.as_str()].map(|s| s.to_owned());
                            let values = groups.get(&key).unwrap_or_else(|| panic!("the CSV has no rows for {key:?}"));
                            let median = crate::results::format::table_value(nearest_rank_median(values));
                            assert_eq!(
                                (median, values.len().to_string()),
                                (row.median.clone(), row.n.clone()),
                                "{key:?}"
                            );
                            checked += 1;
                            set_apart_seen += usize::from(!row.foreign_load.is_empty());
                        }
                    }
                }
            }
        }
        (checked, set_apart_seen)
    }

    /// Every committed run's every table, as its matrix page shows it: the committed runs hold what a fixture would
    /// have to invent (reps under foreign load, failed and withdrawn records, points measured as another).
    #[test]
    fn every_median_the_site_s_tables_show_is_recomputed_from_the_csv_alone() {
        let runs = load_results(&repo_root().join("results")).unwrap();
        let (checked, set_apart) = compare_with_the_pages(&runs);
        assert!(checked > 1000, "only {checked} medians were compared");
        assert!(set_apart > 0, "no table set a rep apart for foreign load: the column went untested");
    }

    /// Runs before each point had a record of its own listed the default point in every sweep it sits in: one
    /// record, a row in each of its four tables.
    #[test]
    fn a_record_in_several_sweeps_counts_in_each_of_their_tables() {
        let dir = tempfile::tempdir().unwrap();
        crate::results::fixtures::write_run(
            dir.path(),
            "run-s",
            1,
            &crate::results::fixtures::kafka_sink_records("run-s"),
        );
        let runs = load_results(dir.path()).unwrap();
        let shared = runs[0].matrices["kafka_sink"].records.iter().filter(|r| r.variant.sweeps.len() == 4).count();
        assert!(shared > 0, "the fixture has no record in four sweeps");
        let (checked, _) = compare_with_the_pages(&runs);
        assert!(checked >= 4, "only {checked} medians were compared: the shared record alone has four tables");
    }
}
