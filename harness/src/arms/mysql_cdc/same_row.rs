//! The matched formats, checked on real output: both source arms run the same point on a small table, one
//! message of each for the same row is decoded and compared field by field (values, schemas, keys), their
//! sizes must agree within 5 %, and their records' `applied` maps must agree on every key. The snapshot rig's
//! table is the same for both arms; rig C's rows are inserted again for each arm by the seed's RAND()-valued
//! procedure, so there the row's fields are compared by name and JSON type, not value.

use std::time::Duration;

use anyhow::{Context, Result, bail};
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::message::Message;
use rdkafka::{Offset, TopicPartitionList};
use serde_json::Value;
use streamlab_record::IntegrityStatus;
use streamlab_record::applied::differing_keys;

use super::debezium::source_arm;
use super::rig::run_with;
use super::rust_arm::RustArm;
use super::verify::row_id;
use super::{CdcArm, CdcLoad, Format, Knobs, ProducerProfile, Rig};

/// Rows in the table; the row compared.
const ROWS: u64 = 300;
const ROW: i64 = 123;

fn knobs(rig: Rig, format: Format, producer: ProducerProfile, cdc_load: CdcLoad) -> Knobs {
    Knobs {
        rig,
        rows: ROWS,
        batch_size: 100,
        fetch_size: 0,
        queue_size: 0,
        tasks: 1,
        schemas: format == Format::DebeziumEnvelope,
        cores: 0,
        timeout_s: 240,
        broker_cores_at_most: 3,
        format,
        producer,
        cdc_load,
        paced_rows_per_s: 0,
        jdbc_batch: Default::default(),
    }
}

/// One row's (key, value) as one arm wrote it, and the record of its run.
struct Written {
    key: Value,
    value: Value,
    bytes: usize,
    record: streamlab_record::Measurement,
}

fn run(arm: &dyn CdcArm, knobs: &Knobs) -> Written {
    let mut sample = None;
    let record = run_with(&crate::test_env(), knobs, arm, &mut |admin, topic| {
        sample = Some(message_of(admin, topic, ROW)?);
        Ok(())
    })
    .unwrap_or_else(|e| panic!("{}: {e:#}", arm.name()));
    assert_eq!(record.integrity.status, IntegrityStatus::Verified, "{}: {:?}", arm.name(), record.integrity);
    let (key, value) = sample.expect("the topic was read");
    Written {
        key: serde_json::from_slice(&key).expect("a JSON key"),
        bytes: value.len(),
        value: serde_json::from_slice(&value).expect("a JSON value"),
        record,
    }
}

/// The key and value of the message of row `id` in the 1-partition `topic`.
fn message_of(admin: &rdkafka::ClientConfig, topic: &str, id: i64) -> Result<(Vec<u8>, Vec<u8>)> {
    let consumer: BaseConsumer = admin.clone().set("group.id", "streamlab-same-row").create()?;
    let (_, high) = consumer.fetch_watermarks(topic, 0, Duration::from_secs(10))?;
    let mut tpl = TopicPartitionList::new();
    tpl.add_partition_offset(topic, 0, Offset::Beginning)?;
    consumer.assign(&tpl)?;
    for _ in 0..high * 4 + 100 {
        let Some(msg) = consumer.poll(Duration::from_millis(500)) else { continue };
        let msg = msg?;
        let value = msg.payload().unwrap_or_default();
        if row_id(value) == Some(id) {
            return Ok((msg.key().unwrap_or_default().to_vec(), value.to_vec()));
        }
        if msg.offset() + 1 >= high {
            break;
        }
    }
    bail!("no message of row {id} in {topic}")
}

/// `v` with every string naming a schema after `prefix` renamed after `PREFIX` (each arm names its schemas
/// after its own topic prefix, as Debezium does).
fn renamed(v: &Value, prefix: &str) -> Value {
    match v {
        Value::String(s) => Value::String(match s.strip_prefix(prefix) {
            Some(rest) if rest.starts_with('.') => format!("PREFIX{rest}"),
            _ => s.clone(),
        }),
        Value::Array(a) => Value::Array(a.iter().map(|x| renamed(x, prefix)).collect()),
        Value::Object(o) => Value::Object(o.iter().map(|(k, x)| (k.clone(), renamed(x, prefix))).collect()),
        other => other.clone(),
    }
}

fn keys(v: &Value) -> Vec<&String> {
    v.as_object().map(|o| o.keys().collect()).unwrap_or_default()
}

/// `v`'s fields with each value's JSON type instead of the value.
fn shape(v: &Value) -> Vec<(String, &'static str)> {
    let kind = |x: &Value| match x {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    };
    v.as_object().map(|o| o.iter().map(|(k, x)| (k.clone(), kind(x))).collect()).unwrap_or_default()
}

/// The row's fields: equal values where both arms read the same table, else equal names and JSON types.
fn same_row(rust: &Value, dbz: &Value, same_values: bool, what: &str) {
    if same_values {
        assert_eq!(rust, dbz, "{what}, field by field");
    } else {
        assert_eq!(shape(rust), shape(dbz), "{what}: field names and JSON types");
        assert_eq!(rust["id"], dbz["id"], "{what}: the id");
    }
}

