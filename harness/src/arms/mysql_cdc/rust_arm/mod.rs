//! The Rust arm: our own CDC pipeline in the harness process, on mysql_async 0.37.1 (snapshot queries and
//! the binlog stream) and rust-rdkafka. It runs all four rigs:
//! - `snapshot_drop` / `snapshot_kafka` ([`snapshot`]): a lock-free consistent snapshot paged by id, every
//!   row encoded as bare row JSON ([`row_json`]) and discarded (counted) or produced ([`produce`]);
//! - `cdc_kafka` ([`binlog`]): the binlog from the current GTID, inserts of the job's table produced per row;
//! - `kafka_to_mysql` ([`writer`]): the event topic into `bench_events` with multi-row INSERTs.
//!
//! `start` runs the pipeline on a thread of its own (with a one-worker tokio runtime for the server and
//! broker I/O) and returns; `check` reports what the pipeline failed with; `stop` stops and joins it.

pub mod binlog;
pub mod produce;
pub mod row_image;
pub mod row_json;
pub mod snapshot;
pub mod writer;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::Duration;

use anyhow::{Context, Result, anyhow};
use mysql_async::Conn;
use streamlab_record::applied::Applied;
use tokio::sync::{mpsc, watch};

use super::ids::IdSet;
use super::probe::now_ms;
use super::{ArmInfo, CdcArm, EventFormat, Job, Knobs, NotRunnable, Rig, Running, SelfCount};
use crate::arms::spec::KnobStruct;
use crate::arms::{ArmContext, ArmSpec};
use row_json::id_of;

pub const ARM: ArmSpec = ArmSpec {
    bench: super::BENCH,
    arm: "rust",
    knobs: super::KNOBS,
    run,
    knob_struct: KnobStruct::of::<super::Knobs>(),
};

fn run(ctx: &ArmContext) -> Result<streamlab_record::Measurement> {
    super::run(ctx, &RustArm)
}

/// How long the snapshot's producer may take to have everything acknowledged.
const FLUSH_TIMEOUT: Duration = Duration::from_secs(120);

pub struct RustArm;

impl CdcArm for RustArm {
    fn name(&self) -> &'static str {
        "rust"
    }

    fn check(&self, knobs: &Knobs) -> Result<(), NotRunnable> {
        if knobs.rig == Rig::KafkaToMysql {
            writer::check(knobs)?;
        }
        Ok(())
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
        Rig::SnapshotDrop | Rig::SnapshotKafka => snapshot_rig(job, shared, &rt),
        Rig::CdcKafka => {
            let (job, shared) = (job.clone(), shared.clone());
            rt.block_on(async move { tokio::spawn(async move { binlog::run(&job, shared, stop).await }).await })?
        }
        Rig::KafkaToMysql => writer::run(job, shared, &rt),
    }
}

