//! One page per run: provenance and the command that reproduces it.

use serde::Serialize;
use streamlab_record::Record;

use super::{KeyValue, RunLink, environment, kv, run_link, run_matrix_href};
use crate::results::format;
use crate::results::load::Run;
use crate::results::model::{self, Counts};

#[derive(Debug, Clone, Serialize)]
pub struct RunPage {
    pub run: RunLink,
    pub started: String,
    pub finished: Option<String>,
    pub duration: Option<String>,
    pub reproduce: String,
    pub host: Vec<KeyValue>,
    pub environment: Vec<KeyValue>,
    pub versions: Vec<KeyValue>,
    pub lock_file: String,
    pub lock_sha256: String,
    pub artifacts: Vec<KeyValue>,
    pub matrices: Vec<RunMatrix>,
    /// Where client and broker ran, per matrix, as the records say (empty for records without conditions).
    pub placements: Vec<KeyValue>,
    pub provenance_href: String,
    pub commit_full: String,
    /// Every environment the run brought up, with the tasks it served (runs from before provenance listed
    /// them have none).
    pub environments: Vec<EnvView>,
}

#[derive(Debug, Clone, Serialize)]
pub struct EnvView {
    pub id: String,
    pub why: String,
    pub kafka: String,
    pub mysql: String,
    pub tasks: Vec<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct RunMatrix {
    pub name: String,
    pub title: String,
    pub href: String,
    pub raw_href: String,
    pub file: String,
    pub sha256: String,
    pub counts: Counts,
}

pub fn run_page(run: &Run) -> RunPage {
    let p = &run.provenance;
    let h = &p.host;
    let host = vec![
        kv("Hostname", h.hostname.clone()),
        kv("CPU", h.cpu_brand.clone()),
        kv("Physical cores", h.physical_cores.map_or_else(|| "unknown".into(), |c| c.to_string())),
        kv("Logical cores", h.logical_cores.to_string()),
        kv("Frequency", format!("{} MHz", h.frequency_mhz)),
        kv("Memory", format::gib(h.memory_bytes)),
        kv("OS", h.os.clone()),
        kv("Kernel", h.kernel.clone()),
        kv("Architecture", h.arch.clone()),
        kv(
            "Machine key (runs are compared and pooled only within one; the kernel is recorded, not keyed)",
            p.machine_key(),
        ),
    ]
    .into_iter()
    .chain(calibration(p))
    .collect::<Vec<_>>();
    let matrices = run
        .matrices
        .iter()
        .map(|(name, file)| {
            let info = p.matrices.iter().find(|m| &m.name == name);
            RunMatrix {
                name: name.clone(),
                title: info.map_or_else(|| name.clone(), |m| m.title.clone()),
                href: run_matrix_href(&run.id, name),
                raw_href: format!("runs/{}/{name}.jsonl", run.id),
                file: info.map_or_else(String::new, |m| m.file.clone()),
                sha256: info.map_or_else(String::new, |m| m.sha256.clone()),
                counts: model::counts(&file.records),
            }
        })
        .collect();
    let placements =
        run.matrices.iter().filter_map(|(name, file)| placement(&file.records).map(|p| kv(name, p))).collect();
    RunPage {
        run: run_link(run),
        started: format::date_time(p.started_ts_ms),
        finished: p.finished_ts_ms.map(format::date_time),
        duration: p.finished_ts_ms.map(|f| format::duration(f.saturating_sub(p.started_ts_ms))),
        reproduce: p.reproduce.clone(),
        host,
        environment: environment(p),
        versions: p.versions.iter().map(|(k, v)| kv(k, v.clone())).collect(),
        lock_file: p.pins.lock_file.clone(),
        lock_sha256: p.pins.lock_sha256.clone(),
        artifacts: p.pins.artifacts.iter().map(|(k, v)| kv(k, v.clone())).collect(),
        matrices,
        placements,
        provenance_href: format!("runs/{}/provenance.json", run.id),
        commit_full: p.git.commit.clone(),
        environments: p
            .environments
            .iter()
            .map(|e| EnvView {
                id: e.id.clone(),
                why: e.why.clone(),
                kafka: e.kafka_version.clone(),
                mysql: match (&e.mysql_flavour, &e.mysql_version) {
                    (Some(f), Some(v)) => format!("{f} {v}"),
                    (None, Some(v)) => v.clone(),
                    _ => "—".into(),
                },
                tasks: e.tasks.clone(),
            })
            .collect(),
    }
}

/// The calibration at the run's start and end and the drift between them; runs before it have none.
fn calibration(p: &streamlab_record::provenance::Provenance) -> Vec<KeyValue> {
    let Some(c) = &p.calibration else { return Vec::new() };
    let show = |r: &streamlab_record::provenance::CalibrationResult| {
        format!(
            "CPU loop {:.0} M iterations/s; loopback produce {} records/s",
            r.cpu_loop_per_s / 1e6,
            format::table_value(r.produce_records_per_s)
        )
    };
    let mut rows =
        vec![kv("Calibration at the start", c.start.as_ref().map_or_else(|| "not measured".to_owned(), show))];
    for (i, resume) in c.resumes.iter().enumerate() {
        let change = c.start.map_or_else(String::new, |start| {
            let (cpu, produce) = resume.change_from(&start);
            format!(" (CPU loop {:+.1}%, produce {:+.1}% against the start)", cpu * 100.0, produce * 100.0)
        });
        rows.push(kv(&format!("Calibration at resume {}", i + 1), format!("{}{change}", show(resume))));
    }
    rows.push(kv("Calibration at the end", c.end.as_ref().map_or_else(|| "not measured".to_owned(), show)));
    if let Some((cpu, produce)) = c.drift() {
        rows.push(kv(
            "Calibration drift (end over start)",
            format!("CPU loop {:+.1}%; produce {:+.1}%", cpu * 100.0, produce * 100.0),
        ));
    }
    rows.extend(c.errors.iter().map(|e| kv("Calibration failed", e.clone())));
    rows
}

/// The distinct placements the records name, in the order first met: `client CPUs [0], broker CPUs [1]`.
fn placement(records: &[Record]) -> Option<String> {
    let mut seen: Vec<&str> = Vec::new();
    for p in records.iter().filter_map(|r| r.conditions.as_ref()?.placement.as_deref()) {
        if !seen.contains(&p) {
            seen.push(p);
        }
    }
    (!seen.is_empty()).then(|| seen.join("; "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::fixtures;

    #[test]
    fn the_calibration_shows_both_ends_and_their_drift_or_why_one_is_missing() {
        use streamlab_record::provenance::{Calibration, CalibrationResult};
        let mut p = fixtures::provenance("run-a", 1_000);
        assert!(calibration(&p).is_empty(), "runs before calibration show none");
        let at = |cpu: f64, produce: f64| CalibrationResult {
            ts_ms: 1,
            cpu_loop_per_s: cpu,
            produce_records_per_s: produce,
        };
        p.calibration = Some(Calibration {
            start: Some(at(500e6, 400_000.0)),
            resumes: Vec::new(),
            end: Some(at(450e6, 420_000.0)),
            errors: Vec::new(),
        });
        let rows: Vec<(String, String)> = calibration(&p).into_iter().map(|kv| (kv.key, kv.value)).collect();
        assert_eq!(rows[2], ("Calibration drift (end over start)".into(), "CPU loop -10.0%; produce +5.0%".into()));
        assert!(rows[0].1.starts_with("CPU loop 500 M iterations/s; loopback produce "), "{rows:?}");
        p.calibration = Some(Calibration {
            start: Some(at(1.0, 1.0)),
            resumes: Vec::new(),
            end: None,
            errors: vec!["end: refused".into()],
        });
        let rows: Vec<(String, String)> = calibration(&p).into_iter().map(|kv| (kv.key, kv.value)).collect();
        assert_eq!(rows.len(), 3, "no drift without an end: {rows:?}");
        assert_eq!(rows[1].1, "not measured");
        assert_eq!(rows[2], ("Calibration failed".into(), "end: refused".into()));
        p.calibration = Some(Calibration {
            start: Some(at(345e6, 390_000.0)),
            resumes: vec![at(407.1e6, 663_000.0)],
            end: Some(at(407e6, 662_000.0)),
            errors: Vec::new(),
        });
        let rows: Vec<(String, String)> = calibration(&p).into_iter().map(|kv| (kv.key, kv.value)).collect();
        assert_eq!(rows[1].0, "Calibration at resume 1");
        assert!(rows[1].1.ends_with("(CPU loop +18.0%, produce +70.0% against the start)"), "{rows:?}");
        assert_eq!(rows[2].0, "Calibration at the end");
    }

    #[test]
    fn placement_lists_each_distinct_value_once_and_old_records_have_none() {
        let mut records = fixtures::kafka_sink_records("run-a");
        assert_eq!(placement(&records), None);
        for (r, p) in records.iter_mut().zip(["client CPUs [0], broker CPUs [1]", "shared", "shared"]) {
            r.conditions = Some(fixtures::conditions(false, Some(p)));
        }
        assert_eq!(placement(&records).as_deref(), Some("client CPUs [0], broker CPUs [1]; shared"));
    }
}
