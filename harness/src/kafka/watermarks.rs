//! A topic's high watermarks sampled at a measurement window's edges: an independent count of what the
//! broker appended, read by a client of its own (not the producer under test) in one ListOffsets request.

use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use rdkafka::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::error::KafkaError;
use rdkafka::types::RDKafkaErrorCode;
use rdkafka::{Offset, TopicPartitionList};

/// One sample may take this long before the arm fails.
const SAMPLE_TIMEOUT: Duration = Duration::from_secs(10);

/// The high watermarks of every partition of one topic, one ListOffsets (latest) request per sample.
pub struct WatermarkSampler {
    consumer: BaseConsumer,
    partitions: TopicPartitionList,
    topic: String,
}

/// The sum of the partitions' high watermarks, and when it was asked for and how long the answer took: the
/// broker read its watermarks at some instant of that round trip.
#[derive(Debug, Clone, Copy)]
pub struct WatermarkSample {
    pub sum: u64,
    pub sent: Instant,
    pub took: Duration,
}

impl WatermarkSample {
    /// The round trip's midpoint: the sample's instant, within +- took / 2.
    pub fn at(&self) -> Instant {
        self.sent + self.took / 2
    }
}

impl WatermarkSampler {
    /// A client of its own on `cfg`'s listener; its connection, metadata and the partitions' leaders are set
    /// up here by one first sample, so that every later sample is one ListOffsets round trip.
    pub fn new(cfg: &ClientConfig, topic: &str, partitions: i32) -> Result<Self> {
        let mut cfg = cfg.clone();
        // Every record appended counts (the producers here are not transactional; said so all the same).
        cfg.set("isolation.level", "read_uncommitted");
        let consumer: BaseConsumer = cfg.create().context("cannot create the watermark sampler")?;
        let mut tpl = TopicPartitionList::new();
        for p in 0..partitions {
            // Offset::End is timestamp -1 in ListOffsets: the partition's latest offset, its high watermark.
            tpl.add_partition_offset(topic, p, Offset::End)?;
        }
        let sampler = WatermarkSampler { consumer, partitions: tpl, topic: topic.to_owned() };
        sampler.sample().with_context(|| format!("the first high-watermark sample of {topic}"))?;
        Ok(sampler)
    }

    /// One sample, asked again while the broker answers with a transient error (a partition whose leader is
    /// still being elected, just after the topic was made); the round trip counts from the first asking.
    pub fn sample(&self) -> Result<WatermarkSample> {
        let sent = Instant::now();
        loop {
            match self.ask(SAMPLE_TIMEOUT.saturating_sub(sent.elapsed())) {
                Ok(sum) => return Ok(WatermarkSample { sum, sent, took: sent.elapsed() }),
                Err(e) if is_transient(&e) && sent.elapsed() + RETRY_BACKOFF < SAMPLE_TIMEOUT => {
                    std::thread::sleep(RETRY_BACKOFF);
                }
                Err(e) => {
                    return Err(anyhow::Error::new(e))
                        .with_context(|| format!("ListOffsets (latest) for {} failed", self.topic));
                }
            }
        }
    }

    /// One ListOffsets request: the sum of the partitions' latest offsets.
    fn ask(&self, timeout: Duration) -> std::result::Result<u64, KafkaError> {
        let answer = self.consumer.offsets_for_times(self.partitions.clone(), timeout)?;
        if answer.count() != self.partitions.count() {
            return Err(KafkaError::MetadataFetch(RDKafkaErrorCode::UnknownTopicOrPartition));
        }
        let mut sum = 0u64;
        for e in answer.elements() {
            e.error()?;
            match e.offset() {
                Offset::Offset(n) if n >= 0 => sum += n as u64,
                // Not resolved to an offset: the broker has none for it yet.
                _ => return Err(KafkaError::MetadataFetch(RDKafkaErrorCode::OffsetNotAvailable)),
            }
        }
        Ok(sum)
    }
}

/// How long to wait before asking again after a transient error.
const RETRY_BACKOFF: Duration = Duration::from_millis(50);

/// Errors a partition answers with while its leadership settles; anything else fails the sample at once.
fn is_transient(e: &KafkaError) -> bool {
    use RDKafkaErrorCode::*;
    matches!(
        e.rdkafka_error_code(),
        Some(
            NotLeaderForPartition
                | LeaderNotAvailable
                | UnknownTopicOrPartition
                | OffsetNotAvailable
                | UnknownLeaderEpoch
                | FencedLeaderEpoch
                | RequestTimedOut
        )
    )
}

