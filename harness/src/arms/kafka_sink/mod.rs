//! kafka_sink (seed 000): the raw librdkafka producer loop vs the spate framework's Kafka sink. Both arms'
//! rates come from the same independent count, the topic's high watermarks at the window's edges
//! ([`window`]); each arm's own acknowledgements are its integrity check.

pub mod framework;
pub mod raw;
pub mod verdict;
pub mod window;

use std::time::Duration;

pub use window::MIN_ACKS_IN_WINDOW;

/// How long an arm waits for its first acknowledgement. The warm-up starts only then: a producer still
/// waiting for its idempotence PID or for the broker's coordinator is starting, not running slowly.
pub const FIRST_ACK_TIMEOUT: Duration = Duration::from_secs(60);

/// Fresh topic name per bench/arm; recreated at the start of every run.
pub fn topic_name(arm: &str) -> String {
    format!("streamlab-kafka-sink-{arm}")
}
