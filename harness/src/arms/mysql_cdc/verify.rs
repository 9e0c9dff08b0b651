//! Integrity, read back from where the records landed: every message of the output topic (count, bytes, the
//! digest of ids, the broker's append times, the sampled messages) or every row of the sink table; the
//! source rows of the sample; and the drop rig's server-side count of rows read.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use mysql_async::prelude::Queryable;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::message::{BorrowedMessage, Message, Timestamp};
use rdkafka::{ClientConfig, Offset, TopicPartitionList};
use serde::Deserialize;

use super::content::{self, Cell, ContentReport, Row};
use super::db::Db;
use super::ids::IdSet;
use super::{Knobs, Rig, SelfCount, data, probe};

/// Give up reading a topic that makes no progress for this long.
const STALL: Duration = Duration::from_secs(30);

/// What landed, read back from the topic, the sink table or the arm's own count, with the content of the
/// sample and (the drop rig) the server's own count of rows read.
pub struct Landed {
    pub messages: u64,
    /// Value bytes: of the records the arm wrote, or in the sink rig of the events it read (a table row has no
    /// wire size of its own; every arm of the rig reads the same topic).
    pub bytes: u64,
    /// Key bytes, likewise.
    pub key_bytes: u64,
    pub ids: IdSet,
    pub first_ms: Option<f64>,
    pub last_ms: Option<f64>,
    /// Rig C: per-row end-to-end lag bounds (ms).
    pub lags_ms: Vec<f64>,
    pub method: String,
    pub content: ContentReport,
    /// The drop rig: rows the server read from the table while the arm ran, or why there is no count.
    pub server_reads: Option<std::result::Result<u64, String>>,
}

impl Landed {
    /// Whether every check passed, and the integrity method saying what was compared.
    pub fn verdict(&self, rows: u64) -> (bool, String) {
        let server_ok = !matches!(self.server_reads, Some(Ok(n)) if n != rows);
        let exact = self.ids.is_exact() && self.messages == rows && self.content.ok() && server_ok;
        let mut method = format!("{}: {}", self.method, self.ids.describe());
        match &self.server_reads {
            Some(Ok(n)) => method.push_str(&format!(
                "; rows the server read from the table while the arm ran (information_schema.TABLE_STATISTICS) \
                 == rows ({rows}): {n}"
            )),
            Some(Err(why)) => method.push_str(&format!("; no server-side count of rows read: {why}")),
            None => {}
        }
        method.push_str("; ");
        method.push_str(&self.content.describe());
        (exact, method)
    }
}

/// What [`read_back`] needs from the run.
pub struct ReadBack<'a> {
    pub db: &'a Db,
    pub admin: &'a ClientConfig,
    pub knobs: &'a Knobs,
    pub topic: &'a str,
    /// The drop rig: what the arm counted itself.
    pub self_count: Option<SelfCount>,
    /// Rig C: the commit clock's polls.
    pub commits: &'a [(f64, i64)],
    /// The sink rig: the first and last poll of the table's inserted rows (ms).
    pub sink_window: (Option<f64>, Option<f64>),
    pub server_reads: Option<std::result::Result<u64, String>>,
}

/// Read back what landed and compare the sample's content with the source.
pub fn read_back(r: ReadBack<'_>) -> Result<Landed> {
    let (db, knobs, topic, rows) = (r.db, r.knobs, r.topic, r.knobs.rows);
    let src = data::source(knobs.rig);
    let table = format!("{}.{}", src.database, src.table);
    let sample = content::sample_ids(rows);
    let mut landed = match knobs.rig {
        Rig::SnapshotDrop => {
            let c = r.self_count.context("the arm kept no count of the rows it read")?;
            let source = read_rows(db, &table, &sample)?;
            let what = format!("the arm's own encoding of the rows it read with {table}");
            Landed {
                messages: c.rows,
                bytes: c.bytes,
                key_bytes: 0,
                content: content::compare_sample(&what, &sample, &source, &c.sample, ("the table", "the arm")),
                ids: c.ids,
                first_ms: c.first_ms,
                last_ms: c.last_ms,
                lags_ms: vec![],
                method: format!("rows the arm read == rows in the table ({rows}); every id 1..={rows} exactly once"),
                server_reads: None,
            }
        }
        Rig::SnapshotKafka | Rig::CdcKafka => {
            let mut lags_ms = Vec::new();
            let mut messages = BTreeMap::new();
            let TopicReport { messages: count, bytes, key_bytes, ids, first_ms, last_ms } =
                read_topic(r.admin, topic, 1, rows, |id, ms, value| {
                    if let Some(committed) = probe::committed_after(r.commits, id) {
                        lags_ms.push(ms - committed);
                    }
                    if content::is_sampled(id, rows) {
                        messages.entry(id).or_insert_with(|| value.to_vec());
                    }
                })?;
            let source = read_rows(db, &table, &sample)?;
            let what = format!("the messages in {topic} with the rows of {table}");
            Landed {
                messages: count,
                bytes,
                key_bytes,
                ids,
                first_ms,
                last_ms,
                lags_ms,
                method: format!(
                    "messages in {topic} (read back to its high watermark) == rows ({rows}); every id 1..={rows} \
                     exactly once"
                ),
                content: content::compare_sample(&what, &sample, &source, &messages, ("the table", "the message")),
                server_reads: None,
            }
        }
        Rig::KafkaToMysql => {
            let (ids, sink_rows) = read_sink(db, &table, rows)?;
            let events = read_events(r.admin, topic, data::EVENT_PARTITIONS, rows)?;
            let what = format!("the rows of {table} with the events in {topic}");
            Landed {
                messages: ids.count,
                bytes: events.bytes_of(ids.count, events.bytes),
                key_bytes: events.bytes_of(ids.count, events.key_bytes),
                ids,
                first_ms: r.sink_window.0,
                last_ms: r.sink_window.1,
                lags_ms: vec![],
                method: format!("COUNT of {table} == events ({rows}); every id 1..={rows} exactly once"),
                content: content::compare_sample(
                    &what,
                    &sample,
                    &sink_rows,
                    &events.sample,
                    ("the sink table", "the event"),
                ),
                server_reads: None,
            }
        }
    };
    landed.server_reads = r.server_reads;
    Ok(landed)
}