/// The broker's count over a window: the high watermarks at its start and at its end.
#[derive(Debug, Clone, Copy)]
pub struct WatermarkWindow {
    pub open: WatermarkSample,
    pub close: WatermarkSample,
}

impl WatermarkWindow {
    /// Records the broker appended between the two samples.
    pub fn records(&self) -> u64 {
        self.close.sum.saturating_sub(self.open.sum)
    }

    /// From one sample's instant to the other's.
    pub fn seconds(&self) -> f64 {
        self.close.at().saturating_duration_since(self.open.at()).as_secs_f64()
    }

    /// None for a window with nothing in it: that is no rate, not a rate of zero.
    pub fn records_per_s(&self) -> Option<f64> {
        let s = self.seconds();
        (s > 0.0 && self.records() > 0).then(|| self.records() as f64 / s)
    }

    /// The largest relative error of the rate from not knowing when within its round trip each sample was
    /// read: each edge is known to +- half its round trip.
    pub fn timing_error(&self) -> f64 {
        let s = self.seconds();
        if s > 0.0 { (self.open.took + self.close.took).as_secs_f64() / 2.0 / s } else { f64::INFINITY }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(t0: Instant, at_ms: u64, took_ms: u64, sum: u64) -> WatermarkSample {
        WatermarkSample { sum, sent: t0 + Duration::from_millis(at_ms), took: Duration::from_millis(took_ms) }
    }

    #[test]
    fn the_window_runs_between_the_samples_midpoints_and_bounds_its_error() {
        let t0 = Instant::now();
        let w = WatermarkWindow { open: sample(t0, 0, 2, 1_000), close: sample(t0, 10_000, 4, 2_501_000) };
        assert_eq!(w.records(), 2_500_000);
        assert!((w.seconds() - 10.001).abs() < 1e-9, "{}", w.seconds());
        assert!((w.records_per_s().unwrap() - 2_500_000.0 / 10.001).abs() < 1e-6);
        // (2 + 4) / 2 ms of 10.001 s.
        assert!((w.timing_error() - 0.003 / 10.001).abs() < 1e-12, "{}", w.timing_error());
    }

    #[test]
    fn only_leadership_settling_is_asked_again() {
        assert!(is_transient(&KafkaError::MetadataFetch(RDKafkaErrorCode::NotLeaderForPartition)));
        assert!(is_transient(&KafkaError::OffsetFetch(RDKafkaErrorCode::LeaderNotAvailable)));
        assert!(!is_transient(&KafkaError::MetadataFetch(RDKafkaErrorCode::TopicAuthorizationFailed)));
    }

    #[test]
    fn a_window_with_nothing_in_it_has_no_rate() {
        let t0 = Instant::now();
        let w = WatermarkWindow { open: sample(t0, 0, 1, 500), close: sample(t0, 8_000, 1, 500) };
        assert_eq!(w.records_per_s(), None);
        let backwards = WatermarkWindow { open: sample(t0, 0, 1, 500), close: sample(t0, 8_000, 1, 400) };
        assert_eq!(backwards.records(), 0);
    }

    #[test]
    #[ignore = "needs a running environment: cargo xtask test"]
    fn a_sample_is_the_sum_of_the_partitions_high_watermarks() {
        use rdkafka::producer::{BaseRecord, Producer, ThreadedProducer};
        let env = crate::test_env();
        let cfg = crate::kafka::config::default_client_config(&env).unwrap();
        let topic = "streamlab-watermark-sampler-test";
        crate::kafka::admin::fresh_topic(&cfg, topic, 3, crate::kafka::admin::SHORT_RETENTION).unwrap();
        let sampler = WatermarkSampler::new(&cfg, topic, 3).unwrap();
        assert_eq!(sampler.sample().unwrap().sum, 0);
        let producer: ThreadedProducer<rdkafka::producer::DefaultProducerContext> = cfg.create().unwrap();
        for p in [0, 1, 1, 2, 2, 2] {
            producer.send(BaseRecord::<(), [u8]>::to(topic).partition(p).payload(&b"x"[..])).unwrap();
        }
        producer.flush(Duration::from_secs(30)).unwrap();
        let s = sampler.sample().unwrap();
        assert_eq!(s.sum, 6);
        assert_eq!(s.sum, crate::kafka::admin::high_watermark_sum(&cfg, topic).unwrap());
        assert!(s.took < SAMPLE_TIMEOUT);
        crate::kafka::admin::delete_topic(&cfg, topic).unwrap();
    }
}
