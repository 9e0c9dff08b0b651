//! The clients matrix (seeds 003 and 002): one adapter per Kafka client, every one reading the same knobs,
//! talking to the same broker and checked the same way. Every record's `applied` map ([`applied`]) says the
//! work and the settings the client ran it with, read back from the client where it can say; what the knobs
//! cannot make equal between clients (requests in flight, partitioner) shows there with the value in force,
//! and each adapter describes it in words in its record's details ([`Asymmetries`]).
//!
//! Workloads:
//! - produce: `count` records of `payload_bytes` into a fresh topic of `partitions` partitions; the rate is
//!   acknowledged records over the client's own elapsed time; integrity: the sum of the partitions' high
//!   watermarks equals `count` and the client acknowledged exactly `count` (a flush that said Ok while the
//!   broker holds fewer records fails integrity);
//! - fetch: the topic is filled first (untimed, by rust-rdkafka), then read from offset 0 across all
//!   partitions; integrity: consumed == the high-watermark sum;
//! - latency: `latency_warmup` + `latency_samples` sequential produce -> ack round trips on one partition,
//!   nearest-rank percentiles in microseconds.
//!
//! An adapter that cannot run a point (a feature its client lacks) returns [`NotRunnable`]: the harness
//! exits with [`streamlab_record::arms::NOT_RUNNABLE_EXIT`] and the runner records the point as not run, with the reason.

pub mod applied;
pub mod driver;

pub use streamlab_record::tools::{CTool, JavaTools, TOOLS_ENV, Tools};

use std::collections::BTreeMap;
use std::time::Duration;

use anyhow::{Context, Result};
use rdkafka::ClientConfig;
use serde::Deserialize;
use streamlab_record::applied::Applied;
use streamlab_record::descriptor::Listener;
use streamlab_record::{EnvDescriptor, Integrity, Measurement, Metric};

use crate::arms::ArmContext;
use crate::kafka::admin::{fresh_topic, high_watermark_sum};
use crate::kafka::config::default_client_config;

pub const BENCH: &str = "clients";

pub use streamlab_record::arms::NotRunnable;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Workload {
    Produce,
    Fetch,
    Latency,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Compression {
    None,
    Lz4,
    Zstd,
}

impl Compression {
    /// The name librdkafka, Java and partitionline all use.
    pub fn name(self) -> &'static str {
        match self {
            Compression::None => "none",
            Compression::Lz4 => "lz4",
            Compression::Zstd => "zstd",
        }
    }
}

/// The bytes of each record's value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Payload {
    /// `payload_bytes` of 'x', the same for every client (lz4 keeps about 0.5% of it).
    #[default]
    X,
    /// Random letters A-Z drawn anew for every record, as kafka-producer-perf-test's `--record-size` sends
    /// them (seed 002's tool): lz4 barely compresses them.
    RandomAz,
}

impl Payload {
    /// The applied `format` of a record carrying it.
    pub fn format(self) -> &'static str {
        match self {
            Payload::X => "bytes",
            Payload::RandomAz => "bytes, random A-Z per record",
        }
    }
}

/// What partitionline's produce loop does when the client's queue is full (its loop lives with the client).
pub use streamlab_partitionline::QueueFull;

/// Every client arm reads these knobs, with these names and meanings.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Knobs {
    pub workload: Workload,
    /// The environment listener: `default` (the environment's default: plaintext, or the listener an external
    /// cluster's `--kafka-config` describes), `plaintext`, `ssl`, `scram256`, `scram512` or `oauth`.
    pub listener: String,
    pub compression: Compression,
    /// 1 (leader) or -1 (all).
    pub acks: i32,
    pub idempotence: bool,
    pub count: u64,
    pub payload_bytes: usize,
    pub partitions: i32,
    pub linger_ms: u64,
    /// Records per batch (librdkafka batch.num.messages, partitionline batch_records); 0 = the client's default.
    pub batch_messages: u64,
    /// Bytes per batch (batch.size, partitionline batch_bytes); 0 = the client's default.
    pub batch_bytes: u64,
    /// librdkafka queue.buffering.max.messages (the seed's C side locked it at 1,000,000); 0 = default.
    pub queue_messages: u64,
    pub fetch_max_wait_ms: u64,
    pub fetch_min_bytes: u64,
    pub fetch_max_bytes: u64,
    pub latency_warmup: u64,
    pub latency_samples: u64,
    /// The broker version the runner started for this point (recorded; the runner applies it); absent on a
    /// cluster the lab did not start, which runs its own.
    #[serde(default)]
    pub kafka_version: Option<String>,
    /// Produce connections per broker; 0 = the client's own (partitionline: 8; librdkafka and Java open 1 and
    /// have no setting for more).
    pub connections: u64,
    /// What each record's value holds.
    pub payload: Payload,
    /// What partitionline's produce loop does on QueueFull (librdkafka's and Java's loops wait in the client).
    pub queue_full: QueueFull,
}

