//! A matrix page's charts: one chart and data table per sweep and metric, titled in words, with short arm
//! labels, and an arm that ran none of a chart's points as one line rather than one per point; and the
//! table of every metric per point.

use serde::Serialize;
use streamlab_record::Record;
use streamlab_record::stats::Summary;

use super::latency::{self, LatencyView};
use super::table::{TableRow, measured_row, reference_row, row_kind};
use crate::provenance::SweepInfo;
use crate::results::config::{Reference, SiteConfig};
use crate::results::format;
use crate::results::model::{self, MatrixData, Outcome, classify, set_apart};
use crate::results::words::metric_title;
use crate::site::chart::{self, Chart, Row, RowKind};

#[derive(Debug, Clone, Serialize)]
pub struct Section {
    pub anchor: String,
    pub title: String,
    pub caption: Option<String>,
    /// Knobs the sweep holds away from their defaults, as `knob = value`.
    pub fixed: Vec<String>,
    /// Set when the run holds records for only some of the sweep's points, saying how many.
    pub incomplete: Option<String>,
    pub charts: Vec<ChartView>,
    /// A paced sweep's latency against offered load and percentile distribution, per arm ([`latency`]).
    pub latency: Vec<LatencyView>,
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

impl SeriesView {
    /// The chart legend's line for this series' hatched bars.
    fn legend(&self) -> String {
        format!("published in seed {} ({}), on {}", self.seed, self.title, self.hardware)
    }
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

fn series_view(r: &Reference) -> SeriesView {
    SeriesView {
        seed: r.series.seed.clone(),
        source: r.series.source.clone(),
        title: r.series.title.clone(),
        hardware: r.series.hardware.clone(),
        note: r.series.note.clone(),
    }
}

/// Every sweep's charts, in the matrix's sweep order. A run made with --point/--arm may hold nothing for a
/// sweep or a metric: a chart with no row (no record, no published figure) is left out rather than drawn empty,
/// and so is a metric no record of the run reports (runs from before the metric existed) and no seed published.
pub fn sections(data: &MatrixData, cfg: &SiteConfig) -> Vec<Section> {
    let mut chart_no = 0;
    let mut out = Vec::new();
    for sweep in &data.info.sweeps {
        let metrics: Vec<String> = data
            .sweep_metrics(cfg, sweep)
            .into_iter()
            .filter(|m| data.metric_meta(m).is_some() || !cfg.references(&data.info.name, &sweep.name, m).is_empty())
            .collect();
        let charts: Vec<ChartView> = metrics
            .iter()
            .filter_map(|metric| {
                let heading = (metrics.len() > 1).then(|| metric_title(metric));
                let view = chart_view(data, cfg, sweep, metric, format!("c{}", chart_no + 1), heading);
                chart_no += usize::from(!view.rows.is_empty());
                (!view.rows.is_empty()).then_some(view)
            })
            .collect();
        if charts.is_empty() {
            continue;
        }
        let anchor = format!("sweep-{}", format::slug(&sweep.name));
        out.push(Section {
            latency: latency::latency_views(data, sweep, &anchor),
            anchor,
            title: sweep.title.clone(),
            caption: sweep.caption.clone(),
            fixed: sweep.fixed.clone(),
            incomplete: incomplete(data, sweep),
            charts,
        });
    }
    out
}

/// What a sweep of which the run holds only some points says: a budgeted run measures the points its claims rest
/// on, a --point run the points it names, and a run cut by its deadline the points it reached.
fn incomplete(data: &MatrixData, sweep: &SweepInfo) -> Option<String> {
    let declared = sweep.arms.len() * if sweep.knob.is_some() { sweep.labels.len() } else { 1 };
    let held = data.points(sweep).len();
    (held < declared).then(|| {
        format!(
            "Incomplete: this run holds {held} of the sweep's {declared} points. The others were not in its plan (a \
             budgeted run measures the points the claims rest on, a --point run those it names) or its deadline \
             came first; `--profile standard` runs them all."
        )
    })
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
    let collapsed = arms_that_ran_nothing(&points);
    let keys = row_keys(&points, &collapsed, &refs);
    let multi_arm = keys.iter().any(|k| k.1 != keys[0].1) || !collapsed.is_empty();
    let name_of = |label: &str, arm: &str| match (label.is_empty(), multi_arm) {
        (true, _) => data.short_arm(arm),
        (false, true) => format!("{label} · {}", data.short_arm(arm)),
        (false, false) => label.to_owned(),
    };
    let mut rows = Vec::new();
    let mut table = Vec::new();
    let mut logs = Vec::new();
    let mut references: Vec<SeriesView> = Vec::new();
    for (i, (label, arm)) in keys.iter().enumerate() {
        let group_start = i > 0 && keys[i - 1].0 != *label;
        let name = name_of(label, arm);
        let point = points.iter().find(|p| &p.label == label && &p.arm == arm && !collapsed.contains(&arm.as_str()));
        if let Some(point) = point {
            let o = model::outcome(&point.records, metric);
            rows.push(Row { label: name.clone(), group_start, kind: row_kind(&o, point.default) });
            table.push(measured_row(data, (label, arm), &unit, point.default, &o, &point.records));
            logs.extend(failure_logs(&name, &point.records));
        }
        for r in refs.iter().filter(|r| &r.figure.label == label && &r.figure.arm == arm) {
            rows.push(Row {
                label: published_label(&name, point.is_some()),
                group_start: group_start && point.is_none(),
                kind: RowKind::Reference { value: r.figure.value, origin: format!("seed {}", r.series.seed) },
            });
            table.push(reference_row(data, label, arm, &unit, r));
            let view = series_view(r);
            if !references.contains(&view) {
                references.push(view);
            }
        }
    }
    for arm in collapsed {
        let records: Vec<&Record> = points.iter().filter(|p| p.arm == arm).flat_map(|p| p.records.clone()).collect();
        let o = model::outcome(&records, metric);
        let label = format!("{} (every point)", data.short_arm(arm));
        rows.push(Row { label, group_start: !rows.is_empty(), kind: row_kind(&o, false) });
        table.push(measured_row(data, ("every point", arm), &unit, false, &o, &records));
    }
    let chart = Chart {
        id: id.clone(),
        title: format!("{} — {}", sweep.title, metric_title(metric)),
        unit: unit.clone(),
        higher_is_better: hib,
        rows,
        highlight_meaning: "default settings".into(),
        reference_legend: references.iter().map(SeriesView::legend).collect(),
    };
    ChartView {
        id,
        heading,
        metric: metric_title(metric),
        unit: unit.clone(),
        svg: chart::render(&chart),
        direction: direction(hib).into(),
        rows: table,
        logs,
        references,
    }
}

/// The tails of the logs of a point's failed or withdrawn reps, under the row's name.
fn failure_logs(name: &str, records: &[&Record]) -> Vec<LogView> {
    records
        .iter()
        .filter(|r| r.log_tail.is_some() && classify(r).is_some())
        .map(|r| LogView {
            label: name.to_owned(),
            rep: r.rep,
            tail: format::plain_text(r.log_tail.as_deref().unwrap_or_default()),
        })
        .collect()
}

/// A published row's label: the hatch says "published"; the label says it too where there is room.
fn published_label(name: &str, beside_ours: bool) -> String {
    match beside_ours {
        true => "published".to_owned(),
        false if name.chars().count() + 12 <= chart::LABEL_CHARS => format!("{name} (published)"),
        false => name.to_owned(),
    }
}

fn direction(higher_is_better: Option<bool>) -> &'static str {
    match higher_is_better {
        Some(true) => "Higher is better",
        Some(false) => "Lower is better",
        None => "",
    }
}

/// Arms that ran none of the sweep's points (several of them): each is one line, not one per point.
fn arms_that_ran_nothing<'p>(points: &'p [model::Point]) -> Vec<&'p str> {
    let mut arms: Vec<&str> = Vec::new();
    for p in points {
        if !arms.contains(&p.arm.as_str()) {
            arms.push(&p.arm);
        }
    }
    arms.retain(|arm| {
        let of_arm: Vec<_> = points.iter().filter(|p| p.arm == *arm).collect();
        of_arm.len() > 1
            && of_arm.iter().all(|p| p.records.iter().all(|r| r.status == streamlab_record::Status::NotRun))
    });
    arms
}

