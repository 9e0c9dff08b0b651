//! The result record: one JSON object per line in `results/<run-id>/<matrix>.jsonl`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::applied::Applied;
use crate::integrity::Integrity;

/// Schema tag of every record this version writes. Readers refuse any other.
///
/// /2: records state their environment's shape (`run.kafka_brokers`, `run.broker_heap`) and a clients producer's
/// `applied.queue_cap` wherever they can be known; `cargo xtask lab migrate` brings /1 records to /2 once.
pub const SCHEMA: &str = "streamlab.record/2";

/// The schema before [`SCHEMA`], which `lab migrate` reads.
pub const SCHEMA_V1: &str = "streamlab.record/1";

/// One measured (or failed, or not-run) arm x variant x rep.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Record {
    pub schema: String,
    /// The matrix name, e.g. `kafka_sink`.
    pub bench: String,
    pub run: RunInfo,
    /// The arm, e.g. `raw` or `framework`.
    pub arm: String,
    pub variant: Variant,
    pub status: Status,
    /// Why the arm failed or did not run; absent when it ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The last lines of the arm's stderr when it failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log_tail: Option<String>,
    /// What the arm printed (its kind, metrics, integrity, verdict, details, versions and applied settings),
    /// its fields inline in the record; for an arm that failed or did not run, no metrics and an unchecked
    /// integrity.
    #[serde(flatten)]
    pub measurement: Measurement,
    /// 1-based repetition number.
    pub rep: u32,
    /// The block of its run this rep was measured in (a fresh environment and fresh harness processes; the verdicts
    /// take a block as an independent unit); absent in records of runs measured without blocks, whose unit is the run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub block: Option<u32>,
    /// The command that reproduces this record.
    pub reproduce: String,
    /// The point whose task made this rep's measurement, where that is another point of the same configuration (the
    /// same arm and knobs: the same environment and work) in the same block, or outside blocks at the same rep: the
    /// lab measures such a configuration once and its record stands for each of the points. Absent where this
    /// point's own task measured it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub measured_as: Option<PointRef>,
    /// What else the machine was doing while this task ran; absent in records written before it existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conditions: Option<Conditions>,
}

/// The machine's state around one task: CPU the lab did not use, load, and where client and broker ran.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Conditions {
    /// Seconds the task took, wall clock.
    pub wall_s: f64,
    /// CPU seconds used during the task by processes outside the lab (not the arm, its environment's
    /// services or the runner).
    pub foreign_cpu_s: f64,
    /// The 1-minute load average when the task ended.
    pub loadavg_1m: f64,
    /// True when foreign CPU was large enough to disturb the measurement; the site sets such records apart.
    pub foreign_load: bool,
    /// Where the client and the broker ran, e.g. `client CPUs [0], broker CPUs [1]` or `shared`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub placement: Option<String>,
}

/// Where and how the run that produced a record happened (the full story is in provenance.json).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunInfo {
    pub id: String,
    pub ts_ms: u64,
    pub commit: String,
    pub dirty: bool,
    pub host: String,
    pub cpu: String,
    pub cores: u32,
    pub os: String,
    pub profile: String,
    /// The environment backend: `native`, `docker` or `external`.
    pub env: String,
    /// The Kafka version of the broker the task ran against (a run may switch brokers between tasks);
    /// absent in records written before records named it and in records of tasks that did not run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kafka_version: Option<String>,
    /// The database server of the task's environment, `mariadb` or `mysql`; absent where there was none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mysql_flavour: Option<String>,
    /// That server's `SELECT VERSION()`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mysql_version: Option<String>,
    /// The precision target of runs written before provenance named it once per matrix
    /// (`MatrixInfo::precision_target`); runs since leave it absent. Read, never written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub precision_target: Option<f64>,
    /// The brokers of the Kafka environment the task ran against: 1, or a cluster's 3. Absent in records written
    /// before records named it (the site reads it from the run's provenance) and in records of tasks that did not run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kafka_brokers: Option<u32>,
    /// Each broker's JVM heap (`1g`) where the lab started the brokers; absent on an external cluster.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub broker_heap: Option<String>,
}

impl RunInfo {
    /// The shape of the environment the task ran in, as a configuration names it: `1 broker, 1g heap, Kafka
    /// 4.1.0`. Runs of different shapes are never pooled or compared as one configuration.
    pub fn environment_shape(&self) -> Option<String> {
        let mut shape = match self.kafka_brokers? {
            1 => "1 broker".to_owned(),
            n => format!("{n} brokers"),
        };
        if let Some(heap) = &self.broker_heap {
            shape.push_str(&format!(", {heap} heap"));
        }
        if let Some(version) = &self.kafka_version {
            shape.push_str(&format!(", Kafka {version}"));
        }
        Some(shape)
    }

