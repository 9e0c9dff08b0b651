//! Reading the run's topic back: every partition from its first offset to its high watermark, each record's
//! offset and the sequence number its value carries.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::error::KafkaError;
use rdkafka::types::RDKafkaErrorCode;
use rdkafka::{ClientConfig, Message, Offset, TopicPartitionList};

use super::ledger::PartitionLog;
use crate::drivers::contract::ledger::seq_of;

const WATERMARK_TIMEOUT: Duration = Duration::from_secs(10);

/// Every partition of `topic` (`partitions` of them) from the beginning to its high watermark; fails if a
/// partition makes no progress for `stall`.
pub fn read_back(cfg: &ClientConfig, topic: &str, partitions: i32, stall: Duration) -> Result<Vec<PartitionLog>> {
    let mut cfg = cfg.clone();
    cfg.set("group.id", format!("streamlab-durability-check-{topic}"))
        .set("enable.auto.commit", "false")
        .set("enable.partition.eof", "false")
        .set("fetch.message.max.bytes", "16777216");
    let consumer: BaseConsumer = cfg.create().context("cannot create the read-back consumer")?;
    let mut ends = BTreeMap::new();
    let mut tpl = TopicPartitionList::new();
    for p in 0..partitions {
        let (low, high) = consumer
            .fetch_watermarks(topic, p, WATERMARK_TIMEOUT)
            .with_context(|| format!("cannot read the watermarks of {topic}/{p}"))?;
        ends.insert(p, high);
        if high > low {
            tpl.add_partition_offset(topic, p, Offset::Beginning)?;
        }
    }
    let mut logs: BTreeMap<i32, PartitionLog> =
        (0..partitions).map(|p| (p, PartitionLog { partition: p, records: Vec::new() })).collect();
    let mut open: Vec<i32> =
        ends.iter().filter(|(p, _)| tpl.find_partition(topic, **p).is_some()).map(|(p, _)| *p).collect();
    if open.is_empty() {
        return Ok(logs.into_values().collect());
    }
    consumer.assign(&tpl)?;
    let mut last_progress = Instant::now();
    let mut transient_errors = 0u32;
    while !open.is_empty() {
        match consumer.poll(Duration::from_millis(100)) {
            Some(Ok(m)) => {
                last_progress = Instant::now();
                let p = m.partition();
                let end = ends.get(&p).copied().unwrap_or(0);
                if m.offset() < end
                    && let Some(log) = logs.get_mut(&p)
                {
                    log.records.push((m.offset(), m.payload().and_then(seq_of)));
                }
                if m.offset() + 1 >= end {
                    open.retain(|&o| o != p);
                }
            }
            Some(Err(e)) if is_transient(&e) => {
                // librdkafka reconnects by itself; a connection that drops (a broker just restarted by the fault
                // plan, or SCRAM re-authenticating) is not a lost record. The stall bound below still ends the wait.
                transient_errors += 1;
                if transient_errors == 1 {
                    eprintln!("reading {topic} back: {e}; librdkafka retries");
                }
            }
            Some(Err(e)) => bail!("reading {topic} back failed: {e}"),
            None => {}
        }
        if last_progress.elapsed() > stall {
            bail!(
                "reading {topic} back stalled for {} s with partitions {open:?} short of their high watermarks \
                 ({transient_errors} connection errors on the way)",
                stall.as_secs()
            )
        }
    }
    Ok(logs.into_values().collect())
}

/// A consumer error librdkafka recovers from by reconnecting, as opposed to one about the data (an offset out of
/// range, a topic that vanished) that no amount of waiting fixes.
fn is_transient(e: &KafkaError) -> bool {
    matches!(
        e,
        KafkaError::MessageConsumption(
            RDKafkaErrorCode::BrokerTransportFailure
                | RDKafkaErrorCode::AllBrokersDown
                | RDKafkaErrorCode::NetworkException
                | RDKafkaErrorCode::RequestTimedOut
                | RDKafkaErrorCode::OperationTimedOut
        )
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dropped_connection_is_waited_out_but_a_data_error_fails_the_read_back() {
        for code in [RDKafkaErrorCode::BrokerTransportFailure, RDKafkaErrorCode::AllBrokersDown] {
            assert!(is_transient(&KafkaError::MessageConsumption(code)), "{code:?}");
        }
        for code in [
            RDKafkaErrorCode::OffsetOutOfRange,
            RDKafkaErrorCode::UnknownTopicOrPartition,
            RDKafkaErrorCode::TopicAuthorizationFailed,
        ] {
            assert!(!is_transient(&KafkaError::MessageConsumption(code)), "{code:?}");
        }
        assert!(!is_transient(&KafkaError::MessageConsumptionFatal(RDKafkaErrorCode::BrokerTransportFailure)));
    }
}