/// librdkafka and the Java client open one produce connection per broker and have no setting for more: a
/// point asking for another count is not runnable for them.
pub fn one_connection_per_broker(knobs: &Knobs, client: &str) -> Result<()> {
    if knobs.connections > 1 {
        return Err(NotRunnable(format!(
            "{client} opens one connection per broker and has no setting for more; connections={} is \
             partitionline's knob",
            knobs.connections
        ))
        .into());
    }
    Ok(())
}

/// Only the Java perf tool draws a random A-Z payload per record (its `--record-size`); the other arms send the
/// same 'x' bytes every time, so a point asking for random letters is not runnable for them.
pub fn x_payload_only(knobs: &Knobs, client: &str) -> Result<()> {
    if knobs.payload != Payload::X {
        return Err(NotRunnable(format!(
            "{client} sends the same 'x' payload every record; payload=random_az is kafka-producer-perf-test's \
             own --record-size (seed 002's tool), run by the java arm"
        ))
        .into());
    }
    Ok(())
}

/// What the knobs cannot make equal between clients; every record carries its own.
#[derive(Debug, Clone, Default)]
pub struct Asymmetries {
    /// e.g. `1 per broker` or `8 per broker (partition p on connection p % 8)`.
    pub connections: String,
    /// e.g. `1000000 per connection (5 when idempotent)`.
    pub in_flight: String,
    /// How keyless records are spread: `round-robin per record`, `sticky ...`.
    pub partitioner: String,
    /// When the client's clock starts and stops.
    pub clock: String,
    /// The payload bytes (they decide what lz4 makes of them).
    pub payload: String,
}

impl Asymmetries {
    fn into_details(self) -> BTreeMap<String, String> {
        BTreeMap::from([
            ("connections".into(), self.connections),
            ("in_flight".into(), self.in_flight),
            ("partitioner".into(), self.partitioner),
            ("clock".into(), self.clock),
            ("payload".into(), self.payload),
        ])
    }
}

/// What an adapter measured for a produce run.
#[derive(Debug, Clone)]
pub struct Produced {
    /// Records the broker acknowledged, as the client counted them (never merely queued).
    pub acked: u64,
    /// Records the client reported as failed.
    pub failed: u64,
    /// The client's own elapsed time (see [`Asymmetries::clock`]).
    pub elapsed: Duration,
    /// CPU seconds of the client (the harness process, or the tool process it ran).
    pub client_cpu_s: f64,
    /// CPU seconds of the environment's brokers over the same span; `None` where they cannot be read.
    pub broker_cpu_s: Option<f64>,
    /// How often the client's queue was full, as the client can tell it.
    pub queue_full: QueueFullSeen,
}

/// What a full producer queue cost, in the client's own terms: librdkafka and partitionline refuse a record
/// (QUEUE_FULL, QueueFull) and the caller waits and retries, so the refusals are counted; Java's `send` blocks
/// until buffer.memory has room, so the time it blocked is what there is.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub enum QueueFullSeen {
    /// No count came back (Java's metrics table without `bufferpool-wait-time-ns-total`): the record states none.
    #[default]
    NotCounted,
    Refusals(u64),
    BlockedMs(f64),
}

/// What an adapter measured for a fetch run.
#[derive(Debug, Clone)]
pub struct Fetched {
    pub consumed: u64,
    pub bytes: u64,
    pub elapsed: Duration,
    pub client_cpu_s: f64,
    pub broker_cpu_s: Option<f64>,
    /// Per Fetch request latency samples in microseconds, where the client exposes a fetch call.
    pub fetch_request_us: Vec<f64>,
}

