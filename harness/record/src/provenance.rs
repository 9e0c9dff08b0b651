//! provenance.json: where and with what a run ran. Written at the start of a run and rewritten at its end.
//! The types live here, beside the record, so the runner, the environments and the site share them
//! without importing each other.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

pub const PROVENANCE_SCHEMA: &str = "streamlab.provenance/1";
pub const PROVENANCE_FILE: &str = "provenance.json";

#[derive(Debug, thiserror::Error)]
pub enum ProvenanceError {
    #[error("cannot read {}: {source}", path.display())]
    Read { path: PathBuf, source: std::io::Error },
    #[error("{}: not valid JSON: {source}", path.display())]
    Json { path: PathBuf, source: serde_json::Error },
    #[error("{}: unknown provenance schema {found:?}; this build reads {PROVENANCE_SCHEMA:?}", path.display())]
    Schema { path: PathBuf, found: String },
    #[error("{}: not a valid provenance record: {source}", path.display())]
    Invalid { path: PathBuf, source: serde_json::Error },
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Provenance {
    pub schema: String,
    pub run_id: String,
    pub started_ts_ms: u64,
    #[serde(default)]
    pub finished_ts_ms: Option<u64>,
    /// The exact command that reproduces this run.
    pub reproduce: String,
    pub profile: String,
    pub git: Git,
    pub host: Host,
    pub env: EnvInfo,
    /// Every version observed at run time: java, rustc, cargo, kafka broker, mariadb, librdkafka, crates...
    pub versions: BTreeMap<String, String>,
    pub pins: Pins,
    pub matrices: Vec<MatrixInfo>,
    /// Environments brought up afresh after a service died mid-run, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub restarts: Vec<EnvRestart>,
    /// Every Kafka version the run's brokers ran (points can choose one), in the order they ran, each with
    /// the lock its jars came from (`pins` is the default version's, whose tools every environment uses).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub kafka_brokers: BTreeMap<String, Pins>,
    /// Every environment the run brought up, in order, with the versions it ran and the tasks it served
    /// (a run switches environments per Kafka version and after a service dies); absent in runs before it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub environments: Vec<EnvServed>,
    /// The machine's own noise at the run's start and end; absent in runs before it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub calibration: Option<Calibration>,
}

/// How [`Calibration`] is measured, for the site.
pub const CALIBRATION_METHOD: &str = "At the run's start and end, with the environment up and no task running: a \
fixed CPU-bound loop on one core (100,000,000 dependent xorshift steps), and a fixed loopback produce (200,000 \
records of 100 B, acks=1, linger 5 ms, to a fresh 1-partition topic, every record acknowledged), measured after one \
unmeasured produce of the same size that warms the broker up. The drift is end \
over start minus one: what the machine itself moved during the run.";

/// The calibration at the run's start, at each `--resume` and at its end.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Calibration {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start: Option<CalibrationResult>,
    /// One per `--resume`, in order: the machine as each later attempt found it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resumes: Vec<CalibrationResult>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end: Option<CalibrationResult>,
    /// Why a calibration is missing (`start: ...`, `resume: ...`, `end: ...`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub errors: Vec<String>,
}

/// One calibration.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct CalibrationResult {
    pub ts_ms: u64,
    /// Iterations of the CPU-bound loop per second.
    pub cpu_loop_per_s: f64,
    /// Records of the loopback produce per second.
    pub produce_records_per_s: f64,
}

impl Calibration {
    /// End over start minus one, per measure: (CPU loop, loopback produce). `None` without both.
    pub fn drift(&self) -> Option<(f64, f64)> {
        Some(self.end?.change_from(&self.start?))
    }
}

impl CalibrationResult {
    /// This calibration over `earlier` minus one, per measure: (CPU loop, loopback produce).
    pub fn change_from(&self, earlier: &CalibrationResult) -> (f64, f64) {
        (
            self.cpu_loop_per_s / earlier.cpu_loop_per_s - 1.0,
            self.produce_records_per_s / earlier.produce_records_per_s - 1.0,
        )
    }
}

/// Why a run brings up its first environment; every attempt of a run (its start, each `--resume`) begins with
/// one, which is how provenance tells which attempt ran a task. Runs resumed before [`RESUMED_ENVIRONMENT`]
/// existed used this text for both.
pub const FIRST_ENVIRONMENT: &str = "the run's first environment";
/// Why a resumed run brings up its first environment.
pub const RESUMED_ENVIRONMENT: &str = "the run resumed: the first environment of this attempt";

