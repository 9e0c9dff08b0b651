//! What the driver watches while an arm runs: a topic's high watermarks, the server's inserted-rows counter,
//! and, for rig C, when each inserted row became visible (to measure end-to-end lag) and the inserting session
//! itself. Which binlog stream is the arm's is [`super::streams`]'s.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::{Context, Result};
use mysql_async::prelude::Queryable;
use rdkafka::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer};
use streamlab_process::clock::now_ms_f64;
use tokio::task::JoinHandle;

use super::BinlogPosition;
use super::db::Db;

/// How often the driver looks at a topic's high watermarks.
pub const TOPIC_POLL: Duration = Duration::from_millis(50);
/// How often the driver reads `Innodb_rows_inserted` for the sink rig.
pub const SINK_POLL: Duration = Duration::from_millis(20);
/// How often rig C's commit clock asks for the newest visible id.
pub const COMMIT_POLL: Duration = Duration::from_millis(5);

/// A topic's high-watermark sum, read through one long-lived client.
pub struct TopicWatch {
    consumer: BaseConsumer,
    topic: String,
    partitions: i32,
}

impl TopicWatch {
    pub fn new(cfg: &ClientConfig, topic: &str, partitions: i32) -> Result<Self> {
        let consumer: BaseConsumer = cfg.create().context("cannot create the progress probe's Kafka client")?;
        Ok(TopicWatch { consumer, topic: topic.to_owned(), partitions })
    }

    pub fn count(&self) -> Result<u64> {
        let mut sum = 0;
        for p in 0..self.partitions {
            let (_, high) = self
                .consumer
                .fetch_watermarks(&self.topic, p, Duration::from_secs(5))
                .with_context(|| format!("reading the high watermark of {}/{p}", self.topic))?;
            sum += high.max(0) as u64;
        }
        Ok(sum)
    }
}

/// Rows the server inserted since the watch began (`Innodb_rows_inserted`, or `Handler_write` on servers
/// without it: MariaDB 10.11 has no `Innodb_rows_*` counters; nothing else writes during a run).
pub struct SinkWatch {
    counter: &'static str,
    baseline: u64,
}

impl SinkWatch {
    pub fn new(db: &Db) -> Result<Self> {
        let counter = SINK_COUNTERS
            .iter()
            .copied()
            .find(|c| db.global_status(c).is_ok())
            .with_context(|| format!("the server has none of the status counters {SINK_COUNTERS:?}"))?;
        Ok(SinkWatch { counter, baseline: db.global_status(counter)? })
    }

    pub fn count(&self, db: &Db) -> Result<u64> {
        Ok(db.global_status(self.counter)?.saturating_sub(self.baseline))
    }
}

/// The counters of inserted rows [`SinkWatch`] reads, the first the server has.
const SINK_COUNTERS: &[&str] = &["Innodb_rows_inserted", "Handler_write"];

/// Rig C: `(poll start ms, newest visible id)` every [`COMMIT_POLL`] while the inserts run. A row with id
/// `i` committed after the last poll that did not see it started, so `kafka time - that poll's start` is an
/// upper bound of its end-to-end lag (by at most the poll interval plus one query).
pub struct CommitClock {
    stop: Arc<AtomicBool>,
    task: JoinHandle<Result<Vec<(f64, i64)>>>,
}

impl CommitClock {
    pub fn start(db: &Db, table: &str) -> Result<Self> {
        let mut conn = db.conn()?;
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let sql = format!("SELECT COALESCE(MAX(id), 0) FROM {table}");
        let task = db.runtime().spawn(async move {
            let mut seen = Vec::with_capacity(1 << 16);
            let mut tick = tokio::time::interval(COMMIT_POLL);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            while !flag.load(Ordering::Relaxed) {
                tick.tick().await;
                let at = now_ms_f64();
                let max: Option<i64> = conn.query_first(&sql).await?;
                seen.push((at, max.unwrap_or(0)));
            }
            Ok(seen)
        });
        Ok(CommitClock { stop, task })
    }

    pub fn finish(self, db: &Db) -> Result<Vec<(f64, i64)>> {
        self.stop.store(true, Ordering::Relaxed);
        db.block_on(self.task).context("the commit clock panicked")?
    }
}

/// The commit-visibility bound of id `id`: the start of the last poll that had not seen it yet.
pub fn committed_after(polls: &[(f64, i64)], id: i64) -> Option<f64> {
    let first_seen = polls.partition_point(|&(_, max)| max < id);
    if first_seen == polls.len() {
        return None;
    }
    Some(if first_seen == 0 { polls[0].0 } else { polls[first_seen - 1].0 })
}