/// Everything about the client for the record: its versions, the exact command or config that ran
/// (secrets masked), and the asymmetries.
#[derive(Debug, Clone, Default)]
pub struct ClientInfo {
    pub versions: BTreeMap<String, String>,
    pub command: String,
    pub asymmetries: Asymmetries,
    pub note: Option<String>,
    /// The work and the settings the client ran it with (see [`applied`]).
    pub applied: Applied,
}

fn metric(value: f64, unit: &str, higher_is_better: bool) -> Metric {
    Metric::new(value, unit, higher_is_better)
}

/// What each record weighs: its value's bytes and its key's (every clients arm sends records without a key), so
/// a ratio can check that both sides did the same work.
fn insert_record_bytes(metrics: &mut BTreeMap<String, Metric>, value_bytes: f64) {
    metrics.insert("bytes_per_record".into(), metric(value_bytes, "B", false));
    metrics.insert("key_bytes_per_record".into(), metric(0.0, "B", false));
}

/// The produce record: rates from acknowledged records, integrity from the broker's high watermarks.
pub fn produce_measurement(knobs: &Knobs, p: &Produced, high_watermark: u64, info: ClientInfo) -> Measurement {
    let secs = p.elapsed.as_secs_f64();
    let mut metrics = BTreeMap::from([
        ("acked".into(), metric(p.acked as f64, "records", true)),
        ("high_watermark".into(), metric(high_watermark as f64, "records", true)),
        ("elapsed_s".into(), metric(secs, "s", false)),
    ]);
    if secs > 0.0 && p.acked > 0 {
        metrics.insert("records_per_s".into(), metric(p.acked as f64 / secs, "records/s", true));
        let mb = p.acked as f64 * knobs.payload_bytes as f64 / 1e6;
        metrics.insert("mb_per_s".into(), metric(mb / secs, "MB/s", true));
        insert_record_bytes(&mut metrics, knobs.payload_bytes as f64);
    }
    crate::cpu::add_cpu(&mut metrics, p.acked, p.client_cpu_s, p.broker_cpu_s);
    match p.queue_full {
        QueueFullSeen::NotCounted => {}
        QueueFullSeen::Refusals(n) => {
            metrics.insert("queue_full_waits".into(), metric(n as f64, "queue-full refusals", false));
        }
        QueueFullSeen::BlockedMs(ms) => {
            metrics.insert("queue_full_blocked_ms".into(), metric(ms, "ms blocked on a full queue", false));
        }
    }
    let integrity = produce_integrity(knobs.count, p, high_watermark);
    finish("produce", metrics, integrity, info)
}

/// Verified only if the client acknowledged every record, reported none failed, and the broker holds them all.
pub fn produce_integrity(count: u64, p: &Produced, high_watermark: u64) -> Integrity {
    let method = format!(
        "sum of partition high watermarks == records sent ({count}) == records the client counted as acknowledged \
         ({}), none failed ({})",
        p.acked, p.failed
    );
    let ok = high_watermark == count && p.acked == count && p.failed == 0;
    Integrity {
        status: if ok {
            streamlab_record::IntegrityStatus::Verified
        } else {
            streamlab_record::IntegrityStatus::Failed
        },
        expected: Some(count),
        observed: Some(high_watermark),
        method,
    }
}

/// The fetch record: consumed must equal the high-watermark sum.
pub fn fetch_measurement(f: &Fetched, high_watermark: u64, info: ClientInfo) -> Measurement {
    let secs = f.elapsed.as_secs_f64();
    let mut metrics = BTreeMap::from([
        ("consumed".into(), metric(f.consumed as f64, "records", true)),
        ("high_watermark".into(), metric(high_watermark as f64, "records", true)),
        ("elapsed_s".into(), metric(secs, "s", false)),
    ]);
    if secs > 0.0 && f.consumed > 0 {
        metrics.insert("records_per_s".into(), metric(f.consumed as f64 / secs, "records/s", true));
        metrics.insert("mb_per_s".into(), metric(f.bytes as f64 / 1e6 / secs, "MB/s", true));
        insert_record_bytes(&mut metrics, f.bytes as f64 / f.consumed as f64);
    }
    crate::cpu::add_cpu(&mut metrics, f.consumed, f.client_cpu_s, f.broker_cpu_s);
    add_percentiles(&mut metrics, "fetch_rpc", &f.fetch_request_us);
    let ok = f.consumed == high_watermark && high_watermark > 0;
    let integrity = Integrity {
        status: if ok {
            streamlab_record::IntegrityStatus::Verified
        } else {
            streamlab_record::IntegrityStatus::Failed
        },
        expected: Some(high_watermark),
        observed: Some(f.consumed),
        method: "records consumed from offset 0 == sum of partition high watermarks".into(),
    };
    finish("fetch", metrics, integrity, info)
}