/// One environment of a run and the tasks that ran in it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EnvServed {
    /// The environment's id (its descriptor's).
    pub id: String,
    /// Why it was brought up: the run's first, a switch of Kafka version, a replacement after a failure.
    pub why: String,
    pub kafka_version: String,
    /// How many brokers it ran; absent in provenance written before it said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub brokers: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mysql_flavour: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mysql_version: Option<String>,
    /// How it was warmed up before its first task (`harness warm-up`), or why it was not; absent in provenance
    /// written before environments were warmed, and for an external cluster.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warm_up: Option<String>,
    /// The tasks that ran in it, as `<matrix> <arm> [<sweep> <point>] rep <n>`.
    #[serde(default)]
    pub tasks: Vec<String>,
}

/// One environment replaced mid-run: which one failed, why, and which took its place.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EnvRestart {
    pub ts_ms: u64,
    pub failed_env: String,
    /// What failed, e.g. `the kafka broker was killed by SIGKILL`.
    pub reason: String,
    /// The fresh environment's id; absent when the run stopped instead.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub new_env: Option<String>,
    /// How long the fresh environment took to come up.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ready_after_ms: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Git {
    pub commit: String,
    pub dirty: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Host {
    pub hostname: String,
    pub cpu_brand: String,
    pub physical_cores: Option<u32>,
    pub logical_cores: u32,
    pub frequency_mhz: u64,
    pub memory_bytes: u64,
    pub os: String,
    pub kernel: String,
    pub arch: String,
    /// The CI runner the run ran on, e.g. `GitHub Actions github-hosted runner (ubuntu24 20261123.1, X64)`; none on
    /// a machine of one's own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runner: Option<String>,
    /// The CPU model beyond its brand string (`family 25, model 17` on x86, `implementer 0x41, part 0xd0c` on Arm);
    /// absent in provenance written before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_model: Option<String>,
    /// `virtual machine` or `bare metal`; absent where the CPU does not say, and in older provenance.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub virtualization: Option<String>,
}

impl Host {
    /// The machine a figure belongs to: what decides performance and stays put. The CPU model, the logical cores,
    /// the memory to the GiB and the kind (a virtual machine, bare metal, a CI runner). The kernel, the OS image and
    /// a runner's image version are recorded beside it, not keyed: they change weekly on the same hardware.
    /// A GitHub-hosted runner is one machine of its own whatever CPU the day's VM has (its runs pool across
    /// weeks). Older provenance, which did not record the model or the kind, keys on what it has.
    pub fn machine_key(&self) -> String {
        let memory = (self.memory_bytes as f64 / (1u64 << 30) as f64).round();
        if self.is_hosted_runner() {
            return format!("GitHub-hosted runner ({} vCPU, {memory} GiB, {}, shared)", self.logical_cores, self.arch);
        }
        // A brand without its model names a family of machines, not one: such a key says so and never leads a page.
        let model =
            self.cpu_model.as_ref().map_or_else(|| " (CPU model not recorded)".to_owned(), |m| format!(" ({m})"));
        let mut key = format!("{}{model}, {} logical cores, {memory} GiB", self.cpu_brand, self.logical_cores);
        if let Some(kind) = &self.virtualization {
            key.push_str(&format!(", {kind}"));
        }
        if self.runner.is_some() {
            key.push_str(", self-hosted CI runner");
        }
        key
    }
}

impl Host {
    /// A shared CI runner: its figures are its own and never lead a page.
    pub fn is_hosted_runner(&self) -> bool {
        self.runner.as_deref().is_some_and(|r| r.starts_with(HOSTED_RUNNER))
    }

    /// Whether [`Host::machine_key`] names one machine: the CPU model is recorded (older provenance did not).
    pub fn key_is_complete(&self) -> bool {
        self.cpu_model.is_some() || self.is_hosted_runner()
    }
}

