//! The rust-rdkafka 0.39 adapter (librdkafka 2.12.1, the library rdkafka-sys 4.10.0 vendors). Its produce loop
//! is the C tool's (examples/rdkafka_performance.c): `produce`, `poll(0)` every 1000 records, `poll(10 ms)` on a
//! full queue, the clock from before the first record to the last delivery report; so C vs rust-rdkafka on the same library shows what
//! the binding costs and nothing else.

use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use rdkafka::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::error::KafkaError;
use rdkafka::producer::{BaseProducer, BaseRecord, FutureProducer, FutureRecord, Producer};
use rdkafka::types::RDKafkaErrorCode;
use rdkafka::util::Timeout;
use rdkafka::{Offset, TopicPartitionList};
use streamlab_process::procfs;
use streamlab_record::EnvDescriptor;
use streamlab_record::applied::{self, Applied, AppliedBuilder};

use super::contract::{
    self, Asymmetries, ClientInfo, ClientKnobs, Fetched, KafkaDriver, LedgerProducer, PacedLoop, Produced,
    ProducerSettings, QueueFullSeen, Ran, applied as client_applied,
};
use crate::kafka::config::client_config;
use crate::kafka::deliveries::Counting;
use crate::kafka::effective::LibrdkafkaConf;

pub mod ledger;
mod paced;

/// Give up on a fetch that makes no progress for this long.
const STALL_TIMEOUT: Duration = Duration::from_secs(60);

/// rust-rdkafka, librdkafka through its Rust binding.
pub struct Rdkafka;

