//! What each page shows, as plain data for the templates. Links are relative to the site root; the
//! templates prefix them with `root` so the same view renders at any depth (and works from file://).

use std::collections::BTreeMap;

use serde::Serialize;
use streamlab_record::Record;
use streamlab_record::stats::CI_METHOD;

use crate::provenance::{Provenance, SweepInfo};
use crate::site::chart::{self, Chart, Row, RowKind};
use crate::site::config::{Reference, SiteConfig};
use crate::site::format;
use crate::site::load::Run;
use crate::site::model::{self, Counts, Figure, MatrixData, Outcome, Published, ci_text, classify};

#[derive(Debug, Clone, Serialize)]
pub struct KeyValue {
    pub key: String,
    pub value: String,
}

fn kv(key: &str, value: impl Into<String>) -> KeyValue {
    KeyValue { key: key.into(), value: value.into() }
}

/// A link to a run, as lists of runs show it.
#[derive(Debug, Clone, Serialize)]
pub struct RunLink {
    pub id: String,
    pub href: String,
    pub date: String,
    pub profile: String,
    pub backend: String,
    pub cpu: String,
    pub commit: String,
    pub dirty: bool,
    pub unfinished: bool,
    pub matrices: Vec<String>,
}

fn run_link(run: &Run) -> RunLink {
    let p = &run.provenance;
    RunLink {
        id: run.id.clone(),
        href: run_href(&run.id),
        date: format::date_time(p.started_ts_ms),
        profile: p.profile.clone(),
        backend: p.env.backend.clone(),
        cpu: p.host.cpu_brand.clone(),
        commit: short_commit(&p.git.commit),
        dirty: p.git.dirty,
        unfinished: p.finished_ts_ms.is_none(),
        matrices: run.matrices.keys().cloned().collect(),
    }
}

pub fn run_href(id: &str) -> String {
    format!("runs/{id}/index.html")
}

pub fn run_matrix_href(id: &str, matrix: &str) -> String {
    format!("runs/{id}/{matrix}.html")
}

pub fn latest_matrix_href(matrix: &str) -> String {
    format!("matrix/{matrix}.html")
}

fn short_commit(c: &str) -> String {
    c.chars().take(10).collect()
}

// ------------------------------------------------------------------------------------------- index

#[derive(Debug, Clone, Serialize)]
pub struct IndexPage {
    pub matrices: Vec<IndexMatrix>,
    pub runs: Vec<RunLink>,
    pub ci_method: &'static str,
}

#[derive(Debug, Clone, Serialize)]
pub struct IndexMatrix {
    pub name: String,
    pub title: String,
    pub question: String,
    pub seed: Option<String>,
    pub href: String,
    pub run: RunLink,
    pub figures: Vec<Figure>,
    pub counts: Counts,
}

/// The latest run of each matrix, by matrix name.
pub fn latest_runs(runs: &[Run]) -> BTreeMap<String, &Run> {
    let mut out = BTreeMap::new();
    // Runs are sorted oldest first, so later inserts win.
    for run in runs {
        for name in run.matrices.keys() {
            out.insert(name.clone(), run);
        }
    }
    out
}

pub fn index_page(runs: &[Run], cfg: &SiteConfig) -> IndexPage {
    let matrices = latest_runs(runs)
        .into_iter()
        .map(|(name, run)| {
            let file = &run.matrices[&name];
            let data = MatrixData::new(&name, run.provenance.matrices.iter().find(|m| m.name == name), &file.records);
            IndexMatrix {
                href: latest_matrix_href(&name),
                title: data.info.title.clone(),
                question: data.info.question.clone(),
                seed: data.info.seed.clone(),
                run: run_link(run),
                figures: model::headline_figures(&data, cfg),
                counts: model::counts(&file.records),
                name,
            }
        })
        .collect();
    IndexPage { matrices, runs: runs.iter().rev().map(run_link).collect(), ci_method: CI_METHOD }
}

// ------------------------------------------------------------------------------------------- matrix

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
    pub svg: String,
    pub direction: String,
    pub rows: Vec<TableRow>,
    pub logs: Vec<LogView>,
    pub references: Vec<SeriesView>,
}

