//! kafka_sink (seed 000): the raw librdkafka producer loop vs the spate framework's Kafka sink.

pub mod framework;
pub mod raw;
pub mod verdict;

/// Fresh topic name per bench/arm; recreated at the start of every run.
pub fn topic_name(arm: &str) -> String {
    format!("streamlab-kafka-sink-{arm}")
}
