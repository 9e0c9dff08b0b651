//! `feed.xml`: an Atom feed of verdict changes and regressions, newest first, each entry linking its page.

use serde::Serialize;

use crate::results::claims::machines::MachineVerdicts;
use crate::results::claims::{ClaimVerdict, Kind};
use crate::results::config::SiteConfig;
use crate::results::format;
use crate::results::load::Run;

/// One entry of the feed: a verdict that changed, or a regression against the machine's previous run.
#[derive(Debug, Clone, Serialize)]
pub struct FeedEntry {
    pub id: String,
    pub title: String,
    /// RFC 3339: the run's start.
    pub updated: String,
    pub summary: String,
    /// Relative to the site's root.
    pub href: String,
}

/// Points worse by more than this percent (and significantly so) are regressions, as the lab workflow's merge says.
pub const REGRESSION_PCT: f64 = 10.0;

/// The feed's entries, newest first: on each machine, every claim whose verdict a run changed (judged over the
/// machine's runs up to it against those before it), and every point a run measured significantly worse than the
/// machine's previous run with that matrix.
pub fn feed_entries(runs: &[Run], machines: &[MachineVerdicts], cfg: &SiteConfig) -> Vec<(u64, FeedEntry)> {
    let mut entries = Vec::new();
    for (i, m) in machines.iter().enumerate() {
        let mut mine: Vec<&Run> = runs.iter().filter(|r| r.provenance.machine_key() == m.machine).collect();
        mine.sort_by_key(|r| r.provenance.started_ts_ms);
        let href = if i == 0 { "index.html".to_owned() } else { format!("machines/{}.html", m.slug) };
        entries.extend(verdict_changes(&mine, m, &href, cfg));
        entries.extend(regressions(&mine, &m.machine, cfg));
    }
    entries.sort_by(|(a, x), (b, y)| b.cmp(a).then_with(|| x.id.cmp(&y.id)));
    entries
}

fn verdict_changes(mine: &[&Run], m: &MachineVerdicts, href: &str, cfg: &SiteConfig) -> Vec<(u64, FeedEntry)> {
    let seeds: Vec<_> = cfg.claims.iter().filter(|c| !c.beside).cloned().collect();
    let mut before: Vec<ClaimVerdict> = Vec::new();
    let mut out = Vec::new();
    // The machine's runs up to each one in turn: each run is copied in once, as its turn comes.
    let mut upto: Vec<Run> = Vec::with_capacity(mine.len());
    for &run in mine {
        upto.push(run.clone());
        let now = crate::results::claims::verdicts(&upto, &seeds);
        for v in &now {
            let was = before.iter().find(|b| b.id == v.id).map_or(Kind::NotRun, |b| b.verdict);
            if was == v.verdict {
                continue;
            }
            out.push((
                run.provenance.started_ts_ms,
                FeedEntry {
                    id: format!("tag:streamlab,2026:verdict/{}/{}/{}", m.slug, v.id, run.id),
                    title: format!("{}: {} → {} on {}", v.short, was.text(), v.verdict.text(), m.machine),
                    updated: format::rfc3339(run.provenance.started_ts_ms),
                    summary: v.why.clone(),
                    href: format!("{href}#claim-{}", v.id),
                },
            ));
        }
        before = now;
    }
    out
}

fn regressions(mine: &[&Run], machine: &str, cfg: &SiteConfig) -> Vec<(u64, FeedEntry)> {
    let mut out = Vec::new();
    for (k, run) in mine.iter().enumerate() {
        for matrix in run.matrices.keys() {
            let Some(earlier) = mine[..k].iter().rev().find(|r| r.matrices.contains_key(matrix)) else { continue };
            let Some(metric) = cfg.headline(matrix).and_then(|h| h.metric.clone()) else { continue };
            let rows: Vec<_> = crate::results::compare::compare(earlier, run, &metric)
                .into_iter()
                .filter(|r| &r.matrix == matrix)
                .collect();
            for worse in crate::results::compare::regressions(&rows, REGRESSION_PCT) {
                out.push((
                    run.provenance.started_ts_ms,
                    FeedEntry {
                        id: format!("tag:streamlab,2026:regression/{}/{}", run.id, worse.replace(' ', "_")),
                        title: format!("{worse} in run {} against {} on {machine}", run.id, earlier.id),
                        updated: format::rfc3339(run.provenance.started_ts_ms),
                        summary: format!(
                            "cargo xtask lab compare {} {}: {worse}, significantly (Mann-Whitney) and by more than \
                             {REGRESSION_PCT}%",
                            earlier.id, run.id
                        ),
                        href: crate::site::pages::run_href(&run.id),
                    },
                ));
            }
        }
    }
    out
}

/// The feed as the template renders it.
#[derive(Debug, Clone, Serialize)]
pub struct FeedPage {
    /// The newest entry's time, or the newest run's start (RFC 3339).
    pub updated: String,
    pub entries: Vec<FeedEntry>,
}

impl FeedPage {
    pub fn of(runs: &[Run], machines: &[MachineVerdicts], cfg: &SiteConfig) -> FeedPage {
        let entries = feed_entries(runs, machines, cfg);
        let newest = entries.first().map(|(ts, _)| *ts).or(runs.iter().map(|r| r.provenance.started_ts_ms).max());
        FeedPage {
            updated: format::rfc3339(newest.unwrap_or(0)),
            entries: entries.into_iter().map(|(_, e)| e).collect(),
        }
    }
}
