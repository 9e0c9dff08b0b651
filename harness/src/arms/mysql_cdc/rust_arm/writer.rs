//! Rig D, the Rust writer: a consumer-group member subscribed to the event topic (the bare one, or with
//! `format = connect_envelope` the Connect envelope topic the JDBC sink reads), writing multi-row
//! `INSERT ... VALUES (...),(...)` statements of up to `batch_size` rows, `tasks` of them in flight on
//! connections of their own, autocommit, as the seed's Redpanda Connect `sql_insert` did.
//!
//! As a sink must, it commits its consumer offsets once a batch is written (and every batch before it), and
//! it sends a statement when it holds `batch_size` rows or [`LINGER`] after its first row, whichever comes
//! first. It never learns how many events there are: the driver decides completion from the table's row
//! count, as it does for the JDBC sink, and then stops it. The arm's thread parses and builds the
//! statements; the insert tasks only send them.

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::fmt::Write as _;
use std::sync::{Arc, mpsc as sync_mpsc};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow};
use mysql_async::Conn;
use mysql_async::prelude::Queryable;
use rdkafka::consumer::{BaseConsumer, CommitMode, Consumer};
use rdkafka::message::Message;
use rdkafka::{ClientConfig, Offset, TopicPartitionList};
use serde::Deserialize;
use streamlab_record::applied::{self, Applied, AppliedBuilder};
use tokio::sync::{Mutex, mpsc};

use super::super::{EventFormat, Format, Job, Knobs, NotRunnable, run_tag};
use super::Shared;
use crate::kafka::config::default_client_config;

const TABLE: &str = "benchdb.bench_events";
/// A statement is sent this long after its first row at the latest (the batch fills first at any rate
/// above `batch_size` / LINGER).
pub const LINGER: Duration = Duration::from_millis(100);
/// The longest the feeding loop waits for a message before it looks at the linger and at stopping.
const POLL: Duration = Duration::from_millis(100);
/// The consumer, in librdkafka's names: the JDBC sink's consumer as Kafka Connect runs it (the seed's
/// `consumer.override.fetch.min.bytes` / `fetch.max.wait.ms`, Java's defaults for the fetch sizes), so both
/// sink arms fetch alike. librdkafka has no `max.poll.records`: it hands over one message at a time.
const CONSUMER: &[(&str, &str)] = &[
    ("fetch.min.bytes", "1048576"),
    ("fetch.wait.max.ms", "500"),
    ("fetch.max.bytes", "52428800"),
    ("max.partition.fetch.bytes", "1048576"),
    ("auto.offset.reset", "earliest"),
    ("enable.auto.commit", "false"),
    ("enable.partition.eof", "false"),
    // librdkafka's prefetch queue (a client-only setting, no Java counterpart).
    ("queued.min.messages", "1000000"),
];
/// librdkafka's name -> Java's, for the applied settings.
const CONSUMER_NAMES: &[(&str, &str)] = &[
    ("fetch.min.bytes", "fetch.min.bytes"),
    ("fetch.wait.max.ms", "fetch.max.wait.ms"),
    ("fetch.max.bytes", "fetch.max.bytes"),
    ("max.partition.fetch.bytes", "max.partition.fetch.bytes"),
];

/// One event as the topic holds it (bare JSON, or the payload of the Connect envelope).
#[derive(Debug, Deserialize)]
pub struct Event<'a> {
    pub id: i64,
    #[serde(borrow)]
    pub category: Cow<'a, str>,
    pub value: f64,
    pub ts: i64,
}

/// `{"schema":{...},"payload":{event}}`: the schema is skipped, not checked (the JDBC sink's converter
/// reads it; the table's columns are fixed here).
#[derive(Debug, Deserialize)]
struct Envelope<'a> {
    #[serde(borrow)]
    payload: Event<'a>,
}

/// An event in the topic's format.
pub fn parse(format: EventFormat, value: &[u8]) -> serde_json::Result<Event<'_>> {
    match format {
        EventFormat::Bare => serde_json::from_slice(value),
        EventFormat::ConnectEnvelope => serde_json::from_slice::<Envelope<'_>>(value).map(|e| e.payload),
    }
}

