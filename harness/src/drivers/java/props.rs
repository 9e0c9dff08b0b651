//! The Java perf tools' producer and consumer settings the knobs decide (the listener's own settings come from
//! [`crate::kafka::java_props`]).

use crate::drivers::contract::{ClientKnobs, ProducerSettings};

/// The settings both Kafka benches share, under Java's names. `enable.idempotence` is always explicit: left alone,
/// Java turns it on and then silently off again for acks=1.
pub fn settings(s: &ProducerSettings) -> Vec<(&'static str, String)> {
    vec![
        ("acks", s.acks.to_string()),
        ("enable.idempotence", s.idempotence.to_string()),
        ("linger.ms", s.linger_ms.to_string()),
    ]
}

/// The producer settings the knobs decide; everything else stays at Java 4.1's defaults (max.in.flight 5,
/// buffer.memory 32 MiB, compression.lz4.level 9).
pub fn producer(knobs: &ClientKnobs) -> Vec<(&'static str, String)> {
    let mut p = settings(&knobs.producer());
    p.push(("compression.type", knobs.compression.name().to_owned()));
    if knobs.batch_bytes > 0 {
        p.push(("batch.size", knobs.batch_bytes.to_string()));
    }
    p
}

/// The consumer settings of a fetch (max.partition.fetch.bytes is ConsumerPerformance's `--fetch-size`, which
/// overrides any value in the file).
pub fn consumer(knobs: &ClientKnobs) -> Vec<(&'static str, String)> {
    vec![
        ("fetch.max.wait.ms", knobs.fetch_max_wait_ms.to_string()),
        ("fetch.min.bytes", knobs.fetch_min_bytes.to_string()),
        ("fetch.max.bytes", knobs.fetch_max_bytes.to_string()),
    ]
}
