//! kafka_sink (seed 000): the raw librdkafka producer loop vs the spate framework's Kafka sink.

pub mod framework;
pub mod raw;
pub mod verdict;

use std::time::Duration;

/// How long an arm waits for its first acknowledgement. The warm-up starts only then: a producer still
/// waiting for its idempotence PID or for the broker's coordinator is starting, not running slowly.
pub const FIRST_ACK_TIMEOUT: Duration = Duration::from_secs(60);

/// Acknowledgements a window needs to be a rate at all; with fewer, the arm fails with the reason
/// instead of reporting a rate of zero (or of one batch straddling the window's edge).
pub const MIN_ACKS_IN_WINDOW: u64 = 2;

/// Fresh topic name per bench/arm; recreated at the start of every run.
pub fn topic_name(arm: &str) -> String {
    format!("streamlab-kafka-sink-{arm}")
}