/// The server's statement counters around the sink rig: what the arm's driver actually sent (one INSERT per
/// row, one multi-row INSERT, or one bulk execution per batch). Nothing else inserts during a run.
pub struct StatementCounts(Vec<(&'static str, u64)>);

const STATEMENT_COUNTERS: &[&str] = &["Com_insert", "Com_stmt_prepare", "Com_stmt_execute", "Com_commit"];

impl StatementCounts {
    pub fn read(db: &Db) -> Result<Self> {
        Ok(StatementCounts(STATEMENT_COUNTERS.iter().map(|c| Ok((*c, db.global_status(c)?))).collect::<Result<_>>()?))
    }

    /// e.g. `Com_insert +67, Com_stmt_prepare +0, Com_stmt_execute +0, Com_commit +0: 2985.1 rows per INSERT`.
    pub fn since(&self, db: &Db, rows: u64) -> Result<String> {
        let after = StatementCounts::read(db)?;
        let deltas: Vec<(&str, u64)> = self
            .0
            .iter()
            .zip(&after.0)
            .map(|((name, before), (_, now))| (*name, now.saturating_sub(*before)))
            .collect();
        let mut text = deltas.iter().map(|(n, d)| format!("{n} +{d}")).collect::<Vec<_>>().join(", ");
        if let Some((_, inserts)) = deltas.first().filter(|(_, d)| *d > 0) {
            text.push_str(&format!(" for {rows} rows: {:.1} rows per INSERT statement", rows as f64 / *inserts as f64));
        }
        Ok(text)
    }
}

/// What the output topic holds.
#[derive(Debug, Clone)]
pub struct TopicReport {
    pub messages: u64,
    /// Value bytes (what each arm chose to put on the wire; they differ several-fold between formats).
    pub bytes: u64,
    /// Key bytes.
    pub key_bytes: u64,
    pub ids: IdSet,
    /// The broker's append time of the first and last message (epoch ms).
    pub first_ms: Option<f64>,
    pub last_ms: Option<f64>,
}

/// Read `topic` from the start up to its high watermarks, parsing each value's row id (bare row JSON, a
/// Debezium change event with or without the schema envelope, or a Connect envelope); `each` sees every
/// `(id, append ms, value)`. The topic must use LogAppendTime.
pub fn read_topic(
    cfg: &ClientConfig,
    topic: &str,
    partitions: i32,
    expected: u64,
    mut each: impl FnMut(i64, f64, &[u8]),
) -> Result<TopicReport> {
    let mut report =
        TopicReport { messages: 0, bytes: 0, key_bytes: 0, ids: IdSet::new(expected), first_ms: None, last_ms: None };
    scan_topic(cfg, topic, partitions, |msg| {
        let Timestamp::LogAppendTime(ms) = msg.timestamp() else {
            bail!("{topic} has {:?} timestamps: the driver creates it with LogAppendTime", msg.timestamp());
        };
        let ms = ms as f64;
        report.first_ms = Some(report.first_ms.map_or(ms, |f: f64| f.min(ms)));
        report.last_ms = Some(report.last_ms.map_or(ms, |l: f64| l.max(ms)));
        report.messages += 1;
        let value = msg.payload().unwrap_or_default();
        report.bytes += value.len() as u64;
        report.key_bytes += msg.key().map_or(0, <[u8]>::len) as u64;
        let id = row_id(value).unwrap_or(0);
        report.ids.insert(id);
        each(id, ms, value);
        Ok(())
    })?;
    Ok(report)
}

/// The sink rig's events as read from their topic: the values of the sampled ids (the first of each), and what
/// the events weigh.
pub struct Events {
    pub sample: BTreeMap<i64, Vec<u8>>,
    pub messages: u64,
    /// Value bytes.
    pub bytes: u64,
    /// Key bytes.
    pub key_bytes: u64,
}

impl Events {
    /// The bytes of `rows` of these events at their mean size: each row the sink wrote is one event it read.
    pub fn bytes_of(&self, rows: u64, bytes: u64) -> u64 {
        match self.messages {
            0 => 0,
            n => (u128::from(bytes) * u128::from(rows) / u128::from(n)) as u64,
        }
    }
}

/// Read `topic` from the start to its high watermarks, keeping the sampled ids' values and the events' weight.
pub fn read_events(cfg: &ClientConfig, topic: &str, partitions: i32, rows: u64) -> Result<Events> {
    let mut events = Events { sample: BTreeMap::new(), messages: 0, bytes: 0, key_bytes: 0 };
    scan_topic(cfg, topic, partitions, |msg| {
        let value = msg.payload().unwrap_or_default();
        events.messages += 1;
        events.bytes += value.len() as u64;
        events.key_bytes += msg.key().map_or(0, <[u8]>::len) as u64;
        if let Some(id) = row_id(value).filter(|&id| content::is_sampled(id, rows)) {
            events.sample.entry(id).or_insert_with(|| value.to_vec());
        }
        Ok(())
    })?;
    Ok(events)
}

/// Every message of `topic` from the start up to the high watermarks the read began with.
fn scan_topic(
    cfg: &ClientConfig,
    topic: &str,
    partitions: i32,
    mut each: impl FnMut(&BorrowedMessage<'_>) -> Result<()>,
) -> Result<()> {
    let consumer: BaseConsumer = cfg
        .clone()
        .set("group.id", "streamlab-mysql-cdc-verify")
        .set("enable.auto.commit", "false")
        .set("enable.partition.eof", "false")
        .set("fetch.max.bytes", "52428800")
        .create()
        .context("cannot create the verifying consumer")?;
    let mut tpl = TopicPartitionList::new();
    let mut remaining = 0u64;
    let mut ends = Vec::new();
    for p in 0..partitions {
        let (low, high) = consumer.fetch_watermarks(topic, p, Duration::from_secs(10))?;
        tpl.add_partition_offset(topic, p, Offset::Beginning)?;
        remaining += (high - low).max(0) as u64;
        ends.push(high);
    }
    consumer.assign(&tpl)?;
    let mut last_progress = Instant::now();
    while remaining > 0 {
        let Some(msg) = consumer.poll(Duration::from_millis(200)) else {
            if last_progress.elapsed() > STALL {
                bail!("reading {topic} back stalled with {remaining} messages left");
            }
            continue;
        };
        let msg = msg.with_context(|| format!("reading {topic} back"))?;
        if msg.offset() >= ends[msg.partition() as usize] {
            continue;
        }
        last_progress = Instant::now();
        remaining -= 1;
        each(&msg)?;
    }
    Ok(())
}

/// The row id in a message value: `{"id":..}`, `{"after":{"id":..}}`, `{"payload":{"after":{"id":..}}}` or
/// `{"payload":{"id":..}}`. None for anything else (a tombstone, a schema-change event), counted as a stray.
pub fn row_id(value: &[u8]) -> Option<i64> {
    #[derive(Deserialize)]
    struct Row {
        id: Option<i64>,
        after: Option<Box<Row>>,
        payload: Option<Box<Row>>,
    }
    let row: Row = serde_json::from_slice(value).ok()?;
    fn find(r: &Row) -> Option<i64> {
        r.id.or_else(|| r.after.as_deref().and_then(find)).or_else(|| r.payload.as_deref().and_then(find))
    }
    find(&row)
}

/// Every id in the sink table, and every row of a sampled id (by id), in one pass.
pub fn read_sink(db: &Db, table: &str, expected: u64) -> Result<(IdSet, BTreeMap<i64, Vec<Row>>)> {
    let sql = format!("SELECT * FROM {table}");
    db.block_on(async {
        let mut conn = db.pool().get_conn().await?;
        let mut ids = IdSet::new(expected);
        let mut sample: BTreeMap<i64, Vec<Row>> = BTreeMap::new();
        // The binary protocol: DOUBLE comes back as the double the server holds, not as text.
        let mut result = conn.exec_iter(sql, ()).await?;
        result
            .for_each(|row| {
                let row = content::row_of(&row);
                let id = row.iter().find(|(name, _)| name == "id").and_then(|(_, c)| match c {
                    Cell::Int(i) => i64::try_from(*i).ok(),
                    _ => None,
                });
                ids.insert(id.unwrap_or(0));
                if let Some(id) = id.filter(|&id| content::is_sampled(id, expected)) {
                    sample.entry(id).or_default().push(row);
                }
            })
            .await?;
        Ok::<_, mysql_async::Error>((ids, sample))
    })
    .with_context(|| format!("reading {table} back"))
}

/// The rows of `ids` in `table` (by its primary key `id`), typed by their columns.
pub fn read_rows(db: &Db, table: &str, ids: &[i64]) -> Result<BTreeMap<i64, Vec<Row>>> {
    let mut rows: BTreeMap<i64, Vec<Row>> = BTreeMap::new();
    for chunk in ids.chunks(1000) {
        let marks = vec!["?"; chunk.len()].join(",");
        let sql = format!("SELECT * FROM {table} WHERE id IN ({marks})");
        let got: Vec<mysql_async::Row> = db
            .block_on(async {
                let mut conn = db.pool().get_conn().await?;
                conn.exec(sql, chunk.to_vec()).await
            })
            .with_context(|| format!("reading the sampled rows of {table}"))?;
        for row in got {
            let row = content::row_of(&row);
            if let Some((_, Cell::Int(id))) = row.iter().find(|(name, _)| name == "id") {
                rows.entry(*id as i64).or_default().push(row);
            }
        }
    }
    Ok(rows)
}

/// Rows the server read from one table while an arm ran (the drop rig, where nothing outside the arm sees
/// them): `information_schema.TABLE_STATISTICS`, which counts every row a handler returned for the table
/// and is exact for the keyset pages an arm reads; it needs `userstat`, switched on for the run on the
/// lab's own server and put back after (also when the run fails).
pub struct TableReads<'a> {
    db: &'a Db,
    schema: String,
    table: String,
    before: u64,
    /// userstat's value before the run, to put back (None: left as it was).
    restore: Option<String>,
}

impl<'a> TableReads<'a> {
    /// Err with the reason where the count cannot be had: an external server with userstat off (the lab
    /// does not change a user's server settings).
    pub fn start(db: &'a Db, external: bool, schema: &str, table: &str) -> Result<std::result::Result<Self, String>> {
        let on: Option<(String, String)> = db.query_first("SHOW GLOBAL VARIABLES LIKE 'userstat'")?;
        let Some((_, was)) = on else {
            return Ok(Err("the server has no userstat (TABLE_STATISTICS)".into()));
        };
        let restore = if was.eq_ignore_ascii_case("ON") {
            None
        } else if external {
            return Ok(Err("userstat is off on this external server, which the lab does not change".into()));
        } else {
            db.query_drop("SET GLOBAL userstat = ON")?;
            Some(was)
        };
        let mut reads = TableReads { db, schema: schema.to_owned(), table: table.to_owned(), before: 0, restore };
        reads.before = reads.rows_read()?;
        Ok(Ok(reads))
    }

    fn rows_read(&self) -> Result<u64> {
        let n: Option<u64> = self.db.query_first(&format!(
            "SELECT ROWS_READ FROM information_schema.TABLE_STATISTICS WHERE TABLE_SCHEMA = '{}' AND TABLE_NAME = \
             '{}'",
            self.schema, self.table
        ))?;
        Ok(n.unwrap_or(0))
    }

    /// Rows read since `start` (once the arm has stopped: a statement's reads are counted when it ends).
    pub fn finish(mut self) -> Result<u64> {
        let read = self.rows_read().map(|after| after.saturating_sub(self.before));
        if let Some(was) = self.restore.take() {
            self.db.query_drop(&format!("SET GLOBAL userstat = {was}"))?;
        }
        read
    }
}

impl Drop for TableReads<'_> {
    fn drop(&mut self) {
        if let Some(was) = self.restore.take() {
            let _ = self.db.query_drop(&format!("SET GLOBAL userstat = {was}"));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_row_id_is_found_in_every_shape_the_arms_write() {
        assert_eq!(row_id(br#"{"id":3,"user_id":9}"#), Some(3));
        assert_eq!(row_id(br#"{"before":null,"after":{"id":4,"server_id":1},"source":{"server_id":7}}"#), Some(4));
        assert_eq!(
            row_id(br#"{"schema":{"fields":[{"field":"id"}]},"payload":{"before":null,"after":{"id":5}}}"#),
            Some(5)
        );
        assert_eq!(row_id(br#"{"schema":{},"payload":{"id":6,"category":"cat_1"}}"#), Some(6));
        assert_eq!(row_id(b""), None);
        assert_eq!(row_id(br#"{"source":{"server_id":1},"ddl":"CREATE TABLE"}"#), None);
    }
}
