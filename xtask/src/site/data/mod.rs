//! The site's data for programs, beside its pages: every machine's verdicts (`verdicts.json`), every run
//! (`runs.json`), a badge (`badge.json`, shields.io's endpoint schema), each matrix's records (`data/<matrix>.csv`,
//! [`matrix_csv`]), each run's figures in Bencher's metric format (`runs/<id>/bmf.json`, [`bmf`]) and an Atom feed of
//! verdict changes and regressions (`feed.xml`, [`feed`]). Each JSON file and the CSV's columns have a JSON Schema
//! published beside them ([`SCHEMAS`], from site/schema/); `cargo xtask site check` validates every built file
//! against it with a validator of its own (site/check/contract.mjs).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::results::claims::machines::MachineVerdicts;
use crate::results::claims::{ClaimVerdict, Kind};
use crate::results::format;
use crate::results::load::Run;
use crate::results::model;

pub mod bmf;
pub mod feed;
pub mod matrix_csv;

pub use feed::FeedPage;
pub use matrix_csv::csv_files;

pub const VERDICTS_SCHEMA: &str = "streamlab.verdicts/1";
pub const RUNS_SCHEMA: &str = "streamlab.runs/1";
pub const VERDICTS_FILE: &str = "verdicts.json";
pub const RUNS_FILE: &str = "runs.json";
pub const BADGE_FILE: &str = "badge.json";
pub const FEED_FILE: &str = "feed.xml";

/// The schemas the site publishes, each beside the files it describes: site path -> text.
pub const SCHEMAS: &[(&str, &str)] = &[
    ("verdicts.schema.json", include_str!("../../../../site/schema/verdicts.schema.json")),
    ("runs.schema.json", include_str!("../../../../site/schema/runs.schema.json")),
    ("badge.schema.json", include_str!("../../../../site/schema/badge.schema.json")),
    ("data/csv.schema.json", include_str!("../../../../site/schema/csv.schema.json")),
];

