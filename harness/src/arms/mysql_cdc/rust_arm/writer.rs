//! Rig D: consume the event topic from the beginning (every partition assigned at offset 0, no group
//! coordination) and write it with multi-row `INSERT ... VALUES (...),(...)` statements of `batch_size`
//! rows, `tasks` of them in flight on connections of their own, autocommit, as the seed's Redpanda Connect
//! `sql_insert` did. The arm's thread parses and builds the statements; the insert tasks only send them.

use std::borrow::Cow;
use std::fmt::Write as _;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use mysql_async::Conn;
use mysql_async::prelude::Queryable;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::message::Message;
use rdkafka::{Offset, TopicPartitionList};
use serde::Deserialize;
use tokio::sync::{Mutex, mpsc};

use super::super::Job;
use super::Shared;
use crate::kafka::config::{DEFAULT_LISTENER, client_config};

const TABLE: &str = "benchdb.bench_events";

/// One event as the topic holds it (bare JSON).
#[derive(Debug, Deserialize)]
pub struct Event<'a> {
    pub id: i64,
    #[serde(borrow)]
    pub category: Cow<'a, str>,
    pub value: f64,
    pub ts: i64,
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

/// Consume everything the topic held when the run started and insert it.
pub fn run(job: &Job, shared: &Shared, rt: &tokio::runtime::Runtime) -> Result<()> {
    let batch = job.knobs.batch_size.max(1);
    let tasks = job.knobs.tasks.max(1) as usize;
    let consumer: BaseConsumer = client_config(&job.env, DEFAULT_LISTENER)?
        .set("group.id", format!("streamlab-rust-arm-{}", std::process::id()))
        .set("enable.auto.commit", "false")
        .set("enable.partition.eof", "false")
        .set("fetch.max.bytes", "52428800")
        .set("max.partition.fetch.bytes", "4194304")
        .set("queued.min.messages", "1000000")
        .create()
        .context("creating the arm's consumer")?;
    let metadata = consumer.fetch_metadata(Some(&job.topic), Duration::from_secs(10))?;
    let partitions = metadata.topics().first().map(|t| t.partitions().len()).unwrap_or(0);
    if partitions == 0 {
        bail!("{} has no partitions", job.topic);
    }
    let mut tpl = TopicPartitionList::new();
    let mut expected = 0u64;
    for p in 0..partitions as i32 {
        let (low, high) = consumer.fetch_watermarks(&job.topic, p, Duration::from_secs(10))?;
        expected += (high - low).max(0) as u64;
        tpl.add_partition_offset(&job.topic, p, Offset::Beginning)?;
    }
    consumer.assign(&tpl)?;
    shared.detail("events to write", format!("{expected} on {partitions} partitions"));

    let opts = crate::arms::mysql_cdc::db::opts(&job.env, None)?;
    let (tx, rx) = mpsc::channel::<String>(tasks);
    let rx = Arc::new(Mutex::new(rx));
    let workers: Vec<_> = (0..tasks)
        .map(|_| {
            let (rx, opts) = (rx.clone(), opts.clone());
            rt.spawn(async move {
                let mut conn = Conn::new(opts).await.context("connecting an insert task")?;
                let mut statements = 0u64;
                loop {
                    let next = rx.lock().await.recv().await;
                    let Some(sql) = next else { break };
                    conn.query_drop(sql).await.context("a multi-row INSERT failed")?;
                    statements += 1;
                }
                conn.disconnect().await.ok();
                Ok::<_, anyhow::Error>(statements)
            })
        })
        .collect();

    let mut statement = Statement::new(batch);
    let mut consumed = 0u64;
    let feed = (|| {
        while consumed < expected {
            if shared.stopping() {
                bail!("stopped with {consumed} of {expected} events consumed");
            }
            let Some(msg) = consumer.poll(Duration::from_millis(100)) else { continue };
            let msg = msg.context("consuming the event topic")?;
            let payload = msg.payload().unwrap_or_default();
            let event: Event<'_> = serde_json::from_slice(payload)
                .with_context(|| format!("an event that is not bare event JSON at offset {}", msg.offset()))?;
            statement.push(&event);
            consumed += 1;
            if (statement.rows >= batch || consumed == expected) && tx.blocking_send(statement.take()).is_err() {
                bail!("every insert task stopped");
            }
        }
        Ok(())
    })();
    drop(tx);
    let mut statements = 0u64;
    let mut failed = None;
    for w in workers {
        match rt.block_on(w).context("an insert task panicked")? {
            Ok(n) => statements += n,
            Err(e) => failed = failed.or(Some(e)),
        }
    }
    shared.detail("insert statements", statements.to_string());
    if let Some(e) = failed {
        return Err(e);
    }
    feed
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
            s.push(&serde_json::from_str::<Event<'_>>(json).unwrap());
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
}
