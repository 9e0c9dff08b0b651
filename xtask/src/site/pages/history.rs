//! Each headline figure across every run that has it.

use std::collections::BTreeMap;

use serde::Serialize;

use super::{RunLink, latest_matrix_href, run_link};
use crate::site::chart::{self, Chart, Row, RowKind};
use crate::site::config::SiteConfig;
use crate::site::format;
use crate::site::headline::{Figure, Published, headline_figures};
use crate::site::load::Run;
use crate::site::model::MatrixData;

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
    pub interval: String,
    pub within_noise: bool,
    pub config: String,
    pub detail: String,
}

/// Each headline figure of each matrix across every run that has it, oldest first.
pub fn history_page(runs: &[Run], cfg: &SiteConfig) -> HistoryPage {
    let mut by_matrix: BTreeMap<String, Vec<(&Run, Vec<Figure>)>> = BTreeMap::new();
    for run in runs {
        for (name, file) in &run.matrices {
            let data = MatrixData::new(name, run.provenance.matrices.iter().find(|m| &m.name == name), &file.records);
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
        rows.push(HistoryRow {
            run: run_link(run),
            text: f.text.clone(),
            interval: f.interval.clone(),
            within_noise: f.within_noise,
            config: f.config.clone(),
            detail: f.detail.clone(),
        });
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
    HistoryFigure { anchor: format::slug(id), title: title.to_owned(), svg: chart::render(&chart), rows, published }
}
