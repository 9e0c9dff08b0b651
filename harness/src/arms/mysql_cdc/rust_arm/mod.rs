//! The Rust arm: our own CDC pipeline in the harness process, on mysql_async 0.37.1 (snapshot queries and
//! the binlog stream) and rust-rdkafka. It runs all four rigs:
//! - `snapshot_drop` / `snapshot_kafka` ([`snapshot`]): a lock-free consistent snapshot paged by id, every
//!   row encoded in the job's format ([`output`]) and discarded (counted) or produced ([`produce`]);
//! - `cdc_kafka` ([`binlog`]): the binlog from the current GTID (or, for a backlog, from the position the
//!   driver recorded before the inserts), inserts of the job's table produced per row;
//! - `kafka_to_mysql` ([`writer`]): the event topic (bare, or the Connect envelope the JDBC sink reads) into
//!   `bench_events` with multi-row INSERTs, committing its offsets and flushing on a linger.
//!
//! Formats ([`output`]): the seed's bare row JSON, Debezium's unwrapped row JSON ([`row_json`],
//! [`connect_values`]) or Debezium's envelope ([`envelope`], from the column definitions in [`columns`]).
//! Knobs it does not apply are neither read nor recorded; values it cannot apply are refused ([`knobs`]).
//!
//! `start` runs the pipeline on a thread of its own (with a one-worker tokio runtime for the server and
//! broker I/O) and returns; `check` reports what the pipeline failed with; `stop` stops and joins it.

pub mod binlog;
pub mod columns;
pub mod connect_values;
pub mod envelope;
pub mod knobs;
pub mod output;
pub mod produce;
pub mod row_image;
pub mod row_json;
pub mod snapshot;
pub mod writer;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;

use anyhow::{Context, Result, anyhow};
use streamlab_record::applied::{Applied, AppliedBuilder, FORMAT, KEY};
use tokio::sync::watch;

use super::ids::IdSet;
use super::{ArmInfo, CdcArm, EventFormat, Job, Knobs, NotRunnable, Rig, Running, SelfCount};
use crate::arms::{ArmContext, ArmSpec};

pub const ARM: ArmSpec = ArmSpec::new::<knobs::Knobs>(super::BENCH, "rust", run);

fn run(ctx: &ArmContext) -> Result<streamlab_record::Measurement> {
    let knobs: knobs::Knobs = ctx.knobs()?;
    super::run_knobs(&ctx.env, &knobs.into_driver_knobs(), &RustArm)
}

pub struct RustArm;

impl CdcArm for RustArm {
    fn name(&self) -> &'static str {
        "rust"
    }

    fn check(&self, knobs: &Knobs) -> Result<(), NotRunnable> {
        knobs::check(knobs)
    }

    fn event_format(&self, knobs: &Knobs) -> EventFormat {
        writer::event_format(knobs)
    }

    fn start(&self, job: &Job) -> Result<Box<dyn Running>> {
        let shared = Arc::new(Shared::new(job.knobs.rows));
        let (stop_tx, stop_rx) = watch::channel(false);
        let (job_, shared_) = (job.clone(), shared.clone());
        let thread = std::thread::Builder::new()
            .name("rust-arm".into())
            .spawn(move || {
                if let Err(e) = pipeline(&job_, &shared_, stop_rx) {
                    *lock(&shared_.error) = Some(format!("{e:#}"));
                }
            })
            .context("starting the Rust arm's thread")?;
        Ok(Box::new(RustRunning { shared, stop_tx, thread: Some(thread), rig: job.rig, knobs: job.knobs.clone() }))
    }
}

/// What the pipeline thread and the driver share.
pub struct Shared {
    stop: AtomicBool,
    error: Mutex<Option<String>>,
    count: Mutex<SelfCount>,
    details: Mutex<BTreeMap<String, String>>,
    applied: Mutex<Applied>,
}

impl Shared {
    fn new(rows: u64) -> Shared {
        Shared {
            stop: AtomicBool::new(false),
            error: Mutex::new(None),
            count: Mutex::new(SelfCount { ids: IdSet::new(rows), ..Default::default() }),
            details: Mutex::new(BTreeMap::new()),
            applied: Mutex::new(Applied::new()),
        }
    }

