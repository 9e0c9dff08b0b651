//! The client contract: what both Kafka benches ask of a client ([`KafkaDriver`]) and the types they share. A
//! driver is one translator: it turns the bench's request (the knobs, or a [`LedgerWork`]) into its client's
//! settings, runs the client and says what it applied and what it counted. The benches own everything around it:
//! the topic, the high watermarks, integrity, the brokers' CPU, the record. Nothing here knows a bench.
//!
//! An arm that cannot run a point (a feature its client lacks) returns [`NotRunnable`]: the harness exits with
//! [`streamlab_record::arms::NOT_RUNNABLE_EXIT`] and the runner records the point as not run, with the reason.

pub mod applied;
pub mod ledger;

use std::collections::BTreeMap;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use serde::Deserialize;
use streamlab_record::applied::Applied;
use streamlab_record::descriptor::Listener;
use streamlab_record::{EnvDescriptor, Metric};

pub use self::ledger::{FIRST_ACK_WAIT, FirstAck, LedgerProduced, LedgerWork, first_ack};
pub use streamlab_record::arms::NotRunnable;
pub use streamlab_record::paced::{PacedLoop, Schedule, Sent, Tally};
pub use streamlab_record::tools::{CTool, JavaTools, Tool, Tools};

/// One Kafka client, as every Kafka bench drives it. `produce`, `fetch` and `latency` serve the clients bench;
/// [`KafkaDriver::ledger`] the durability bench, for a client that can keep a ledger.
pub trait KafkaDriver: Sync {
    /// The arm's name in every bench that runs the client; its topics are named after it.
    fn name(&self) -> &'static str;

    /// Refuse, as [`NotRunnable`], a clients point the client cannot run (called before a topic is made).
    fn refuse(&self, _knobs: &ClientKnobs) -> Result<()> {
        Ok(())
    }

    /// Why the client has no sequential produce -> ack round trip, if it has none.
    fn no_latency(&self) -> Option<&'static str> {
        None
    }

    /// The programs it runs in the clients bench, which the lab builds or locates before a run that has its arm.
    fn tools(&self) -> &'static [Tool] {
        &[]
    }

    /// `knobs.count` records of `knobs.payload_bytes` into `topic`.
    fn produce(&self, env: &EnvDescriptor, knobs: &ClientKnobs, topic: &str) -> Result<Ran<Produced>>;

    /// Read `topic`, which holds `records` records, from offset 0 on every partition.
    fn fetch(&self, env: &EnvDescriptor, knobs: &ClientKnobs, topic: &str, records: u64) -> Result<Ran<Fetched>>;

    /// `knobs.latency_warmup + knobs.latency_samples` sequential produce -> ack round trips on partition 0 of
    /// `topic`: the measured ones' times in microseconds.
    fn latency(&self, _env: &EnvDescriptor, _knobs: &ClientKnobs, _topic: &str) -> Result<Ran<Vec<f64>>> {
        bail!("{} has no latency workload", self.name())
    }

    /// The paced workload ([`streamlab_record::paced`]): `knobs.paced_records()` records offered at `knobs.rate` a
    /// second on a [`Schedule`], each value stamped, each acknowledgement tallied from the record's intended and
    /// actual send times; not runnable for a client without an open-loop produce.
    fn paced(&self, _env: &EnvDescriptor, _knobs: &ClientKnobs, _topic: &str) -> Result<Ran<PacedLoop>> {
        Err(NotRunnable(format!("{} has no paced (open-loop, fixed-rate) produce loop", self.name())).into())
    }

    /// The client as a producer that keeps a ledger, if it can.
    fn ledger(&self) -> Option<&dyn LedgerProducer> {
        None
    }
}