impl KafkaDriver for Rdkafka {
    fn name(&self) -> &'static str {
        "rdkafka"
    }

    fn refuse(&self, knobs: &ClientKnobs) -> Result<()> {
        contract::one_connection_per_broker(knobs, "librdkafka (rust-rdkafka)")?;
        contract::x_payload_only(knobs, "librdkafka (rust-rdkafka)")
    }

    fn ledger(&self) -> Option<&dyn LedgerProducer> {
        Some(self)
    }

    fn paced(&self, env: &EnvDescriptor, knobs: &ClientKnobs, topic: &str) -> Result<Ran<PacedLoop>> {
        self.paced_run(env, knobs, topic)
    }

    fn produce(&self, env: &EnvDescriptor, knobs: &ClientKnobs, topic: &str) -> Result<Ran<Produced>> {
        let (cfg, props) = producer_config(env, knobs)?;
        let applied = producer_applied(knobs, &cfg, client_applied::CLOCK_BEFORE_CONNECT)?.build();
        let producer: BaseProducer<Counting> =
            cfg.create_with_context(Counting::default()).context("cannot create the producer")?;
        let payload = contract::payload(knobs.payload_bytes);
        let cpu_before = procfs::self_cpu_seconds();
        let started = Instant::now();
        let (mut sent, mut queue_full) = (0u64, 0u64);
        while sent < knobs.count {
            match producer.send(BaseRecord::<(), [u8]>::to(topic).payload(&payload)) {
                Ok(()) => {
                    sent += 1;
                    // The C tool serves delivery reports every 1000 records, not after each one.
                    if sent.is_multiple_of(1000) {
                        producer.poll(Duration::ZERO);
                    }
                }
                Err((KafkaError::MessageProduction(RDKafkaErrorCode::QueueFull), _)) => {
                    queue_full += 1;
                    producer.poll(Duration::from_millis(10));
                }
                Err((e, _)) => bail!("produce failed after {sent} records: {e}"),
            }
        }
        let deliveries = &producer.context().0;
        let deadline = Instant::now() + Duration::from_secs(300);
        while deliveries.answered() < knobs.count {
            producer.poll(Duration::from_millis(10));
            if Instant::now() > deadline {
                break;
            }
        }
        let elapsed = started.elapsed();
        let produced = Produced {
            acked: deliveries.acked(),
            failed: deliveries.failed(),
            elapsed,
            client_cpu_s: procfs::self_cpu_seconds() - cpu_before,
            queue_full: QueueFullSeen::Refusals(queue_full),
        };
        drop(producer);
        let info = info(
            format!("rust-rdkafka BaseProducer on {}: {}", knobs.listener, describe(&props)),
            produce_asymmetries(knobs),
            applied,
        );
        Ok(Ran { measured: produced, info })
    }

    fn fetch(&self, env: &EnvDescriptor, knobs: &ClientKnobs, topic: &str, records: u64) -> Result<Ran<Fetched>> {
        let mut cfg = client_config(env, &knobs.listener)?;
        let props = fetch_properties(knobs);
        for (k, v) in &props {
            cfg.set(*k, v);
        }
        cfg.set("group.id", format!("streamlab-fetch-{topic}")).set("enable.auto.commit", "false");
        let applied = client_applied::base(knobs, 1, client_applied::CLOCK_FIRST_RECORD)
            .consumer(LibrdkafkaConf::of_client_config(&cfg)?.consumer())
            .build();
        let consumer: BaseConsumer = cfg.create().context("cannot create the consumer")?;
        let mut tpl = TopicPartitionList::new();
        for p in 0..knobs.partitions {
            tpl.add_partition_offset(topic, p, Offset::Beginning)?;
        }
        consumer.assign(&tpl)?;
        let cpu_before = procfs::self_cpu_seconds();
        let (mut consumed, mut bytes) = (0u64, 0u64);
        let mut first: Option<Instant> = None;
        let mut last_progress = Instant::now();
        while consumed < records {
            match consumer.poll(Duration::from_millis(100)) {
                Some(Ok(msg)) => {
                    first.get_or_insert_with(Instant::now);
                    consumed += 1;
                    bytes += msg.payload_len() as u64;
                    last_progress = Instant::now();
                }
                Some(Err(e)) => bail!("fetch failed after {consumed} records: {e}"),
                None if last_progress.elapsed() > STALL_TIMEOUT => break,
                None => {}
            }
        }
        let elapsed = first.map_or(Duration::ZERO, |f| f.elapsed());
        let fetched = Fetched {
            consumed,
            bytes,
            elapsed,
            client_cpu_s: procfs::self_cpu_seconds() - cpu_before,
            fetch_request_us: Vec::new(),
        };
        let asymmetries = Asymmetries {
            connections: "1 per broker".into(),
            in_flight: "1 Fetch per broker at a time".into(),
            partitioner: "all partitions assigned, from offset 0".into(),
            clock: "from the first record received to the last (connect, metadata and the first fetch excluded, as the C tool does)".into(),
            payload: "preloaded by rust-rdkafka: 'x' repeated".into(),
        };
        let info = info(
            format!(
                "rust-rdkafka BaseConsumer (assign, poll one record at a time) on {}: {}",
                knobs.listener,
                describe(&props)
            ),
            asymmetries,
            applied,
        );
        Ok(Ran { measured: fetched, info })
    }

    fn latency(&self, env: &EnvDescriptor, knobs: &ClientKnobs, topic: &str) -> Result<Ran<Vec<f64>>> {
        let mut cfg = client_config(env, &knobs.listener)?;
        let props = [
            ("acks", knobs.acks.to_string()),
            ("enable.idempotence", knobs.idempotence.to_string()),
            ("linger.ms", "0".to_owned()),
            ("batch.num.messages", "1".to_owned()),
            // partitionline's bench_latency value: room for one record and its framing (one record a batch anyway).
            ("batch.size", knobs.payload_bytes.saturating_add(256).to_string()),
            ("max.in.flight", "1".to_owned()),
            ("socket.nagle.disable", "true".to_owned()),
        ];
        for (k, v) in &props {
            cfg.set(*k, v);
        }
        let applied = producer_applied(knobs, &cfg, client_applied::CLOCK_PER_ROUND_TRIP)?
            .set("producer.partitioner.class", client_applied::EXPLICIT_PARTITION)
            .build();
        // The seed timed FutureProducer::send: its delivery future is awaited while rust-rdkafka's own thread
        // polls, so this thread parks instead of spinning on poll(0).
        let producer: FutureProducer = cfg.create().context("cannot create the producer")?;
        let payload = contract::payload(knobs.payload_bytes);
        let mut samples = Vec::with_capacity(knobs.latency_samples as usize);
        for i in 0..knobs.latency_warmup + knobs.latency_samples {
            let t = Instant::now();
            let record = FutureRecord::<(), [u8]>::to(topic).partition(0).payload(&payload);
            futures_executor::block_on(producer.send(record, Timeout::After(Duration::from_secs(30))))
                .map_err(|(e, _)| e)
                .with_context(|| format!("round trip {i}"))?;
            if i >= knobs.latency_warmup {
                samples.push(t.elapsed().as_secs_f64() * 1e6);
            }
        }
        drop(producer);
        let asymmetries = Asymmetries {
            connections: "1 per broker".into(),
            in_flight: "1 (max.in.flight=1, one record at a time)".into(),
            partitioner: "partition 0".into(),
            clock: "from FutureProducer::send to its delivery future resolving (awaited with block_on; rust-rdkafka's polling thread delivers it), as the seed timed it".into(),
            payload: "'x' repeated".into(),
        };
        let info = info(
            format!(
                "rust-rdkafka FutureProducer, sequential send->delivery on {}: {}",
                knobs.listener,
                describe(&props)
            ),
            asymmetries,
            applied,
        );
        Ok(Ran { measured: samples, info })
    }
}