/// How [`Host::runner`] names a GitHub-hosted runner.
pub const HOSTED_RUNNER: &str = "GitHub Actions github-hosted runner";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EnvInfo {
    /// `native`, `docker` or `external`.
    pub backend: String,
    /// Whether the lab started and stopped the services itself (false for `external`).
    pub managed: bool,
    pub kafka_version: Option<String>,
    /// `mariadb` or `mysql`.
    pub mysql_flavour: Option<String>,
    pub mysql_version: Option<String>,
    /// CPU caps applied during the run, e.g. `broker: "0"` for an affinity of CPU 0.
    #[serde(default)]
    pub cpu_caps: BTreeMap<String, String>,
    #[serde(default)]
    pub note: Option<String>,
    /// The image each service ran on (docker backend): `kafka`, `mariadb` -> reference, id and where it came from.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub images: BTreeMap<String, ImageInfo>,
    /// An external cluster as its metadata described it when the run began.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster: Option<ClusterInfo>,
    /// How the lab sized the Kafka environment it started (brokers, quorum, heap).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kafka_sizing: Option<String>,
    /// The names of the `--kafka-config` settings the arms applied (never their values).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub kafka_settings: Vec<String>,
}

/// A Kafka cluster as a metadata request describes it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClusterInfo {
    pub broker_ids: Vec<i32>,
    /// The broker that answered the metadata request.
    pub answered_by: i32,
}

/// A container image as a run used it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ImageInfo {
    /// `apache/kafka:4.1.0@sha256:...` when pulled, `streamlab-local/jre:<inputs>` when built here.
    pub reference: String,
    /// The engine's image id.
    pub id: String,
    /// Pulled and verified, or built locally from what.
    pub source: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Pins {
    /// Path of the lock file in the repository and its SHA-256.
    pub lock_file: String,
    pub lock_sha256: String,
    /// `group:artifact:version` -> SHA-256 of every pinned artifact.
    pub artifacts: BTreeMap<String, String>,
}

/// A matrix as it was when the run used it: the file's hash plus what the site needs to present it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MatrixInfo {
    pub name: String,
    pub file: String,
    pub sha256: String,
    pub title: String,
    pub question: String,
    pub seed: Option<String>,
    pub default_arm: Option<String>,
    /// Arm name -> human title, in file order.
    pub arms: Vec<ArmInfo>,
    pub sweeps: Vec<SweepInfo>,
    #[serde(default)]
    pub does_not_say: Vec<String>,
    /// The precision the run aimed for at each of this matrix's points (0.05 for ±5% of the median), from
    /// `--precision` or the matrix's profile; absent when the run had no target (fixed reps). Runs written before
    /// provenance named it have it on every record instead (`RunInfo::precision_target`), filled in on load.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub precision_target: Option<f64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ArmInfo {
    pub name: String,
    pub title: String,
    pub description: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SweepInfo {
    pub name: String,
    pub title: String,
    #[serde(default)]
    pub caption: Option<String>,
    pub arms: Vec<String>,
    /// The knob this sweep varies; absent for an arms-only comparison.
    #[serde(default)]
    pub knob: Option<String>,
    /// Point labels in display order.
    pub labels: Vec<String>,
    /// Knobs held fixed for every point of the sweep, as `knob = value`.
    #[serde(default)]
    pub fixed: Vec<String>,
}

impl Provenance {
    /// Where a figure belongs: the machine ([`Host::machine_key`]) and the backend the services ran on. Runs are
    /// compared and pooled only when theirs match (where each task's processes were placed is in its record).
    pub fn machine_key(&self) -> String {
        format!("{}, {} backend", self.host.machine_key(), self.env.backend)
    }

    /// On `--resume`: keep the first attempt's start time, versions and caps alongside this attempt's.
    pub fn merge_earlier(&mut self, earlier: Provenance) {
        self.started_ts_ms = earlier.started_ts_ms;
        let mut restarts = earlier.restarts;
        restarts.append(&mut self.restarts);
        self.restarts = restarts;
        for (k, v) in earlier.versions {
            self.versions.entry(k).or_insert(v);
        }
        for (k, v) in earlier.env.cpu_caps {
            self.env.cpu_caps.entry(k).or_insert(v);
        }
        for (k, v) in earlier.kafka_brokers {
            self.kafka_brokers.entry(k).or_insert(v);
        }
        let mut environments = earlier.environments;
        environments.append(&mut self.environments);
        self.environments = environments;
        // The first attempt's start calibration is the run's.
        self.calibration = earlier.calibration.or(self.calibration.take());
        let note = format!("resumed; first started at {}", earlier.started_ts_ms);
        self.env.note = Some(match self.env.note.take() {
            Some(n) => format!("{n}; {note}"),
            None => note,
        });
    }

