//! rust-rdkafka's paced loop: the same plain-thread pacer as every client's (a record offered when the
//! [`Schedule`] says it is due), into a `ThreadedProducer`, whose own thread serves each delivery report as it
//! arrives, so an acknowledgement is timed when it comes and not when this loop next polls.

use std::sync::Mutex;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use rdkafka::ClientContext;
use rdkafka::error::KafkaError;
use rdkafka::producer::{BaseRecord, DeliveryResult, Producer, ProducerContext, ThreadedProducer};
use rdkafka::types::RDKafkaErrorCode;
use streamlab_process::clock::monotonic_ns;
use streamlab_process::procfs;
use streamlab_record::paced::{PacedLoop, STAMP_BYTES, Schedule, Sent, Tally, stamp};

/// A producer context that tallies each delivery report against the record's send times.
#[derive(Default)]
struct Tallying(Mutex<Tally>);

impl ClientContext for Tallying {}

impl ProducerContext for Tallying {
    type DeliveryOpaque = Box<Sent>;

    fn delivery(&self, result: &DeliveryResult<'_>, sent: Box<Sent>) {
        let now = monotonic_ns();
        let mut tally = self.0.lock().unwrap_or_else(|p| p.into_inner());
        match result {
            Ok(_) => tally.acked(*sent, now),
            Err(_) => tally.failed(),
        }
    }
}

/// `records` records of `value_bytes` to `topic`, offered at `rate` a second by a producer made from `cfg`.
pub(super) fn paced(
    cfg: &rdkafka::ClientConfig,
    topic: &str,
    rate: u64,
    records: u64,
    value_bytes: usize,
) -> Result<PacedLoop> {
    let producer: ThreadedProducer<Tallying> =
        cfg.create_with_context(Tallying::default()).context("cannot create the producer")?;
    // Connected, with the topic's metadata, before the first record is due.
    producer.client().fetch_metadata(Some(topic), Duration::from_secs(30)).context("the topic's metadata")?;
    let mut value = vec![b'x'; value_bytes.max(STAMP_BYTES)];
    let cpu_before = procfs::self_cpu_seconds();
    let schedule = Schedule::starting_now(rate);
    let (mut seq, mut queue_full, mut last_send_ns) = (0u64, 0u64, schedule.start_ns);
    while seq < records {
        let wait = schedule.until(seq);
        if !wait.is_zero() {
            std::thread::sleep(wait);
        }
        let sent = Sent { intended_ns: schedule.intended_ns(seq), actual_ns: monotonic_ns() };
        stamp(&mut value, seq, sent.intended_ns);
        match producer.send(BaseRecord::<(), [u8], Box<Sent>>::with_opaque_to(topic, Box::new(sent)).payload(&value)) {
            Ok(()) => {
                seq += 1;
                last_send_ns = sent.actual_ns;
            }
            // The queue is full: wait for room and offer the same record again (its intended time stays).
            Err((KafkaError::MessageProduction(RDKafkaErrorCode::QueueFull), _)) => {
                queue_full += 1;
                std::thread::sleep(Duration::from_micros(100));
            }
            Err((e, _)) => bail!("produce failed after {seq} records: {e}"),
        }
    }
    let flushed = producer.flush(Duration::from_secs(300));
    let client_cpu_s = procfs::self_cpu_seconds() - cpu_before;
    let tally = producer.context().0.lock().unwrap_or_else(|p| p.into_inner()).clone();
    if let Err(e) = flushed {
        bail!("the flush after a paced run failed with {} of {records} answered: {e}", tally.answered());
    }
    Ok(PacedLoop::new(schedule, records, last_send_ns, &tally, client_cpu_s, queue_full))
}