impl Rdkafka {
    /// The paced workload (see [`KafkaDriver::paced`]), on the produce workload's properties.
    fn paced_run(&self, env: &EnvDescriptor, knobs: &ClientKnobs, topic: &str) -> Result<Ran<PacedLoop>> {
        let (cfg, props) = producer_config(env, knobs)?;
        let applied = producer_applied(knobs, &cfg, client_applied::CLOCK_INTENDED_SEND)?.build();
        let run = paced::paced(&cfg, topic, knobs.rate, knobs.paced_records(), knobs.payload_bytes)?;
        let asymmetries = Asymmetries {
            clock: "each record from its intended send time (the schedule's) to its delivery report, served by \
                    ThreadedProducer's polling thread; connected and the topic's metadata read before the first \
                    record is due"
                .into(),
            payload: "a 16-byte stamp (sequence, intended send), then 'x'".into(),
            ..produce_asymmetries(knobs)
        };
        let command = format!(
            "rust-rdkafka ThreadedProducer on {}: {}; a plain thread offers each stamped record when due (on a full \
             queue: 100 µs and again)",
            knobs.listener,
            describe(&props)
        );
        Ok(Ran { measured: run, info: info(command, asymmetries, applied) })
    }
}

/// The client config of the produce and paced workloads on the knobs' listener, and the properties set on it.
fn producer_config(env: &EnvDescriptor, knobs: &ClientKnobs) -> Result<(ClientConfig, Vec<(&'static str, String)>)> {
    let mut cfg = client_config(env, &knobs.listener)?;
    let props = producer_properties(knobs);
    for (k, v) in &props {
        cfg.set(*k, v);
    }
    Ok((cfg, props))
}

/// The shared producer settings under librdkafka's names, for both benches.
pub fn settings_properties(s: &ProducerSettings) -> Vec<(&'static str, String)> {
    vec![
        ("acks", s.acks.to_string()),
        ("enable.idempotence", s.idempotence.to_string()),
        ("linger.ms", s.linger_ms.to_string()),
    ]
}

/// The producer properties every librdkafka client here gets from the knobs (the C tool takes the same as -X).
pub fn producer_properties(knobs: &ClientKnobs) -> Vec<(&'static str, String)> {
    let mut p = settings_properties(&knobs.producer());
    p.extend([("compression.codec", knobs.compression.name().to_owned()), ("socket.nagle.disable", "true".to_owned())]);
    if knobs.batch_messages > 0 {
        p.push(("batch.num.messages", knobs.batch_messages.to_string()));
    }
    if knobs.batch_bytes > 0 {
        p.push(("batch.size", knobs.batch_bytes.to_string()));
    }
    if knobs.queue_messages > 0 {
        p.push(("queue.buffering.max.messages", knobs.queue_messages.to_string()));
    }
    p
}

/// The consumer properties for a fetch from offset 0 (the C tool takes the same as -X).
pub fn fetch_properties(knobs: &ClientKnobs) -> Vec<(&'static str, String)> {
    vec![
        ("fetch.wait.max.ms", knobs.fetch_max_wait_ms.to_string()),
        ("fetch.min.bytes", knobs.fetch_min_bytes.to_string()),
        ("fetch.message.max.bytes", knobs.fetch_max_bytes.to_string()),
        ("fetch.max.bytes", knobs.fetch_max_bytes.to_string()),
        // rdkafka_performance sets this before parsing flags: the same prefetch for both.
        ("queued.min.messages", "1000000".to_owned()),
    ]
}

/// The work and the producer settings librdkafka holds for `cfg`, its queue cap among them.
fn producer_applied(knobs: &ClientKnobs, cfg: &ClientConfig, clock_start: &str) -> Result<AppliedBuilder> {
    let conf = LibrdkafkaConf::of_client_config(cfg)?;
    let queue_cap = conf.queue_cap().context("librdkafka reports no queue cap")?;
    Ok(client_applied::base(knobs, 1, clock_start).producer(conf.producer()).set(applied::QUEUE_CAP, queue_cap))
}

fn describe(props: &[(&str, String)]) -> String {
    props.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(" ")
}

fn info(command: String, asymmetries: Asymmetries, applied: Applied) -> ClientInfo {
    let (_, librdkafka) = rdkafka::util::get_rdkafka_version();
    ClientInfo {
        versions: crate::versions::client_versions()
            .into_iter()
            .chain([("librdkafka".to_owned(), librdkafka)])
            .collect(),
        command,
        asymmetries,
        note: None,
        applied,
        metrics: Default::default(),
    }
}

fn produce_asymmetries(knobs: &ClientKnobs) -> Asymmetries {
    Asymmetries {
        connections: "1 per broker".into(),
        in_flight: if knobs.idempotence { "5 per connection (idempotence caps it)".into() } else { "1000000 per connection (librdkafka default)".into() },
        partitioner: "consistent_random: keyless records stick to a partition for 2 x linger.ms".into(),
        clock: "from before the first produce() (after the client is created, before it has connected: bootstrap connect, metadata and the leader connection are inside, as for the C tool) to the last delivery report".into(),
        payload: "'x' repeated".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn knobs(overrides: serde_json::Value) -> ClientKnobs {
        let mut v = serde_json::json!({
            "workload": "produce", "listener": "plaintext", "compression": "none", "acks": 1, "idempotence": false,
            "count": 10000, "payload_bytes": 8000, "partitions": 6, "linger_ms": 5, "batch_messages": 0,
            "payload": "x", "queue_full": "park", "connections": 0,
            "batch_bytes": 16384, "queue_messages": 0, "fetch_max_wait_ms": 100, "fetch_min_bytes": 1,
            "fetch_max_bytes": 16777216, "latency_warmup": 10, "latency_samples": 100, "kafka_version": "4.1.0"
        });
        for (k, val) in overrides.as_object().unwrap() {
            v[k] = val.clone();
        }
        serde_json::from_value(v).unwrap()
    }

    fn applied_for(knobs: &ClientKnobs) -> streamlab_record::applied::Applied {
        let mut cfg = rdkafka::config::ClientConfig::new();
        cfg.set("bootstrap.servers", "127.0.0.1:1").set("security.protocol", "plaintext");
        for (k, v) in producer_properties(knobs) {
            cfg.set(k, v);
        }
        producer_applied(knobs, &cfg, "x").unwrap().build()
    }

    #[test]
    fn java_defaults_in_librdkafka_read_back_as_javas_names_and_values() {
        // Seed 002's baseline: acks=all with idempotence, linger 5, batch.size 16384, no compression.
        let a = applied_for(&knobs(serde_json::json!({"acks": -1, "idempotence": true})));
        assert_eq!(a["producer.acks"], "-1");
        assert_eq!(a["producer.enable.idempotence"], "true");
        assert_eq!(a["producer.batch.size"], "16384");
        assert_eq!(a["producer.linger.ms"], "5");
        assert_eq!(a["producer.compression.type"], "none");
        assert_eq!(a["producer.max.in.flight.requests.per.connection"], "5", "idempotence caps it");
        let tuned = applied_for(&knobs(serde_json::json!({"compression": "lz4", "linger_ms": 100})));
        assert_eq!(tuned["producer.max.in.flight.requests.per.connection"], "1000000");
        assert_eq!(tuned["producer.compression.type"], "lz4");
        assert_eq!(a["queue_cap"], "100000 records or 1048576 KiB", "librdkafka's defaults");
        let seed_c = applied_for(&knobs(serde_json::json!({"queue_messages": 1000000})));
        assert_eq!(seed_c["queue_cap"], "1000000 records or 1048576 KiB", "the seed's C side lock");
    }

    #[test]
    fn only_one_connection_per_broker_is_runnable() {
        let err = contract::one_connection_per_broker(&knobs(serde_json::json!({"connections": 8})), "librdkafka")
            .unwrap_err();
        assert!(err.downcast_ref::<contract::NotRunnable>().is_some(), "{err}");
        for n in [0, 1] {
            contract::one_connection_per_broker(&knobs(serde_json::json!({"connections": n})), "x").unwrap();
        }
    }
}
