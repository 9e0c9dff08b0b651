//! What each page shows, as plain data for the templates. Links are relative to the site root; the
//! templates prefix them with `root` so the same view renders at any depth (and works from file://).
//!
//! One module per page kind (`index`, `matrix`, `run`, `history`); `table` builds the data tables' rows the
//! matrix pages share; this file holds the environment every page shows; the links and footer they share are `site::links`.

mod charts;
mod history;
mod index;
mod latency;
mod matrix;
mod run;
mod table;
mod versions;

use std::collections::BTreeMap;

use crate::provenance::Provenance;
use crate::results::format;
use crate::results::load::Run;

pub use history::history_page;
pub use index::{MachinePage, index_page};
pub use matrix::matrix_page;
pub use run::run_page;

pub(crate) use crate::site::links::{
    KeyValue, RunLink, footer, kv, latest_matrix_href, run_bmf_href, run_href, run_link, run_matrix_href, short_commit,
};

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

/// The run each matrix page, the front page's figures and the durability page show, by matrix name: a run of the
/// `lead` machine (the front page's, whose verdicts it shows), the newest that ran the whole matrix as defined, else
/// its newest; for a matrix that machine never ran, another machine's the same way, never a shared CI runner's or a
/// quick run's of another machine.
pub fn latest_runs<'r>(runs: &'r [Run], lead: Option<&str>) -> BTreeMap<String, &'r Run> {
    let mine = |run: &Run| lead.is_some_and(|key| run.provenance.machine_key() == key);
    let quick = |run: &Run| run.provenance.profile == "quick";
    let shown = |run: &Run| mine(run) || !(run.provenance.host.is_hosted_runner() || quick(run));
    let rank = |run: &Run| (mine(run), !quick(run), !run.is_partial());
    let mut out: BTreeMap<String, &Run> = BTreeMap::new();
    // Runs are sorted oldest first, so a later run replaces the one held unless the one held ranks higher: the lead
    // machine's over another's, then one not at the quick profile (the tests') over a quick one, then one that ran
    // all of the matrix as defined over one limited with --arm, --point or a budget, or with knobs changed by --set.
    for run in runs.iter().filter(|r| shown(r)) {
        for name in run.matrices.keys() {
            if out.get(name).is_none_or(|held| rank(run) >= rank(held)) {
                out.insert(name.clone(), run);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::fixtures;
    use std::path::Path;

    use crate::results::load::load_results;

    /// A run.json as `lab run` writes it, limited to `points` and with `sets` when there are any.
    fn write_spec(run: &Path, points: &[&str], sets: &[&str]) {
        let spec = serde_json::json!({"schema": 2, "matrices": ["kafka_sink"], "profile": "standard", "env": "native",
            "bootstrap": null, "mysql_dsn": null, "reps": null, "arms": [], "points": points, "sets": sets});
        std::fs::write(run.join("run.json"), spec.to_string()).unwrap();
    }

    fn page_run(results: &Path) -> String {
        let runs = load_results(results).unwrap();
        latest_runs(&runs, None)["kafka_sink"].id.clone()
    }

    #[test]
    fn a_matrix_page_shows_the_newest_whole_run_and_a_subset_run_only_when_there_is_no_whole_one() {
        let dir = tempfile::tempdir().unwrap();
        let write = |id: &str, ts: u64, points: &[&str], sets: &[&str]| {
            let run = fixtures::write_run(dir.path(), id, ts, &fixtures::kafka_sink_records(id));
            write_spec(&run, points, sets);
        };
        write("a-subset", 1_000, &["shards=1"], &[]);
        assert_eq!(page_run(dir.path()), "a-subset", "no whole run yet");
        write("b-whole", 2_000, &[], &[]);
        write("c-subset", 3_000, &["shards=2"], &[]);
        assert_eq!(page_run(dir.path()), "b-whole", "a newer --point run does not replace a whole one");
        write("d-set", 4_000, &[], &["timeout_s=60"]);
        assert_eq!(page_run(dir.path()), "b-whole", "nor does a run with knobs changed by --set");
        let budgeted = fixtures::write_run(dir.path(), "e-budget", 4_500, &fixtures::kafka_sink_records("e-budget"));
        let spec = serde_json::json!({"schema": 2, "matrices": [], "profile": "standard", "env": "native",
            "bootstrap": null, "mysql_dsn": null, "reps": null, "budget_s": 2700});
        std::fs::write(budgeted.join("run.json"), spec.to_string()).unwrap();
        assert_eq!(page_run(dir.path()), "b-whole", "nor a budgeted run, which ran only the claims' points");
        write("f-whole", 5_000, &[], &[]);
        assert_eq!(page_run(dir.path()), "f-whole");
    }

    #[test]
    fn the_pages_show_the_front_page_machines_run_and_no_other_machines_quick_or_hosted_one() {
        let dir = tempfile::tempdir().unwrap();
        // Rewrite a written run's provenance as another machine's: `edit` changes it.
        let write = |id: &str, ts: u64, edit: &dyn Fn(&mut crate::provenance::Provenance)| {
            let run = fixtures::write_run(dir.path(), id, ts, &fixtures::kafka_sink_records(id));
            let mut p = fixtures::provenance(id, ts);
            edit(&mut p);
            std::fs::write(run.join(crate::provenance::PROVENANCE_FILE), serde_json::to_string(&p).unwrap()).unwrap();
            run
        };
        let xeon = |p: &mut crate::provenance::Provenance| {
            (p.host.cpu_brand, p.host.cpu_model) = ("Intel Xeon".into(), Some("family 6, model 167".into()));
        };
        let budgeted = write("a-mine-budgeted", 1_000, &xeon);
        let spec = serde_json::json!({"schema": 2, "matrices": [], "profile": "standard", "env": "native",
            "bootstrap": null, "mysql_dsn": null, "reps": null, "budget_s": 2700});
        std::fs::write(budgeted.join("run.json"), spec.to_string()).unwrap();
        write("b-other-whole", 2_000, &|_| {});
        write("c-other-quick", 3_000, &|p| p.profile = "quick".into());
        write("d-hosted", 4_000, &|p| {
            p.host.runner = Some(format!("{} 2", streamlab_record::provenance::HOSTED_RUNNER))
        });
        let runs = load_results(dir.path()).unwrap();
        let mine = runs[0].provenance.machine_key();
        assert_eq!(
            latest_runs(&runs, Some(&mine))["kafka_sink"].id,
            "a-mine-budgeted",
            "the lead machine's, partial too"
        );
        let other = runs[1].provenance.machine_key();
        assert_eq!(latest_runs(&runs, Some(&other))["kafka_sink"].id, "b-other-whole", "its quick run never leads");
        assert_eq!(
            latest_runs(&runs, Some("a machine with no run"))["kafka_sink"].id,
            "b-other-whole",
            "where the lead never ran the matrix, another machine's, never a quick or a hosted run"
        );
    }
}