#[derive(Debug, Clone, Serialize)]
pub struct TableRow {
    pub label: String,
    pub arm: String,
    pub source: String,
    pub highlight: bool,
    pub reference: bool,
    pub drawn: bool,
    pub status: String,
    pub median: String,
    pub ci: String,
    pub range: String,
    pub n: String,
    /// Shown under the status: the verdict once, and why any rep is not drawn (never folded away).
    pub lines: Vec<String>,
    /// Each rep's own note, `rep 1: ...`, folded under `notes_summary`.
    pub rep_notes: Vec<String>,
    /// `notes (3 reps)`; empty when no rep has a note.
    pub notes_summary: String,
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
        let charts = metrics
            .iter()
            .map(|metric| {
                chart_no += 1;
                let heading = (metrics.len() > 1).then(|| metric.clone());
                chart_view(&data, cfg, sweep, metric, format!("c{chart_no}"), heading)
            })
            .collect();
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
        figures: model::headline_figures(&data, cfg),
        arms: data.info.arms.iter().map(|a| kv(&a.title, a.description.clone())).collect(),
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
        references,
    }
}

/// `cpu · commit · date`, under every chart.
fn footer(p: &Provenance) -> String {
    let dirty = if p.git.dirty { " (dirty)" } else { "" };
    format!("{} · commit {}{dirty} · {}", p.host.cpu_brand, short_commit(&p.git.commit), format::date(p.started_ts_ms))
}

fn environment(p: &Provenance) -> Vec<KeyValue> {
    let h = &p.host;
    let cores = match h.physical_cores {
        Some(phys) => format!("{phys} physical / {} logical cores", h.logical_cores),
        None => format!("{} logical cores", h.logical_cores),
    };
    let mut out = vec![
        kv("CPU", format!("{}, {cores}, {} MHz", h.cpu_brand, h.frequency_mhz)),
        kv("Memory", format::gib(h.memory_bytes)),
        kv("OS", format!("{}, kernel {}, {}", h.os, h.kernel, h.arch)),
        kv(
            "Environment",
            format!(
                "{} ({})",
                p.env.backend,
                if p.env.managed {
                    "services started and stopped by the lab"
                } else {
                    "external services, not managed"
                }
            ),
        ),
    ];
    if let Some(v) = &p.env.kafka_version {
        out.push(kv("Kafka", v.clone()));
    }
    if let Some(v) = &p.env.mysql_version {
        out.push(kv("MySQL", format!("{} {v}", p.env.mysql_flavour.as_deref().unwrap_or(""))));
    }
    if !p.env.cpu_caps.is_empty() {
        let caps: Vec<String> = p.env.cpu_caps.iter().map(|(k, v)| format!("{k}: {v}")).collect();
        out.push(kv("CPU caps", caps.join("; ")));
    }
    if let Some(note) = &p.env.note {
        out.push(kv("Note", note.clone()));
    }
    out.push(kv("Profile", p.profile.clone()));
    out
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
            table.push(reference_row(data, label, arm, r));
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
        svg: chart::render(&chart),
        direction: direction.into(),
        rows: table,
        logs,
        references,
    }
}

fn row_kind(o: &Outcome, default: bool) -> RowKind {
    match o {
        Outcome::Measured { summary, .. } => {
            RowKind::Bar { value: summary.median, whisker: Some((summary.min, summary.max)), highlight: default }
        }
        Outcome::NotDrawn { missing, .. } => RowKind::Missing {
            status: missing.text().to_owned(),
            reason: o.reasons().first().cloned().map_or_else(String::new, |r| strip_status(&r)),
        },
    }
}

/// `withdrawn: integrity failed: ...` -> `integrity failed: ...` (the status is printed beside it).
fn strip_status(reason: &str) -> String {
    reason.split_once(": ").map_or_else(|| reason.to_owned(), |(_, rest)| rest.to_owned())
}

