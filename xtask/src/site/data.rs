//! The site's data for programs, beside its pages: every machine's verdicts (`verdicts.json`), every run
//! (`runs.json`), each matrix's records (`data/<matrix>.csv`, one row per record and metric), an Atom feed of
//! verdict changes and regressions (`feed.xml`) and a badge (`badge.json`, shields.io's endpoint schema). Each is
//! written from the lab's own types; the tests read each back (the feed with a real feed parser).

use std::collections::BTreeMap;

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use crate::results::claims::machines::MachineVerdicts;
use crate::results::claims::{ClaimVerdict, Kind};
use crate::results::format;
use crate::results::load::Run;
use crate::results::model;

pub const VERDICTS_SCHEMA: &str = "streamlab.verdicts/1";
pub const RUNS_SCHEMA: &str = "streamlab.runs/1";
pub const VERDICTS_FILE: &str = "verdicts.json";
pub const RUNS_FILE: &str = "runs.json";
pub const BADGE_FILE: &str = "badge.json";
pub const FEED_FILE: &str = "feed.xml";

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

/// One row of `data/<matrix>.csv`: one metric of one record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CsvRow {
    pub run: String,
    pub machine: String,
    pub commit: String,
    pub arm: String,
    pub sweep: String,
    pub point: String,
    pub rep: u32,
    /// The block of its run the rep was measured in; empty in runs measured without blocks.
    pub block: Option<u32>,
    /// `sweep/label/rep` of the point whose task made this measurement where it is another point of the same
    /// configuration (the rows are that measurement again, not another); empty where this point's own task made it.
    pub measured_as: String,
    /// Measured while other work loaded the machine: the site sets these reps apart from its figures.
    pub foreign_load: bool,
    /// `ok`, `failed` or `not_run`.
    pub status: String,
    /// `verified`, `failed` or empty (not run).
    pub integrity: String,
    pub metric: String,
    pub value: f64,
    pub unit: String,
    pub higher_is_better: bool,
}

/// Each matrix's CSV, every run's records in run order (a record without metrics, not run or failed, gives one row
/// with no metric, so it is seen).
pub fn csv_files(runs: &[Run]) -> Result<BTreeMap<String, Vec<u8>>> {
    let mut writers: BTreeMap<String, csv::Writer<Vec<u8>>> = BTreeMap::new();
    for run in runs {
        let machine = run.provenance.machine_key();
        for (name, file) in &run.matrices {
            let w = writers.entry(name.clone()).or_insert_with(|| csv::Writer::from_writer(Vec::new()));
            for r in &file.records {
                let base = CsvRow {
                    run: run.id.clone(),
                    machine: machine.clone(),
                    commit: run.provenance.git.commit.clone(),
                    arm: r.arm.clone(),
                    sweep: r.variant.sweeps.first().cloned().unwrap_or_default(),
                    point: r.variant.label.clone(),
                    rep: r.rep,
                    block: r.block,
                    measured_as: r
                        .measured_as
                        .as_ref()
                        .map_or_else(String::new, |p| format!("{}/{}/{}", p.sweep, p.label, p.rep)),
                    foreign_load: r.conditions.as_ref().is_some_and(|c| c.foreign_load),
                    status: serde_json::to_value(r.status)?.as_str().unwrap_or_default().to_owned(),
                    integrity: serde_json::to_value(r.measurement.integrity.status)?
                        .as_str()
                        .unwrap_or_default()
                        .to_owned(),
                    metric: String::new(),
                    value: f64::NAN,
                    unit: String::new(),
                    higher_is_better: false,
                };
                if r.measurement.metrics.is_empty() {
                    w.serialize(&base)?;
                }
                for (metric, m) in &r.measurement.metrics {
                    w.serialize(CsvRow {
                        metric: metric.clone(),
                        value: m.value,
                        unit: m.unit.clone(),
                        higher_is_better: m.higher_is_better,
                        ..base.clone()
                    })?;
                }
            }
        }
    }
    writers
        .into_iter()
        .map(|(name, w)| Ok((format!("data/{name}.csv"), w.into_inner().context("writing a CSV")?)))
        .collect()
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
pub fn feed_entries(
    runs: &[Run],
    machines: &[MachineVerdicts],
    cfg: &crate::results::config::SiteConfig,
) -> Vec<(u64, FeedEntry)> {
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

fn verdict_changes(
    mine: &[&Run],
    m: &MachineVerdicts,
    href: &str,
    cfg: &crate::results::config::SiteConfig,
) -> Vec<(u64, FeedEntry)> {
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

fn regressions(mine: &[&Run], machine: &str, cfg: &crate::results::config::SiteConfig) -> Vec<(u64, FeedEntry)> {
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
    pub fn of(runs: &[Run], machines: &[MachineVerdicts], cfg: &crate::results::config::SiteConfig) -> FeedPage {
        let entries = feed_entries(runs, machines, cfg);
        let newest = entries.first().map(|(ts, _)| *ts).or(runs.iter().map(|r| r.provenance.started_ts_ms).max());
        FeedPage {
            updated: format::rfc3339(newest.unwrap_or(0)),
            entries: entries.into_iter().map(|(_, e)| e).collect(),
        }
    }
}

#[cfg(test)]
mod tests {
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

        let mut reader = csv::Reader::from_reader(file(&files, "data/kafka_sink.csv"));
        let rows: Vec<CsvRow> = reader.deserialize().collect::<Result<_, _>>().unwrap();
        let metrics: usize =
            runs.iter().flat_map(|r| &r.matrices["kafka_sink"].records).map(|r| r.measurement.metrics.len()).sum();
        assert_eq!(rows.len(), metrics, "one row per record and metric");
        let row = rows
            .iter()
            .find(|r| r.run == "r3" && r.arm == "framework" && r.rep == 1 && r.metric == "records_per_s")
            .unwrap();
        assert_eq!((row.value, row.status.as_str(), row.integrity.as_str()), (200.0, "ok", "verified"));

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
