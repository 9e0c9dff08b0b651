//! The seed's data: the tables and stored procedures of rigs A-C and the generated events of rig D. Loads are
//! timed and reported in the record, never in an arm's time; a table or topic already holding this loader's
//! `rows` is kept (the seed, too, loaded once per sweep), and the record says it was reused.

use std::time::{Duration, Instant};

use anyhow::{Context, Result, ensure};
use rdkafka::ClientConfig;
use rdkafka::producer::{BaseRecord, DefaultProducerContext, Producer, ThreadedProducer};

use streamlab_record::applied::{Applied, AppliedBuilder, FORMAT, KEY, OFFERED_LOAD, WORKLOAD};

use super::db::Db;
use super::{CdcLoad, EventFormat, Knobs, Rig, Source};
use crate::kafka::admin::{fresh_topic, high_watermark_sum};

const RIG_A_SQL: &str = include_str!("sql/rig_a.sql");
const RIG_BC_SQL: &str = include_str!("sql/rig_bc.sql");
const RIG_D_SQL: &str = include_str!("sql/rig_d.sql");

/// Bumped whenever a loader's data changes, so an older load is never reused.
const LOADER_VERSION: u32 = 1;

/// Rig D's topic: 16 partitions as the seed created it.
pub const EVENT_PARTITIONS: i32 = 16;

/// Where each rig's rows live.
pub fn source(rig: Rig) -> Source {
    match rig {
        Rig::SnapshotDrop => Source { database: "testdb", table: "cart" },
        Rig::SnapshotKafka => Source { database: "benchdb", table: "cart" },
        Rig::CdcKafka => Source { database: "benchdb_cdc", table: "cart" },
        Rig::KafkaToMysql => Source { database: "benchdb", table: "bench_events" },
    }
}

/// How a load went, for the record.
#[derive(Debug, Clone, Copy)]
pub struct Loaded {
    pub rows: u64,
    pub elapsed: Duration,
    pub reused: bool,
}

/// Rig A or B: the table holds exactly `rows` rows of this loader, loading it if it does not.
pub fn load_snapshot_table(db: &Db, rig: Rig, rows: u64) -> Result<Loaded> {
    let src = source(rig);
    let key = format!("{}.{}", src.database, src.table);
    if marker(db, src.database, &key)? == Some(rows) {
        return Ok(Loaded { rows, elapsed: Duration::ZERO, reused: true });
    }
    let started = Instant::now();
    let (sql, procedure) = match rig {
        Rig::SnapshotDrop => (RIG_A_SQL.to_owned(), "streamlab_load_cart"),
        _ => (RIG_BC_SQL.replace("{db}", src.database), "streamlab_insert_cart"),
    };
    db.query_drop(&sql).with_context(|| format!("creating {key}"))?;
    db.query_drop(&format!("CALL {}.{procedure}({rows})", src.database))?;
    let count: Option<u64> = db.query_first(&format!("SELECT COUNT(*) FROM {key}"))?;
    ensure!(count == Some(rows), "loading {key} left {count:?} rows, not {rows}");
    set_marker(db, src.database, &key, rows)?;
    Ok(Loaded { rows, elapsed: started.elapsed(), reused: false })
}

/// Rig C: an empty cart and its insert procedure (truncated before every run, so rows never accumulate
/// across runs the way the seed's did).
pub fn reset_cdc_table(db: &Db) -> Result<()> {
    let src = source(Rig::CdcKafka);
    let exists: Option<u64> = db.query_first(&format!(
        "SELECT COUNT(*) FROM information_schema.routines WHERE routine_schema = '{}' AND routine_name = \
         'streamlab_insert_cart'",
        src.database
    ))?;
    if exists != Some(1) {
        db.query_drop(&RIG_BC_SQL.replace("{db}", src.database))?;
    }
    db.query_drop(&format!("TRUNCATE TABLE {}.{}", src.database, src.table))
}

/// The statement the inserting session runs for rig C: the seed's procedure, unpaced, 10,000-row commits (a
/// call of at most 10,000 rows is one transaction: the paced inserter's commits).
pub fn cdc_insert_statement(rows: u64) -> String {
    format!("CALL {}.streamlab_insert_cart({rows})", source(Rig::CdcKafka).database)
}

/// Rig C with a backlog: the inserting session's whole load, committed before the arm starts (the seed's
/// procedure and commits, timed like a load: not in the arm's time).
pub fn insert_backlog(db: &Db, rows: u64) -> Result<Loaded> {
    let started = Instant::now();
    db.query_drop(&cdc_insert_statement(rows))?;
    Ok(Loaded { rows, elapsed: started.elapsed(), reused: false })
}