/// The latency record: nearest-rank p50/p99/p99.9/max of the measured samples (the warm-up is not in them);
/// integrity: every sample was acknowledged and the partition holds warm-up + samples.
pub fn latency_measurement(knobs: &Knobs, samples_us: &[f64], high_watermark: u64, info: ClientInfo) -> Measurement {
    let mut metrics = BTreeMap::from([
        ("samples".into(), metric(samples_us.len() as f64, "round trips", true)),
        ("high_watermark".into(), metric(high_watermark as f64, "records", true)),
    ]);
    add_percentiles(&mut metrics, "produce_ack", samples_us);
    insert_record_bytes(&mut metrics, knobs.payload_bytes as f64);
    let expected = knobs.latency_warmup + knobs.latency_samples;
    let ok = samples_us.len() as u64 == knobs.latency_samples && high_watermark == expected;
    let integrity = Integrity {
        status: if ok {
            streamlab_record::IntegrityStatus::Verified
        } else {
            streamlab_record::IntegrityStatus::Failed
        },
        expected: Some(expected),
        observed: Some(high_watermark),
        method: format!(
            "{} sequential round trips measured after {} warm-up ones; the partition's high watermark == their sum",
            knobs.latency_samples, knobs.latency_warmup
        ),
    };
    finish("latency", metrics, integrity, info)
}

/// `<name>_p50_us`, `_p99_us`, `_p99_9_us`, `_max_us` by nearest rank, when there are samples.
fn add_percentiles(metrics: &mut BTreeMap<String, Metric>, name: &str, samples_us: &[f64]) {
    if samples_us.is_empty() {
        return;
    }
    let mut sorted = samples_us.to_vec();
    sorted.sort_by(f64::total_cmp);
    for (suffix, p) in [("p50", 50.0), ("p99", 99.0), ("p99_9", 99.9), ("max", 100.0)] {
        if let Some(v) = streamlab_record::stats::percentile(&sorted, p) {
            metrics.insert(format!("{name}_{suffix}_us"), metric(v, "µs", false));
        }
    }
}

fn finish(kind: &str, metrics: BTreeMap<String, Metric>, integrity: Integrity, info: ClientInfo) -> Measurement {
    let mut details = info.asymmetries.into_details();
    details.insert("command".into(), info.command);
    Measurement {
        kind: kind.into(),
        metrics,
        integrity,
        verdict: BTreeMap::new(),
        note: info.note,
        details,
        versions: info.versions,
        applied: info.applied,
    }
}

/// The knob value that names the environment's default listener.
pub const DEFAULT_LISTENER_KNOB: &str = "default";

impl Knobs {
    /// The point's knobs, with `listener = "default"` resolved to the environment's default listener (what
    /// every adapter and its record then name).
    pub fn read(ctx: &ArmContext) -> Result<Knobs> {
        let mut knobs: Knobs = ctx.knobs()?;
        if knobs.listener == DEFAULT_LISTENER_KNOB {
            knobs.listener = ctx.env.default_listener().to_owned();
        }
        Ok(knobs)
    }
}

/// The listener the knobs name, with its password read (for clients configured outside librdkafka).
pub fn listener<'e>(env: &'e EnvDescriptor, knobs: &Knobs) -> Result<(&'e Listener, Option<String>)> {
    let l = env.listener(&knobs.listener).with_context(|| {
        let known: Vec<_> = env.kafka.listeners.keys().cloned().collect();
        format!("the environment has no listener {:?}; it has {known:?}", knobs.listener)
    })?;
    let password = l.password()?;
    Ok((l, password))
}

/// The admin/offsets config: the plaintext listener, whatever listener the client under test uses.
pub fn admin_config(env: &EnvDescriptor) -> Result<ClientConfig> {
    default_client_config(env)
}

