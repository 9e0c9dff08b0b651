//! Each headline figure across every run that has it, one series per configuration and machine: a figure's
//! identity is its id and the hash of the knobs and applied settings it was measured with, so a change of
//! default configuration starts a new series, and the page says what changed; runs on another machine (its
//! machine key: CPU model, cores, memory, kind, backend; not the kernel) start one too. Within a series, E-Divisive change-point
//! detection (the record crate's `stats::change_points`) marks where the figure shifted by more than the runs'
//! noise, with the commits on either side and the size of the shift.

use std::collections::BTreeMap;

use serde::Serialize;
use streamlab_record::stats::change_points::{Options, change_points};

use super::{RunLink, latest_matrix_href, run_link};
use crate::results::config::SiteConfig;
use crate::results::format;
use crate::results::headline::{Figure, Published, config_changes, headline_figures};
use crate::results::load::Run;
use crate::results::model::MatrixData;
use crate::site::chart::{self, Chart, Row, RowKind};

/// Changes listed per series before the rest are counted.
const CHANGES_SHOWN: usize = 12;

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
    pub series: Vec<HistorySeries>,
    pub published: Vec<Published>,
}

/// The runs of one figure measured with one configuration on one machine.
#[derive(Debug, Clone, Serialize)]
pub struct HistorySeries {
    pub hash: String,
    /// The machine key.
    pub hardware: String,
    /// What differs from the previous series' configuration; empty for the first.
    pub changes: Vec<String>,
    pub rows: Vec<HistoryRow>,
}

#[derive(Debug, Clone, Serialize)]
pub struct HistoryRow {
    pub run: RunLink,
    pub text: String,
    pub interval: String,
    pub within_noise: bool,
    pub config: String,
    pub detail: String,
    /// A change point detected at this run: the shift from the runs before it, and the commits on either side.
    pub change: Option<String>,
}