/// The formats the writer reads: the bare topic (`seed`) or the envelope topic (`connect_envelope`).
pub fn check(knobs: &Knobs) -> Result<(), NotRunnable> {
    match knobs.format {
        Format::Seed | Format::ConnectEnvelope => Ok(()),
        Format::RowJson | Format::DebeziumEnvelope => Err(NotRunnable(
            "the sink rig reads the bare event topic (format = seed) or the Connect envelope topic \
             (format = connect_envelope); row_json and debezium_envelope are the source rigs' formats"
                .into(),
        )),
    }
}

/// The topic rig D loads for the writer.
pub fn event_format(knobs: &Knobs) -> EventFormat {
    match knobs.format {
        Format::ConnectEnvelope => EventFormat::ConnectEnvelope,
        _ => EventFormat::Bare,
    }
}

/// The writer's configuration as the record shows it.
pub fn describe(knobs: &Knobs) -> String {
    let consumer = CONSUMER.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(" ");
    let batch = knobs.batch_size.max(1);
    format!(
        "consumer: one group member subscribed to the topic, {consumer}, offsets committed after each written \
         batch; writer: one multi-row INSERT per batch of up to {batch} rows (sent at {batch} rows or {} ms after \
         its first row), autocommit, {} connections, linger.ms={}",
        LINGER.as_millis(),
        knobs.tasks.max(1),
        LINGER.as_millis()
    )
}

/// A multi-row INSERT being built.
pub struct Statement {
    sql: String,
    pub rows: u64,
}

impl Statement {
    pub fn new(capacity_rows: u64) -> Statement {
        let mut s = Statement { sql: String::with_capacity(64 + 64 * capacity_rows as usize), rows: 0 };
        s.reset();
        s
    }

    fn reset(&mut self) {
        self.sql.clear();
        let _ = write!(self.sql, "INSERT INTO {TABLE} (id, category, value, ts) VALUES ");
        self.rows = 0;
    }

    pub fn push(&mut self, e: &Event<'_>) {
        if self.rows > 0 {
            self.sql.push(',');
        }
        let _ = write!(self.sql, "({},", e.id);
        push_quoted(&mut self.sql, &e.category);
        if e.value.is_finite() {
            let _ = write!(self.sql, ",{},{})", e.value, e.ts);
        } else {
            let _ = write!(self.sql, ",NULL,{})", e.ts);
        }
        self.rows += 1;
    }

    /// The finished statement; the builder starts a new one.
    pub fn take(&mut self) -> String {
        let sql = std::mem::take(&mut self.sql);
        self.sql.reserve(sql.len());
        self.reset();
        sql
    }
}

/// A string literal with `'`, `\` and NUL escaped (the server's default sql_mode reads backslash escapes).
fn push_quoted(sql: &mut String, s: &str) {
    sql.push('\'');
    for c in s.chars() {
        match c {
            '\'' => sql.push_str("\\'"),
            '\\' => sql.push_str("\\\\"),
            '\0' => sql.push_str("\\0"),
            c => sql.push(c),
        }
    }
    sql.push('\'');
}

/// Which offsets may be committed: a batch's offsets once it and every batch sent before it are written
/// (the insert tasks finish out of order; committing past a batch still in flight could lose it).
#[derive(Debug, Default)]
pub struct Commits {
    /// Batches sent and not yet committable, in the order they were sent: (sequence, partition -> next offset).
    in_flight: VecDeque<(u64, BTreeMap<i32, i64>)>,
    written: BTreeSet<u64>,
    /// The next offset per partition that everything before has been written for.
    pub committable: BTreeMap<i32, i64>,
}

impl Commits {
    pub fn sent(&mut self, seq: u64, offsets: BTreeMap<i32, i64>) {
        self.in_flight.push_back((seq, offsets));
    }

    /// Batch `seq` is written; true if that made more offsets committable.
    pub fn written(&mut self, seq: u64) -> bool {
        self.written.insert(seq);
        let mut advanced = false;
        while let Some((front, _)) = self.in_flight.front() {
            if !self.written.remove(front) {
                break;
            }
            let (_, offsets) = self.in_flight.pop_front().expect("just looked");
            for (p, next) in offsets {
                let slot = self.committable.entry(p).or_insert(next);
                *slot = (*slot).max(next);
            }
            advanced = true;
        }
        advanced
    }
}