/// The data-table row of a measured point: median, CI, range, n, then the status cell: the verdict once,
/// why reps are not drawn, and each rep's note folded away.
fn measured_row(
    data: &MatrixData,
    key: (&str, &str),
    unit: &str,
    default: bool,
    o: &Outcome,
    records: &[&Record],
) -> TableRow {
    let (label, arm) = key;
    let mut records = records.to_vec();
    records.sort_by_key(|r| r.rep);
    let mut lines: Vec<String> = verdict_line(&records).into_iter().collect();
    let (status, median, ci, range, n) = match o {
        Outcome::Measured { summary: s, .. } => (
            "measured".to_owned(),
            format!("{} {unit}", format::table_value(s.median)).trim_end().to_owned(),
            ci_text(s),
            format!("{} – {}", format::table_value(s.min), format::table_value(s.max)),
            s.n.to_string(),
        ),
        Outcome::NotDrawn { missing, .. } => {
            (missing.text().to_owned(), "—".into(), "—".into(), "—".into(), "0".into())
        }
    };
    lines.extend(exclusion_lines(o));
    let rep_notes: Vec<String> = records
        .iter()
        .filter_map(|r| {
            let note = r.note.as_deref().map(str::trim).filter(|n| !n.is_empty())?;
            Some(match classify(r) {
                None => format!("rep {}: {note}", r.rep),
                Some((missing, _)) => format!("rep {} ({}): {note}", r.rep, missing.text()),
            })
        })
        .collect();
    let notes_summary = match rep_notes.len() {
        0 => String::new(),
        1 => "notes (1 rep)".to_owned(),
        n => format!("notes ({n} reps)"),
    };
    TableRow {
        label: if label.is_empty() { "—".into() } else { label.to_owned() },
        arm: data.arm_title(arm),
        source: "measured".into(),
        highlight: default,
        reference: false,
        drawn: matches!(o, Outcome::Measured { .. }),
        status,
        median,
        ci,
        range,
        n,
        lines,
        rep_notes,
        notes_summary,
    }
}

/// The verdict of a point's verified reps, said once: `verdict: downstream=client, upstream=sink`, or
/// `verdicts differ across reps: ... (2 of 3 reps); ... (1 of 3 reps)`. `None` if no verified rep has one.
fn verdict_line(records: &[&Record]) -> Option<String> {
    let mut counts: Vec<(String, usize)> = Vec::new();
    let mut total = 0;
    for r in records.iter().filter(|r| classify(r).is_none()) {
        total += 1;
        let v: Vec<String> = r.verdict.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let v = if v.is_empty() { "no verdict".to_owned() } else { v.join(", ") };
        match counts.iter_mut().find(|(x, _)| *x == v) {
            Some((_, n)) => *n += 1,
            None => counts.push((v, 1)),
        }
    }
    match counts.as_mut_slice() {
        [] => None,
        [(v, _)] if v == "no verdict" => None,
        [(v, _)] => Some(format!("verdict: {v}")),
        several => {
            // Most reps first; ties keep the order of the first rep that gave them.
            several.sort_by_key(|(_, n)| std::cmp::Reverse(*n));
            let parts: Vec<String> = several.iter().map(|(v, n)| format!("{v} ({n} of {total} reps)")).collect();
            Some(format!("verdicts differ across reps: {}", parts.join("; ")))
        }
    }
}

/// Why reps are left out, one line per distinct cause: `rep 3 failed: ...`, `reps 1, 2, 3: ...`. In a row
/// that is not drawn the status already names the cause, so only a different cause is named again.
fn exclusion_lines(o: &Outcome) -> Vec<String> {
    let shown = match o {
        Outcome::Measured { .. } => None,
        Outcome::NotDrawn { missing, .. } => Some(*missing),
    };
    let mut groups: Vec<(model::Missing, &str, Vec<u32>)> = Vec::new();
    for e in o.excluded() {
        match groups.iter_mut().find(|(m, r, _)| *m == e.missing && *r == e.reason) {
            Some((_, _, reps)) => reps.push(e.rep),
            None => groups.push((e.missing, &e.reason, vec![e.rep])),
        }
    }
    groups
        .into_iter()
        .map(|(missing, reason, reps)| {
            let reps = match reps.as_slice() {
                [one] => format!("rep {one}"),
                many => format!("reps {}", many.iter().map(u32::to_string).collect::<Vec<_>>().join(", ")),
            };
            if shown == Some(missing) {
                format!("{reps}: {reason}")
            } else {
                format!("{reps} {}: {reason}", missing.text())
            }
        })
        .collect()
}

fn reference_row(data: &MatrixData, label: &str, arm: &str, r: &Reference) -> TableRow {
    TableRow {
        label: if label.is_empty() { "—".into() } else { label.to_owned() },
        arm: data.arm_title(arm),
        source: r.origin(),
        highlight: false,
        reference: true,
        drawn: true,
        status: "published".into(),
        median: format!("{} {}", format::table_value(r.figure.value), r.series.unit),
        ci: "—".into(),
        range: "—".into(),
        n: r.figure.n.map_or_else(|| "—".into(), |n| n.to_string()),
        // The full series (title, hardware, file) is listed under the table; here the machine in short.
        lines: vec![r.series.hardware.split(';').next().unwrap_or_default().to_owned()],
        rep_notes: Vec::new(),
        notes_summary: String::new(),
    }
}

