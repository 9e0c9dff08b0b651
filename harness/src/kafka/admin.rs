//! Integrity helpers: a fresh topic per arm, and the sum of its partition high watermarks.

use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use futures_executor::block_on;
use rdkafka::ClientConfig;
use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
use rdkafka::client::DefaultClientContext;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::types::RDKafkaErrorCode;

const METADATA_TIMEOUT: Duration = Duration::from_secs(10);

/// Topic-level configs the seed-000 rig uses so a long matrix does not fill the disk.
pub const SHORT_RETENTION: &[(&str, &str)] = &[
    ("retention.ms", "10000"),
    ("retention.bytes", "134217728"),
    ("segment.bytes", "134217728"),
    ("segment.ms", "5000"),
];

/// Delete `topic` if present, create it anew, and wait until every partition has a leader.
pub fn fresh_topic(cfg: &ClientConfig, topic: &str, partitions: i32, configs: &[(&str, &str)]) -> Result<()> {
    fresh_replicated_topic(cfg, topic, partitions, 1, configs)
}

/// [`fresh_topic`] with `replication` replicas of every partition.
pub fn fresh_replicated_topic(
    cfg: &ClientConfig,
    topic: &str,
    partitions: i32,
    replication: i32,
    configs: &[(&str, &str)],
) -> Result<()> {
    let admin: AdminClient<DefaultClientContext> = cfg.create().context("cannot create a Kafka admin client")?;
    let opts = AdminOptions::new().operation_timeout(Some(Duration::from_secs(30)));
    let consumer: BaseConsumer = cfg.create().context("cannot create a Kafka metadata client")?;

    if topic_partitions(&consumer, topic)?.is_some() {
        for result in block_on(admin.delete_topics(&[topic], &opts))? {
            match result {
                Ok(_) | Err((_, RDKafkaErrorCode::UnknownTopicOrPartition)) => {}
                Err((t, code)) => bail!("cannot delete topic {t}: {code}"),
            }
        }
        wait_until(&format!("topic {topic} to be deleted"), || Ok(topic_partitions(&consumer, topic)?.is_none()))?;
    }

    let mut new_topic = NewTopic::new(topic, partitions, TopicReplication::Fixed(replication));
    for (k, v) in configs {
        new_topic = new_topic.set(k, v);
    }
    for result in block_on(admin.create_topics(&[new_topic], &opts))? {
        if let Err((t, code)) = result {
            bail!("cannot create topic {t}: {code}");
        }
    }
    wait_until(&format!("every partition of {topic} to have a leader"), || {
        Ok(topic_partitions(&consumer, topic)?
            .is_some_and(|leaders| leaders.len() == partitions as usize && leaders.iter().all(|&l| l >= 0)))
    })
}

/// Sum of the latest offsets (high watermarks) of every partition of `topic` (ListOffsets latest).
pub fn high_watermark_sum(cfg: &ClientConfig, topic: &str) -> Result<u64> {
    let consumer: BaseConsumer = cfg.create().context("cannot create a Kafka watermark client")?;
    let partitions = known_partitions(&consumer, topic)?;
    let mut sum = 0u64;
    for p in 0..partitions.len() as i32 {
        let (_low, high) = consumer
            .fetch_watermarks(topic, p, METADATA_TIMEOUT)
            .with_context(|| format!("cannot read the high watermark of {topic}/{p}"))?;
        sum += u64::try_from(high).with_context(|| format!("negative high watermark {high} on {topic}/{p}"))?;
    }
    Ok(sum)
}

/// Delete `topic` (a run's topic once it has been counted, so a long matrix does not fill the disk).
pub fn delete_topic(cfg: &ClientConfig, topic: &str) -> Result<()> {
    let admin: AdminClient<DefaultClientContext> = cfg.create().context("cannot create a Kafka admin client")?;
    let opts = AdminOptions::new().operation_timeout(Some(Duration::from_secs(30)));
    for result in block_on(admin.delete_topics(&[topic], &opts))? {
        match result {
            Ok(_) | Err((_, RDKafkaErrorCode::UnknownTopicOrPartition)) => {}
            Err((t, code)) => bail!("cannot delete topic {t}: {code}"),
        }
    }
    Ok(())
}

/// Leader id per partition of a topic that exists. In a cluster of several brokers the one this client asks may
/// not know a topic another has just created (each broker learns it from the controller's metadata log in its
/// own time), so a topic not found is asked for again for up to [`METADATA_TIMEOUT`] before it is an error.
fn known_partitions(consumer: &BaseConsumer, topic: &str) -> Result<Vec<i32>> {
    poll_until(METADATA_TIMEOUT, &format!("the cluster to know topic {topic} (it does not exist)"), || {
        Ok(topic_partitions(consumer, topic)?.filter(|leaders| !leaders.is_empty()))
    })
}

/// Leader id per partition, or `None` if the topic does not exist.
fn topic_partitions(consumer: &BaseConsumer, topic: &str) -> Result<Option<Vec<i32>>> {
    let md = consumer.fetch_metadata(Some(topic), METADATA_TIMEOUT).context("metadata request failed")?;
    let Some(t) = md.topics().iter().find(|t| t.name() == topic) else { return Ok(None) };
    match t.error() {
        None => Ok(Some(t.partitions().iter().map(|p| p.leader()).collect())),
        Some(e) if RDKafkaErrorCode::from(e) == RDKafkaErrorCode::UnknownTopicOrPartition => Ok(None),
        Some(e) => {
            // A topic being created or deleted reports transient errors; treat as "not ready".
            tracing::debug!("metadata for {topic}: {:?}", RDKafkaErrorCode::from(e));
            Ok(Some(Vec::new()))
        }
    }
}

/// Waits up to 60 s for `ready`, asking every 100 ms.
fn wait_until(what: &str, mut ready: impl FnMut() -> Result<bool>) -> Result<()> {
    poll_until(Duration::from_secs(60), what, || Ok(ready()?.then_some(())))
}

/// Asks `probe` every 100 ms until it gives a value or `within` has passed; an error from it ends the wait.
fn poll_until<T>(within: Duration, what: &str, mut probe: impl FnMut() -> Result<Option<T>>) -> Result<T> {
    let deadline = Instant::now() + within;
    loop {
        if let Some(value) = probe()? {
            return Ok(value);
        }
        if Instant::now() >= deadline {
            bail!("timed out after {} s waiting for {what}", within.as_secs());
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}