/// What the feeding thread hands an insert task.
struct Batch {
    seq: u64,
    sql: String,
}

/// Consume the event topic and insert it until the driver stops the arm.
pub fn run(job: &Job, shared: &Shared, rt: &tokio::runtime::Runtime) -> Result<()> {
    let batch = job.knobs.batch_size.max(1);
    let tasks = job.knobs.tasks.max(1) as usize;
    let format = event_format(&job.knobs);
    let consumer = subscribed_consumer(job, shared, (tasks, batch))?;
    let (tx, rx) = mpsc::channel::<Batch>(tasks);
    let (done_tx, done) = sync_mpsc::channel::<Result<u64>>();
    let opts = crate::arms::mysql_cdc::db::opts(&job.env, None)?;
    // Held here until the end, so the queue stays open (a send waits) even once every insert task has ended.
    let rx = Arc::new(Mutex::new(rx));
    let workers = spawn_insert_tasks(rt, tasks, &opts, &rx, done_tx);

    let mut feed = Feed { statement: Statement::new(batch), offsets: BTreeMap::new(), first_row: None, seq: 0 };
    let mut commits = Commits::default();
    let mut commit_count = 0u64;
    let mut commit = |commits: &Commits, mode: CommitMode| -> Result<()> {
        let mut tpl = TopicPartitionList::new();
        for (p, next) in &commits.committable {
            tpl.add_partition_offset(&job.topic, *p, Offset::Offset(*next))?;
        }
        consumer.commit(&tpl, mode).context("committing the written batches' offsets")?;
        commit_count += 1;
        Ok(())
    };
    let fed = (|| {
        while !shared.stopping() {
            for written in done.try_iter() {
                if commits.written(written?) {
                    commit(&commits, CommitMode::Async)?;
                }
            }
            let wait = feed.first_row.map_or(POLL, |t| LINGER.saturating_sub(t.elapsed()).min(POLL));
            if let Some(msg) = consumer.poll(wait) {
                let msg = msg.context("consuming the event topic")?;
                let event = parse(format, msg.payload().unwrap_or_default()).with_context(|| {
                    format!("an event that is not {format:?} event JSON at {}/{}", msg.partition(), msg.offset())
                })?;
                feed.push(&event, msg.partition(), msg.offset());
            }
            let lingered = feed.first_row.is_some_and(|t| t.elapsed() >= LINGER);
            if (feed.statement.rows >= batch || lingered) && feed.statement.rows > 0 {
                let (seq, sql, offsets) = feed.take();
                commits.sent(seq, offsets);
                tx.blocking_send(Batch { seq, sql }).map_err(|_| anyhow!("every insert task stopped"))?;
            }
        }
        Ok::<_, anyhow::Error>(())
    })();
    drop(tx);
    for w in workers {
        let _ = rt.block_on(w).context("an insert task panicked")?;
    }
    let mut failed = fed.err();
    for written in done.try_iter() {
        match written {
            Ok(seq) => {
                commits.written(seq);
            }
            Err(e) => failed = failed.or(Some(e)),
        }
    }
    if let Some(e) = failed {
        return Err(e);
    }
    if !commits.committable.is_empty() {
        commit(&commits, CommitMode::Sync)?;
    }
    let committed: i64 = commits.committable.values().sum();
    shared.detail("insert statements", feed.seq.to_string());
    shared.detail(
        "offset commits",
        format!("{commit_count} (after each written batch); the offsets committed last sum to {committed}"),
    );
    Ok(())
}

/// The writer's consumer, in a group of its own per run (nothing committed yet, so it starts from the earliest
/// offsets), subscribed to the event topic; what it applied goes to the record.
fn subscribed_consumer(job: &Job, shared: &Shared, (tasks, batch): (usize, u64)) -> Result<BaseConsumer> {
    let mut config = default_client_config(&job.env)?;
    config.set("group.id", format!("streamlab-rust-writer-{}", run_tag(job)));
    for (k, v) in CONSUMER {
        config.set(*k, *v);
    }
    let mut applied = applied_consumer(&config, tasks)?;
    // In the same words as the JDBC sink's bulk batch: the same work (one INSERT of every row of the batch in one
    // round trip, one transaction).
    applied.insert(applied::SINK.into(), super::super::data::one_insert_per_batch(batch));
    shared.set_applied(applied);
    let consumer: BaseConsumer = config.create().context("creating the writer's consumer")?;
    consumer.subscribe(&[&job.topic]).with_context(|| format!("subscribing to {}", job.topic))?;
    Ok(consumer)
}

