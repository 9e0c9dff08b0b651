//! One page per matrix and run: the environment its records ran on, the headline (a forest plot of its
//! ratios, then the figures table), one chart and data table per sweep and metric, every metric.

use serde::Serialize;
use streamlab_record::stats::{CI_METHOD, RATIO_METHOD};

use super::charts::{MetricsRow, MetricsTable, Section, SeriesView, metrics_table, sections};
use super::versions::ran_on;
use super::{KeyValue, RunLink, environment, footer, kv, latest_matrix_href, run_link};
use crate::results::attempts::{AttemptsNote, attempts_note};
use crate::results::config::SiteConfig;
use crate::results::headline::{Figure, headline_figures};
use crate::results::load::Run;
use crate::results::model::{self, Counts, MatrixData};
use crate::site::forest;

#[derive(Debug, Clone, Serialize)]
pub struct MatrixPage {
    pub name: String,
    pub title: String,
    pub question: String,
    pub seed: Option<String>,
    pub run: RunLink,
    pub latest: bool,
    pub latest_href: String,
    pub environment: Vec<KeyValue>,
    /// Said when the records ran on more than one broker or server version.
    pub versions_warning: Option<String>,
    /// Said when the run was resumed: how each later attempt's reps measured against the first's.
    pub attempts: Option<AttemptsNote>,
    pub footer: String,
    /// The headline's forest plot of its ratios (inline SVG); absent when the matrix has no ratio.
    pub forest: Option<String>,
    pub figures: Vec<Figure>,
    pub arms: Vec<KeyValue>,
    /// Where the arms cannot be made equal, from the records' details (absent when no record has any).
    pub differences: Option<MetricsTable>,
    pub sections: Vec<Section>,
    pub does_not_say: Vec<String>,
    pub metrics: MetricsTable,
    /// Ratio metrics the runner wrote into the records, left out of the metrics table (no contract checked).
    pub unchecked_ratios: Vec<String>,
    pub reproduce: String,
    pub arm_commands: Vec<String>,
    pub raw_href: String,
    pub provenance_href: String,
    /// Every run with this matrix, newest first.
    pub runs: Vec<RunLink>,
    pub counts: Counts,
    pub ci_method: &'static str,
    pub ratio_method: &'static str,
    pub precision_method: &'static str,
    pub references: Vec<SeriesView>,
}

pub fn matrix_page(run: &Run, name: &str, runs: &[Run], cfg: &SiteConfig, latest: bool) -> MatrixPage {
    let p = &run.provenance;
    let file = &run.matrices[name];
    let data = MatrixData::for_site(name, p.matrices.iter().find(|m| m.name == name), &file.records, cfg);
    let sections = sections(&data, cfg);
    let mut references: Vec<SeriesView> = Vec::new();
    for c in sections.iter().flat_map(|s| &s.charts) {
        for r in &c.references {
            if !references.contains(r) {
                references.push(r.clone());
            }
        }
    }
    let mut arm_commands: Vec<String> = Vec::new();
    for r in &file.records {
        if !arm_commands.contains(&r.reproduce) {
            arm_commands.push(r.reproduce.clone());
        }
    }
    // The broker and server come from the records (a run may switch brokers), not the run's first environment.
    let versions = ran_on(p, &file.records);
    let mut env: Vec<KeyValue> = environment(p).into_iter().filter(|e| e.key != "Kafka" && e.key != "MySQL").collect();
    let at = env.iter().position(|e| e.key == "Environment").map_or(env.len(), |i| i + 1);
    env.splice(at..at, versions.lines);
    let figures = headline_figures(&data, cfg);
    let (metrics, unchecked_ratios) = metrics_table(&data);
    MatrixPage {
        name: name.to_owned(),
        title: data.info.title.clone(),
        question: data.info.question.clone(),
        seed: data.info.seed.clone(),
        run: run_link(run),
        latest,
        latest_href: latest_matrix_href(name),
        environment: env,
        versions_warning: versions.warning,
        attempts: data.headline_metric(cfg).and_then(|metric| attempts_note(p, &file.records, &metric)),
        footer: footer(p),
        forest: forest::render("forest", &figures),
        figures,
        arms: data.info.arms.iter().map(|a| kv(&a.title, a.description.clone())).collect(),
        differences: differences_table(&data, &file.records),
        sections,
        does_not_say: data.info.does_not_say.clone(),
        metrics,
        unchecked_ratios,
        reproduce: p.reproduce.clone(),
        arm_commands,
        raw_href: format!("runs/{}/{name}.jsonl", run.id),
        provenance_href: format!("runs/{}/provenance.json", run.id),
        runs: runs.iter().rev().filter(|r| r.matrices.contains_key(name)).map(run_link).collect(),
        counts: model::counts(&file.records),
        ci_method: CI_METHOD,
        ratio_method: RATIO_METHOD,
        precision_method: streamlab_record::stats::precision::PRECISION_METHOD,
        references,
    }
}

/// One row per arm, one column per detail the records carry (the command aside: it differs per point), each
/// cell the distinct values that arm's records state.
fn differences_table(data: &MatrixData, records: &[streamlab_record::Record]) -> Option<MetricsTable> {
    let mut columns: Vec<String> = Vec::new();
    for r in records {
        for key in r.measurement.details.keys().filter(|k| *k != "command") {
            if !columns.contains(key) {
                columns.push(key.clone());
            }
        }
    }
    if columns.is_empty() {
        return None;
    }
    let rows = data
        .info
        .arms
        .iter()
        .map(|arm| {
            let cells = columns
                .iter()
                .map(|column| {
                    let mut values: Vec<&str> = Vec::new();
                    for r in records.iter().filter(|r| r.arm == arm.name) {
                        if let Some(v) = r.measurement.details.get(column)
                            && !values.contains(&v.as_str())
                        {
                            values.push(v);
                        }
                    }
                    if values.is_empty() { "—".to_owned() } else { values.join(" · ") }
                })
                .collect();
            MetricsRow {
                sweep: String::new(),
                arm: arm.title.clone(),
                label: String::new(),
                highlight: false,
                n: 0,
                cells,
            }
        })
        .collect();
    Some(MetricsTable { columns, rows })
}
