//! Verdicts belong to a machine: the runs of one machine key are judged together and apart from every other
//! machine's, so a run on another machine (a hosted CI runner, a reader's box) adds its own verdicts and never
//! replaces these. Each machine's verdicts come with the lab's own comparisons beside the claims.

use serde::Serialize;

use super::aa::{self, AaRecord};
use super::blocks_vs_runs::{self, BlocksVsRuns};
use super::prior::Priors;
use super::{ClaimVerdict, Kind, verdicts};
use crate::results::declared::Claim;
use crate::results::load::Run;

/// One machine's verdicts.
#[derive(Debug, Clone, Serialize)]
pub struct MachineVerdicts {
    /// The machine key the runs share (`AMD EPYC (family 25, model 17), 2 logical cores, 24 GiB, virtual
    /// machine, native backend`).
    pub machine: String,
    /// A name for its page: the key with anything but letters and digits turned into `-`.
    pub slug: String,
    /// A few words for a column's head: `AMD EPYC (family 25, model 17), 2 cores, VM`.
    pub label: String,
    /// A shared CI runner, whose figures are its own and never the front page's.
    pub hosted: bool,
    /// Runs on this machine, and the dates of the first and the newest.
    pub runs: usize,
    pub first: String,
    pub newest: String,
    /// The seeds' claims, each judged once, at the seed's own point.
    pub claims: Vec<ClaimVerdict>,
    /// The lab's own comparisons at points the seed did not run (`beside` in site/claims.toml): figures, no verdict.
    pub beside: Vec<ClaimVerdict>,
    /// `30 claims: 2 reproduce · ...`.
    pub totals: String,
    /// Each point measured against itself across blocks, by the same rule: the false alarms the rule raises here.
    pub aa: AaRecord,
    /// Each claim's spread between blocks of one run beside the spread between its runs: whether blocks stand for runs.
    pub blocks_vs_runs: BlocksVsRuns,
}

/// Every machine's verdicts, the front page's first: the machine of the newest run that is not a shared CI runner and
/// whose key names its CPU model (after `cargo xtask lab run`, the reader's own machine; an older key without the model
/// leads only where no run has one), then the others by their runs and their newest, keys without a model and the
/// hosted runners last.
pub fn by_machine(runs: &[Run], claims: &[Claim]) -> Vec<MachineVerdicts> {
    struct Machine {
        key: String,
        hosted: bool,
        complete: bool,
        runs: usize,
        newest: u64,
    }
    let mut machines: Vec<Machine> = Vec::new();
    for run in runs {
        let (key, started) = (run.provenance.machine_key(), run.provenance.started_ts_ms);
        match machines.iter_mut().find(|m| m.key == key) {
            Some(m) => (m.runs, m.newest) = (m.runs + 1, m.newest.max(started)),
            None => machines.push(Machine {
                key,
                hosted: run.provenance.host.is_hosted_runner(),
                complete: run.provenance.host.key_is_complete(),
                runs: 1,
                newest: started,
            }),
        }
    }
    let lead = machines.iter().filter(|m| !m.hosted).max_by_key(|m| (m.complete, m.newest)).map(|m| m.key.clone());
    machines.sort_by_key(|m| {
        (Some(&m.key) != lead.as_ref(), m.hosted, !m.complete, std::cmp::Reverse(m.runs), std::cmp::Reverse(m.newest))
    });
    machines.into_iter().map(|m| on_machine(runs, claims, &m.key, m.hosted)).collect()
}