/// `tasks` insert tasks, each on its own connection, taking batches from `rx` until it closes and reporting
/// each batch written (or the first failure, after which it stops) on `done`.
fn spawn_insert_tasks(
    rt: &tokio::runtime::Runtime,
    tasks: usize,
    opts: &mysql_async::Opts,
    rx: &Arc<Mutex<mpsc::Receiver<Batch>>>,
    done: sync_mpsc::Sender<Result<u64>>,
) -> Vec<tokio::task::JoinHandle<Result<(), ()>>> {
    (0..tasks)
        .map(|_| {
            let (rx, opts, done_tx) = (rx.clone(), opts.clone(), done.clone());
            rt.spawn(async move {
                let mut conn = match Conn::new(opts).await.context("connecting an insert task") {
                    Ok(c) => c,
                    Err(e) => return done_tx.send(Err(e)).map_err(|_| ()),
                };
                loop {
                    let next = rx.lock().await.recv().await;
                    let Some(b) = next else { break };
                    let written = conn.query_drop(b.sql).await.context("a multi-row INSERT failed").map(|_| b.seq);
                    let failed = written.is_err();
                    done_tx.send(written).map_err(|_| ())?;
                    if failed {
                        break;
                    }
                }
                conn.disconnect().await.ok();
                Ok(())
            })
        })
        .collect()
}

/// The statement being built and what it consumed.
struct Feed {
    statement: Statement,
    /// partition -> the offset after the last message in the statement.
    offsets: BTreeMap<i32, i64>,
    first_row: Option<Instant>,
    seq: u64,
}

impl Feed {
    fn push(&mut self, event: &Event<'_>, partition: i32, offset: i64) {
        self.statement.push(event);
        self.offsets.insert(partition, offset + 1);
        self.first_row.get_or_insert_with(Instant::now);
    }

    fn take(&mut self) -> (u64, String, BTreeMap<i32, i64>) {
        self.first_row = None;
        self.seq += 1;
        (self.seq, self.statement.take(), std::mem::take(&mut self.offsets))
    }
}