/// The server's binlog position now (`SHOW MASTER STATUS`, `@@gtid_binlog_pos`): where a backlog's stream
/// starts (nothing else writes the lab's server during a run, so the global GTID state is this position's).
pub fn binlog_position(db: &Db) -> Result<BinlogPosition> {
    // Four columns (File, Position, Binlog_Do_DB, Binlog_Ignore_DB): the first two are the position.
    let row: Option<mysql_async::Row> = db.query_first("SHOW MASTER STATUS")?;
    let row = row.context("SHOW MASTER STATUS is empty: the server has no binlog (log_bin=OFF)")?;
    let (file, pos): (String, u64) = (row.get(0).context("no binlog file")?, row.get(1).context("no position")?);
    let gtid: Option<String> = db.query_first("SELECT @@GLOBAL.gtid_binlog_pos")?;
    Ok(BinlogPosition { file, pos, gtid: gtid.unwrap_or_default() })
}

/// Commits per second of the paced inserter: small enough commits that the stream is smooth (the seed's
/// 10,000-row commits would arrive as bursts), few enough that the session keeps its schedule.
pub const PACED_COMMITS_PER_S: u64 = 50;

/// Rows per commit of the paced inserter at `rate` rows/s.
pub fn paced_commit_rows(rate: u64) -> u64 {
    (rate / PACED_COMMITS_PER_S).max(1)
}

/// What the inserting session did.
#[derive(Debug, Clone)]
pub struct Inserted {
    pub began_ms: f64,
    pub ended_ms: f64,
    /// The paced session's account of its schedule.
    pub pacing: Option<String>,
}

/// Rig C's inserting session: the seed's procedure on a connection of its own, started and finished at
/// known times; unpaced (one call) or paced (a call per commit, each when its last row is due).
pub struct Inserter {
    task: JoinHandle<Result<Inserted>>,
}

impl Inserter {
    pub fn start(db: &Db, statement: String) -> Result<Self> {
        let mut conn = db.conn()?;
        let task = db.runtime().spawn(async move {
            let began_ms = now_ms_f64();
            conn.query_drop(&statement).await.with_context(|| format!("{statement} failed"))?;
            Ok(Inserted { began_ms, ended_ms: now_ms_f64(), pacing: None })
        });
        Ok(Inserter { task })
    }

    /// `rows` rows at `rate` rows/s in commits of [`paced_commit_rows`]: commit k goes in when its last row is
    /// due (`start + rows up to it / rate`), at once if the session is behind; how far behind it fell is
    /// reported.
    pub fn paced(db: &Db, rows: u64, rate: u64) -> Result<Self> {
        anyhow::ensure!(rate > 0, "paced_rows_per_s must be at least 1");
        let mut conn = db.conn()?;
        let commit = paced_commit_rows(rate);
        let task = db.runtime().spawn(async move {
            let began_ms = now_ms_f64();
            let start = tokio::time::Instant::now();
            let (mut done, mut behind) = (0u64, Duration::ZERO);
            while done < rows {
                let n = commit.min(rows - done);
                let due = start + Duration::from_secs_f64((done + n) as f64 / rate as f64);
                let now = tokio::time::Instant::now();
                if due > now {
                    tokio::time::sleep_until(due).await;
                } else {
                    behind = behind.max(now - due);
                }
                let statement = super::data::cdc_insert_statement(n);
                conn.query_drop(&statement).await.with_context(|| format!("{statement} failed"))?;
                done += n;
            }
            let pacing = format!(
                "{rows} rows at {rate} rows/s in commits of {commit} rows ({PACED_COMMITS_PER_S} a second), each \
                 when its last row was due; the session fell at most {} ms behind that schedule",
                behind.as_millis()
            );
            Ok(Inserted { began_ms, ended_ms: now_ms_f64(), pacing: Some(pacing) })
        });
        Ok(Inserter { task })
    }

    pub fn is_finished(&self) -> bool {
        self.task.is_finished()
    }

    pub fn finish(self, db: &Db) -> Result<Inserted> {
        db.block_on(self.task).context("the inserting session panicked")?
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rows_commit_bound_is_the_last_poll_that_did_not_see_it() {
        let polls = [(100.0, 0), (105.0, 0), (110.0, 10_000), (115.0, 20_000)];
        assert_eq!(committed_after(&polls, 1), Some(105.0));
        assert_eq!(committed_after(&polls, 10_000), Some(105.0));
        assert_eq!(committed_after(&polls, 10_001), Some(110.0));
        assert_eq!(committed_after(&polls, 20_001), None, "never seen: no bound");
    }
}