/// Rig D: an empty sink table.
pub fn reset_sink_table(db: &Db) -> Result<()> {
    db.query_drop(RIG_D_SQL)?;
    db.query_drop("TRUNCATE TABLE benchdb.bench_events")
}

/// Rig D's topic for `format`: `rows` events with ids 1..=rows on 16 partitions, loaded if it does not hold
/// exactly that many already.
pub fn load_events(admin: &ClientConfig, format: EventFormat, rows: u64) -> Result<(String, Loaded)> {
    let topic = event_topic(format);
    if high_watermark_sum(admin, &topic).ok() == Some(rows) {
        return Ok((topic, Loaded { rows, elapsed: Duration::ZERO, reused: true }));
    }
    let started = Instant::now();
    fresh_topic(admin, &topic, EVENT_PARTITIONS, &[("retention.ms", "-1")])?;
    produce_events(admin, &topic, format, rows)?;
    let hw = high_watermark_sum(admin, &topic)?;
    ensure!(hw == rows, "loading {topic} left {hw} events, not {rows}");
    Ok((topic, Loaded { rows, elapsed: started.elapsed(), reused: false }))
}

pub fn event_topic(format: EventFormat) -> String {
    match format {
        EventFormat::ConnectEnvelope => "bench-events-envelope".into(),
        EventFormat::Bare => "bench-events-bare".into(),
    }
}

/// The seed's generator settings: snappy, batches of up to 3000 events / 4 MiB, no key (sticky partitioner).
fn produce_events(admin: &ClientConfig, topic: &str, format: EventFormat, rows: u64) -> Result<()> {
    let producer: ThreadedProducer<DefaultProducerContext> = admin
        .clone()
        .set("compression.codec", "snappy")
        .set("batch.num.messages", "3000")
        .set("batch.size", "4194304")
        .set("linger.ms", "50")
        .set("queue.buffering.max.messages", "1000000")
        .create()
        .context("creating the event loader's producer")?;
    let mut random = SplitMix64(0x5eed_0004);
    for id in 1..=rows {
        let payload = event_json(format, id, &mut random);
        let mut record = BaseRecord::<(), str>::to(topic).payload(payload.as_str());
        loop {
            match producer.send(record) {
                Ok(()) => break,
                Err((
                    rdkafka::error::KafkaError::MessageProduction(rdkafka::types::RDKafkaErrorCode::QueueFull),
                    r,
                )) => {
                    record = r;
                    std::thread::sleep(Duration::from_millis(5));
                }
                Err((e, _)) => return Err(e).context("producing an event"),
            }
        }
    }
    producer.flush(Duration::from_secs(120)).context("flushing the events")?;
    Ok(())
}