/// The consumer settings and connections as run: librdkafka's values (defaults included) read back from
/// the configuration the consumer is created from.
fn applied_consumer(config: &ClientConfig, tasks: usize) -> Result<Applied> {
    let native = config.create_native_config().context("reading the consumer's configuration back")?;
    let mut settings = Vec::new();
    for (librdkafka, java) in CONSUMER_NAMES {
        settings.push((*java, native.get(librdkafka).with_context(|| format!("librdkafka has no {librdkafka}"))?));
    }
    Ok(AppliedBuilder::new()
        .consumer(settings)
        .set(applied::CONNECTIONS, format!("1 consumer, {tasks} concurrent inserts"))
        .build())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_batch_into_one_multi_row_insert() {
        let mut s = Statement::new(2);
        for json in [
            r#"{"id":1,"category":"cat_3","value":12.5,"ts":1700000000000000}"#,
            r#"{"id":2,"category":"it's \\ odd","value":1e-7,"ts":2}"#,
        ] {
            s.push(&parse(EventFormat::Bare, json.as_bytes()).unwrap());
        }
        assert_eq!(s.rows, 2);
        assert_eq!(
            s.take(),
            "INSERT INTO benchdb.bench_events (id, category, value, ts) VALUES (1,'cat_3',12.5,1700000000000000),\
             (2,'it\\'s \\\\ odd',0.0000001,2)"
        );
        assert_eq!(s.rows, 0, "the builder starts over");
        s.push(&Event { id: 3, category: "c".into(), value: f64::INFINITY, ts: 3 });
        assert_eq!(s.take(), "INSERT INTO benchdb.bench_events (id, category, value, ts) VALUES (3,'c',NULL,3)");
    }

    #[test]
    fn the_envelope_topic_gives_the_same_event_as_the_bare_one() {
        let mut random = crate::arms::mysql_cdc::data::SplitMix64(9);
        let envelope = crate::arms::mysql_cdc::data::event_json(EventFormat::ConnectEnvelope, 42, &mut random);
        let e = parse(EventFormat::ConnectEnvelope, envelope.as_bytes()).unwrap();
        let bare: serde_json::Value = serde_json::from_str(&envelope).unwrap();
        let payload = bare["payload"].to_string();
        let b = parse(EventFormat::Bare, payload.as_bytes()).unwrap();
        assert_eq!((e.id, &e.category, e.value, e.ts), (42, &b.category, b.value, b.ts));
        assert!(parse(EventFormat::Bare, envelope.as_bytes()).is_err(), "the bare parser refuses an envelope");
    }

    #[test]
    fn offsets_are_committable_only_once_every_earlier_batch_is_written() {
        let mut c = Commits::default();
        c.sent(1, BTreeMap::from([(0, 10), (1, 5)]));
        c.sent(2, BTreeMap::from([(0, 20)]));
        c.sent(3, BTreeMap::from([(1, 9)]));
        assert!(!c.written(2), "batch 1 is still in flight");
        assert!(c.committable.is_empty());
        assert!(c.written(1));
        assert_eq!(c.committable, BTreeMap::from([(0, 20), (1, 5)]), "batches 1 and 2");
        assert!(c.written(3));
        assert_eq!(c.committable, BTreeMap::from([(0, 20), (1, 9)]));
    }

    #[test]
    #[ignore = "needs the lab's MariaDB and Kafka: cargo xtask test"]
    fn the_writer_reads_the_envelope_topic_and_commits_what_it_wrote() {
        // Through the arm's registry entry and its own knobs, as a lab run passes them.
        let knobs = serde_json::json!({
            "rig": "kafka_to_mysql", "rows": 7001, "batch_size": 3000, "tasks": 4, "timeout_s": 120,
            "broker_cores_at_most": 3, "format": "connect_envelope", "producer": "seed", "cdc_load": "unpaced",
            "paced_rows_per_s": 5000,
        });
        let ctx = crate::arms::ArmContext { env: crate::test_env(), knobs: knobs.as_object().unwrap().clone() };
        let m = crate::arms::run(super::super::ARM.bench, super::super::ARM.arm, &ctx).unwrap();
        assert_eq!(m.integrity.status, streamlab_record::IntegrityStatus::Verified, "{:?}", m.integrity);
        assert!(m.integrity.method.contains("all equal"), "{}", m.integrity.method);
        // 7001 rows need at least 3 statements; the last partial one went out on the linger, not on a count.
        assert!(m.details["offset commits"].ends_with("sum to 7001"), "{:?}", m.details);
        assert_eq!(m.applied[applied::FORMAT], "connect-envelope");
        assert_eq!(m.applied["consumer.fetch.min.bytes"], "1048576");
        assert_eq!(m.applied[applied::SINK], "one INSERT of up to 3000 rows per round trip, one transaction per batch");
        assert_eq!(m.applied[applied::WORKLOAD], "sink 7001 events into benchdb.bench_events");
        assert_eq!(m.applied[applied::OFFERED_LOAD], "all events present before the start");
        assert_eq!(m.applied[applied::CONNECTIONS], "1 consumer, 4 concurrent inserts");
        assert!(m.details["config"].contains("linger.ms=100"), "{}", m.details["config"]);
    }

    #[test]
    fn the_consumer_settings_are_read_back_under_javas_names() {
        let mut config = ClientConfig::new();
        config.set("group.id", "g");
        for (k, v) in CONSUMER {
            config.set(*k, *v);
        }
        let a = applied_consumer(&config, 16).unwrap();
        assert_eq!(a["consumer.fetch.min.bytes"], "1048576");
        assert_eq!(a["consumer.fetch.max.wait.ms"], "500");
        assert_eq!(a["consumer.max.partition.fetch.bytes"], "1048576");
        assert_eq!(a[applied::CONNECTIONS], "1 consumer, 16 concurrent inserts");
        assert!(!a.contains_key("consumer.max.poll.records"), "librdkafka has none");
    }
}
