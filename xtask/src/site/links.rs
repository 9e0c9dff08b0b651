//! The pieces every page links with: a run's link, the hrefs of its pages, a key and its value, the footer under
//! each chart. Links are relative to the site root (the templates prefix them with `root`).

use serde::Serialize;

use crate::provenance::Provenance;
use crate::results::format;
use crate::results::load::Run;

#[derive(Debug, Clone, Serialize)]
pub struct KeyValue {
    pub key: String,
    pub value: String,
}

pub(crate) fn kv(key: &str, value: impl Into<String>) -> KeyValue {
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

pub(crate) fn run_link(run: &Run) -> RunLink {
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

/// A run's medians in Bencher's metric format, beside its page.
pub fn run_bmf_href(id: &str) -> String {
    format!("runs/{id}/bmf.json")
}

pub fn run_matrix_href(id: &str, matrix: &str) -> String {
    format!("runs/{id}/{matrix}.html")
}

pub fn latest_matrix_href(matrix: &str) -> String {
    format!("matrix/{matrix}.html")
}

pub(crate) fn short_commit(c: &str) -> String {
    c.chars().take(10).collect()
}

/// `cpu · commit · date`, under every chart.
pub(crate) fn footer(p: &Provenance) -> String {
    let dirty = if p.git.dirty { " (dirty)" } else { "" };
    format!(
        "{} · commit {}{dirty} · {}",
        p.host.cpu_brand,
        short_commit(&p.git.commit),
        crate::clock::date_utc(p.started_ts_ms)
    )
}