    /// A broker at `version` ran in this run, from the jars `pins` names.
    pub fn note_kafka_broker(&mut self, version: &str, pins: Pins) {
        self.kafka_brokers.entry(version.to_owned()).or_insert(pins);
    }

    /// An environment was brought up for the tasks that follow, for the reason `why`.
    pub fn note_environment(&mut self, env: &crate::EnvDescriptor, why: &str) {
        self.environments.push(EnvServed {
            id: env.id.clone(),
            why: why.to_owned(),
            kafka_version: env.kafka.version.clone(),
            brokers: u32::try_from(env.kafka.broker_count()).ok(),
            mysql_flavour: env.mysql.as_ref().map(|m| m.flavour.clone()),
            mysql_version: env.mysql.as_ref().map(|m| m.version.clone()),
            warm_up: None,
            tasks: Vec::new(),
        });
    }

    /// How the newest environment was warmed up.
    pub fn note_warm_up(&mut self, said: &str) {
        if let Some(env) = self.environments.last_mut() {
            env.warm_up = Some(said.to_owned());
        }
    }

    /// A task ran in the newest environment.
    pub fn note_task(&mut self, task: &str) {
        if let Some(env) = self.environments.last_mut() {
            env.tasks.push(task.to_owned());
        }
    }

    /// Which attempt ran each task (0 for the run's start, 1 for its first `--resume`, ...), by the task's name
    /// as [`Provenance::note_task`] lists it; empty for runs from before environments were listed.
    pub fn attempt_of_tasks(&self) -> BTreeMap<&str, usize> {
        let mut attempt: Option<usize> = None;
        let mut out = BTreeMap::new();
        for e in &self.environments {
            if e.why == FIRST_ENVIRONMENT || e.why == RESUMED_ENVIRONMENT {
                attempt = Some(attempt.map_or(0, |a| a + 1));
            }
            for task in &e.tasks {
                out.insert(task.as_str(), attempt.unwrap_or(0));
            }
        }
        out
    }

    /// Record a broker CPU cap that was applied; true if it was new.
    pub fn note_broker_cap(&mut self, cap: &str) -> bool {
        let entry = self.env.cpu_caps.entry("broker (per broker_cores point)".to_owned()).or_default();
        if entry.split("; ").any(|c| c == cap) {
            return false;
        }
        if !entry.is_empty() {
            entry.push_str("; ");
        }
        entry.push_str(cap);
        true
    }

    pub fn load(path: &Path) -> Result<Self, ProvenanceError> {
        let at = || path.to_owned();
        let text = std::fs::read_to_string(path).map_err(|source| ProvenanceError::Read { path: at(), source })?;
        let value: serde_json::Value =
            serde_json::from_str(&text).map_err(|source| ProvenanceError::Json { path: at(), source })?;
        let schema = value.get("schema").and_then(|s| s.as_str()).unwrap_or("<missing>");
        if schema != PROVENANCE_SCHEMA {
            return Err(ProvenanceError::Schema { path: at(), found: schema.to_owned() });
        }
        serde_json::from_value(value).map_err(|source| ProvenanceError::Invalid { path: at(), source })
    }