/// Both arms at `knobs`: the same row's messages compared, sizes and applied maps checked. Returns Debezium's
/// record.
fn compare(knobs: Knobs) -> Result<streamlab_record::Measurement> {
    let same_values = knobs.rig == Rig::SnapshotKafka;
    let dbz = run(&source_arm(), &knobs);
    let rust = run(&RustArm, &knobs);
    let prefix = |arm: &str| format!("{arm}-{}", knobs.rig.name()).replace('_', "-");
    let (dp, rp) = (prefix("debezium"), prefix("rust"));
    match knobs.format {
        Format::RowJson => {
            same_row(&rust.value, &dbz.value, same_values, "the row");
            assert_eq!(rust.key, dbz.key);
        }
        Format::DebeziumEnvelope => {
            assert_eq!(renamed(&rust.key, &rp), renamed(&dbz.key, &dp), "the key and its schema");
            assert_eq!(renamed(&rust.value["schema"], &rp), renamed(&dbz.value["schema"], &dp), "the schema");
            let (r, d) = (&rust.value["payload"], &dbz.value["payload"]);
            assert_eq!(keys(r), keys(d), "the payload's fields");
            same_row(&r["after"], &d["after"], same_values, "payload.after");
            for field in ["before", "op", "transaction"] {
                assert_eq!(r[field], d[field], "payload.{field}");
            }
            assert_eq!(keys(&r["source"]), keys(&d["source"]), "source: the same fields (values may differ)");
            for field in ["db", "table"] {
                assert_eq!(r["source"][field], d["source"][field], "source.{field}");
            }
        }
        other => bail!("{other:?} is not a matched format"),
    }
    if same_values {
        let ratio = rust.bytes as f64 / dbz.bytes as f64;
        assert!((0.95..=1.05).contains(&ratio), "row {ROW}: {} B (rust) vs {} B (debezium)", rust.bytes, dbz.bytes);
    }
    let (rb, db) = (&rust.record.metrics["bytes_per_record"], &dbz.record.metrics["bytes_per_record"]);
    let ratio = rb.value / db.value;
    assert!((0.95..=1.05).contains(&ratio), "bytes per record {} (rust) vs {} (debezium)", rb.value, db.value);
    let differing = differing_keys(&rust.record.applied, &dbz.record.applied);
    assert!(
        differing.is_empty(),
        "applied maps differ on {differing:?}:\nrust {:#?}\ndebezium {:#?}",
        rust.record.applied,
        dbz.record.applied
    );
    for key in ["workload", "format", "key", "offered_load", "producer.acks", "producer.linger.ms"] {
        rust.record.applied.get(key).with_context(|| format!("no applied {key}: {:?}", rust.record.applied))?;
    }
    Ok(dbz.record)
}

#[test]
#[ignore = "needs the lab's MariaDB, Kafka and the Connect jars: cargo xtask test"]
fn a_snapshot_row_as_row_json_is_the_same_from_both_arms() {
    compare(knobs(Rig::SnapshotKafka, Format::RowJson, ProducerProfile::Rust, CdcLoad::Unpaced)).unwrap();
}

#[test]
#[ignore = "needs the lab's MariaDB, Kafka and the Connect jars: cargo xtask test"]
fn a_snapshot_row_in_the_envelope_is_the_same_from_both_arms() {
    let k = knobs(Rig::SnapshotKafka, Format::DebeziumEnvelope, ProducerProfile::ConnectDefault, CdcLoad::Unpaced);
    // Debezium's snapshot into Kafka, the seed's rig B, in the seed's envelope: its record is checked here too.
    let m = compare(k).unwrap();
    assert!(m.metrics["records_per_s"].value > 0.0 && m.metrics.contains_key("arm_cpu_s"), "{:?}", m.metrics);
    assert!(m.metrics["startup_s"].value > 0.5, "a JVM's start-up is reported apart: {:?}", m.metrics);
    assert!(m.details["config"].contains("<masked>") && m.details["command"].contains("ConnectStandalone"));
    assert!(m.metrics["bytes_per_record"].value > 1000.0, "the schema envelope: {:?}", m.metrics);
    assert!(m.metrics["key_bytes_per_record"].value > 100.0, "the key's schema: {:?}", m.metrics);
    // Kafka Connect 4.1's default source producer, as the worker logged it.
    for (k, v) in [("acks", "-1"), ("enable.idempotence", "false"), ("max.in.flight.requests.per.connection", "1")] {
        assert_eq!(m.applied[&format!("producer.{k}")], v, "{:?}", m.applied);
    }
    assert_eq!(m.applied["format"], "debezium-envelope");
}

#[test]
#[ignore = "needs the lab's MariaDB, Kafka and the Connect jars: cargo xtask test"]
fn a_backlog_insert_in_the_envelope_is_the_same_from_both_arms() {
    let k = knobs(Rig::CdcKafka, Format::DebeziumEnvelope, ProducerProfile::Rust, CdcLoad::Backlog);
    compare(k).unwrap();
}