/// A fresh topic for this run, deleted and created again (one name per arm and workload, so a long matrix
/// never holds more than one copy of each); `partitions` partitions (1 for latency), replication 1.
/// Retention is long enough that nothing is deleted before the run has read and counted it.
pub fn fresh_run_topic(env: &EnvDescriptor, knobs: &Knobs, arm: &str) -> Result<String> {
    let topic = format!("clients-{arm}-{:?}", knobs.workload).to_lowercase();
    let partitions = if knobs.workload == Workload::Latency { 1 } else { knobs.partitions };
    fresh_topic(&admin_config(env)?, &topic, partitions, RUN_RETENTION)?;
    Ok(topic)
}

/// Kept for the whole run (segments roll so that a deleted topic frees its disk quickly).
const RUN_RETENTION: &[(&str, &str)] = &[("retention.ms", "1800000"), ("segment.bytes", "268435456")];

/// The sum of the topic's partition high watermarks, read on the plaintext listener.
pub fn topic_high_watermark(env: &EnvDescriptor, topic: &str) -> Result<u64> {
    high_watermark_sum(&admin_config(env)?, topic)
}

/// Fill `topic` with `knobs.count` records of `knobs.payload_bytes` for a fetch run (untimed; rust-rdkafka on
/// the plaintext listener, acks=1, no compression). Fails unless the broker holds exactly `count` records.
pub fn preload(env: &EnvDescriptor, topic: &str, knobs: &Knobs) -> Result<u64> {
    crate::kafka::fill::fill(&admin_config(env)?, topic, knobs.count, knobs.payload_bytes)?;
    let hw = topic_high_watermark(env, topic)?;
    anyhow::ensure!(hw == knobs.count, "preloading {topic} left {hw} records, not {}", knobs.count);
    Ok(hw)
}