/// The verdicts over the runs of the machine `key` alone.
fn on_machine(runs: &[Run], all: &[Claim], key: &str, hosted: bool) -> MachineVerdicts {
    let claims = all;
    let mine: Vec<Run> = runs.iter().filter(|r| r.provenance.machine_key() == key).cloned().collect();
    // One judgement of every claim, seeds' and the lab's own alike: the machine's prior is fitted from all of them.
    let (seeds, lab): (Vec<ClaimVerdict>, Vec<ClaimVerdict>) =
        verdicts(&mine, claims).into_iter().partition(|v| !v.beside);
    let date = |run: Option<&Run>| run.map_or_else(String::new, |r| crate::clock::date_utc(r.provenance.started_ts_ms));
    let named = |mut vs: Vec<ClaimVerdict>| {
        // Every verdict names its machine, a claim this machine never ran included.
        vs.iter_mut().for_each(|v| v.machine = Some(key.to_owned()));
        vs
    };
    let claims = named(seeds);
    MachineVerdicts {
        machine: key.to_owned(),
        slug: slug(key),
        label: mine.first().map_or_else(|| key.to_owned(), |r| label(&r.provenance.host)),
        hosted,
        runs: mine.len(),
        first: date(mine.iter().min_by_key(|r| r.provenance.started_ts_ms)),
        newest: date(mine.iter().max_by_key(|r| r.provenance.started_ts_ms)),
        totals: totals(&claims),
        claims,
        beside: named(lab),
        aa: aa::record(&mine, all, &Priors::fit(&mine, all).of(key)),
        blocks_vs_runs: blocks_vs_runs::table(&mine, all),
    }
}

/// A machine in a few words: `AMD EPYC (family 25, model 17), 2 cores, VM`, `Intel Xeon Processor, 2 cores`,
/// `GitHub-hosted runner, 4 vCPU`.
fn label(h: &streamlab_record::provenance::Host) -> String {
    if h.is_hosted_runner() {
        return format!("GitHub-hosted runner, {} vCPU", h.logical_cores);
    }
    let model = h.cpu_model.as_ref().map_or_else(String::new, |m| format!(" ({m})"));
    let vm = if h.virtualization.as_deref() == Some("virtual machine") { ", VM" } else { "" };
    let brand = h.cpu_brand.replace("(R)", "").replace("(TM)", "");
    format!("{}{model}, {} cores{vm}", brand.split_whitespace().collect::<Vec<_>>().join(" "), h.logical_cores)
}

/// `amd-epyc-family-25-model-17-2-logical-cores-24-gib-virtual-machine-native-backend`.
fn slug(key: &str) -> String {
    let dashed: String =
        key.chars().map(|c| if c.is_ascii_alphanumeric() { c.to_ascii_lowercase() } else { '-' }).collect();
    dashed.split('-').filter(|w| !w.is_empty()).collect::<Vec<_>>().join("-")
}

