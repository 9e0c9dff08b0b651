//! rust-rdkafka 0.39 (librdkafka 2.12.1) as durability's producer: a BaseProducer driven as the clients arm drives
//! it (`produce`, `poll(0)` every 1000 records, `poll(10 ms)` on a full queue), each record's sequence number as
//! its delivery opaque, so every delivery report lands in the ledger with its partition and offset.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use rdkafka::error::KafkaError;
use rdkafka::message::Message;
use rdkafka::producer::{BaseProducer, BaseRecord, DeliveryResult, Producer, ProducerContext};
use rdkafka::types::RDKafkaErrorCode;
use rdkafka::{ClientConfig, ClientContext};
use streamlab_process::clock::now_us;
use streamlab_process::procfs;
use streamlab_record::EnvDescriptor;

use super::{Rdkafka, settings_properties};
use crate::drivers::contract::ledger::{Ack, Entry, Ledger, payload};
use crate::drivers::contract::{FIRST_ACK_WAIT, FirstAck, LedgerProduced, LedgerProducer, LedgerWork, first_ack};
use crate::kafka::config::default_client_config;

/// Delivery reports into the ledger: each record's sequence number is its opaque.
struct LedgerContext {
    acks: Mutex<Vec<Ack>>,
    errors: Mutex<BTreeMap<String, u64>>,
    answered: AtomicU64,
}

impl ClientContext for LedgerContext {}

impl ProducerContext for LedgerContext {
    type DeliveryOpaque = usize;

    fn delivery(&self, result: &DeliveryResult<'_>, seq: usize) {
        let at_us = now_us();
        let ack = match result {
            Ok(m) => Ack::Ok { partition: m.partition(), offset: m.offset(), at_us },
            Err((e, _)) => {
                *self.errors.lock().expect("errors lock").entry(e.to_string()).or_default() += 1;
                Ack::Failed { at_us }
            }
        };
        if let Some(slot) = self.acks.lock().expect("acks lock").get_mut(seq) {
            *slot = ack;
        }
        self.answered.fetch_add(1, Ordering::Relaxed);
    }
}

/// The settings under Java's names, with librdkafka's own name to read each back.
const READ_BACK: &[(&str, &str)] = &[
    ("acks", "acks"),
    ("enable.idempotence", "enable.idempotence"),
    ("compression.type", "compression.codec"),
    ("linger.ms", "linger.ms"),
    ("batch.size", "batch.size"),
    ("max.in.flight.requests.per.connection", "max.in.flight"),
];

fn config(env: &EnvDescriptor, work: &LedgerWork) -> Result<ClientConfig> {
    let mut cfg = default_client_config(env)?;
    for (k, v) in settings_properties(&work.producer) {
        cfg.set(k, v);
    }
    cfg.set("max.in.flight", work.max_in_flight.to_string())
        .set("message.timeout.ms", work.delivery_timeout_ms.to_string())
        .set("compression.codec", "none");
    Ok(cfg)
}

/// What librdkafka will run with, read back from a native configuration of the same settings.
fn settings(cfg: &ClientConfig) -> Result<Vec<(&'static str, String)>> {
    let native = cfg.create_native_config().context("librdkafka refused the producer settings")?;
    READ_BACK
        .iter()
        .map(|(java, ours)| Ok((*java, native.get(ours).with_context(|| format!("librdkafka has no setting {ours}"))?)))
        .collect()
}

impl LedgerProducer for Rdkafka {
    fn produce_with_ledger(
        &self,
        env: &EnvDescriptor,
        work: &LedgerWork,
        topic: &str,
        first: &FirstAck,
    ) -> Result<LedgerProduced> {
        let cfg = config(env, work)?;
        let settings = settings(&cfg)?;
        let cap = usize::try_from(work.max_records)?;
        let context = LedgerContext {
            acks: Mutex::new(Vec::new()),
            errors: Mutex::new(BTreeMap::new()),
            answered: AtomicU64::new(0),
        };
        let producer: BaseProducer<LedgerContext> =
            cfg.create_with_context(context).context("cannot create the producer")?;
        let cpu_before = procfs::self_cpu_seconds();
        let mut sent_us: Vec<u64> = Vec::with_capacity(cap.min(1 << 20));
        let mut value = payload(0, work.producer.payload_bytes);
        // Queue record `sent_us.len()`; false when librdkafka's queue is full (it waited 10 ms for room).
        let mut send = |sent_us: &mut Vec<u64>| -> Result<bool> {
            let seq = sent_us.len();
            value[..8].copy_from_slice(&(seq as u64).to_be_bytes());
            let at = now_us();
            // Reports arrive only inside poll() on this thread: the slot exists before its report can.
            producer.context().acks.lock().expect("acks lock").push(Ack::Unanswered);
            match producer.send(BaseRecord::<(), [u8], usize>::with_opaque_to(topic, seq).payload(&value)) {
                Ok(()) => {
                    sent_us.push(at);
                    Ok(true)
                }
                Err((KafkaError::MessageProduction(RDKafkaErrorCode::QueueFull), _)) => {
                    producer.context().acks.lock().expect("acks lock").pop();
                    producer.poll(Duration::from_millis(10));
                    Ok(false)
                }
                Err((e, _)) => bail!("produce failed after {seq} records: {e}"),
            }
        };
        // The first record alone: the run starts when the client can send.
        while !send(&mut sent_us)? {}
        let waiting = Instant::now();
        while producer.context().answered.load(Ordering::Relaxed) == 0 && waiting.elapsed() < FIRST_ACK_WAIT {
            producer.poll(Duration::from_millis(10));
        }
        let first_ack_us = {
            let ack = producer.context().acks.lock().expect("acks lock")[0];
            first_ack(ack, &producer.context().errors.lock().expect("errors lock"))?
        };
        first.mark(first_ack_us / 1000);
        let end_us = first_ack_us + work.run_time.as_micros() as u64;
        while sent_us.len() < cap && now_us() < end_us {
            if send(&mut sent_us)? && sent_us.len().is_multiple_of(1000) {
                producer.poll(Duration::ZERO);
            }
        }
        let sent = sent_us.len() as u64;
        let deadline = Instant::now() + work.flush_timeout();
        while producer.context().answered.load(Ordering::Relaxed) < sent && Instant::now() < deadline {
            producer.poll(Duration::from_millis(10));
        }
        let client_cpu_s = procfs::self_cpu_seconds() - cpu_before;
        let answered = producer.context().answered.load(Ordering::Relaxed);
        // Dropping the producer purges what is still queued (their reports come with an error, or never).
        let acks = std::mem::take(&mut *producer.context().acks.lock().expect("acks lock"));
        let errors = std::mem::take(&mut *producer.context().errors.lock().expect("errors lock"));
        drop(producer);
        let entries = sent_us.iter().zip(acks).map(|(&sent_us, ack)| Entry { sent_us, ack }).collect();
        let note = (answered < sent).then(|| {
            format!(
                "{} records were still unanswered {} s after the window (flush cut short)",
                sent - answered,
                work.flush_timeout().as_secs()
            )
        });
        let (_, librdkafka) = rdkafka::util::get_rdkafka_version();
        Ok(LedgerProduced {
            ledger: Ledger { entries, errors },
            client_cpu_s,
            command: format!(
                "rust-rdkafka BaseProducer (librdkafka {librdkafka}) on plaintext: {}",
                settings.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(" ")
            ),
            settings,
            connections: "1 per broker".into(),
            versions: crate::versions::client_versions(),
            note,
            unordered_handoff: None,
        })
    }
}
