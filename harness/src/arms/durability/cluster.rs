//! The cluster as the durability arms see it through metadata: the run's topic (replicated, min.insync.replicas,
//! no unclean election), each partition's leader, replicas and in-sync replicas, and waits for a full ISR.

use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use rdkafka::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer};

use crate::kafka::admin::fresh_replicated_topic;

const METADATA_TIMEOUT: Duration = Duration::from_secs(5);
/// How long a one-off metadata read is tried again (a loaded host, brokers busy with the producer's load).
const METADATA_PATIENCE: Duration = Duration::from_secs(30);

/// One partition's replicas as the cluster reports them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionState {
    pub id: i32,
    /// -1 while the partition has none.
    pub leader: i32,
    pub replicas: Vec<i32>,
    pub isr: Vec<i32>,
}

impl PartitionState {
    pub fn isr_full(&self) -> bool {
        self.leader >= 0 && self.isr.len() == self.replicas.len()
    }

    /// The first replica that is not the leader.
    pub fn follower(&self) -> Option<i32> {
        self.replicas.iter().copied().find(|&r| r != self.leader)
    }
}

/// What the run's topic is made of.
#[derive(Debug, Clone)]
pub struct TopicSpec {
    pub name: String,
    pub partitions: i32,
    pub replication: i32,
    pub min_insync: i32,
}

impl TopicSpec {
    /// The topic configs: min.insync.replicas, unclean leader election off, retention past the run.
    pub fn configs(&self) -> Vec<(&'static str, String)> {
        vec![
            ("min.insync.replicas", self.min_insync.to_string()),
            ("unclean.leader.election.enable", "false".into()),
            ("retention.ms", "3600000".into()),
            ("segment.bytes", "268435456".into()),
        ]
    }
}

/// A metadata client on the admin listener.
pub struct Cluster {
    consumer: BaseConsumer,
    cfg: ClientConfig,
}

impl Cluster {
    pub fn new(cfg: &ClientConfig) -> Result<Cluster> {
        let consumer = cfg.create().context("cannot create a Kafka metadata client")?;
        Ok(Cluster { consumer, cfg: cfg.clone() })
    }

    /// Delete and create the topic, then wait until every partition has its full ISR (a broker a fault
    /// restarted in the previous task has caught up before this one starts).
    pub fn fresh_topic(&self, spec: &TopicSpec, within: Duration) -> Result<Vec<PartitionState>> {
        let configs = spec.configs();
        let configs: Vec<(&str, &str)> = configs.iter().map(|(k, v)| (*k, v.as_str())).collect();
        fresh_replicated_topic(&self.cfg, &spec.name, spec.partitions, spec.replication, &configs)?;
        match self.wait_isr_full(&spec.name, within)? {
            Some((_, states)) => Ok(states),
            None => bail!("{}: not every partition had its full ISR within {} s", spec.name, within.as_secs()),
        }
    }

    /// How many brokers the cluster's metadata names (the lab's own environment or the user's cluster alike).
    pub fn broker_count(&self) -> Result<usize> {
        self.patiently(|c| {
            let md = c.consumer.fetch_metadata(None, METADATA_TIMEOUT).context("metadata request failed")?;
            Ok(md.brokers().len())
        })
    }

    /// [`Cluster::partitions`] where one answer is needed now: a failed request is tried again for
    /// [`METADATA_PATIENCE`].
    pub fn partitions_patiently(&self, topic: &str) -> Result<Vec<PartitionState>> {
        self.patiently(|c| c.partitions(topic))
    }

    fn patiently<T>(&self, read: impl Fn(&Cluster) -> Result<T>) -> Result<T> {
        let started = Instant::now();
        loop {
            match read(self) {
                Err(e) if started.elapsed() < METADATA_PATIENCE => {
                    tracing::debug!("metadata read failed, trying again: {e:#}");
                    std::thread::sleep(Duration::from_millis(200));
                }
                done => return done,
            }
        }
    }

    /// Every partition of `topic`, in partition order.
    pub fn partitions(&self, topic: &str) -> Result<Vec<PartitionState>> {
        let md = self.consumer.fetch_metadata(Some(topic), METADATA_TIMEOUT).context("metadata request failed")?;
        let t = md.topics().iter().find(|t| t.name() == topic).with_context(|| format!("no topic {topic}"))?;
        let mut states: Vec<PartitionState> = t
            .partitions()
            .iter()
            .map(|p| PartitionState {
                id: p.id(),
                leader: p.leader(),
                replicas: p.replicas().to_vec(),
                isr: p.isr().to_vec(),
            })
            .collect();
        states.sort_by_key(|p| p.id);
        Ok(states)
    }

    /// Poll every 100 ms until every partition of `topic` has its full ISR; returns how long that took and the
    /// partitions, or `None` if `within` passed first. A failed metadata request (a broker just died) is
    /// polled again.
    pub fn wait_isr_full(&self, topic: &str, within: Duration) -> Result<Option<(Duration, Vec<PartitionState>)>> {
        let started = Instant::now();
        loop {
            if let Ok(states) = self.partitions(topic)
                && !states.is_empty()
                && states.iter().all(PartitionState::isr_full)
            {
                return Ok(Some((started.elapsed(), states)));
            }
            if started.elapsed() > within {
                return Ok(None);
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_isr_has_every_replica_and_a_leader() {
        let p = PartitionState { id: 0, leader: 2, replicas: vec![2, 3, 1], isr: vec![2, 3, 1] };
        assert!(p.isr_full());
        assert_eq!(p.follower(), Some(3));
        assert!(!PartitionState { isr: vec![2, 1], ..p.clone() }.isr_full());
        assert!(!PartitionState { leader: -1, ..p.clone() }.isr_full());
        assert_eq!(PartitionState { replicas: vec![2], isr: vec![2], ..p }.follower(), None);
    }
}
