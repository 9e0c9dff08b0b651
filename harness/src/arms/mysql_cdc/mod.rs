//! The mysql_cdc matrix (seed 004: Redpanda Connect's MySQL CDC benchmark against Debezium and a JDBC sink):
//! four rigs, each run by every arm that can run it, on the seed's data and settings.
//!
//! Rigs (the seed's letters in brackets):
//! - `snapshot_drop` [A]: read the ~600 B-row `testdb.cart` whole as a consistent snapshot and discard it;
//! - `snapshot_kafka` [B]: snapshot the ~150 B-row `benchdb.cart` into a 1-partition topic;
//! - `cdc_kafka` [C]: with the connector streaming from the current binlog position, one session inserts
//!   `rows` rows through the seed's stored procedure (unpaced, 10,000-row commits); every row must reach Kafka;
//! - `kafka_to_mysql` [D]: `rows` generated events on a 16-partition topic into `benchdb.bench_events`.
//!
//! The driver ([`rig`]) does everything that is the same for every arm: loading (timed and reported, never
//! in an arm's time), fresh topics and tables, readiness, the inserts, progress probes, CPU accounting of
//! every process involved and the integrity check. An arm ([`CdcArm`]) only starts and stops its pipeline.
//!
//! Clocks: an arm's time runs from its first to its last record, in milliseconds, as the broker or the server
//! saw them (Kafka topics are created with `message.timestamp.type=LogAppendTime`; the sink table's inserts are
//! counted by `Innodb_rows_inserted`, polled every [`probe::SINK_POLL`]). Start-up (arm started -> first record)
//! and the idle tail (last record -> the driver saw completion) are reported beside it, not hidden in it.

pub mod child;
pub mod data;
pub mod db;
pub mod debezium;
pub mod ids;
pub mod probe;
pub mod procs;
pub mod redpanda;
pub mod rig;
pub mod rust_arm;
pub mod verify;

use std::collections::BTreeMap;
use std::time::Duration;

use anyhow::Result;
use serde::Deserialize;
use streamlab_record::{EnvDescriptor, Measurement};

pub use super::clients::NotRunnable;
use crate::arms::spec::{KnobSpec, KnobType};

pub const BENCH: &str = "mysql_cdc";

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Rig {
    SnapshotDrop,
    SnapshotKafka,
    CdcKafka,
    KafkaToMysql,
}

impl Rig {
    pub fn name(self) -> &'static str {
        match self {
            Rig::SnapshotDrop => "snapshot_drop",
            Rig::SnapshotKafka => "snapshot_kafka",
            Rig::CdcKafka => "cdc_kafka",
            Rig::KafkaToMysql => "kafka_to_mysql",
        }
    }
}

/// Every mysql_cdc arm reads these knobs; each record says which ones its arm applied.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Knobs {
    pub rig: Rig,
    /// Rows loaded (rigs A, B), inserted (C) or events produced (D).
    pub rows: u64,
    /// Debezium `max.batch.size`; JDBC sink `batch.size`; Redpanda Connect `batching.count`; the Rust arm's
    /// snapshot page, produce batch and insert batch.
    pub batch_size: u64,
    /// Debezium `snapshot.fetch.size` (0: batch_size, as the seed's published sweeps set it).
    pub fetch_size: u64,
    /// Debezium `max.queue.size` (0: 4 x batch_size, as the seed set it).
    pub queue_size: u64,
    /// JDBC sink `tasks.max`; the Rust writer's concurrent insert statements.
    pub tasks: u64,
    /// JsonConverter `schemas.enable` for the source rigs' key and value (the seed: true in B, false in C).
    pub schemas: bool,
    /// Redpanda Connect GOMAXPROCS (0: unbounded).
    pub cores: u64,
    /// Give up waiting for the last record after this many seconds (the record then fails, with the reason).
    pub timeout_s: u64,
    /// The broker's CPU cap where the machine has more CPUs (the seed's 3); the runner applies it, recorded here.
    pub broker_cores_at_most: u64,
}

pub const KNOBS: &[KnobSpec] = &[
    KnobSpec::choice("rig", &["snapshot_drop", "snapshot_kafka", "cdc_kafka", "kafka_to_mysql"]),
    KnobSpec::required("rows", KnobType::Integer),
    KnobSpec::required("batch_size", KnobType::Integer),
    KnobSpec::required("fetch_size", KnobType::Integer),
    KnobSpec::required("queue_size", KnobType::Integer),
    KnobSpec::required("tasks", KnobType::Integer),
    KnobSpec::required("schemas", KnobType::Bool),
    KnobSpec::required("cores", KnobType::Integer),
    KnobSpec::required("timeout_s", KnobType::Integer),
    KnobSpec::required("broker_cores_at_most", KnobType::Integer),
];