/// Every metric's median per point of every sweep, for readers who want more than the charted one.
fn metrics_table(data: &MatrixData) -> MetricsTable {
    let mut columns: Vec<String> = data.records.iter().flat_map(|r| r.metrics.keys().cloned()).collect();
    columns.sort();
    columns.dedup();
    let mut rows = Vec::new();
    for sweep in &data.info.sweeps {
        for point in data.points(sweep) {
            let n = point.records.iter().filter(|r| classify(r).is_none()).count();
            let cells = columns
                .iter()
                .map(|m| match model::outcome(&point.records, m) {
                    Outcome::Measured { summary, .. } => format::table_value(summary.median),
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

// ------------------------------------------------------------------------------------------- run

#[derive(Debug, Clone, Serialize)]
pub struct RunPage {
    pub run: RunLink,
    pub started: String,
    pub finished: Option<String>,
    pub duration: Option<String>,
    pub reproduce: String,
    pub host: Vec<KeyValue>,
    pub environment: Vec<KeyValue>,
    pub versions: Vec<KeyValue>,
    pub lock_file: String,
    pub lock_sha256: String,
    pub artifacts: Vec<KeyValue>,
    pub matrices: Vec<RunMatrix>,
    pub provenance_href: String,
    pub commit_full: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct RunMatrix {
    pub name: String,
    pub title: String,
    pub href: String,
    pub raw_href: String,
    pub file: String,
    pub sha256: String,
    pub counts: Counts,
}

pub fn run_page(run: &Run) -> RunPage {
    let p = &run.provenance;
    let h = &p.host;
    let host = vec![
        kv("Hostname", h.hostname.clone()),
        kv("CPU", h.cpu_brand.clone()),
        kv("Physical cores", h.physical_cores.map_or_else(|| "unknown".into(), |c| c.to_string())),
        kv("Logical cores", h.logical_cores.to_string()),
        kv("Frequency", format!("{} MHz", h.frequency_mhz)),
        kv("Memory", format::gib(h.memory_bytes)),
        kv("OS", h.os.clone()),
        kv("Kernel", h.kernel.clone()),
        kv("Architecture", h.arch.clone()),
    ];
    let matrices = run
        .matrices
        .iter()
        .map(|(name, file)| {
            let info = p.matrices.iter().find(|m| &m.name == name);
            RunMatrix {
                name: name.clone(),
                title: info.map_or_else(|| name.clone(), |m| m.title.clone()),
                href: run_matrix_href(&run.id, name),
                raw_href: format!("runs/{}/{name}.jsonl", run.id),
                file: info.map_or_else(String::new, |m| m.file.clone()),
                sha256: info.map_or_else(String::new, |m| m.sha256.clone()),
                counts: model::counts(&file.records),
            }
        })
        .collect();
    RunPage {
        run: run_link(run),
        started: format::date_time(p.started_ts_ms),
        finished: p.finished_ts_ms.map(format::date_time),
        duration: p.finished_ts_ms.map(|f| format::duration(f.saturating_sub(p.started_ts_ms))),
        reproduce: p.reproduce.clone(),
        host,
        environment: environment(p),
        versions: p.versions.iter().map(|(k, v)| kv(k, v.clone())).collect(),
        lock_file: p.pins.lock_file.clone(),
        lock_sha256: p.pins.lock_sha256.clone(),
        artifacts: p.pins.artifacts.iter().map(|(k, v)| kv(k, v.clone())).collect(),
        matrices,
        provenance_href: format!("runs/{}/provenance.json", run.id),
        commit_full: p.git.commit.clone(),
    }
}

// ------------------------------------------------------------------------------------------- history

#[derive(Debug, Clone, Serialize)]
pub struct HistoryPage {
    pub matrices: Vec<HistoryMatrix>,
}

#[derive(Debug, Clone, Serialize)]
pub struct HistoryMatrix {
    pub name: String,
    pub title: String,
    pub href: String,
    pub figures: Vec<HistoryFigure>,
}

#[derive(Debug, Clone, Serialize)]
pub struct HistoryFigure {
    pub anchor: String,
    pub title: String,
    pub svg: String,
    pub rows: Vec<HistoryRow>,
    pub published: Vec<Published>,
}

#[derive(Debug, Clone, Serialize)]
pub struct HistoryRow {
    pub run: RunLink,
    pub text: String,
    pub detail: String,
}

/// Each headline figure of each matrix across every run that has it, oldest first.
pub fn history_page(runs: &[Run], cfg: &SiteConfig) -> HistoryPage {
    let mut by_matrix: BTreeMap<String, Vec<(&Run, Vec<Figure>)>> = BTreeMap::new();
    for run in runs {
        for (name, file) in &run.matrices {
            let data = MatrixData::new(name, run.provenance.matrices.iter().find(|m| &m.name == name), &file.records);
            by_matrix.entry(name.clone()).or_default().push((run, model::headline_figures(&data, cfg)));
        }
    }
    let mut chart_no = 0;
    let matrices = by_matrix
        .into_iter()
        .map(|(name, per_run)| {
            // Figure ids in the order the latest run lists them, then any only older runs had.
            let mut ids: Vec<(String, String)> = Vec::new();
            for (_, figs) in per_run.iter().rev() {
                for f in figs {
                    if !ids.iter().any(|(id, _)| id == &f.id) {
                        ids.push((f.id.clone(), f.title.clone()));
                    }
                }
            }
            let figures = ids
                .into_iter()
                .map(|(id, title)| {
                    chart_no += 1;
                    history_figure(&per_run, &id, &title, chart_no)
                })
                .collect();
            let title = per_run
                .last()
                .and_then(|(run, _)| run.provenance.matrices.iter().find(|m| m.name == name))
                .map_or_else(|| name.clone(), |m| m.title.clone());
            HistoryMatrix { href: latest_matrix_href(&name), name, title, figures }
        })
        .collect();
    HistoryPage { matrices }
}

fn history_figure(per_run: &[(&Run, Vec<Figure>)], id: &str, title: &str, chart_no: usize) -> HistoryFigure {
    let mut rows = Vec::new();
    let mut chart_rows = Vec::new();
    let mut published: Vec<Published> = Vec::new();
    let mut unit = String::new();
    let mut hib = None;
    let last = per_run.len().saturating_sub(1);
    for (i, (run, figs)) in per_run.iter().enumerate() {
        let label = run.id.clone();
        let Some(f) = figs.iter().find(|f| f.id == id) else { continue };
        unit.clone_from(&f.unit);
        hib = f.higher_is_better;
        for p in &f.published {
            if !published.iter().any(|q| q.seed == p.seed && q.hardware == p.hardware) {
                published.push(p.clone());
            }
        }
        let kind = match f.value {
            Some(v) => RowKind::Bar { value: v, whisker: f.range, highlight: i == last },
            None => RowKind::Missing { status: f.text.clone(), reason: f.detail.clone() },
        };
        chart_rows.push(Row { label, group_start: false, kind });
        rows.push(HistoryRow { run: run_link(run), text: f.text.clone(), detail: f.detail.clone() });
    }
    for p in &published {
        chart_rows.push(Row {
            label: format!("seed {} (published)", p.seed),
            group_start: true,
            kind: RowKind::Reference { value: p.value, origin: format!("seed {}", p.seed) },
        });
    }
    if unit == "×" {
        unit = "ratio of medians (×)".into();
    }
    let chart = Chart {
        id: format!("h{chart_no}"),
        title: title.to_owned(),
        unit,
        higher_is_better: hib,
        rows: chart_rows,
        highlight_meaning: "latest run".into(),
        reference_legend: published
            .iter()
            .map(|p| format!("published in seed {}, on {}", p.seed, p.hardware))
            .collect(),
    };
    HistoryFigure { anchor: format::slug(id), title: title.to_owned(), svg: chart::render(&chart), rows, published }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::site::fixtures;
    use streamlab_record::{Integrity, Status};

    fn rep(rep: u32, value: f64, verdict: &[(&str, &str)], note: &str) -> Record {
        let mut r = fixtures::record("run-a", "framework", "", &["mode"], true, rep, value);
        r.verdict = verdict.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect();
        r.note = Some(note.to_owned()).filter(|n| !n.is_empty());
        r
    }

    fn row_of(records: &[Record]) -> TableRow {
        let info = fixtures::kafka_sink_info();
        let data = MatrixData::new("kafka_sink", Some(&info), records);
        let refs: Vec<&Record> = records.iter().collect();
        let o = model::outcome(&refs, "records_per_s");
        measured_row(&data, ("", "framework"), "records/s", true, &o, &refs)
    }

    const SINK_CLIENT: [(&str, &str); 2] = [("upstream", "sink"), ("downstream", "client")];

    #[test]
    fn a_shared_verdict_is_said_once_and_each_rep_keeps_its_own_note() {
        let row = row_of(&[
            rep(2, 600.0, &SINK_CLIENT, "window 8 s; 4800 acked"),
            rep(1, 500.0, &SINK_CLIENT, "window 8 s; 4000 acked"),
            rep(3, 700.0, &SINK_CLIENT, "window 8 s; 5600 acked"),
        ]);
        assert_eq!((row.status.as_str(), row.drawn), ("measured", true));
        assert_eq!(row.lines, ["verdict: downstream=client, upstream=sink"]);
        assert_eq!(
            row.rep_notes,
            ["rep 1: window 8 s; 4000 acked", "rep 2: window 8 s; 4800 acked", "rep 3: window 8 s; 5600 acked"]
        );
        assert_eq!(row.notes_summary, "notes (3 reps)");
    }

    #[test]
    fn differing_verdicts_are_counted_and_excluded_reps_stay_visible() {
        let mut bad = rep(4, 1e9, &[("upstream", "source")], "window 8 s; 8e9 acked");
        bad.integrity = Integrity::compare(100, 99, "hwm");
        let row = row_of(&[
            rep(1, 500.0, &[("upstream", "sink"), ("downstream", "broker")], "a"),
            rep(2, 600.0, &SINK_CLIENT, ""),
            rep(3, 700.0, &SINK_CLIENT, "c"),
            bad,
        ]);
        assert_eq!(
            row.lines,
            [
                "verdicts differ across reps: downstream=client, upstream=sink (2 of 3 reps); \
                 downstream=broker, upstream=sink (1 of 3 reps)",
                "rep 4 withdrawn: integrity failed: expected 100 but observed 99 (hwm)",
            ]
        );
        // A rep without a note gets no item; a withdrawn rep's note is marked as such.
        assert_eq!(row.rep_notes, ["rep 1: a", "rep 3: c", "rep 4 (withdrawn): window 8 s; 8e9 acked"]);
        assert_eq!(row.notes_summary, "notes (3 reps)");
        // Verified reps without a verdict beside ones with it are counted too; none at all says nothing.
        let row = row_of(&[rep(1, 1.0, &SINK_CLIENT, "only note"), rep(2, 2.0, &[], "")]);
        assert_eq!(
            row.lines,
            ["verdicts differ across reps: downstream=client, upstream=sink (1 of 2 reps); no verdict (1 of 2 reps)"]
        );
        assert_eq!(row.notes_summary, "notes (1 rep)");
        let row = row_of(&[rep(1, 1.0, &[], ""), rep(2, 2.0, &[], "")]);
        assert!(row.lines.is_empty() && row.rep_notes.is_empty() && row.notes_summary.is_empty());
    }

    #[test]
    fn a_point_not_drawn_names_each_cause_once_outside_the_notes() {
        let skipped = |n| {
            let mut r = rep(n, 0.0, &[], "");
            r.status = Status::NotRun;
            r.reason = Some("skipped by --set shards=1".into());
            r
        };
        let row = row_of(&[skipped(2), skipped(1)]);
        assert_eq!((row.status.as_str(), row.drawn, row.median.as_str()), ("not run", false, "—"));
        assert_eq!(row.lines, ["reps 1, 2: skipped by --set shards=1"]);
        assert!(row.rep_notes.is_empty());
        // Mixed causes: the status is the most serious; the others are named on their lines.
        let mut bad = rep(1, 5.0, &SINK_CLIENT, "ran, but lost acks");
        bad.integrity = Integrity::compare(10, 9, "hwm");
        let mut crashed = rep(2, 0.0, &[], "");
        crashed.status = Status::Failed;
        crashed.reason = Some("timed out after 60 s".into());
        let row = row_of(&[bad, crashed]);
        assert_eq!(row.status, "withdrawn");
        assert_eq!(
            row.lines,
            ["rep 1: integrity failed: expected 10 but observed 9 (hwm)", "rep 2 failed: timed out after 60 s"]
        );
        assert_eq!(row.rep_notes, ["rep 1 (withdrawn): ran, but lost acks"]);
    }
}