/// One event as the seed generated it: id, `cat_1`..`cat_10`, a value in 0.01..10000.00, the time in µs.
pub fn event_json(format: EventFormat, id: u64, random: &mut SplitMix64) -> String {
    let category = 1 + random.next() % 10;
    let value = (1 + random.next() % 1_000_000) as f64 / 100.0;
    let ts = streamlab_process::clock::now_ns() / 1000;
    let payload = format!(r#"{{"id":{id},"category":"cat_{category}","value":{value},"ts":{ts}}}"#);
    match format {
        EventFormat::Bare => payload,
        EventFormat::ConnectEnvelope => format!(r#"{{"schema":{EVENT_SCHEMA},"payload":{payload}}}"#),
    }
}

/// The Connect JSON schema of rig D's events (the JDBC sink needs it).
const EVENT_SCHEMA: &str = r#"{"type":"struct","fields":[{"type":"int64","optional":false,"field":"id"},{"type":"string","optional":false,"field":"category"},{"type":"double","optional":false,"field":"value"},{"type":"int64","optional":false,"field":"ts"}],"optional":false,"name":"bench_events"}"#;

/// What the driver offered the arm, in the applied map's words: the same strings for every arm at the same
/// point, every rig.
pub fn offered(knobs: &Knobs) -> Applied {
    let src = source(knobs.rig);
    let (table, rows) = (format!("{}.{}", src.database, src.table), knobs.rows);
    let all_present = "all rows present before the start";
    let (workload, offered_load) = match (knobs.rig, knobs.cdc_load) {
        (Rig::SnapshotDrop, _) => (format!("snapshot {rows} rows of {table}, dropped"), all_present.to_owned()),
        (Rig::SnapshotKafka, _) => (format!("snapshot {rows} rows of {table}"), all_present.to_owned()),
        (Rig::CdcKafka, CdcLoad::Backlog) => (format!("cdc backlog of {rows} rows of {table}"), all_present.to_owned()),
        (Rig::CdcKafka, CdcLoad::Unpaced) => {
            (format!("cdc of {rows} rows inserted into {table}"), "unpaced: one inserting session".to_owned())
        }
        (Rig::CdcKafka, CdcLoad::Paced) => {
            (format!("cdc of {rows} rows inserted into {table}"), format!("paced at {} rows/s", knobs.paced_rows_per_s))
        }
        (Rig::KafkaToMysql, _) => {
            (format!("sink {rows} events into {table}"), "all events present before the start".to_owned())
        }
    };
    AppliedBuilder::new().set(WORKLOAD, workload).set(OFFERED_LOAD, offered_load).build()
}

/// The sink rig's `applied.sink` where a batch is one INSERT of all its rows in one round trip, in one
/// transaction: the Rust writer's multi-row INSERT (autocommit) and the JDBC sink's bulk batch (an explicit
/// COMMIT) alike. What decides a batch's end (a linger, a poll's end) is each arm's own, in its config.
pub fn one_insert_per_batch(batch: u64) -> String {
    format!("one INSERT of up to {batch} rows per round trip, one transaction per batch")
}

/// The sink rig's topic as the driver loaded it for an arm, in the applied map's words: its format, and no key.
pub fn sink_topic(format: EventFormat) -> Applied {
    let format = match format {
        EventFormat::ConnectEnvelope => "connect-envelope",
        EventFormat::Bare => "event-json",
    };
    AppliedBuilder::new().set(FORMAT, format).set(KEY, "none").build()
}

/// Small, seeded and good enough for generated values.
pub struct SplitMix64(pub u64);

impl SplitMix64 {
    // An endless generator, not an iterator (clippy would have it implement Iterator).
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

fn marker(db: &Db, database: &str, key: &str) -> Result<Option<u64>> {
    db.query_drop(&format!(
        "CREATE DATABASE IF NOT EXISTS {database}; CREATE TABLE IF NOT EXISTS {database}.streamlab_loaded \
         (tbl VARCHAR(128) PRIMARY KEY, loader INT NOT NULL, row_count BIGINT NOT NULL)"
    ))?;
    let row: Option<(u32, u64)> =
        db.query_first(&format!("SELECT loader, row_count FROM {database}.streamlab_loaded WHERE tbl = '{key}'"))?;
    Ok(row.filter(|(loader, _)| *loader == LOADER_VERSION).map(|(_, rows)| rows))
}

fn set_marker(db: &Db, database: &str, key: &str, rows: u64) -> Result<()> {
    db.query_drop(&format!(
        "REPLACE INTO {database}.streamlab_loaded (tbl, loader, row_count) VALUES ('{key}', {LOADER_VERSION}, {rows})"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_driver_names_what_it_offered_the_same_way_for_every_arm() {
        use crate::arms::mysql_cdc::debezium::props::tests::knobs;
        let at = |rig, cdc_load| offered(&Knobs { rows: 200_000, cdc_load, paced_rows_per_s: 5000, ..knobs(rig) });
        let backlog = at(Rig::CdcKafka, CdcLoad::Backlog);
        assert_eq!(backlog[WORKLOAD], "cdc backlog of 200000 rows of benchdb_cdc.cart");
        assert_eq!(backlog[OFFERED_LOAD], "all rows present before the start");
        assert_eq!(at(Rig::CdcKafka, CdcLoad::Paced)[OFFERED_LOAD], "paced at 5000 rows/s");
        assert_eq!(at(Rig::CdcKafka, CdcLoad::Unpaced)[OFFERED_LOAD], "unpaced: one inserting session");
        assert_eq!(at(Rig::SnapshotKafka, CdcLoad::Unpaced)[WORKLOAD], "snapshot 200000 rows of benchdb.cart");
        let sink = at(Rig::KafkaToMysql, CdcLoad::Unpaced);
        assert_eq!(sink[WORKLOAD], "sink 200000 events into benchdb.bench_events");
        assert_eq!(sink[OFFERED_LOAD], "all events present before the start");
        assert_eq!(sink_topic(EventFormat::ConnectEnvelope)[FORMAT], "connect-envelope");
        assert_eq!(sink_topic(EventFormat::Bare)[KEY], "none");
    }

    #[test]
    fn events_carry_their_id_bare_or_in_the_connect_envelope() {
        let mut r = SplitMix64(1);
        let bare: serde_json::Value = serde_json::from_str(&event_json(EventFormat::Bare, 7, &mut r)).unwrap();
        assert_eq!(bare["id"], 7);
        assert!(bare["category"].as_str().unwrap().starts_with("cat_"));
        let env: serde_json::Value =
            serde_json::from_str(&event_json(EventFormat::ConnectEnvelope, 8, &mut r)).unwrap();
        assert_eq!(env["payload"]["id"], 8);
        assert_eq!(env["schema"]["fields"].as_array().unwrap().len(), 4);
    }
}
