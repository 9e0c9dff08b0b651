//! The Java perf tools' producer and consumer settings the knobs decide (the listener's own settings come from
//! [`crate::kafka::java_props`]).

use crate::drivers::contract::ClientKnobs;

/// The producer settings the knobs decide; everything else stays at Java 4.1's defaults (max.in.flight 5,
/// buffer.memory 32 MiB, compression.lz4.level 9). `enable.idempotence` is always explicit: left alone, Java
/// turns it on and then silently off again for acks=1.
pub fn producer(knobs: &ClientKnobs) -> Vec<(&'static str, String)> {
    let mut p = vec![
        ("acks", knobs.acks.to_string()),
        ("enable.idempotence", knobs.idempotence.to_string()),
        ("linger.ms", knobs.linger_ms.to_string()),
        ("compression.type", knobs.compression.name().to_owned()),
    ];
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
