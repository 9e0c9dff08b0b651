//! Integrity, read back from where the records landed: every message of the output topic (count, bytes, the
//! digest of ids, the broker's append times) or every row of the sink table.

use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use mysql_async::prelude::Queryable;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::message::{Message, Timestamp};
use rdkafka::{ClientConfig, Offset, TopicPartitionList};
use serde::Deserialize;

use super::db::Db;
use super::ids::IdSet;

/// Give up reading a topic that makes no progress for this long.
const STALL: Duration = Duration::from_secs(30);

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
/// `(id, append ms)`. The topic must use LogAppendTime.
pub fn read_topic(
    cfg: &ClientConfig,
    topic: &str,
    partitions: i32,
    expected: u64,
    mut each: impl FnMut(i64, f64),
) -> Result<TopicReport> {
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
    let mut report =
        TopicReport { messages: 0, bytes: 0, key_bytes: 0, ids: IdSet::new(expected), first_ms: None, last_ms: None };
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
        each(id, ms);
    }
    Ok(report)
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

/// Every id in the sink table.
pub fn read_sink_ids(db: &Db, table: &str, expected: u64) -> Result<IdSet> {
    let sql = format!("SELECT id FROM {table}");
    db.block_on(async {
        let mut conn = db.pool().get_conn().await?;
        let mut ids = IdSet::new(expected);
        let mut result = conn.query_iter(sql).await?;
        result
            .for_each(|row| {
                let id: Option<i64> = mysql_async::from_row(row);
                ids.insert(id.unwrap_or(0));
            })
            .await?;
        Ok::<_, mysql_async::Error>(ids)
    })
    .with_context(|| format!("reading the ids of {table} back"))
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
