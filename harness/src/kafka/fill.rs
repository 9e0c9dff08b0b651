//! A topic filled with records, every one acknowledged: the clients matrix's fetch preload and the run's
//! calibration produce.

use std::time::Duration;

use anyhow::{Context, Result, bail};
use rdkafka::config::ClientConfig;
use rdkafka::error::KafkaError;
use rdkafka::producer::{BaseRecord, Producer, ThreadedProducer};
use rdkafka::types::RDKafkaErrorCode;

use super::deliveries::Counting;

/// Fill `topic` with `count` records of `payload_bytes` 'x' (acks=1, linger 5 ms, 32768-record / 1 MB batches).
/// Fails unless every record was acknowledged.
pub fn fill(cfg: &ClientConfig, topic: &str, count: u64, payload_bytes: usize) -> Result<()> {
    let mut cfg = cfg.clone();
    cfg.set("acks", "1")
        .set("linger.ms", "5")
        .set("batch.num.messages", "32768")
        .set("batch.size", "1000000")
        .set("queue.buffering.max.messages", "1000000");
    let producer: ThreadedProducer<Counting> =
        cfg.create_with_context(Counting::default()).context("cannot create the loader")?;
    let payload = vec![b'x'; payload_bytes];
    let mut sent = 0u64;
    while sent < count {
        match producer.send(BaseRecord::<(), [u8]>::to(topic).payload(&payload)) {
            Ok(()) => sent += 1,
            Err((KafkaError::MessageProduction(RDKafkaErrorCode::QueueFull), _)) => {
                std::thread::sleep(Duration::from_millis(1))
            }
            Err((e, _)) => bail!("preloading {topic} failed after {sent} records: {e}"),
        }
    }
    producer.flush(Duration::from_secs(300)).context("preload flush")?;
    let (acked, failed) = (producer.context().0.acked(), producer.context().0.failed());
    anyhow::ensure!(acked == count && failed == 0, "preload acknowledged {acked} of {count} ({failed} failed)");
    Ok(())
}