/// Each headline figure of each matrix across every run that has it, oldest first.
pub fn history_page(runs: &[Run], cfg: &SiteConfig) -> HistoryPage {
    let mut by_matrix: BTreeMap<String, Vec<(&Run, Vec<Figure>)>> = BTreeMap::new();
    for run in runs {
        for (name, file) in &run.matrices {
            let data = MatrixData::for_site(
                name,
                run.provenance.matrices.iter().find(|m| &m.name == name),
                &file.records,
                cfg,
            );
            by_matrix.entry(name.clone()).or_default().push((run, headline_figures(&data, cfg)));
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

/// A series' identity: the configuration hash and the machine key.
type SeriesKey = (String, String);

/// The runs that have figure `id`, grouped into series by configuration and machine, series in the order they
/// first appeared and runs oldest first within each.
fn series_of<'a>(per_run: &'a [(&'a Run, Vec<Figure>)], id: &str) -> Vec<(SeriesKey, Vec<(&'a Run, &'a Figure)>)> {
    let mut out: Vec<(SeriesKey, Vec<(&Run, &Figure)>)> = Vec::new();
    for (run, figs) in per_run {
        let Some(f) = figs.iter().find(|f| f.id == id) else { continue };
        let key = (f.config_hash.clone(), run.provenance.machine_key());
        match out.iter_mut().find(|(k, _)| *k == key) {
            Some((_, runs)) => runs.push((run, f)),
            None => out.push((key, vec![(run, f)])),
        }
    }
    out
}

/// The change points of one series' values (runs without a value are skipped), by the index of the run each
/// starts at: the medians before and after, the shift, the commits on either side and the test's p-value.
fn detected_changes(runs: &[(&Run, &Figure)]) -> BTreeMap<usize, String> {
    let valued: Vec<(usize, f64)> = runs.iter().enumerate().filter_map(|(i, (_, f))| f.value.map(|v| (i, v))).collect();
    let values: Vec<f64> = valued.iter().map(|(_, v)| *v).collect();
    let commit = |i: usize| super::short_commit(&runs[i].0.provenance.git.commit);
    change_points(&values, &Options::default())
        .into_iter()
        .map(|c| {
            let (at, before) = (valued[c.index].0, valued[c.index - 1].0);
            let shift = c.shift().map_or_else(String::new, |s| format!(" ({:+.1}%)", s * 100.0));
            let text = format!(
                "change point: {} → {}{shift} between commits {} and {} (E-Divisive, p = {:.3})",
                format::table_value(c.before),
                format::table_value(c.after),
                commit(before),
                commit(at),
                c.p_value
            );
            (at, text)
        })
        .collect()
}

fn history_figure(per_run: &[(&Run, Vec<Figure>)], id: &str, title: &str, chart_no: usize) -> HistoryFigure {
    let latest = per_run.iter().rev().find(|(_, figs)| figs.iter().any(|f| f.id == id)).map(|(run, _)| run.id.clone());
    let groups = series_of(per_run, id);
    let several = groups.len() > 1;
    let mut series = Vec::new();
    let mut chart_rows = Vec::new();
    let mut published: Vec<Published> = Vec::new();
    let mut unit = String::new();
    let mut hib = None;
    let mut previous: Option<(&Figure, &str)> = None;
    for (n, ((hash, hardware), runs)) in groups.iter().enumerate() {
        let changes = changes_since(previous, runs[0].1, hardware);
        if several {
            chart_rows.push(series_heading((n, groups.len()), hash, runs[0].0));
        }
        let mut detected = detected_changes(runs);
        let mut rows = Vec::new();
        for (i, (run, f)) in runs.iter().enumerate() {
            let change = detected.remove(&i);
            if let Some(text) = &change {
                chart_rows.push(Row { label: text.clone(), group_start: true, kind: RowKind::Heading });
            }
            unit.clone_from(&f.unit);
            hib = f.higher_is_better;
            for p in &f.published {
                if !published.iter().any(|q| q.seed == p.seed && q.hardware == p.hardware) {
                    published.push(p.clone());
                }
            }
            let kind = match f.value {
                Some(v) => RowKind::Bar { value: v, whisker: f.range, highlight: latest.as_deref() == Some(&run.id) },
                None => RowKind::Missing { status: f.text.clone(), reason: f.detail.clone() },
            };
            chart_rows.push(Row { label: run.id.clone(), group_start: false, kind });
            rows.push(history_row(run, f, change));
        }
        series.push(HistorySeries { hash: hash.clone(), hardware: hardware.clone(), changes, rows });
        previous = runs.last().map(|(_, f)| (*f, hardware.as_str()));
    }
    for p in &published {
        chart_rows.push(Row {
            label: format!("seed {} (published)", p.seed),
            group_start: true,
            kind: RowKind::Reference { value: p.value, origin: format!("seed {}", p.seed) },
        });
    }
    if unit == "×" {
        unit = "ratio (×)".into();
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
    HistoryFigure { anchor: format::slug(id), title: title.to_owned(), svg: chart::render(&chart), series, published }
}

/// What changed since the previous series (its machine first, then its configuration), the first
/// [`CHANGES_SHOWN`] of them and how many more.
fn changes_since(previous: Option<(&Figure, &str)>, first: &Figure, hardware: &str) -> Vec<String> {
    let mut changes = previous.map(|(p, _)| config_changes(&p.config_items, &first.config_items)).unwrap_or_default();
    if let Some((_, machine)) = previous.filter(|(_, m)| *m != hardware) {
        changes.insert(0, format!("machine: {machine} → {hardware}"));
    }
    if changes.len() > CHANGES_SHOWN {
        let more = changes.len() - CHANGES_SHOWN;
        changes.truncate(CHANGES_SHOWN);
        changes.push(format!("and {more} more"));
    }
    changes
}

/// The chart's heading row of series `n` of `count`, which `first` opens.
fn series_heading((n, count): (usize, usize), hash: &str, first: &Run) -> Row {
    Row {
        label: format!(
            "series {} of {count}: configuration {hash} on {}, from run {}",
            n + 1,
            first.provenance.host.cpu_brand,
            first.id
        ),
        group_start: n > 0,
        kind: RowKind::Heading,
    }
}

fn history_row(run: &Run, f: &Figure, change: Option<String>) -> HistoryRow {
    HistoryRow {
        run: run_link(run),
        text: f.text.clone(),
        interval: f.interval.clone(),
        within_noise: f.within_noise,
        config: f.config.clone(),
        detail: f.detail.clone(),
        change,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::load::load_results;

    #[test]
    fn a_change_of_configuration_starts_a_new_series_and_says_what_changed() {
        let dir = tempfile::tempdir().unwrap();
        let cfg = SiteConfig::builtin().unwrap();
        let with_threads = |id: &str, threads: u64| {
            let mut records = crate::results::fixtures::kafka_sink_records(id);
            for r in records.iter_mut().filter(|r| r.arm == "framework") {
                r.variant.knobs.insert("pipeline_threads".into(), serde_json::json!(threads));
            }
            records
        };
        crate::results::fixtures::write_run(dir.path(), "a-old", 1_000, &with_threads("a-old", 1));
        crate::results::fixtures::write_run(dir.path(), "b-old", 2_000, &with_threads("b-old", 1));
        crate::results::fixtures::write_run(dir.path(), "c-new", 3_000, &with_threads("c-new", 4));
        let page = history_page(&load_results(dir.path()).unwrap(), &cfg);
        let fig = page.matrices[0].figures.iter().find(|f| f.anchor == "ratio-framework-over-raw").unwrap();
        let runs: Vec<Vec<&str>> =
            fig.series.iter().map(|s| s.rows.iter().map(|r| r.run.id.as_str()).collect()).collect();
        assert_eq!(runs, [vec!["a-old", "b-old"], vec!["c-new"]]);
        assert!(fig.series[0].changes.is_empty());
        assert_eq!(fig.series[1].changes, ["framework: knob pipeline_threads 1 → 4"]);
        assert!(fig.svg.contains("series 2 of 2: configuration"), "the chart heads each series");
        // raw's configuration did not change: one series.
        let raw = page.matrices[0].figures.iter().find(|f| f.anchor == "median-mode-raw-records-per-s").unwrap();
        assert_eq!(raw.series.len(), 1);
        assert!(!raw.svg.contains("series 1 of"));
    }

    #[test]
    fn runs_on_another_machine_start_a_series_of_their_own_and_say_so() {
        let dir = tempfile::tempdir().unwrap();
        for (id, ts, cpu) in [("a", 1_000, "AMD EPYC 7B13"), ("b", 2_000, "AMD EPYC 7B13"), ("c", 3_000, "Intel Xeon")]
        {
            let path = crate::results::fixtures::write_run(
                dir.path(),
                id,
                ts,
                &crate::results::fixtures::kafka_sink_records(id),
            );
            let prov_path = path.join(streamlab_record::provenance::PROVENANCE_FILE);
            let prov = std::fs::read_to_string(&prov_path).unwrap().replace("AMD EPYC 7B13", cpu);
            std::fs::write(prov_path, prov).unwrap();
        }
        let page = history_page(&load_results(dir.path()).unwrap(), &SiteConfig::builtin().unwrap());
        let raw = page.matrices[0].figures.iter().find(|f| f.anchor == "median-mode-raw-records-per-s").unwrap();
        let runs: Vec<Vec<&str>> =
            raw.series.iter().map(|s| s.rows.iter().map(|r| r.run.id.as_str()).collect()).collect();
        assert_eq!(runs, [vec!["a", "b"], vec!["c"]]);
        assert_eq!(raw.series[0].hash, raw.series[1].hash, "the same configuration");
        assert!(
            raw.series[1].changes[0].starts_with("machine: AMD EPYC 7B13 (CPU model not recorded), 2 logical cores"),
            "{:?}",
            raw.series[1].changes
        );
        assert!(
            raw.series[1].changes[0].contains("→ Intel Xeon (CPU model not recorded), 2 logical cores"),
            "{:?}",
            raw.series[1].changes
        );
    }

    #[test]
    fn a_shift_within_one_configuration_is_marked_at_the_run_it_starts_with_the_commits_on_either_side() {
        let dir = tempfile::tempdir().unwrap();
        for i in 0..12u64 {
            let id = format!("run-{i}");
            let mut records = crate::results::fixtures::kafka_sink_records(&id);
            for r in records.iter_mut().filter(|r| r.arm == "raw") {
                let m = r.measurement.metrics.get_mut("records_per_s").unwrap();
                m.value *= if i < 6 { 1.0 } else { 0.8 };
            }
            let path = crate::results::fixtures::write_run(dir.path(), &id, 1_000 * (i + 1), &records);
            let prov_path = path.join(streamlab_record::provenance::PROVENANCE_FILE);
            let prov = std::fs::read_to_string(&prov_path).unwrap().replace("4f1c2d3e5a", &format!("{i:010}"));
            std::fs::write(prov_path, prov).unwrap();
        }
        let page = history_page(&load_results(dir.path()).unwrap(), &SiteConfig::builtin().unwrap());
        let raw = page.matrices[0].figures.iter().find(|f| f.anchor == "median-mode-raw-records-per-s").unwrap();
        assert_eq!(raw.series.len(), 1, "one configuration");
        let marked: Vec<(usize, &str)> =
            raw.series[0].rows.iter().enumerate().filter_map(|(i, r)| Some((i, r.change.as_deref()?))).collect();
        assert_eq!(marked.len(), 1, "{marked:?}");
        let (at, text) = marked[0];
        assert_eq!(at, 6);
        assert!(text.contains("(-20.0%) between commits 0000000005 and 0000000006"), "{text}");
        assert!(raw.svg.contains("change point: "), "the chart marks it too");
        let framework = page.matrices[0].figures.iter().find(|f| f.anchor == "median-mode-framework-records-per-s");
        assert!(framework.unwrap().series[0].rows.iter().all(|r| r.change.is_none()), "an unchanged figure has none");
    }

    #[test]
    fn the_committed_kafka_sink_runs_before_and_after_the_seeds_configuration_are_different_series() {
        // 2026-11-29: spate's builder defaults as the framework's default; from 2026-11-30: the seed's.
        let runs = load_results(&crate::paths::results_dir()).unwrap();
        let page = history_page(&runs, &SiteConfig::builtin().unwrap());
        let sink = page.matrices.iter().find(|m| m.name == "kafka_sink").unwrap();
        let fig = sink.figures.iter().find(|f| f.anchor == "median-mode-framework-records-per-s").unwrap();
        let series_of_run = |id: &str| fig.series.iter().position(|s| s.rows.iter().any(|r| r.run.id == id)).unwrap();
        let (builder, builder_too) =
            (series_of_run("20261129T220903Z-standard-3f38"), series_of_run("20261129T230530Z-standard-300b"));
        let seeds = series_of_run("20261130T061921Z-standard-0fc3");
        assert_eq!(builder, builder_too, "the same configuration stays one series");
        assert_ne!(builder, seeds, "the seed's configuration starts a new series");
        assert!(
            fig.series[seeds].changes.iter().any(|c| c.contains("knob pipeline_threads 1 → 4")),
            "{:?}",
            fig.series[seeds].changes
        );
    }
}