    /// This run's facts with the versions of the environment a task ran in.
    pub fn in_env(&self, env: &crate::EnvDescriptor) -> RunInfo {
        RunInfo {
            kafka_version: Some(env.kafka.version.clone()),
            mysql_flavour: env.mysql.as_ref().map(|m| m.flavour.clone()),
            mysql_version: env.mysql.as_ref().map(|m| m.version.clone()),
            kafka_brokers: u32::try_from(env.kafka.broker_count()).ok(),
            ..self.clone()
        }
    }
}

/// A point of a matrix: its label, the sweeps it belongs to, and every knob's value.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Variant {
    /// Human label within its sweep, e.g. `500k` or `2 cores`.
    pub label: String,
    /// Sweeps of the matrix this point belongs to (a default point belongs to several).
    #[serde(default)]
    pub sweeps: Vec<String>,
    /// True for the matrix's default point (highlighted on charts).
    #[serde(default)]
    pub default: bool,
    /// Every knob the arm ran with.
    #[serde(default)]
    pub knobs: BTreeMap<String, serde_json::Value>,
}

/// One rep of a point of a matrix: its sweep, its label in that sweep and the rep.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PointRef {
    pub sweep: String,
    pub label: String,
    pub rep: u32,
}

/// Which measurement a record holds: its run, matrix, arm and block, and the rep of the point whose task made it.
/// Two records with one id are one measurement, never two independent ones.
pub type MeasurementId<'r> = (&'r str, &'r str, &'r str, Option<u32>, PointRef);

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// The arm ran to the end (its integrity may still have failed).
    Ok,
    /// The arm crashed, timed out or could not start.
    Failed,
    /// The arm was not run, with a reason (e.g. a licence refuses it).
    NotRun,
}

/// The metric of the whole host's busy cores over the span a record measured (its client, its brokers and whatever
/// else ran), read from /proc/stat over that span: what decides whether a side was CPU-bound here.
pub const HOST_CORES: &str = "host_cores_busy";

/// The share of the host's cores a side may keep busy ([`HOST_CORES`]) and still be measured for what it does, not
/// for the CPU it gets: at nine tenths or more it is CPU-bound here, and no verdict stands on it.
pub const CPU_BOUND_SHARE: f64 = 0.9;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Metric {
    pub value: f64,
    pub unit: String,
    pub higher_is_better: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ci95: Option<[f64; 2]>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub n: Option<u32>,
}

impl Metric {
    pub fn new(value: f64, unit: &str, higher_is_better: bool) -> Self {
        Metric { value, unit: unit.to_owned(), higher_is_better, ci95: None, n: None }
    }
}

/// What a harness process prints (one JSON line) for one arm run; the runner wraps it into a [`Record`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Measurement {
    /// What was measured: `produce`, `fetch`, `latency`, `snapshot`, ... (`failed`, `not_run` in records of
    /// arms that measured nothing).
    pub kind: String,
    #[serde(default)]
    pub metrics: BTreeMap<String, Metric>,
    pub integrity: Integrity,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub verdict: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// How this arm measured where arms cannot be made equal (connections, requests in flight, partitioner,
    /// when the clock starts, the exact command): facts a reader needs to weigh one arm against another.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub details: BTreeMap<String, String>,
    /// Versions the arm observed (crate, librdkafka, broker), merged into provenance.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub versions: BTreeMap<String, String>,
    /// The settings that changed the work, as the arm applied them (see [`crate::applied`]); empty in records
    /// written before it existed and in records of arms that did not run.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub applied: Applied,
}

impl Measurement {
    /// A measurement with nothing measured: what a record of an arm that failed or did not run carries.
    pub fn nothing(kind: &str, integrity: Integrity) -> Self {
        Measurement {
            kind: kind.to_owned(),
            metrics: BTreeMap::new(),
            integrity,
            verdict: BTreeMap::new(),
            note: None,
            details: BTreeMap::new(),
            versions: BTreeMap::new(),
            applied: Applied::default(),
        }
    }
}

impl Record {
    /// The record's task as the run's provenance lists it: `<matrix> <arm> [<sweep> <point>] rep <n>`.
    pub fn task_name(&self) -> String {
        format!(
            "{} {} [{} {}] rep {}",
            self.bench,
            self.arm,
            self.variant.sweeps.join(","),
            self.variant.label,
            self.rep
        )
    }

    /// The measurement this record holds: its own task's, or that of the point it was measured as.
    pub fn measurement_id(&self) -> MeasurementId<'_> {
        let own = || PointRef {
            sweep: self.variant.sweeps.first().cloned().unwrap_or_default(),
            label: self.variant.label.clone(),
            rep: self.rep,
        };
        let point = self.measured_as.clone().unwrap_or_else(own);
        (&self.run.id, &self.bench, &self.arm, self.block, point)
    }

    /// Whether this record may be drawn as a number: it ran and its integrity held.
    pub fn is_publishable(&self) -> bool {
        self.status == Status::Ok && self.measurement.integrity.status != crate::IntegrityStatus::Failed
    }
}
