//! The arm's Kafka producer: rust-rdkafka's `ThreadedProducer` (librdkafka's own threads batch, compress and
//! send; a poller thread runs the delivery callbacks), and every delivery error counted so the pipeline fails
//! rather than loses a row quietly. Its settings follow the `producer` knob: the arm's own (acks=all and
//! idempotence as the seed's franz-go producer had, lz4, 1 MB batches), or Kafka Connect's default source
//! producer mapped onto librdkafka. What the record says it applied is read back from librdkafka.

use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use rdkafka::config::ClientConfig;
use rdkafka::error::KafkaError;
use rdkafka::producer::{BaseRecord, Producer, ThreadedProducer};
use rdkafka::types::RDKafkaErrorCode;

use super::super::{Job, ProducerProfile};
use crate::kafka::config::default_client_config;
use crate::kafka::deliveries::{Counting, Deliveries};

/// The arm's own producer settings per rig: throughput for the snapshot, latency for the stream (the seed's
/// and the `rust` profile's).
pub fn own_settings(streaming: bool) -> Vec<(&'static str, &'static str)> {
    vec![
        ("acks", "all"),
        ("enable.idempotence", "true"),
        // lz4: the cheapest codec to compress on our side and to decompress on the broker's (which validates
        // every batch), and cart's repeated text shrinks ~3x, so the broker writes a third of the bytes.
        ("compression.codec", "lz4"),
        // The snapshot fills 1 MB batches; the stream sends what a transaction has produced after 1 ms.
        ("linger.ms", if streaming { "1" } else { "5" }),
        ("batch.size", "1000000"),
        ("batch.num.messages", "100000"),
        ("queue.buffering.max.messages", "1000000"),
        ("queue.buffering.max.kbytes", "1048576"),
        ("message.timeout.ms", "120000"),
    ]
}

/// Kafka Connect 4.1.0's default source producer (Worker.baseProducerConfigs over the Java client's
/// defaults), as the worker's log prints it for a Debezium task's producer: acks=-1, enable.idempotence=false
/// (Connect sets it), max.in.flight.requests.per.connection=1, linger.ms=5 (Kafka 4's default),
/// batch.size=16384, compression.type=none. Mapped onto librdkafka; the queue limits and timeout stay the
/// arm's (they do not change what is sent).
pub fn connect_default_settings() -> Vec<(&'static str, &'static str)> {
    vec![
        ("acks", "all"),
        ("enable.idempotence", "false"),
        ("max.in.flight.requests.per.connection", "1"),
        ("compression.codec", "none"),
        ("linger.ms", "5"),
        ("batch.size", "16384"),
        ("batch.num.messages", "100000"),
        ("queue.buffering.max.messages", "1000000"),
        ("queue.buffering.max.kbytes", "1048576"),
        ("message.timeout.ms", "120000"),
    ]
}

/// The settings for a `producer` knob.
pub fn settings(profile: ProducerProfile, streaming: bool) -> Vec<(&'static str, &'static str)> {
    match profile {
        ProducerProfile::Seed | ProducerProfile::Rust => own_settings(streaming),
        ProducerProfile::ConnectDefault => connect_default_settings(),
    }
}

/// librdkafka's cap on requests in flight with idempotence (it lowers its default of 1,000,000 to this).
pub const IDEMPOTENT_MAX_IN_FLIGHT: u64 = 5;

/// The arm's own settings in the Java client's names, for Debezium's `producer.override.*` (`producer =
/// rust`): the values librdkafka runs with, its idempotent cap of 5 requests in flight included.
pub fn java_overrides(streaming: bool) -> Vec<(&'static str, String)> {
    let own = own_settings(streaming);
    let get = |k: &str| own.iter().find(|(name, _)| *name == k).map(|(_, v)| (*v).to_owned()).unwrap_or_default();
    vec![
        ("acks", get("acks")),
        ("enable.idempotence", get("enable.idempotence")),
        ("compression.type", get("compression.codec")),
        ("linger.ms", get("linger.ms")),
        ("batch.size", get("batch.size")),
        ("max.in.flight.requests.per.connection", IDEMPOTENT_MAX_IN_FLIGHT.to_string()),
    ]
}