/// Row keys (label, arm): ours in sweep order, then published-only ones after their label's group.
fn row_keys(points: &[model::Point], collapsed: &[&str], refs: &[Reference]) -> Vec<(String, String)> {
    let mut keys: Vec<(String, String)> = points
        .iter()
        .filter(|p| !collapsed.contains(&p.arm.as_str()))
        .map(|p| (p.label.clone(), p.arm.clone()))
        .collect();
    for r in refs {
        let key = (r.figure.label.clone(), r.figure.arm.clone());
        if !keys.contains(&key) {
            match keys.iter().rposition(|k| k.0 == key.0) {
                Some(i) => keys.insert(i + 1, key),
                None => keys.push(key),
            }
        }
    }
    keys
}

/// A median, as the table of every metric shows it.
fn metrics_cell(s: &Summary) -> String {
    format::table_value(s.median)
}

/// Every metric's median per point of every sweep, for readers who want more than the charted one; and the
/// ratio metrics the runner wrote into the records, which it leaves out: a ratio is published only where its
/// parity contract is checked, in the headline.
pub fn metrics_table(data: &MatrixData) -> (MetricsTable, Vec<String>) {
    let mut columns: Vec<String> = data.records.iter().flat_map(|r| r.measurement.metrics.keys().cloned()).collect();
    columns.sort();
    columns.dedup();
    let is_ratio = |m: &String| data.metric_meta(m).is_some_and(|(unit, _)| unit == "ratio");
    let (unchecked, columns): (Vec<String>, Vec<String>) = columns.into_iter().partition(is_ratio);
    let mut rows = Vec::new();
    for sweep in &data.info.sweeps {
        for point in data.points(sweep) {
            let n = point.records.iter().filter(|r| set_apart(r).is_none()).count();
            let cells = columns
                .iter()
                .map(|m| match model::outcome(&point.records, m) {
                    Outcome::Measured { summary, .. } => metrics_cell(&summary),
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
    (MetricsTable { columns: header, rows }, unchecked)
}

#[cfg(test)]
mod tests {
    use streamlab_record::Metric;

    use super::*;
    use crate::results::fixtures;

    #[test]
    fn a_configured_metric_that_no_record_reports_gets_no_chart() {
        let headlines = "[kafka_sink.sweep_metrics]\nmode = [\"records_per_s\", \"records_per_cpu_s\"]\n";
        let cfg = SiteConfig::parse(headlines, "series = []").unwrap();
        let info = fixtures::kafka_sink_info();
        let charts_of_mode = |records: &[streamlab_record::Record]| {
            let data = MatrixData::for_site("kafka_sink", Some(&info), records, &cfg);
            let mode = sections(&data, &cfg).into_iter().find(|s| s.anchor == "sweep-mode").unwrap();
            mode.charts.iter().map(|c| c.metric.clone()).collect::<Vec<_>>()
        };
        let mut records = fixtures::kafka_sink_records("run-a");
        assert_eq!(charts_of_mode(&records), ["Records per second"], "an older run: no empty chart");
        for r in &mut records {
            r.measurement.metrics.insert("records_per_cpu_s".into(), Metric::new(1e5, "records / CPU s", true));
        }
        assert_eq!(charts_of_mode(&records), ["Records per second", "Records per CPU second, client and brokers"]);
    }

    #[test]
    fn a_sweep_the_run_holds_only_some_points_of_says_how_many() {
        let cfg = SiteConfig::builtin().unwrap();
        let info = fixtures::kafka_sink_info();
        let records = fixtures::kafka_sink_records("run-a");
        let data = MatrixData::for_site("kafka_sink", Some(&info), &records, &cfg);
        let sections = sections(&data, &cfg);
        let of = |anchor: &str| sections.iter().find(|s| s.anchor == anchor).unwrap().incomplete.clone();
        assert_eq!(of("sweep-mode"), None, "both arms measured");
        let batch = of("sweep-batch-max-rows").expect("10k, 100k and the default's 500k of five batch sizes");
        assert!(batch.starts_with("Incomplete: this run holds 3 of the sweep's 5 points."), "{batch}");
    }
}
