//! The mysql_cdc matrix (seed 004: Redpanda Connect's MySQL CDC benchmark against Debezium and a JDBC sink):
//! four rigs, each run by every arm that can run it, on the seed's data and settings.
//!
//! Rigs (the seed's letters in brackets):
//! - `snapshot_drop` [A]: read the ~600 B-row `testdb.cart` whole as a consistent snapshot and discard it;
//! - `snapshot_kafka` [B]: snapshot the ~150 B-row `benchdb.cart` into a 1-partition topic;
//! - `cdc_kafka` [C]: with the connector streaming from the current binlog position, one session inserts
//!   `rows` rows through the seed's stored procedure (unpaced, 10,000-row commits); every row must reach Kafka.
//!   Two like-for-like loads sit beside the seed's ([`CdcLoad`]): a backlog (every row committed before the
//!   arm starts, which streams from the position recorded before the inserts) and a paced inserter;
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

pub mod content;
pub mod data;
pub mod db;
pub mod debezium;
pub mod ids;
pub mod pipeline;
pub mod probe;
pub mod procs;
pub mod redpanda;
pub mod rig;
pub mod rust_arm;
#[cfg(test)]
mod same_row;
pub mod streams;
pub mod verify;

use std::collections::BTreeMap;
use std::time::Duration;

use anyhow::Result;
use serde::Deserialize;
use streamlab_record::applied::Applied;
use streamlab_record::{EnvDescriptor, Measurement};

pub use streamlab_record::arms::NotRunnable;

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

/// What the arms write (source rigs) or read (the sink rig). `Seed`: each arm as the seed ran it (Debezium's
/// JsonConverter envelope, with or without schemas per `schemas`; the Rust arm's bare row JSON with a text
/// key; the sink rig: the JDBC sink reads the Connect envelope topic, the Rust writer the bare one). The other
/// values make both sides write (or read) the same thing, for like-for-like ratios.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Format {
    #[default]
    Seed,
    /// Bare row JSON as Debezium's new-record-state unwrap writes it with schemas off and DECIMAL as a string;
    /// the key `{"id":N}`.
    RowJson,
    /// Debezium's JsonConverter envelope with schemas (schema + payload of before/after/source/op), the key
    /// with its own schema.
    DebeziumEnvelope,
    /// The sink rig: every arm reads the Connect schema+payload envelope topic the JDBC sink reads.
    ConnectEnvelope,
}

/// The source rigs' producer settings. `Seed`: each arm its own (Debezium on Kafka Connect's default source
/// producer; the Rust arm lz4, 1 MB batches, idempotent). `Rust`: both with the Rust arm's settings (Debezium
/// through `producer.override.*`). `ConnectDefault`: both with Kafka Connect's default source producer
/// settings (the Rust arm maps them onto librdkafka).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProducerProfile {
    #[default]
    Seed,
    Rust,
    ConnectDefault,
}

/// What rig C offers the arm. `Unpaced`: the seed's rig, one session inserting as fast as it goes while the
/// arm streams. `Backlog`: every row inserted before the arm starts; the arm streams from the position
/// recorded before the inserts. `Paced`: the inserting session held at `paced_rows_per_s`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CdcLoad {
    #[default]
    Unpaced,
    Backlog,
    Paced,
}

/// How the JDBC sink's driver sends a batch. `PerRow`: the seed's (one INSERT per record in a JDBC batch);
/// `Rewritten`: the driver's bulk/rewritten batch, the equivalent of the Rust writer's multi-row INSERT.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum JdbcBatch {
    #[default]
    PerRow,
    Rewritten,
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
    /// What the arms write or read (absent: as the seed ran it).
    #[serde(default)]
    pub format: Format,
    /// The source rigs' producer settings (absent: each arm's own, as the seed ran it).
    #[serde(default)]
    pub producer: ProducerProfile,
    /// What rig C offers the arm (absent: the seed's unpaced inserter).
    #[serde(default)]
    pub cdc_load: CdcLoad,
    /// The inserter's rate when `cdc_load` is `paced`.
    #[serde(default)]
    pub paced_rows_per_s: u64,
    /// How the JDBC sink's driver sends a batch (absent: per row, as the seed's).
    #[serde(default)]
    pub jdbc_batch: JdbcBatch,
}

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

/// A binlog position: file and offset, and the server's GTID state there (MariaDB's `domain-server-seq`
/// list; empty on a server without GTIDs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BinlogPosition {
    pub file: String,
    pub pos: u64,
    pub gtid: String,
}

impl std::fmt::Display for BinlogPosition {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{} (gtid {})", self.file, self.pos, if self.gtid.is_empty() { "none" } else { &self.gtid })
    }
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
    /// Rig C with a backlog: where the arm must start streaming (recorded before the inserts). None: the
    /// arm starts from the server's current position.
    pub start_at: Option<BinlogPosition>,
}

/// A name of this run's own (its private directory's), for consumer groups and connector names that must
/// not meet an earlier run's committed offsets.
pub fn run_tag(job: &Job) -> String {
    job.work_dir.file_name().map_or_else(|| std::process::id().to_string(), |n| n.to_string_lossy().into_owned())
}

/// One arm of the matrix: how it starts its pipeline for a rig.
pub trait CdcArm {
    fn name(&self) -> &'static str;
    /// The rigs and knobs this arm can run; anything else is a not-run record with the reason.
    fn check(&self, knobs: &Knobs) -> Result<(), NotRunnable>;
    /// What rig D loads for this arm (the `format` knob may choose).
    fn event_format(&self, knobs: &Knobs) -> EventFormat;
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
    /// What the arm made of the sampled ids ([`content::is_sampled`]), by id: compared with the table.
    pub sample: BTreeMap<i64, Vec<u8>>,
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
    /// What the arm applied (`format`, `key`, `producer.*`, read back where the client can say); the driver
    /// adds what it offered the arm (`workload`, `offered_load`).
    pub applied: Applied,
}

/// Run `arm` for the knobs in `ctx` (the arms' shared entry point).
pub fn run(ctx: &crate::arms::ArmContext, arm: &dyn CdcArm) -> Result<Measurement> {
    run_knobs(&ctx.env, &ctx.knobs()?, arm)
}

/// Run `arm` with `knobs` already parsed (an arm with a knob struct of its own converts it first).
pub fn run_knobs(env: &EnvDescriptor, knobs: &Knobs, arm: &dyn CdcArm) -> Result<Measurement> {
    arm.check(knobs)?;
    rig::run(env, knobs, arm)
}