/// The producer settings a record names (harness/record's `PRODUCER_KEYS`), read back from librdkafka's
/// configuration object for `cfg`, under Java's names; with idempotence on, the requests in flight are
/// librdkafka's cap (it applies it when the client is created, after this read).
pub fn applied(cfg: &ClientConfig) -> Result<Vec<(&'static str, String)>> {
    let native = cfg.create_native_config().context("librdkafka refused the producer's configuration")?;
    let get = |k: &str| native.get(k).with_context(|| format!("reading {k} back from librdkafka"));
    let idempotent = get("enable.idempotence")? == "true";
    let mut in_flight = get("max.in.flight")?;
    if idempotent && in_flight.parse::<u64>().is_ok_and(|n| n > IDEMPOTENT_MAX_IN_FLIGHT) {
        in_flight = IDEMPOTENT_MAX_IN_FLIGHT.to_string();
    }
    Ok(vec![
        ("acks", get("acks")?),
        ("enable.idempotence", idempotent.to_string()),
        ("compression.type", get("compression.codec")?),
        ("linger.ms", get("linger.ms")?),
        ("batch.size", get("batch.size")?),
        ("max.in.flight.requests.per.connection", in_flight),
    ])
}

/// One producer to `job.topic`.
pub struct Sink {
    producer: ThreadedProducer<Counting>,
    deliveries: Arc<Deliveries>,
    topic: String,
    pub sent: u64,
    /// What it runs with, read back from librdkafka (Java's names).
    pub applied: Vec<(&'static str, String)>,
}

impl Sink {
    pub fn new(job: &Job, streaming: bool) -> Result<Sink> {
        let mut cfg: ClientConfig = default_client_config(&job.env)?;
        for (k, v) in settings(job.knobs.producer, streaming) {
            cfg.set(k, v);
        }
        let applied = applied(&cfg)?;
        let deliveries = Arc::new(Deliveries::default());
        let producer = cfg.create_with_context(Counting(deliveries.clone())).context("creating the arm's producer")?;
        Ok(Sink { producer, deliveries, topic: job.topic.clone(), sent: 0, applied })
    }

    /// Queue one row with its key; waits while librdkafka's queue is full.
    pub fn send(&mut self, key: &[u8], payload: &[u8]) -> Result<()> {
        let mut record = BaseRecord::<[u8], [u8]>::to(&self.topic).key(key).payload(payload);
        loop {
            match self.producer.send(record) {
                Ok(()) => break,
                Err((KafkaError::MessageProduction(RDKafkaErrorCode::QueueFull), r)) => {
                    record = r;
                    std::thread::sleep(Duration::from_micros(500));
                }
                Err((e, _)) => return Err(e).context("queueing a row for Kafka"),
            }
        }
        self.sent += 1;
        Ok(())
    }

    /// Err once any delivery failed.
    pub fn check(&self) -> Result<()> {
        let failed = self.deliveries.failed();
        if failed > 0 {
            let first = self.deliveries.first_error();
            bail!("{failed} rows were not delivered to Kafka: {}", first.unwrap_or_default());
        }
        Ok(())
    }

    /// Wait until everything queued was acknowledged (or failed).
    pub fn flush(&self, timeout: Duration) -> Result<()> {
        self.producer.flush(timeout).context("flushing the arm's producer")?;
        self.check()?;
        let acked = self.deliveries.acked();
        if acked != self.sent {
            bail!("{} rows queued, {acked} acknowledged after the flush", self.sent);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read_back(settings: &[(&str, &str)]) -> Vec<(&'static str, String)> {
        let mut cfg = ClientConfig::new();
        cfg.set("bootstrap.servers", "127.0.0.1:9");
        for (k, v) in settings {
            cfg.set(*k, *v);
        }
        applied(&cfg).unwrap()
    }

    #[test]
    fn the_own_settings_read_back_as_debezium_gets_them_through_its_overrides() {
        let ours = read_back(&own_settings(true));
        let java = java_overrides(true);
        let spelled = |v: &[(&str, String)]| -> Vec<(String, String)> {
            v.iter().map(|(k, x)| ((*k).to_owned(), streamlab_record::applied::canonical(k, x))).collect()
        };
        assert_eq!(spelled(&ours), spelled(&java));
        assert!(ours.contains(&("max.in.flight.requests.per.connection", "5".to_owned())), "the idempotent cap");
        assert!(ours.contains(&("linger.ms", "1".to_owned())));
    }

    #[test]
    fn connect_defaults_read_back_as_the_worker_log_printed_them() {
        let ours = read_back(&connect_default_settings());
        let spelled: Vec<(String, String)> =
            ours.iter().map(|(k, v)| ((*k).to_owned(), streamlab_record::applied::canonical(k, v))).collect();
        // What Kafka Connect 4.1.0's log said of a Debezium task's producer here.
        let logged = [
            ("acks", "-1"),
            ("enable.idempotence", "false"),
            ("compression.type", "none"),
            ("linger.ms", "5"),
            ("batch.size", "16384"),
            ("max.in.flight.requests.per.connection", "1"),
        ];
        assert_eq!(spelled, logged.map(|(k, v)| (k.to_owned(), v.to_owned())));
    }
}