/// A producer that records, for every record it sent, what became of it.
pub trait LedgerProducer {
    /// The programs it runs, which the lab builds or locates before a run that has its durability arm.
    fn tools(&self) -> &'static [Tool] {
        &[]
    }

    /// Produce to `topic` as [`LedgerWork`] says (the first record alone, its acknowledgement marked in `first`, then
    /// `work.run_time` from that moment), keeping a ledger.
    fn produce_with_ledger(
        &self,
        env: &EnvDescriptor,
        work: &LedgerWork,
        topic: &str,
        first: &FirstAck,
    ) -> Result<LedgerProduced>;
}

/// What a workload measured, and everything the record says about the client that measured it.
#[derive(Debug, Clone)]
pub struct Ran<T> {
    pub measured: T,
    pub info: ClientInfo,
}

/// The producer settings both Kafka benches set, each under one name: every driver translates them once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProducerSettings {
    /// 1 (leader) or -1 (all).
    pub acks: i32,
    pub idempotence: bool,
    pub linger_ms: u64,
    pub payload_bytes: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Workload {
    Produce,
    Fetch,
    Latency,
    /// Open loop at a fixed offered rate: publish and end-to-end latency from each record's intended send time.
    Paced,
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

/// What the clients bench asks of every client, with these names and meanings (the bench reads them from the
/// matrix, its knob schema is read off this struct).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClientKnobs {
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
    /// The paced workload's offered rate, records a second.
    #[serde(default)]
    pub rate: u64,
    /// How long the paced workload offers its rate: `rate * paced_seconds` records.
    #[serde(default)]
    pub paced_seconds: u64,
}

impl ClientKnobs {
    /// The records a paced run sends.
    pub fn paced_records(&self) -> u64 {
        self.rate * self.paced_seconds
    }

    /// The settings every Kafka bench shares.
    pub fn producer(&self) -> ProducerSettings {
        ProducerSettings {
            acks: self.acks,
            idempotence: self.idempotence,
            linger_ms: self.linger_ms,
            payload_bytes: self.payload_bytes,
        }
    }
}

/// librdkafka and the Java client open one produce connection per broker and have no setting for more: a
/// point asking for another count is not runnable for them.
pub fn one_connection_per_broker(knobs: &ClientKnobs, client: &str) -> Result<()> {
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
pub fn x_payload_only(knobs: &ClientKnobs, client: &str) -> Result<()> {
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
    pub fn into_details(self) -> BTreeMap<String, String> {
        BTreeMap::from([
            ("connections".into(), self.connections),
            ("in_flight".into(), self.in_flight),
            ("partitioner".into(), self.partitioner),
            ("clock".into(), self.clock),
            ("payload".into(), self.payload),
        ])
    }
}

/// What a driver measured for a produce run.
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

/// What a driver measured for a fetch run.
#[derive(Debug, Clone)]
pub struct Fetched {
    pub consumed: u64,
    pub bytes: u64,
    pub elapsed: Duration,
    pub client_cpu_s: f64,
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
    /// What only this client can tell (e.g. how many Fetch requests its percentiles stand on), beside the bench's
    /// own metrics.
    pub metrics: BTreeMap<String, Metric>,
}

/// The listener the knobs name, with its password read (for clients configured outside librdkafka).
pub fn listener<'e>(env: &'e EnvDescriptor, knobs: &ClientKnobs) -> Result<(&'e Listener, Option<String>)> {
    let l = env.listener(&knobs.listener).with_context(|| {
        let known: Vec<_> = env.kafka.listeners.keys().cloned().collect();
        format!("the environment has no listener {:?}; it has {known:?}", knobs.listener)
    })?;
    let password = l.password()?;
    Ok((l, password))
}

/// The payload every client sends where it can: the same bytes for all, so lz4 sees the same input.
pub fn payload(bytes: usize) -> Vec<u8> {
    vec![b'x'; bytes]
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A produce of 10 records of 8000 B, with `extra` knobs.
    pub(crate) fn knobs(extra: serde_json::Value) -> ClientKnobs {
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
}