    pub fn detail(&self, key: &str, value: String) {
        lock(&self.details).insert(key.to_owned(), value);
    }

    /// Settings the pipeline read back from its clients, for the record's `applied`.
    pub fn set_applied(&self, applied: Applied) {
        lock(&self.applied).extend(applied);
    }

    /// The producer's settings as read back from librdkafka, for the record's `applied` map.
    pub fn applied_producer(&self, settings: &[(&'static str, String)]) {
        self.set_applied(AppliedBuilder::new().producer(settings.iter().map(|(k, v)| (*k, v.clone()))).build());
    }

    /// The drop rig's count, once every row was read.
    pub fn counted(&self, count: SelfCount) {
        *lock(&self.count) = count;
    }

    pub fn stopping(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

struct RustRunning {
    shared: Arc<Shared>,
    stop_tx: watch::Sender<bool>,
    thread: Option<JoinHandle<()>>,
    rig: Rig,
    knobs: Knobs,
}

impl Running for RustRunning {
    fn check(&mut self) -> Result<()> {
        match lock(&self.shared.error).as_ref() {
            Some(e) => Err(anyhow!("the Rust arm failed: {e}")),
            None => Ok(()),
        }
    }

    fn pids(&self) -> Vec<u32> {
        vec![]
    }

    fn in_process(&self) -> bool {
        true
    }

    fn self_count(&self) -> Option<SelfCount> {
        (self.rig == Rig::SnapshotDrop).then(|| lock(&self.shared.count).clone())
    }

    fn self_counted_rows(&self) -> Option<u64> {
        let count = (self.rig == Rig::SnapshotDrop).then(|| lock(&self.shared.count))?;
        count.done.then_some(count.rows)
    }

    fn stop(mut self: Box<Self>) -> Result<ArmInfo> {
        self.shared.stop.store(true, Ordering::Relaxed);
        let _ = self.stop_tx.send(true);
        if let Some(t) = self.thread.take() {
            t.join().map_err(|_| anyhow!("the Rust arm's thread panicked"))?;
        }
        self.check()?;
        let details = std::mem::take(&mut *lock(&self.shared.details));
        let mut info = info(self.rig, &self.knobs, details);
        info.applied.extend(std::mem::take(&mut *lock(&self.shared.applied)));
        Ok(info)
    }
}

fn pipeline(job: &Job, shared: &Arc<Shared>, stop: watch::Receiver<bool>) -> Result<()> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .thread_name("rust-arm-io")
        .enable_all()
        .build()?;
    match job.rig {
        Rig::SnapshotDrop | Rig::SnapshotKafka => snapshot::run(job, shared, &rt),
        Rig::CdcKafka => {
            let (job, shared) = (job.clone(), shared.clone());
            rt.block_on(async move { tokio::spawn(async move { binlog::run(&job, shared, stop).await }).await })?
        }
        Rig::KafkaToMysql => writer::run(job, shared, &rt),
    }
}

/// What the record says about the arm and the settings it ran with.
fn info(rig: Rig, knobs: &Knobs, mut details: BTreeMap<String, String>) -> ArmInfo {
    let mut versions = crate::versions::client_versions();
    versions.insert("mysql_async".into(), "0.37.1 (mysql_common 0.37.3)".into());
    versions.insert("rust-rdkafka".into(), "0.39.0".into());
    let producer = |streaming| {
        let settings = produce::settings(knobs.producer, streaming);
        settings.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(" ")
    };
    let batch = knobs.batch_size;
    let config = match rig {
        Rig::SnapshotDrop => format!(
            "snapshot: REPEATABLE READ, START TRANSACTION WITH CONSISTENT SNAPSHOT; pages of {batch} rows by id \
             (prepared, binary protocol); {} pages in flight; every row encoded ({:?}) and dropped",
            snapshot::PAGES_AHEAD,
            knobs.format
        ),
        Rig::SnapshotKafka => format!(
            "snapshot: as snapshot_drop, pages of {batch} rows, {} pages in flight; format {:?}; producer ({:?}): {}",
            snapshot::PAGES_AHEAD,
            knobs.format,
            knobs.producer,
            producer(false)
        ),
        Rig::CdcKafka => format!(
            "binlog: mysql_async get_binlog_stream, @mariadb_slave_capability=4, GTID resume \
             (@slave_connect_state), @master_binlog_checksum='ALL'; each row produced as decoded; format {:?}; \
             producer ({:?}): {}",
            knobs.format,
            knobs.producer,
            producer(true)
        ),
        Rig::KafkaToMysql => writer::describe(knobs),
    };
    details.insert(
        "server flavours".into(),
        "MariaDB (tested here, 10.11). MySQL 8 would differ in: the snapshot position (no Binlog_snapshot_* \
         status: a brief LOCK INSTANCE FOR BACKUP or FTWRL around START TRANSACTION WITH CONSISTENT SNAPSHOT), \
         GTID resume (COM_BINLOG_DUMP_GTID via BinlogStreamRequest::with_gtid, GTID events 0x21 decoded by \
         mysql_common instead of MariaDB's 0xa2), v2 rows events (decoded) and binlog_row_metadata=FULL for \
         column names"
            .into(),
    );
    let mut applied = Applied::new();
    // The sink rig's format, key and consumer are the driver's and the writer's (rig::sink_applied, writer).
    if rig != Rig::KafkaToMysql {
        let row_format = match knobs.format {
            super::Format::RowJson => {
                "bare row JSON as Debezium's new-record-state unwrap writes it with schemas off and \
                 decimal.handling.mode=string: DECIMAL as a string, DATETIME as epoch ms (UTC), DATE as epoch \
                 days; key {\"id\":N}"
            }
            super::Format::DebeziumEnvelope => {
                "Debezium 3.5 MariaDB's JsonConverter envelope with schemas (before/after/source/transaction/op/\
                 ts_*), DECIMAL as precise base64 with its Decimal schema, DATETIME as epoch ms; key \
                 {\"schema\":..,\"payload\":{\"id\":N}}"
            }
            _ => {
                "bare row JSON: integers as numbers, DECIMAL as a string, DATETIME as 'YYYY-MM-DD \
                 HH:MM:SS[.ffffff]', NULL as null; key: the id as text"
            }
        };
        details.insert("row format".into(), format!("{row_format}; only inserts are produced in cdc_kafka"));
        if let Ok((format, key)) = output::applied_names(knobs.format) {
            let key = if rig == Rig::SnapshotDrop { "none" } else { key };
            applied = AppliedBuilder::new().set(FORMAT, format).set(KEY, key).build();
        }
    }
    ArmInfo { versions, config, details, note: None, applied }
}

#[cfg(test)]
mod tests {
    use streamlab_record::IntegrityStatus;

    use super::*;

    fn run_rig(rig: &str, rows: u64) -> streamlab_record::Measurement {
        run_with(serde_json::json!({ "rig": rig, "rows": rows }))
    }

    /// The arm through its registry entry, with `knobs` over quick defaults.
    fn run_with(knobs: serde_json::Value) -> streamlab_record::Measurement {
        let mut all = serde_json::json!({
            "rig": "snapshot_kafka", "rows": 20_000, "batch_size": 1000, "tasks": 8, "timeout_s": 120,
            "broker_cores_at_most": 3, "format": "seed", "producer": "seed", "cdc_load": "unpaced",
            "paced_rows_per_s": 5000,
        });
        all.as_object_mut().unwrap().extend(knobs.as_object().unwrap().clone());
        let ctx = ArmContext { env: crate::test_env(), knobs: all.as_object().unwrap().clone() };
        let m = crate::arms::run(ARM.bench, ARM.arm, &ctx).unwrap();
        assert_eq!(m.integrity.status, IntegrityStatus::Verified, "{:?}", m.integrity);
        assert!(m.metrics["records_per_s"].value > 0.0, "{:?}", m.metrics);
        m
    }

    #[test]
    #[ignore = "needs the lab's MariaDB and Kafka: cargo xtask test"]
    fn rust_arm_snapshot_drop_reads_every_row_once() {
        let m = run_rig("snapshot_drop", 20_000);
        assert!(m.details["snapshot position"].contains("gtid"), "{:?}", m.details);
    }

    #[test]
    #[ignore = "needs the lab's MariaDB and Kafka: cargo xtask test"]
    fn rust_arm_snapshot_kafka_produces_every_row_once() {
        let m = run_rig("snapshot_kafka", 20_000);
        assert_eq!((m.applied["format"].as_str(), m.applied["key"].as_str()), ("row-json-text-time", "id-text"));
        assert_eq!(m.applied["producer.compression.type"], "lz4");
        assert_eq!(m.applied["workload"], "snapshot 20000 rows of benchdb.cart");
    }

    #[test]
    #[ignore = "needs the lab's MariaDB and Kafka: cargo xtask test"]
    fn rust_arm_cdc_kafka_streams_every_insert_with_its_lag() {
        let m = run_rig("cdc_kafka", 20_000);
        assert!(m.metrics.contains_key("lag_p99_ms"), "{:?}", m.metrics);
        assert_eq!(m.details["transactions"], "2", "{:?}", m.details);
    }

    #[test]
    #[ignore = "needs the lab's MariaDB and Kafka: cargo xtask test"]
    fn rust_arm_drains_a_backlog_from_the_recorded_position_and_says_what_it_applied() {
        let m = run_with(serde_json::json!({
            "rig": "cdc_kafka", "cdc_load": "backlog", "format": "row_json", "producer": "rust",
        }));
        assert!(m.details["start position"].contains("recorded before the backlog"), "{:?}", m.details);
        assert_eq!(m.applied["offered_load"], "all rows present before the start");
        assert_eq!(m.applied["workload"], "cdc backlog of 20000 rows of benchdb_cdc.cart");
        assert_eq!((m.applied["format"].as_str(), m.applied["key"].as_str()), ("row-json", "id-json"));
        // Read back from librdkafka: its idempotent cap on requests in flight, the stream's linger.
        assert_eq!(m.applied["producer.max.in.flight.requests.per.connection"], "5");
        assert_eq!(m.applied["producer.linger.ms"], "1");
        assert_eq!(m.metrics["key_bytes_per_record"].value.round(), 11.0, "{{\"id\":N}} for ids 1..=20000");
    }

    #[test]
    #[ignore = "needs the lab's MariaDB and Kafka: cargo xtask test"]
    fn rust_arm_streams_a_paced_inserter_that_never_runs_ahead_of_its_rate() {
        let m = run_with(serde_json::json!({
            "rig": "cdc_kafka", "rows": 4000, "cdc_load": "paced", "paced_rows_per_s": 2000,
            "format": "debezium_envelope", "producer": "connect_default",
        }));
        // Each commit waits for its last row's due time, so the session can only be slower than the rate.
        assert!(m.metrics["insert_rows_per_s"].value <= 2000.0 * 1.001, "{:?}", m.metrics["insert_rows_per_s"]);
        assert!(m.details["pacing"].contains("commits of 40 rows"), "{:?}", m.details);
        assert!(m.metrics.contains_key("lag_p99_ms"));
        assert_eq!(m.applied["offered_load"], "paced at 2000 rows/s");
        assert_eq!(m.applied["producer.enable.idempotence"], "false");
        assert_eq!(m.applied["format"], "debezium-envelope");
    }

    #[test]
    #[ignore = "needs the lab's MariaDB and Kafka: cargo xtask test"]
    fn rust_arm_kafka_to_mysql_writes_every_event_once_and_weighs_the_events_it_read() {
        let m = run_rig("kafka_to_mysql", 20_000);
        // The events as the loader generated them (their ts field always has 16 digits): the value's mean size.
        let format = match m.applied["format"].as_str() {
            "connect-envelope" => EventFormat::ConnectEnvelope,
            "event-json" => EventFormat::Bare,
            other => panic!("the sink rig reads events, not {other}"),
        };
        let mut random = super::super::data::SplitMix64(0x5eed_0004);
        let generated: usize =
            (1..=20_000).map(|id| super::super::data::event_json(format, id, &mut random).len()).sum();
        let (measured, expected) = (m.metrics["bytes_per_record"].value, generated as f64 / 20_000.0);
        assert!((measured - expected).abs() < 0.5, "{measured} B per event read, {expected} generated");
        assert_eq!(m.metrics["key_bytes_per_record"].value, 0.0, "the events have no key");
    }
}