/// `30 claims: 2 reproduce · 15 do not reproduce · 6 cannot tell here · 7 not run` (and those without a verdict,
/// when there are any). Each published claim once: the lab's own comparisons are not counted.
pub fn totals(claims: &[ClaimVerdict]) -> String {
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
    use crate::results::declared::builtin;
    use crate::results::fixtures;
    use crate::results::load::load_results;

    #[test]
    fn the_totals_line_counts_every_verdict_and_names_no_verdict_only_when_there_is_one() {
        let mut verdicts = verdicts(&[], &builtin().unwrap());
        let n = verdicts.len();
        assert_eq!(
            totals(&verdicts),
            format!("{n} claims: 0 reproduce · 0 do not reproduce · 0 cannot tell here · {n} not run")
        );
        verdicts[0].verdict = Kind::Reproduces;
        verdicts[1].verdict = Kind::NoVerdict;
        let line = totals(&verdicts);
        assert!(line.contains("1 reproduce · ") && line.ends_with(" · 1 without a verdict"), "{line}");
    }

    /// Runs of raw and framework at kafka_sink's mode sweep on the machines `cpus` (brand, model, runner; one run
    /// each, oldest first).
    fn runs_on(cpus: &[(&str, Option<&str>, Option<&str>)]) -> (tempfile::TempDir, Vec<Run>) {
        let dir = tempfile::tempdir().unwrap();
        for (i, (cpu, model, runner)) in cpus.iter().enumerate() {
            let id = format!("r{}", i + 1);
            let records: Vec<_> = (1..=3)
                .flat_map(|rep| {
                    [
                        fixtures::record(&id, "raw", "raw rdkafka", &["mode"], true, rep, 1000.0),
                        fixtures::record(&id, "framework", "framework path", &["mode"], false, rep, 500.0),
                    ]
                })
                .collect();
            fixtures::write_run(dir.path(), &id, 1_000 + i as u64, &records);
            let path = dir.path().join(&id).join("provenance.json");
            let mut p: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
            p["host"]["cpu_brand"] = serde_json::json!(cpu);
            p["host"]["cpu_model"] = serde_json::json!(model);
            p["host"]["kernel"] = serde_json::json!(format!("6.1.{i}"));
            if let Some(runner) = runner {
                p["host"]["runner"] = serde_json::json!(runner);
            }
            std::fs::write(&path, serde_json::to_string(&p).unwrap()).unwrap();
        }
        let runs = load_results(dir.path()).unwrap();
        (dir, runs)
    }

    #[test]
    fn each_machine_is_judged_on_its_own_runs_and_a_hosted_runner_never_comes_first() {
        // Two hosted runs a week apart: another image version, another kernel, the same machine.
        let (week1, week2) = (
            "GitHub Actions github-hosted runner (ubuntu24 20261123.1, X64)",
            "GitHub Actions github-hosted runner (ubuntu24 20261130.2, X64)",
        );
        let (_dir, runs) = runs_on(&[
            ("Xeon", None, None),
            ("EPYC", None, None),
            ("EPYC", None, None),
            ("Xeon", None, Some(week1)),
            ("Xeon", None, Some(week2)),
        ]);
        let machines = by_machine(&runs, &builtin().unwrap());
        let found: Vec<(&str, usize, bool)> = machines.iter().map(|m| (m.machine.as_str(), m.runs, m.hosted)).collect();
        // Two kernels of the EPYC pool, the machine with the most runs first; the hosted runner's two runs (two
        // image versions) pool too, and come last although they are the newest.
        assert_eq!(found.len(), 3, "{found:?}");
        assert!(
            found[0].0.starts_with("EPYC (CPU model not recorded), ") && found[0].1 == 2 && !found[0].2,
            "{found:?}"
        );
        assert!(found[1].0.starts_with("Xeon (CPU model not recorded), ") && found[1].1 == 1, "{found:?}");
        assert!(found[2].0.starts_with("GitHub-hosted runner (") && found[2].1 == 2 && found[2].2, "{found:?}");
        let framework = |m: &MachineVerdicts| {
            m.claims.iter().find(|c| c.id == "000-framework-over-raw").map(|c| c.runs.clone()).unwrap()
        };
        assert_eq!(framework(&machines[0]), ["r2", "r3"]);
        assert_eq!(framework(&machines[2]), ["r4", "r5"]);
        // Each published claim is counted once; the lab's own comparisons stand apart.
        assert!(machines[0].claims.iter().all(|c| !c.id.ends_with("-produce")), "the one-connection ones are beside");
        assert!(machines[0].beside.iter().any(|c| c.id == "003-plain-produce"));
        assert!(machines[0].totals.starts_with(&format!("{} claims: ", machines[0].claims.len())));
        assert!(machines[0].slug.chars().all(|c| c.is_ascii_alphanumeric() || c == '-'), "{}", machines[0].slug);
    }

    #[test]
    fn the_newest_run_that_names_its_cpu_model_leads_and_a_key_without_one_never_does() {
        let (old, new) = (Some("family 25, model 17"), Some("family 25, model 1"));
        let (_dir, runs) = runs_on(&[
            ("EPYC", None, None),
            ("EPYC", None, None),
            ("EPYC", old, None),
            ("EPYC", new, None),
            ("EPYC", None, None),
            ("Xeon", None, Some("GitHub Actions github-hosted runner (ubuntu24 20261130.2, X64)")),
        ]);
        let machines = by_machine(&runs, &builtin().unwrap());
        let order: Vec<(&str, usize)> = machines.iter().map(|m| (m.machine.as_str(), m.runs)).collect();
        // The reader's run (model 1, one run) leads though the unrecorded key has three runs and the newest of all.
        assert!(order[0].0.starts_with("EPYC (family 25, model 1), ") && order[0].1 == 1, "{order:?}");
        assert!(order[1].0.starts_with("EPYC (family 25, model 17), "), "{order:?}");
        assert!(order[2].0.starts_with("EPYC (CPU model not recorded), ") && order[2].1 == 3, "{order:?}");
        assert!(order[3].0.starts_with("GitHub-hosted runner"), "{order:?}");
        // Where no run names its model, the newest that is not a hosted runner leads.
        let (_dir, unrecorded) = runs_on(&[("Xeon", None, None), ("Xeon", None, None), ("EPYC", None, None)]);
        assert!(by_machine(&unrecorded, &builtin().unwrap())[0].machine.starts_with("EPYC (CPU model not recorded)"));
    }
}