/// Rigs A and B: the fetch task pages through the snapshot; this thread encodes (and produces) every row.
fn snapshot_rig(job: &Job, shared: &Arc<Shared>, rt: &tokio::runtime::Runtime) -> Result<()> {
    let opts = super::db::opts(&job.env, None)?;
    let (tx, mut rx) = mpsc::channel(snapshot::PAGES_AHEAD);
    let (database, table, batch) = (job.table.database, job.table.table, job.knobs.batch_size.max(1));
    let sh = shared.clone();
    let reader = rt.spawn(async move {
        let mut conn = Conn::new(opts).await.context("connecting the snapshot session")?;
        let position = snapshot::begin(&mut conn).await?;
        sh.detail("snapshot position", position.to_string());
        snapshot::read_pages(conn, database, table, batch, tx).await
    });
    let mut sink = match job.rig {
        Rig::SnapshotKafka => Some(produce::Sink::new(job, false)?),
        _ => None,
    };
    let mut count = SelfCount { ids: IdSet::new(job.knobs.rows), ..Default::default() };
    let mut encoder = None;
    let mut buf = Vec::with_capacity(4096);
    let encoded = (|| {
        while let Some(page) = rx.blocking_recv() {
            if shared.stopping() {
                break;
            }
            let Some(first) = page.rows.first() else { continue };
            let enc = encoder.get_or_insert_with(|| snapshot::encoder_for(first));
            count.first_ms.get_or_insert_with(now_ms);
            for row in &page.rows {
                buf.clear();
                enc.encode(snapshot::values(row), &mut buf);
                let id = row.as_ref(enc.id_index).and_then(id_of).context("a row without an integer id")?;
                count.rows += 1;
                count.bytes += buf.len() as u64;
                count.ids.insert(id);
                if super::content::is_sampled(id, job.knobs.rows) {
                    count.sample.insert(id, buf.clone());
                }
                if let Some(s) = sink.as_mut() {
                    s.send(id, &buf)?;
                }
            }
            if let Some(s) = &sink {
                s.check()?;
            }
        }
        Ok::<_, anyhow::Error>(())
    })();
    drop(rx);
    let read = rt.block_on(reader).context("the snapshot task panicked")?;
    encoded?;
    let read = read?;
    count.last_ms = Some(now_ms());
    if let Some(s) = &sink {
        s.flush(FLUSH_TIMEOUT)?;
    }
    shared.detail("rows read", format!("{read} ({} encoded, {} B of JSON)", count.rows, count.bytes));
    count.done = true;
    *lock(&shared.count) = count;
    Ok(())
}

/// What the record says about the arm and the settings it ran with.
fn info(rig: Rig, knobs: &Knobs, mut details: BTreeMap<String, String>) -> ArmInfo {
    let mut versions = crate::versions::client_versions();
    versions.insert("mysql_async".into(), "0.37.1 (mysql_common 0.37.3)".into());
    versions.insert("rust-rdkafka".into(), "0.39.0".into());
    let producer =
        |streaming| produce::settings(streaming).iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(" ");
    let batch = knobs.batch_size;
    let config = match rig {
        Rig::SnapshotDrop => format!(
            "snapshot: REPEATABLE READ, START TRANSACTION WITH CONSISTENT SNAPSHOT; pages of {batch} rows by id \
             (prepared, binary protocol); {} pages in flight; every row encoded as bare JSON and dropped",
            snapshot::PAGES_AHEAD
        ),
        Rig::SnapshotKafka => format!(
            "snapshot: as snapshot_drop, pages of {batch} rows, {} pages in flight; producer: {}; key = id",
            snapshot::PAGES_AHEAD,
            producer(false)
        ),
        Rig::CdcKafka => format!(
            "binlog: mysql_async get_binlog_stream, @mariadb_slave_capability=4, GTID resume \
             (@slave_connect_state), @master_binlog_checksum='ALL'; each row produced as decoded; producer: {}; \
             key = id",
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
    details.insert(
        "row format".into(),
        "bare row JSON: integers as numbers, DECIMAL as a string, DATETIME as 'YYYY-MM-DD HH:MM:SS[.ffffff]', \
         NULL as null; only inserts are produced in cdc_kafka"
            .into(),
    );
    ArmInfo { versions, config, details, note: None, applied: Applied::new() }
}

#[cfg(test)]
mod tests {
    use streamlab_record::IntegrityStatus;

    use super::*;

    fn run_rig(rig: &str, rows: u64) -> streamlab_record::Measurement {
        let knobs = serde_json::json!({
            "rig": rig, "rows": rows, "batch_size": 1000, "fetch_size": 0, "queue_size": 0, "tasks": 8,
            "schemas": false, "cores": 0, "timeout_s": 120, "broker_cores_at_most": 3,
        });
        let ctx = ArmContext { env: crate::test_env(), knobs: knobs.as_object().unwrap().clone() };
        let m = super::super::run(&ctx, &RustArm).unwrap();
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
        run_rig("snapshot_kafka", 20_000);
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
    fn rust_arm_kafka_to_mysql_writes_every_event_once() {
        run_rig("kafka_to_mysql", 20_000);
    }
}
