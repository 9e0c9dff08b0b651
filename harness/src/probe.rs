//! Round trip on every listener: produce one record and read it back, with the listener's own credentials.

use std::collections::BTreeMap;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use rdkafka::ClientConfig;
use rdkafka::Message;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::producer::{BaseProducer, BaseRecord, Producer};
use rdkafka::topic_partition_list::{Offset, TopicPartitionList};
use streamlab_record::EnvDescriptor;

use crate::kafka::admin::{fresh_topic, high_watermark_sum};
use crate::kafka::config::{client_config, default_client_config};

/// Round-trip every listener; the report maps listener name to "ok".
pub fn probe_all(env: &EnvDescriptor) -> Result<BTreeMap<String, String>> {
    let mut report = BTreeMap::new();
    for name in env.kafka.listeners.keys() {
        let cfg = client_config(env, name)?;
        let topic = format!("streamlab-probe-{name}");
        fresh_topic(&default_client_config(env)?, &topic, 1, &[])?;
        round_trip(&cfg, &topic, name.as_bytes()).with_context(|| format!("listener {name}"))?;
        report.insert(name.clone(), "ok".to_owned());
    }
    Ok(report)
}

/// The cluster's brokers from a metadata request on the default listener, and which broker answered it.
pub fn cluster(env: &EnvDescriptor) -> Result<streamlab_record::provenance::ClusterInfo> {
    let consumer: BaseConsumer = default_client_config(env)?.create()?;
    let md = consumer.fetch_metadata(None, Duration::from_secs(30)).context("metadata request failed")?;
    let mut broker_ids: Vec<i32> = md.brokers().iter().map(|b| b.id()).collect();
    broker_ids.sort_unstable();
    Ok(streamlab_record::provenance::ClusterInfo { broker_ids, answered_by: md.orig_broker_id() })
}

/// Produce `payload` to partition 0 of `topic` and consume it back from offset 0.
pub fn round_trip(cfg: &ClientConfig, topic: &str, payload: &[u8]) -> Result<()> {
    let producer: BaseProducer = cfg.clone().set("message.timeout.ms", "10000").create()?;
    producer.send::<(), [u8]>(BaseRecord::to(topic).partition(0).payload(payload)).map_err(|(e, _)| e)?;
    producer.flush(Duration::from_secs(15)).context("the record was not acknowledged")?;
    if high_watermark_sum(cfg, topic)? != 1 {
        bail!("expected exactly one record in {topic}");
    }

    let consumer: BaseConsumer = cfg.clone().set("group.id", format!("streamlab-probe-{topic}")).create()?;
    let mut tpl = TopicPartitionList::new();
    tpl.add_partition_offset(topic, 0, Offset::Beginning)?;
    consumer.assign(&tpl)?;
    let deadline = std::time::Instant::now() + Duration::from_secs(15);
    while std::time::Instant::now() < deadline {
        if let Some(msg) = consumer.poll(Duration::from_millis(200)) {
            let msg = msg?;
            if msg.payload() == Some(payload) {
                return Ok(());
            }
            bail!("read back {:?}, expected {:?}", msg.payload(), payload);
        }
    }
    bail!("the record was not read back within 15 s")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kafka::config::config_for;

    #[test]
    #[ignore = "needs a running environment: cargo xtask test"]
    fn every_listener_round_trips_a_record() {
        let env = crate::test_env();
        let report = probe_all(&env).unwrap();
        let names: Vec<_> = report.keys().map(String::as_str).collect();
        assert_eq!(names, ["oauth", "plaintext", "scram256", "scram512", "ssl"]);
        assert!(report.values().all(|v| v == "ok"));
    }

    /// Keeps the client errors librdkafka reports, so a test can see why a connection failed.
    #[derive(Default)]
    struct ErrorLog(std::sync::Mutex<Vec<String>>);

    impl rdkafka::ClientContext for ErrorLog {
        fn error(&self, error: rdkafka::error::KafkaError, reason: &str) {
            self.0.lock().unwrap().push(format!("{error}: {reason}"));
        }
    }

    impl rdkafka::consumer::ConsumerContext for ErrorLog {}

    #[test]
    #[ignore = "needs a running environment: cargo xtask test"]
    fn a_wrong_scram_password_is_refused() {
        let env = crate::test_env();
        for name in ["scram256", "scram512"] {
            let listener = env.listener(name).unwrap();
            let consumer: BaseConsumer<ErrorLog> =
                config_for(listener, Some("not-the-password")).create_with_context(ErrorLog::default()).unwrap();
            // Errors reach the context when the consumer is polled; the refusal comes at the first handshake.
            let deadline = std::time::Instant::now() + Duration::from_secs(10);
            while consumer.context().0.lock().unwrap().is_empty() && std::time::Instant::now() < deadline {
                let _ = consumer.poll(Duration::from_millis(100));
            }
            let errors = consumer.context().0.lock().unwrap().join("\n");
            assert!(errors.contains("Authentication failed"), "{name}: no authentication failure in: {errors}");
            // Refused, the client has no metadata to give (a request would wait out its whole timeout).
            assert!(
                consumer.fetch_metadata(None, Duration::from_secs(1)).is_err(),
                "{name}: metadata with a bad password"
            );
        }
    }
}
