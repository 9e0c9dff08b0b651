//! The index: every matrix's latest headline figures and the list of runs.

use serde::Serialize;
use streamlab_record::stats::{CI_METHOD, RATIO_METHOD};

use super::{RunLink, latest_matrix_href, latest_runs, run_link};
use crate::results::claims::{self, ClaimVerdict};
use crate::results::config::SiteConfig;
use crate::results::headline::{Figure, headline_figures};
use crate::results::load::Run;
use crate::results::model::{self, Counts, MatrixData};
use crate::site::forest;

#[derive(Debug, Clone, Serialize)]
pub struct IndexPage {
    /// The first screen: one line of totals, then every seed's headline claim with its verdict.
    pub totals: String,
    pub claims: Vec<ClaimVerdict>,
    pub matrices: Vec<IndexMatrix>,
    pub runs: Vec<RunLink>,
    pub ci_method: &'static str,
    pub ratio_method: &'static str,
    pub precision_method: &'static str,
    /// The verdict rule as the code applies it.
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
}

pub fn index_page(runs: &[Run], cfg: &SiteConfig) -> IndexPage {
    let matrices = latest_runs(runs)
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
                name,
            }
        })
        .collect();
    let claims = claims::verdicts(runs, &cfg.claims);
    IndexPage {
        totals: totals(&claims),
        claims,
        matrices,
        runs: runs.iter().rev().map(run_link).collect(),
        ci_method: CI_METHOD,
        ratio_method: RATIO_METHOD,
        precision_method: streamlab_record::stats::precision::PRECISION_METHOD,
        verdict_method: streamlab_record::stats::equivalence::VERDICT_METHOD,
    }
}

/// `30 claims: 2 reproduce · 15 do not reproduce · 6 cannot tell here · 7 not run` (and those without a verdict,
/// when there are any).
fn totals(claims: &[ClaimVerdict]) -> String {
    use claims::Kind;
    let count = |k: Kind| claims.iter().filter(|c| c.verdict == k).count();
    let named = [
        (Kind::Reproduces, "reproduce"),
        (Kind::DoesNotReproduce, "do not reproduce"),
        (Kind::CannotTell, "cannot tell here"),
        (Kind::NotRun, "not run"),
    ];
    let mut parts: Vec<String> = named.iter().map(|(k, name)| format!("{} {name}", count(*k))).collect();
    if count(Kind::NoVerdict) > 0 {
        parts.push(format!("{} without a verdict", count(Kind::NoVerdict)));
    }
    format!("{} claims: {}", claims.len(), parts.join(" · "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_totals_line_counts_every_verdict_and_names_no_verdict_only_when_there_is_one() {
        let mut verdicts = claims::verdicts(&[], &claims::declared::builtin().unwrap());
        let n = verdicts.len();
        assert_eq!(
            totals(&verdicts),
            format!("{n} claims: 0 reproduce · 0 do not reproduce · 0 cannot tell here · {n} not run")
        );
        verdicts[0].verdict = claims::Kind::Reproduces;
        verdicts[1].verdict = claims::Kind::NoVerdict;
        let line = totals(&verdicts);
        assert!(line.contains("1 reproduce · ") && line.ends_with(" · 1 without a verdict"), "{line}");
    }
}