/// The payload every client sends where it can: the same bytes for all, so lz4 sees the same input.
pub fn payload(bytes: usize) -> Vec<u8> {
    vec![b'x'; bytes]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn produced(acked: u64, failed: u64) -> Produced {
        Produced {
            acked,
            failed,
            elapsed: Duration::from_secs(1),
            client_cpu_s: 0.5,
            broker_cpu_s: Some(1.5),
            queue_full: QueueFullSeen::Refusals(7),
        }
    }

    /// A produce of 10 records of 8000 B, with `extra` knobs.
    fn knobs(extra: serde_json::Value) -> Knobs {
        let mut v = serde_json::json!({
            "workload": "produce", "listener": "plaintext", "compression": "none", "acks": 1,
            "idempotence": false, "count": 10, "payload_bytes": 8000, "partitions": 1, "linger_ms": 0,
            "payload": "x", "queue_full": "park", "connections": 0,
            "batch_messages": 0, "batch_bytes": 16384, "queue_messages": 0, "fetch_max_wait_ms": 100,
            "fetch_min_bytes": 1, "fetch_max_bytes": 16777216, "latency_warmup": 1, "latency_samples": 1
        });
        v.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn a_random_payload_is_the_java_tools_own_and_says_so_in_the_format() {
        let x = knobs(serde_json::json!({}));
        assert_eq!((x.payload, x.queue_full), (Payload::X, QueueFull::Park), "the defaults");
        assert!(x_payload_only(&x, "the C tool").is_ok());
        let random = knobs(serde_json::json!({"payload": "random_az", "queue_full": "spin"}));
        let err = x_payload_only(&random, "the C tool").unwrap_err();
        assert!(err.downcast_ref::<NotRunnable>().is_some(), "not runnable, not failed: {err}");
        assert_eq!(random.payload.format(), "bytes, random A-Z per record");
        assert_eq!(applied::base(&random, 1, "x").build()["format"], "bytes, random A-Z per record");
    }

    #[test]
    fn a_produce_record_says_how_full_the_queue_was_in_the_clients_own_terms() {
        let with = |queue_full| {
            let p = Produced { queue_full, ..produced(10, 0) };
            produce_measurement(&knobs(serde_json::json!({})), &p, 10, ClientInfo::default()).metrics
        };
        let counted = with(QueueFullSeen::Refusals(7));
        assert_eq!(counted["queue_full_waits"].value, 7.0);
        assert!(!counted.contains_key("queue_full_blocked_ms"));
        let blocked = with(QueueFullSeen::BlockedMs(12.5));
        assert_eq!(blocked["queue_full_blocked_ms"].value, 12.5);
        assert!(!blocked.contains_key("queue_full_waits"));
        let silent = with(QueueFullSeen::NotCounted);
        assert!(!silent.contains_key("queue_full_waits") && !silent.contains_key("queue_full_blocked_ms"));
    }

    #[test]
    fn a_flush_that_said_ok_while_the_broker_holds_fewer_records_fails_integrity() {
        let short = produce_integrity(1000, &produced(1000, 0), 968);
        assert_eq!(short.status, streamlab_record::IntegrityStatus::Failed);
        assert_eq!((short.expected, short.observed), (Some(1000), Some(968)));
        let counted_short = produce_integrity(1000, &produced(990, 0), 1000);
        assert_eq!(counted_short.status, streamlab_record::IntegrityStatus::Failed);
        let with_failures = produce_integrity(1000, &produced(1000, 3), 1000);
        assert_eq!(with_failures.status, streamlab_record::IntegrityStatus::Failed);
        assert_eq!(
            produce_integrity(1000, &produced(1000, 0), 1000).status,
            streamlab_record::IntegrityStatus::Verified
        );
    }

    #[test]
    fn a_fetch_that_stops_short_or_reads_too_much_fails_integrity() {
        let fetched = |consumed| Fetched {
            consumed,
            bytes: consumed * 100,
            elapsed: Duration::from_millis(500),
            client_cpu_s: 0.1,
            broker_cpu_s: Some(0.3),
            fetch_request_us: vec![],
        };
        let ok = fetch_measurement(&fetched(1000), 1000, ClientInfo::default());
        assert_eq!(ok.integrity.status, streamlab_record::IntegrityStatus::Verified);
        assert_eq!(ok.metrics["records_per_s"].value, 2000.0);
        // The broker's share beside the client's: 0.4 CPU s for 1000 records.
        assert!((ok.metrics["records_per_cpu_s"].value - 2500.0).abs() < 1e-6, "{:?}", ok.metrics);
        for consumed in [999, 1001] {
            let bad = fetch_measurement(&fetched(consumed), 1000, ClientInfo::default());
            assert_eq!(bad.integrity.status, streamlab_record::IntegrityStatus::Failed);
        }
    }

    #[test]
    fn an_empty_run_has_no_rate_rather_than_a_rate_of_zero() {
        let m = fetch_measurement(
            &Fetched {
                consumed: 0,
                bytes: 0,
                elapsed: Duration::ZERO,
                client_cpu_s: 0.0,
                broker_cpu_s: None,
                fetch_request_us: vec![],
            },
            0,
            ClientInfo::default(),
        );
        assert!(!m.metrics.contains_key("records_per_s"));
        assert_eq!(m.integrity.status, streamlab_record::IntegrityStatus::Failed);
    }

    #[test]
    fn latency_percentiles_are_nearest_rank_in_microseconds() {
        let knobs_json = serde_json::json!({
            "workload": "latency", "listener": "plaintext", "compression": "none", "acks": 1, "idempotence": false,
            "count": 0, "payload_bytes": 100, "partitions": 1, "linger_ms": 0, "batch_messages": 1,
            "payload": "x", "queue_full": "park", "connections": 0,
            "batch_bytes": 0, "queue_messages": 0, "fetch_max_wait_ms": 100, "fetch_min_bytes": 1,
            "fetch_max_bytes": 16777216, "latency_warmup": 10, "latency_samples": 100, "kafka_version": "3.9.1"
        });
        let knobs: Knobs = serde_json::from_value(knobs_json).unwrap();
        let samples: Vec<f64> = (1..=100).map(f64::from).collect();
        let m = latency_measurement(&knobs, &samples, 110, ClientInfo::default());
        assert_eq!(m.metrics["produce_ack_p50_us"].value, 50.0);
        assert_eq!(m.metrics["produce_ack_p99_us"].value, 99.0);
        assert_eq!(m.metrics["produce_ack_max_us"].value, 100.0);
        assert_eq!(m.metrics["bytes_per_record"].value, 100.0, "the record's weight, for the parity check");
        assert_eq!(m.integrity.status, streamlab_record::IntegrityStatus::Verified);
        let short = latency_measurement(&knobs, &samples[..99], 109, ClientInfo::default());
        assert_eq!(short.integrity.status, streamlab_record::IntegrityStatus::Failed);
    }
}