/// `verdicts.json`: every machine's verdicts, the front page's machine first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VerdictsFile {
    pub schema: String,
    pub machines: Vec<MachineEntry>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MachineEntry {
    /// The machine key every verdict of this entry pools runs of.
    pub machine: String,
    /// A shared CI runner.
    pub hosted: bool,
    pub runs: usize,
    /// Dates (UTC) of its first and newest run.
    pub first: String,
    pub newest: String,
    pub totals: String,
    /// The seeds' claims, each once.
    pub claims: Vec<VerdictEntry>,
    /// The lab's own comparisons beside them (no verdict on the seed).
    pub beside: Vec<VerdictEntry>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VerdictEntry {
    pub id: String,
    pub seed: String,
    pub short: String,
    pub matrix: String,
    /// `reproduces`, `does_not_reproduce`, `cannot_tell`, `not_run` or `no_verdict`.
    pub verdict: Kind,
    /// Each part's verdict (`direction holds; size not claimed`).
    pub parts: String,
    /// What kept this machine from showing the claim, if anything did.
    pub host_limit: Option<String>,
    /// The published ratio; none for a comparison of the lab's own that has none.
    pub published: Option<f64>,
    /// Our geometric mean and its 95% interval.
    pub estimate: Option<f64>,
    pub interval: Option<[f64; 2]>,
    /// The runs it pools, oldest first, and the rep pairs they gave.
    pub runs: Vec<String>,
    pub pairs: usize,
    /// Records per CPU-second of the two sides.
    pub per_cpu: Option<String>,
}

impl VerdictEntry {
    fn of(v: &ClaimVerdict) -> VerdictEntry {
        VerdictEntry {
            id: v.id.clone(),
            seed: v.seed.clone(),
            short: v.short.clone(),
            matrix: v.matrix.clone(),
            verdict: v.verdict,
            parts: v.parts_text.clone(),
            host_limit: v.host_limit.clone(),
            published: (v.published > 0.0).then_some(v.published),
            estimate: v.estimate,
            interval: v.interval_bounds,
            runs: v.runs.clone(),
            pairs: v.pairs,
            per_cpu: v.per_cpu.clone(),
        }
    }
}

impl VerdictsFile {
    pub fn of(machines: &[MachineVerdicts]) -> VerdictsFile {
        let machines = machines
            .iter()
            .map(|m| MachineEntry {
                machine: m.machine.clone(),
                hosted: m.hosted,
                runs: m.runs,
                first: m.first.clone(),
                newest: m.newest.clone(),
                totals: m.totals.clone(),
                claims: m.claims.iter().map(VerdictEntry::of).collect(),
                beside: m.beside.iter().map(VerdictEntry::of).collect(),
            })
            .collect();
        VerdictsFile { schema: VERDICTS_SCHEMA.into(), machines }
    }
}

/// `runs.json`: every run, oldest first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunsFile {
    pub schema: String,
    pub runs: Vec<RunEntry>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunEntry {
    pub id: String,
    /// RFC 3339, UTC.
    pub started: String,
    pub commit: String,
    pub dirty: bool,
    pub machine: String,
    /// Recorded beside the machine key, not part of it.
    pub kernel: String,
    pub profile: String,
    pub backend: String,
    /// Each matrix's record counts.
    pub matrices: BTreeMap<String, MatrixCounts>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MatrixCounts {
    pub records: usize,
    pub verified: usize,
    pub withdrawn: usize,
    pub failed: usize,
    pub not_run: usize,
}

impl RunsFile {
    pub fn of(runs: &[Run]) -> RunsFile {
        let runs = runs
            .iter()
            .map(|r| {
                let p = &r.provenance;
                let matrices = r
                    .matrices
                    .iter()
                    .map(|(name, file)| {
                        let c = model::counts(&file.records);
                        let counts = MatrixCounts {
                            records: c.records,
                            verified: c.verified,
                            withdrawn: c.withdrawn,
                            failed: c.failed,
                            not_run: c.not_run,
                        };
                        (name.clone(), counts)
                    })
                    .collect();
                RunEntry {
                    id: r.id.clone(),
                    started: format::rfc3339(p.started_ts_ms),
                    commit: p.git.commit.clone(),
                    dirty: p.git.dirty,
                    machine: p.machine_key(),
                    kernel: p.host.kernel.clone(),
                    profile: p.profile.clone(),
                    backend: p.env.backend.clone(),
                    matrices,
                }
            })
            .collect();
        RunsFile { schema: RUNS_SCHEMA.into(), runs }
    }
}

/// `badge.json`: shields.io's endpoint schema, the front page machine's tally.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Badge {
    pub schema_version: u32,
    pub label: String,
    pub message: String,
    pub color: String,
}

impl Badge {
    pub fn of(machine: Option<&MachineVerdicts>) -> Badge {
        let Some(m) = machine else {
            return Badge {
                schema_version: 1,
                label: "claims".into(),
                message: "no runs".into(),
                color: "lightgrey".into(),
            };
        };
        let count = |k: Kind| m.claims.iter().filter(|c| c.verdict == k).count();
        let (yes, no, cannot) = (count(Kind::Reproduces), count(Kind::DoesNotReproduce), count(Kind::CannotTell));
        let color = if no > 0 {
            "orange"
        } else if yes > 0 {
            "green"
        } else {
            "blue"
        };
        Badge {
            schema_version: 1,
            label: "seed claims".into(),
            message: format!("{yes} reproduce · {no} do not · {cannot} cannot tell"),
            color: color.into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::matrix_csv::CsvRow;
    use super::*;
    use crate::results::claims::machines::by_machine;
    use crate::results::declared::builtin;
    use crate::results::fixtures;
    use crate::results::load::load_results;

    /// Three runs of raw and framework at the mode sweep, the framework at these fractions of raw's 1000/s.
    fn results(fractions: &[&[f64]]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for (i, run) in fractions.iter().enumerate() {
            let id = format!("r{}", i + 1);
            let records: Vec<_> = (1..)
                .zip(run.iter())
                .flat_map(|(rep, f)| {
                    [
                        fixtures::record(&id, "raw", "raw rdkafka", &["mode"], true, rep, 1000.0),
                        fixtures::record(&id, "framework", "framework path", &["mode"], false, rep, 1000.0 * f),
                    ]
                })
                .collect();
            fixtures::write_run(dir.path(), &id, 1_000_000 * (i as u64 + 1), &records);
        }
        dir
    }

    fn file<'a>(files: &'a crate::site::render::SiteFiles, path: &str) -> &'a [u8] {
        files.get(path).unwrap_or_else(|| panic!("the site has no {path}"))
    }

    #[test]
    fn verdicts_runs_csv_feed_and_badge_read_back_as_the_lab_wrote_them() {
        let near: &[f64] = &[0.50, 0.51, 0.49];
        let far: &[f64] = &[0.20, 0.21, 0.19];
        let dir = results(&[near, near, far]);
        let files =
            crate::site::build_site(dir.path(), &crate::results::config::SiteConfig::builtin().unwrap()).unwrap();
        let runs = load_results(dir.path()).unwrap();
        let machines = by_machine(&runs, &builtin().unwrap());

        let verdicts: VerdictsFile = serde_json::from_slice(file(&files, VERDICTS_FILE)).unwrap();
        assert_eq!(verdicts, VerdictsFile::of(&machines), "verdicts.json round-trips through the lab's types");
        assert_eq!(verdicts.schema, VERDICTS_SCHEMA);
        let m = &verdicts.machines[0];
        assert_eq!((m.runs, m.claims.iter().any(|c| c.id == "000-framework-over-raw")), (3, true));
        assert!(m.beside.iter().all(|b| !m.claims.iter().any(|c| c.id == b.id)), "each claim once");

        let listed: RunsFile = serde_json::from_slice(file(&files, RUNS_FILE)).unwrap();
        assert_eq!(listed, RunsFile::of(&runs));
        assert_eq!(listed.runs.iter().map(|r| r.id.as_str()).collect::<Vec<_>>(), ["r1", "r2", "r3"]);
        let r1 = &listed.runs[0];
        assert_eq!((r1.matrices["kafka_sink"].records, r1.matrices["kafka_sink"].verified), (6, 6));
        assert!(!r1.machine.contains(&r1.kernel), "the kernel is recorded beside the machine key, not in it");
        assert!(r1.started.ends_with('Z') && r1.started.contains('T'), "{}", r1.started);

        let mut reader = ::csv::Reader::from_reader(file(&files, "data/kafka_sink.csv"));
        let rows: Vec<CsvRow> = reader.deserialize().collect::<Result<_, _>>().unwrap();
        let metrics: usize =
            runs.iter().flat_map(|r| &r.matrices["kafka_sink"].records).map(|r| r.measurement.metrics.len()).sum();
        assert_eq!(rows.len(), metrics, "one row per record and metric (each record in one sweep here)");
        let row = rows
            .iter()
            .find(|r| r.run == "r3" && r.arm == "framework" && r.rep == 1 && r.metric == "records_per_s")
            .unwrap();
        assert_eq!((row.value, row.status.as_str(), row.integrity.as_str()), (Some(200.0), "ok", "verified"));

        let feed = feed_rs::parser::parse(file(&files, FEED_FILE)).expect("an Atom feed a feed parser reads");
        let titles: Vec<String> =
            feed.entries.iter().filter_map(|e| e.title.as_ref().map(|t| t.content.clone())).collect();
        assert!(
            titles.iter().any(|t| t.contains("not run → cannot tell here")),
            "a verdict's first judgement: {titles:?}"
        );
        assert!(
            titles.iter().any(|t| t.starts_with("kafka_sink framework [") && t.contains("worse in run r3 against r2")),
            "the framework's drop in r3 is a regression: {titles:?}"
        );
        assert!(feed.entries.iter().all(|e| e.links.iter().any(|l| !l.href.is_empty())), "every entry links its page");

        let badge: Badge = serde_json::from_slice(file(&files, BADGE_FILE)).unwrap();
        assert_eq!(badge, Badge::of(machines.first()));
        assert_eq!(badge.schema_version, 1);
        assert!(
            badge.message.contains(" reproduce · ") && badge.message.ends_with(" cannot tell"),
            "{}",
            badge.message
        );
    }
}