impl Knobs {
    pub fn timeout(&self) -> Duration {
        Duration::from_secs(self.timeout_s)
    }

    /// Debezium's snapshot fetch size: the knob, or the batch size as the seed swept them together.
    pub fn fetch(&self) -> u64 {
        if self.fetch_size > 0 { self.fetch_size } else { self.batch_size }
    }

    /// Debezium's queue: the knob, or 4 x the batch as the seed's Taskfiles set it.
    pub fn queue(&self) -> u64 {
        if self.queue_size > 0 { self.queue_size } else { 4 * self.batch_size }
    }
}

/// The event payload rig D loads for an arm: the JDBC sink needs Connect's schema+payload envelope, the
/// others read the bare row JSON (as the seed's two producer configs wrote them).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventFormat {
    ConnectEnvelope,
    Bare,
}

/// Where a rig's data lives (the seed's database and table names).
#[derive(Debug, Clone)]
pub struct Source {
    pub database: &'static str,
    pub table: &'static str,
}

/// What the driver hands an arm for one run.
#[derive(Debug, Clone)]
pub struct Job {
    pub rig: Rig,
    pub knobs: Knobs,
    pub env: EnvDescriptor,
    /// The table the source rigs read (A, B, C) or the sink rig writes (D).
    pub table: Source,
    /// The topic the source rigs produce to, `<topic_prefix>.<database>.<table>` as Debezium names it; the
    /// topic rig D reads.
    pub topic: String,
    /// Debezium's `topic.prefix` (the source rigs).
    pub topic_prefix: String,
    /// A directory of this run's own (configs, offsets, logs), removed after the run.
    pub work_dir: std::path::PathBuf,
}

/// One arm of the matrix: how it starts its pipeline for a rig.
pub trait CdcArm {
    fn name(&self) -> &'static str;
    /// The rigs and knobs this arm can run; anything else is a not-run record with the reason.
    fn check(&self, knobs: &Knobs) -> Result<(), NotRunnable>;
    /// What rig D loads for this arm.
    fn event_format(&self) -> EventFormat;
    /// Start the pipeline; returns once it was launched (not necessarily streaming yet).
    fn start(&self, job: &Job) -> Result<Box<dyn Running>>;
}

/// A pipeline that runs while the driver watches it.
pub trait Running {
    /// Err once the pipeline has failed (e.g. the worker died), with what it said.
    fn check(&mut self) -> Result<()>;
    /// Processes outside the harness whose CPU the record counts as the arm's (a Connect JVM).
    fn pids(&self) -> Vec<u32>;
    /// Whether the arm runs inside the harness process (its CPU is then the harness's own).
    fn in_process(&self) -> bool;
    /// For `snapshot_drop`, where nothing outside the arm sees the rows: what the arm counted itself.
    fn self_count(&self) -> Option<SelfCount> {
        None
    }
    /// The rows of [`Running::self_count`] once the arm has read them all: the watch loop polls this, so it
    /// must be cheap (no copy of the id set).
    fn self_counted_rows(&self) -> Option<u64> {
        None
    }
    /// Stop the pipeline and clean up; returns what the record says about the arm.
    fn stop(self: Box<Self>) -> Result<ArmInfo>;
}

/// Rows an arm counted itself (the drop rig), with its own first and last record times (epoch ms).
#[derive(Debug, Clone, Default)]
pub struct SelfCount {
    pub rows: u64,
    pub bytes: u64,
    pub first_ms: Option<f64>,
    pub last_ms: Option<f64>,
    pub ids: ids::IdSet,
    /// Set once the arm has read everything it will read.
    pub done: bool,
}

/// What a record says about the arm: versions, the exact configuration it ran, and facts a reader needs.
#[derive(Debug, Clone, Default)]
pub struct ArmInfo {
    pub versions: BTreeMap<String, String>,
    /// The configuration as run (properties, pipeline YAML or the Rust arm's settings), secrets masked.
    pub config: String,
    pub details: BTreeMap<String, String>,
    pub note: Option<String>,
}

/// Run `arm` for the knobs in `ctx` (the arms' shared entry point).
pub fn run(ctx: &crate::arms::ArmContext, arm: &dyn CdcArm) -> Result<Measurement> {
    let knobs: Knobs = ctx.knobs()?;
    arm.check(&knobs)?;
    rig::run(&ctx.env, &knobs, arm)
}
