//! One page per matrix and run: headline, one chart and data table per sweep and metric, every metric.

use serde::Serialize;
use streamlab_record::stats::{self, CI_METHOD, RATIO_METHOD, Summary};

use super::table::{TableRow, measured_row, reference_row, row_kind};
use super::{KeyValue, RunLink, environment, footer, kv, latest_matrix_href, run_link};
use crate::provenance::SweepInfo;
use crate::site::chart::{self, Chart, Row, RowKind};
use crate::site::config::{Reference, SiteConfig};
use crate::site::format;
use crate::site::headline::{Figure, headline_figures};
use crate::site::load::Run;
use crate::site::model::{self, Counts, MatrixData, Outcome, ci_text, classify, set_apart};

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
    pub footer: String,
    pub figures: Vec<Figure>,
    pub arms: Vec<KeyValue>,
    /// Where the arms cannot be made equal, from the records' details (absent when no record has any).
    pub differences: Option<MetricsTable>,
    pub sections: Vec<Section>,
    pub does_not_say: Vec<String>,
    pub metrics: MetricsTable,
    pub reproduce: String,
    pub arm_commands: Vec<String>,
    pub raw_href: String,
    pub provenance_href: String,
    /// Every run with this matrix, newest first.
    pub runs: Vec<RunLink>,
    pub counts: Counts,
    pub ci_method: &'static str,
    pub ratio_method: &'static str,
    pub references: Vec<SeriesView>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Section {
    pub anchor: String,
    pub title: String,
    pub caption: Option<String>,
    /// Knobs the sweep holds away from their defaults, as `knob = value`.
    pub fixed: Vec<String>,
    pub charts: Vec<ChartView>,
}

#[derive(Debug, Clone, Serialize)]
pub struct ChartView {
    pub id: String,
    /// The metric, named when a sweep has more than one chart.
    pub heading: Option<String>,
    pub metric: String,
    /// The unit of the data table's median column.
    pub unit: String,
    pub svg: String,
    pub direction: String,
    pub rows: Vec<TableRow>,
    pub logs: Vec<LogView>,
    pub references: Vec<SeriesView>,
}

