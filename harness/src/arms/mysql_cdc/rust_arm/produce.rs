//! The arm's Kafka producer: rust-rdkafka's `ThreadedProducer` (librdkafka's own threads batch, compress and
//! send; a poller thread runs the delivery callbacks), with acks=all and idempotence as the seed's franz-go
//! producer had, and every delivery error counted so the pipeline fails rather than loses a row quietly.

use std::io::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{Context, Result, bail};
use rdkafka::ClientContext;
use rdkafka::config::ClientConfig;
use rdkafka::error::KafkaError;
use rdkafka::producer::{BaseRecord, DeliveryResult, Producer, ProducerContext, ThreadedProducer};
use rdkafka::types::RDKafkaErrorCode;

use super::super::Job;
use crate::kafka::config::{DEFAULT_LISTENER, client_config};

/// Producer settings per rig: throughput for the snapshot, latency for the stream.
pub fn settings(streaming: bool) -> Vec<(&'static str, &'static str)> {
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

/// Deliveries acknowledged and failed, and the first failure.
#[derive(Default)]
pub struct Deliveries {
    pub acked: AtomicU64,
    pub failed: AtomicU64,
    first_error: Mutex<Option<String>>,
}

/// The producer's context: counts every delivery report.
pub struct Counting(Arc<Deliveries>);

impl ClientContext for Counting {}

impl ProducerContext for Counting {
    type DeliveryOpaque = ();

    fn delivery(&self, result: &DeliveryResult<'_>, _: ()) {
        let d = &self.0;
        match result {
            Ok(_) => {
                d.acked.fetch_add(1, Ordering::Relaxed);
            }
            Err((e, _)) => {
                d.failed.fetch_add(1, Ordering::Relaxed);
                let mut first = d.first_error.lock().unwrap_or_else(|p| p.into_inner());
                first.get_or_insert_with(|| e.to_string());
            }
        }
    }
}

/// One producer to `job.topic`.
pub struct Sink {
    producer: ThreadedProducer<Counting>,
    deliveries: Arc<Deliveries>,
    topic: String,
    pub sent: u64,
    key: Vec<u8>,
}

impl Sink {
    pub fn new(job: &Job, streaming: bool) -> Result<Sink> {
        let mut cfg: ClientConfig = client_config(&job.env, DEFAULT_LISTENER)?;
        for (k, v) in settings(streaming) {
            cfg.set(k, v);
        }
        let deliveries = Arc::new(Deliveries::default());
        let producer = cfg.create_with_context(Counting(deliveries.clone())).context("creating the arm's producer")?;
        Ok(Sink { producer, deliveries, topic: job.topic.clone(), sent: 0, key: Vec::with_capacity(20) })
    }

    /// Queue one row (keyed by its id, as a CDC record is); waits while librdkafka's queue is full.
    pub fn send(&mut self, id: i64, payload: &[u8]) -> Result<()> {
        self.key.clear();
        let _ = write!(self.key, "{id}");
        let mut record = BaseRecord::<[u8], [u8]>::to(&self.topic).key(&self.key[..]).payload(payload);
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
        let failed = self.deliveries.failed.load(Ordering::Relaxed);
        if failed > 0 {
            let first = self.deliveries.first_error.lock().unwrap_or_else(|p| p.into_inner()).clone();
            bail!("{failed} rows were not delivered to Kafka: {}", first.unwrap_or_default());
        }
        Ok(())
    }

    /// Wait until everything queued was acknowledged (or failed).
    pub fn flush(&self, timeout: Duration) -> Result<()> {
        self.producer.flush(timeout).context("flushing the arm's producer")?;
        self.check()?;
        let acked = self.deliveries.acked.load(Ordering::Relaxed);
        if acked != self.sent {
            bail!("{} rows queued, {acked} acknowledged after the flush", self.sent);
        }
        Ok(())
    }
}
