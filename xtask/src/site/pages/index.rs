//! The index: every matrix's latest headline figures and the list of runs.

use serde::Serialize;
use streamlab_record::stats::{CI_METHOD, RATIO_METHOD};

use super::{RunLink, latest_matrix_href, latest_runs, run_link};
use crate::results::claims::machines::{MachineVerdicts, by_machine};
use crate::results::config::SiteConfig;
use crate::results::headline::{Figure, headline_figures};
use crate::results::load::Run;
use crate::results::model::{self, Counts, MatrixData};
use crate::site::forest;

#[derive(Debug, Clone, Serialize)]
pub struct IndexPage {
    /// The first screen: the machine the verdicts were measured on, one line of totals, then every seed's
    /// headline claim with its verdict, and the lab's own comparisons beside them.
    pub machine: Option<MachineVerdicts>,
    /// The other machines, each with a page of its own verdicts and a column beside the first machine's.
    pub other_machines: Vec<MachineVerdicts>,
    /// The other machines' verdicts by claim id, one column each, in `other_machines`' order.
    pub columns: Vec<Column>,
    pub matrices: Vec<IndexMatrix>,
    pub runs: Vec<RunLink>,
    pub ci_method: &'static str,
    pub ratio_method: &'static str,
    pub precision_method: &'static str,
    /// The verdict rule as the code applies it.
    pub verdict_method: &'static str,
}

/// Another machine's verdicts beside the first machine's: its label and page, and each claim's cell.
#[derive(Debug, Clone, Serialize)]
pub struct Column {
    pub label: String,
    pub slug: String,
    pub runs: usize,
    pub cells: std::collections::BTreeMap<String, Cell>,
}

/// One claim's verdict on another machine: the verdict, the figure, the limit that kept it from telling.
#[derive(Debug, Clone, Serialize)]
pub struct Cell {
    pub verdict: crate::results::claims::Kind,
    pub text: &'static str,
    pub measured: String,
    pub limit: Option<String>,
}

impl Column {
    fn of(m: &MachineVerdicts) -> Column {
        let cells = m
            .claims
            .iter()
            .map(|c| {
                let cell = Cell {
                    verdict: c.verdict,
                    text: c.verdict_text,
                    measured: c.measured.clone(),
                    limit: c.host_limit.clone(),
                };
                (c.id.clone(), cell)
            })
            .collect();
        Column { label: m.label.clone(), slug: m.slug.clone(), runs: m.runs, cells }
    }
}

/// A machine's own page of verdicts (every machine but the front page's).
#[derive(Debug, Clone, Serialize)]
pub struct MachinePage<'a> {
    pub machine: &'a MachineVerdicts,
    pub verdict_method: &'static str,
}

#[derive(Debug, Clone, Serialize)]
pub struct IndexMatrix {
    pub name: String,
    pub title: String,
    pub question: String,
    pub seed: Option<String>,
    pub href: String,
    pub run: RunLink,
    /// The forest plot of the matrix's headline ratios.
    pub forest: Option<String>,
    pub figures: Vec<Figure>,
    pub counts: Counts,
    /// The durability matrix: each client's leader killed with kill -9, per acks setting, from the latest run.
    pub kills: Vec<crate::site::durability::summary::FaultSummary>,
}

pub fn index_page(runs: &[Run], cfg: &SiteConfig) -> IndexPage {
    let mut machines = by_machine(runs, &cfg.claims).into_iter();
    let (machine, other_machines): (Option<MachineVerdicts>, Vec<MachineVerdicts>) =
        (machines.next(), machines.collect());
    let matrices = latest_runs(runs, machine.as_ref().map(|m| m.machine.as_str()))
        .into_iter()
        .map(|(name, run)| {
            let file = &run.matrices[&name];
            let data = MatrixData::for_site(
                &name,
                run.provenance.matrices.iter().find(|m| m.name == name),
                &file.records,
                cfg,
            );
            let figures = headline_figures(&data, cfg);
            IndexMatrix {
                forest: forest::render(&format!("forest-{name}"), &figures),
                figures,
                href: latest_matrix_href(&name),
                title: data.info.title.clone(),
                question: data.info.question.clone(),
                seed: data.info.seed.clone(),
                run: run_link(run),
                counts: model::counts(&file.records),
                kills: kills(&name, run),
                name,
            }
        })
        .collect();
    IndexPage {
        columns: other_machines.iter().map(Column::of).collect(),
        machine,
        other_machines,
        matrices,
        runs: runs.iter().rev().map(run_link).collect(),
        ci_method: CI_METHOD,
        ratio_method: RATIO_METHOD,
        precision_method: streamlab_record::stats::precision::PRECISION_METHOD,
        verdict_method: streamlab_record::stats::equivalence::VERDICT_METHOD,
    }
}

/// The latest durability run's kill -9 of the leader, per acks setting and client: the lab's own finding on the
/// first page (none for other matrices).
fn kills(matrix: &str, run: &Run) -> Vec<crate::site::durability::summary::FaultSummary> {
    if matrix != crate::site::durability::MATRIX {
        return Vec::new();
    }
    let page = crate::site::durability::page(run);
    page.map(|p| p.fault_summary.into_iter().filter(|f| f.fault.starts_with("kill")).collect()).unwrap_or_default()
}