#[derive(Debug, Clone, Serialize)]
pub struct LogView {
    pub label: String,
    pub rep: u32,
    pub tail: String,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SeriesView {
    pub seed: String,
    pub source: String,
    pub title: String,
    pub hardware: String,
    pub note: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct MetricsTable {
    pub columns: Vec<String>,
    pub rows: Vec<MetricsRow>,
}

#[derive(Debug, Clone, Serialize)]
pub struct MetricsRow {
    pub sweep: String,
    pub arm: String,
    pub label: String,
    pub highlight: bool,
    pub n: usize,
    pub cells: Vec<String>,
}

pub fn matrix_page(run: &Run, name: &str, runs: &[Run], cfg: &SiteConfig, latest: bool) -> MatrixPage {
    let p = &run.provenance;
    let file = &run.matrices[name];
    let data = MatrixData::new(name, p.matrices.iter().find(|m| m.name == name), &file.records);
    let mut chart_no = 0;
    let mut sections = Vec::new();
    for sweep in &data.info.sweeps {
        let metrics = data.sweep_metrics(cfg, sweep);
        // A run made with --point/--arm may hold nothing for a sweep or a metric: a chart with no row (no
        // record, no published figure) is left out rather than drawn empty.
        let charts: Vec<ChartView> = metrics
            .iter()
            .filter_map(|metric| {
                let heading = (metrics.len() > 1).then(|| metric.clone());
                let view = chart_view(&data, cfg, sweep, metric, format!("c{}", chart_no + 1), heading);
                chart_no += usize::from(!view.rows.is_empty());
                (!view.rows.is_empty()).then_some(view)
            })
            .collect();
        if charts.is_empty() {
            continue;
        }
        sections.push(Section {
            anchor: format!("sweep-{}", format::slug(&sweep.name)),
            title: sweep.title.clone(),
            caption: sweep.caption.clone(),
            fixed: sweep.fixed.clone(),
            charts,
        });
    }
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
    MatrixPage {
        name: name.to_owned(),
        title: data.info.title.clone(),
        question: data.info.question.clone(),
        seed: data.info.seed.clone(),
        run: run_link(run),
        latest,
        latest_href: latest_matrix_href(name),
        environment: environment(p),
        footer: footer(p),
        figures: headline_figures(&data, cfg),
        arms: data.info.arms.iter().map(|a| kv(&a.title, a.description.clone())).collect(),
        differences: differences_table(&data, &file.records),
        sections,
        does_not_say: data.info.does_not_say.clone(),
        metrics: metrics_table(&data),
        reproduce: p.reproduce.clone(),
        arm_commands,
        raw_href: format!("runs/{}/{name}.jsonl", run.id),
        provenance_href: format!("runs/{}/provenance.json", run.id),
        runs: runs.iter().rev().filter(|r| r.matrices.contains_key(name)).map(run_link).collect(),
        counts: model::counts(&file.records),
        ci_method: CI_METHOD,
        ratio_method: RATIO_METHOD,
        references,
    }
}

/// One row per arm, one column per detail the records carry (the command aside: it differs per point), each
/// cell the distinct values that arm's records state.
fn differences_table(data: &MatrixData, records: &[streamlab_record::Record]) -> Option<MetricsTable> {
    let mut columns: Vec<String> = Vec::new();
    for r in records {
        for key in r.details.keys().filter(|k| *k != "command") {
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
                        if let Some(v) = r.details.get(column)
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

fn series_view(r: &Reference) -> SeriesView {
    SeriesView {
        seed: r.series.seed.clone(),
        source: r.series.source.clone(),
        title: r.series.title.clone(),
        hardware: r.series.hardware.clone(),
        note: r.series.note.clone(),
    }
}

/// The chart and data table of one metric over one sweep.
fn chart_view(
    data: &MatrixData,
    cfg: &SiteConfig,
    sweep: &SweepInfo,
    metric: &str,
    id: String,
    heading: Option<String>,
) -> ChartView {
    let points = data.points(sweep);
    let refs = cfg.references(&data.info.name, &sweep.name, metric);
    let (unit, hib) = match data.metric_meta(metric) {
        Some((u, h)) => (u, Some(h)),
        None => {
            refs.first().map_or((String::new(), None), |r| (r.series.unit.clone(), Some(r.series.higher_is_better)))
        }
    };
    // Row keys (label, arm): ours in sweep order, then published-only ones after their label's group.
    let mut keys: Vec<(String, String)> = points.iter().map(|p| (p.label.clone(), p.arm.clone())).collect();
    for r in &refs {
        let key = (r.figure.label.clone(), r.figure.arm.clone());
        if !keys.contains(&key) {
            match keys.iter().rposition(|k| k.0 == key.0) {
                Some(i) => keys.insert(i + 1, key),
                None => keys.push(key),
            }
        }
    }
    let multi_arm = keys.iter().any(|k| k.1 != keys[0].1);
    let name_of = |label: &str, arm: &str| match (label.is_empty(), multi_arm) {
        (true, _) => data.arm_title(arm),
        (false, true) => format!("{label} · {}", data.arm_title(arm)),
        (false, false) => label.to_owned(),
    };
    let mut rows = Vec::new();
    let mut table = Vec::new();
    let mut logs = Vec::new();
    let mut references: Vec<SeriesView> = Vec::new();
    for (i, (label, arm)) in keys.iter().enumerate() {
        let group_start = i > 0 && keys[i - 1].0 != *label;
        let name = name_of(label, arm);
        let point = points.iter().find(|p| &p.label == label && &p.arm == arm);
        if let Some(point) = point {
            let o = model::outcome(&point.records, metric);
            rows.push(Row { label: name.clone(), group_start, kind: row_kind(&o, point.default) });
            table.push(measured_row(data, (label, arm), &unit, point.default, &o, &point.records));
            for r in point.records.iter().filter(|r| r.log_tail.is_some() && classify(r).is_some()) {
                logs.push(LogView { label: name.clone(), rep: r.rep, tail: r.log_tail.clone().unwrap_or_default() });
            }
        }
        for r in refs.iter().filter(|r| &r.figure.label == label && &r.figure.arm == arm) {
            // The hatch says "published"; the label says it too where there is room.
            let shown = match point {
                Some(_) => "published".to_owned(),
                None if name.chars().count() + 12 <= chart::LABEL_CHARS => format!("{name} (published)"),
                None => name.clone(),
            };
            let group_start = group_start && point.is_none();
            rows.push(Row {
                label: shown,
                group_start,
                kind: RowKind::Reference { value: r.figure.value, origin: format!("seed {}", r.series.seed) },
            });
            table.push(reference_row(data, label, arm, &unit, r));
            let view = series_view(r);
            if !references.contains(&view) {
                references.push(view);
            }
        }
    }
    let chart = Chart {
        id: id.clone(),
        title: format!("{} — {metric}", sweep.title),
        unit: unit.clone(),
        higher_is_better: hib,
        rows,
        highlight_meaning: "default settings".into(),
        reference_legend: references
            .iter()
            .map(|s| format!("published in seed {} ({}), on {}", s.seed, s.title, s.hardware))
            .collect(),
    };
    let direction = match hib {
        Some(true) => "Higher is better",
        Some(false) => "Lower is better",
        None => "",
    };
    ChartView {
        id,
        heading,
        metric: metric.to_owned(),
        unit: unit.clone(),
        svg: chart::render(&chart),
        direction: direction.into(),
        rows: table,
        logs,
        references,
    }
}

/// A median; a ratio metric (a comparison per rep pair) carries its interval and, if it spans 1.0, says so.
fn metrics_cell(data: &MatrixData, metric: &str, s: &Summary) -> String {
    let median = format::table_value(s.median);
    if data.metric_meta(metric).is_none_or(|(unit, _)| unit != "ratio") || s.ci95.is_none() {
        return median;
    }
    let noise = if stats::ratio_spans_one(s) == Some(true) { ", within noise" } else { "" };
    format!("{median} (95% CI {}{noise})", ci_text(s))
}

/// Every metric's median per point of every sweep, for readers who want more than the charted one.
fn metrics_table(data: &MatrixData) -> MetricsTable {
    let mut columns: Vec<String> = data.records.iter().flat_map(|r| r.metrics.keys().cloned()).collect();
    columns.sort();
    columns.dedup();
    let mut rows = Vec::new();
    for sweep in &data.info.sweeps {
        for point in data.points(sweep) {
            let n = point.records.iter().filter(|r| set_apart(r).is_none()).count();
            let cells = columns
                .iter()
                .map(|m| match model::outcome(&point.records, m) {
                    Outcome::Measured { summary, .. } => metrics_cell(data, m, &summary),
                    Outcome::NotDrawn { missing, .. } => missing.text().to_owned(),
                })
                .collect();
            rows.push(MetricsRow {
                sweep: sweep.name.clone(),
                arm: data.arm_title(&point.arm),
                label: if point.label.is_empty() { "—".into() } else { point.label.clone() },
                highlight: point.default,
                n,
                cells,
            });
        }
    }
    let header = columns
        .iter()
        .map(|m| match data.metric_meta(m) {
            Some((unit, _)) if !unit.is_empty() => format!("{m} ({unit})"),
            _ => m.clone(),
        })
        .collect();
    MetricsTable { columns: header, rows }
}