    /// A run's provenance if it has one: `None` when the file does not exist (a run interrupted before it was
    /// written), an error naming the file when it exists but cannot be read or parsed.
    pub fn load_if_present(path: &Path) -> Result<Option<Self>, ProvenanceError> {
        match Self::load(path) {
            Ok(p) => Ok(Some(p)),
            Err(ProvenanceError::Read { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::descriptor::{EnvDescriptor, KafkaEnv};

    fn descriptor(id: &str, kafka: &str) -> EnvDescriptor {
        EnvDescriptor {
            schema: crate::descriptor::DESCRIPTOR_SCHEMA,
            id: id.into(),
            backend: crate::descriptor::BackendKind::Native,
            dir: PathBuf::from("/tmp/x"),
            started_ts_ms: 0,
            kafka: KafkaEnv {
                default_listener: None,
                version: kafka.into(),
                pid: None,
                listeners: BTreeMap::new(),
                controller: None,
                cpus: None,
                log_file: None,
                brokers: Vec::new(),
                start_archive: None,
            },
            mysql: None,
        }
    }

    fn provenance() -> Provenance {
        let text = serde_json::json!({"schema": PROVENANCE_SCHEMA, "run_id": "r", "started_ts_ms": 1,
            "reproduce": "x", "profile": "quick", "git": {"commit": "c", "dirty": false},
            "host": {"hostname": "h", "cpu_brand": "c", "physical_cores": 1, "logical_cores": 2, "frequency_mhz": 1,
                     "memory_bytes": 1, "os": "o", "kernel": "k", "arch": "a"},
            "env": {"backend": "native", "managed": true, "kafka_version": "3.9.1", "mysql_flavour": null,
                    "mysql_version": null},
            "versions": {}, "pins": {"lock_file": "l", "lock_sha256": "s", "artifacts": {}}, "matrices": []});
        serde_json::from_value(text).expect("a run from before environments were listed still reads")
    }

    #[test]
    fn every_environment_lists_the_tasks_it_served_and_a_resume_keeps_the_earlier_ones() {
        let mut earlier = provenance();
        assert!(earlier.environments.is_empty());
        earlier.note_environment(&descriptor("e1", "3.9.1"), "the run's first environment");
        earlier.note_task("clients c_2_15 [listener plain] rep 1");
        earlier.note_environment(&descriptor("e2", "4.1.0"), "switched to Kafka 4.1.0");
        earlier.note_task("clients c_2_15 [broker Kafka 4.1.0] rep 1");
        assert_eq!(earlier.environments[0].tasks, ["clients c_2_15 [listener plain] rep 1"]);
        assert_eq!(earlier.environments[1].kafka_version, "4.1.0");
        let mut resumed = provenance();
        resumed.merge_earlier(earlier);
        resumed.note_environment(&descriptor("e3", "4.1.0"), RESUMED_ENVIRONMENT);
        resumed.note_task("clients c_2_15 [listener plain] rep 2");
        let ids: Vec<&str> = resumed.environments.iter().map(|e| e.id.as_str()).collect();
        assert_eq!(ids, ["e1", "e2", "e3"]);
        let attempts: Vec<(&str, usize)> = resumed.attempt_of_tasks().into_iter().collect();
        assert_eq!(
            attempts,
            [
                ("clients c_2_15 [broker Kafka 4.1.0] rep 1", 0),
                ("clients c_2_15 [listener plain] rep 1", 0),
                ("clients c_2_15 [listener plain] rep 2", 1)
            ],
            "a switch of Kafka version stays in its attempt; a resume starts the next"
        );
    }

    #[test]
    fn a_run_resumed_before_resumes_were_named_still_splits_at_its_second_first_environment() {
        let mut p = provenance();
        for (env, task) in [("e1", "d a [s RF 1] rep 1"), ("e2", "d a [s RF 1] rep 2")] {
            p.note_environment(&descriptor(env, "4.1.0"), FIRST_ENVIRONMENT);
            p.note_task(task);
        }
        assert_eq!(p.attempt_of_tasks()["d a [s RF 1] rep 2"], 1);
    }

    #[test]
    fn a_calibration_changes_relative_to_an_earlier_one() {
        let at = |cpu: f64, produce: f64| CalibrationResult {
            ts_ms: 0,
            cpu_loop_per_s: cpu,
            produce_records_per_s: produce,
        };
        let c = Calibration {
            start: Some(at(100.0, 400.0)),
            resumes: vec![at(118.0, 680.0)],
            end: Some(at(90.0, 500.0)),
            errors: Vec::new(),
        };
        let (cpu, produce) = c.resumes[0].change_from(&c.start.unwrap());
        assert!((cpu - 0.18).abs() < 1e-12 && (produce - 0.7).abs() < 1e-12);
        let (cpu, produce) = c.drift().unwrap();
        assert!((cpu + 0.1).abs() < 1e-12 && (produce - 0.25).abs() < 1e-12);
    }

    #[test]
    fn a_missing_provenance_is_none_and_a_broken_one_an_error_naming_its_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("provenance.json");
        assert!(Provenance::load_if_present(&path).unwrap().is_none());
        std::fs::write(&path, serde_json::to_string(&provenance()).unwrap()).unwrap();
        assert_eq!(Provenance::load_if_present(&path).unwrap().unwrap().run_id, "r");
        std::fs::write(&path, "{\"schema\": ").unwrap();
        let err = Provenance::load_if_present(&path).unwrap_err().to_string();
        assert!(err.starts_with(&format!("{}: not valid JSON", path.display())), "{err}");
    }
}
