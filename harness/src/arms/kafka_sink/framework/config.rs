//! The framework arm's knobs and the spate pipeline YAML they become. The defaults live in the matrix
//! (harness/matrices/kafka_sink.toml) and are the seed harness's; the sizing rules here are the seed's too.

use std::collections::BTreeMap;

use anyhow::{Context, Result, bail};
use rdkafka::ClientConfig;
use serde::Deserialize;
use spate::sink::InflightConfig;

/// librdkafka statistics cadence, the same as the raw arm's `statistics.interval.ms`.
const STATISTICS_INTERVAL: &str = "1s";
/// Publishes `spate_checkpoint_pending_batches` every second (commits are no-ops for the generator).
const CHECKPOINT_INTERVAL: &str = "1s";
/// Long enough to deliver what two sealed batches and the sink queues hold at a few hundred thousand
/// records/s; short enough that a sink that cannot deliver fails the arm quickly instead of after spate's 25 s.
const DRAIN_TIMEOUT: &str = "10s";
pub(super) const BUDGET_HIGH_RATIO: f64 = 0.8;
pub(super) const BUDGET_LOW_RATIO: f64 = 0.5;
/// spate's chunk target (`ChunkConfig::default()`, 64 KiB), which the seed's budget rule charges per queued chunk.
const CHUNK_MIB: f64 = 64.0 / 1024.0;
/// The seed harness never derived a budget below this (`derived_mb.max(1024)`).
const MIN_DERIVED_BUDGET_MIB: u64 = 1024;
/// Generator partitions (lanes) at least: keyless records are routed to shards by source partition, and
/// the pending-batch ceiling is per partition, so a handful of lanes keeps both from binding by accident.
const MIN_GENERATOR_PARTITIONS: usize = 16;
/// spate's default `max_message_bytes` guard (key + payload + headers).
const MAX_MESSAGE_BYTES: usize = 1_000_000;
const MIB: u64 = 1024 * 1024;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Knobs {
    pub payload_bytes: usize,
    pub partitions: i32,
    pub warmup_s: f64,
    pub window_s: f64,
    /// spate sink `batch.max_rows` / `batch.max_bytes`.
    pub batch_max_rows: u64,
    pub batch_max_bytes: u64,
    /// spate sink `batch.linger`: seal a non-empty batch this long after its first chunk.
    pub batch_linger_ms: u64,
    /// librdkafka `linger.ms`, through the sink's rdkafka passthrough (as in the raw arm).
    pub linger_ms: u64,
    pub queue_buffering_max_messages: u64,
    pub shards: usize,
    pub pipeline_threads: usize,
    /// spate sink `inflight.max_per_shard`; 0 keeps spate's default.
    pub inflight_per_shard: usize,
    /// spate `pipeline.io_threads` (the I/O runtime the sink workers run on); 0 keeps spate's default.
    pub io_threads: usize,
    /// spate `backpressure.min_pause`: the least a pause lasts; every sink-queue rejection restarts it.
    pub min_pause_ms: u64,
    /// Chunks each sink shard's queue holds (`SinkOptions::with_queue_capacity`; spate's builder default is 8).
    pub sink_queue_capacity: usize,
    /// `backpressure.max_inflight_bytes` in MiB; 0 derives it by the seed harness's rule.
    pub max_inflight_mb: u64,
    /// `checkpoint.max_pending_batches`.
    pub max_pending_batches: u64,
    /// Applied by the runner to the broker process; recorded only.
    pub broker_cores: u64,
}

impl Knobs {
    pub(super) fn check(&self) -> Result<()> {
        if self.payload_bytes == 0 || self.payload_bytes > MAX_MESSAGE_BYTES {
            bail!("payload_bytes must be in 1..={MAX_MESSAGE_BYTES} (spate's default max_message_bytes)");
        }
        if self.shards == 0 || self.pipeline_threads == 0 || self.sink_queue_capacity == 0 {
            bail!("shards, pipeline_threads and sink_queue_capacity must be at least 1");
        }
        if !(self.warmup_s >= 0.0 && self.window_s > 0.0) {
            bail!("warmup_s must be >= 0 and window_s > 0");
        }
        Ok(())
    }

    /// Write slots per shard the sink runs with.
    pub(super) fn inflight_per_shard_effective(&self) -> usize {
        if self.inflight_per_shard == 0 { InflightConfig::default().max_per_shard } else { self.inflight_per_shard }
    }

    pub(super) fn generator_partitions(&self) -> usize {
        MIN_GENERATOR_PARTITIONS.max(self.shards).max(self.pipeline_threads)
    }

    /// The in-flight budget in MiB: the knob, or the seed harness's rule (kafka_sink_saturation.rs at
    /// 6af6861, l.204-217): the budget's low mark must cover every shard's in-flight batches at their byte
    /// bound plus its queued chunks, twice over, and never less than 1 GiB. The seed's defaults give 2064.
    pub(super) fn inflight_budget_mib(&self) -> u64 {
        if self.max_inflight_mb > 0 {
            return self.max_inflight_mb;
        }
        let shards = self.shards as f64;
        let batch_mib = self.batch_max_bytes as f64 / MIB as f64;
        let batches = shards * self.inflight_per_shard_effective() as f64 * batch_mib;
        let queued = shards * self.sink_queue_capacity as f64 * CHUNK_MIB;
        let derived = (2.0 * (batches + queued) / BUDGET_LOW_RATIO).ceil() as u64;
        derived.max(MIN_DERIVED_BUDGET_MIB)
    }

    pub(super) fn inflight_budget_bytes(&self) -> u64 {
        self.inflight_budget_mib() * MIB
    }
}

/// The whole pipeline as spate YAML. Strings are written as JSON literals, which YAML reads verbatim.
pub(super) fn pipeline_yaml(knobs: &Knobs, base: &ClientConfig, topic: &str) -> Result<String> {
    let brokers = base.get("bootstrap.servers").context("the listener has no bootstrap.servers")?;
    let q = |s: &str| serde_json::to_string(s).expect("a string serializes");
    let io_threads = if knobs.io_threads == 0 { String::new() } else { format!(", io_threads: {}", knobs.io_threads) };
    let inflight = if knobs.inflight_per_shard == 0 {
        String::new()
    } else {
        format!("    inflight: {{ max_per_shard: {} }}\n", knobs.inflight_per_shard)
    };
    // The listener's security settings go through the passthrough; the sink owns bootstrap.servers.
    let mut rdkafka = BTreeMap::from([
        ("linger.ms".to_owned(), knobs.linger_ms.to_string()),
        ("queue.buffering.max.messages".to_owned(), knobs.queue_buffering_max_messages.to_string()),
    ]);
    for (k, v) in base.config_map().iter() {
        if *k != "bootstrap.servers" {
            rdkafka.insert(k.to_string(), v.to_string());
        }
    }
    let rdkafka: String = rdkafka.iter().map(|(k, v)| format!("      {}: {}\n", q(k), q(v))).collect();
    Ok(format!(
        "pipeline: {{ name: streamlab-kafka-sink, threads: {threads}{io_threads} }}
admin: {{ listen: none }}
metrics: {{ exporter: prometheus }}
checkpoint: {{ interval: {CHECKPOINT_INTERVAL}, max_pending_batches: {max_pending}, drain_timeout: {DRAIN_TIMEOUT} }}
backpressure: {{ max_inflight_bytes: {budget}, high_ratio: {BUDGET_HIGH_RATIO}, low_ratio: {BUDGET_LOW_RATIO}, min_pause: {min_pause}ms }}
source:
  generator: {{ payload_bytes: {payload}, partitions: {partitions} }}
sink:
  kafka:
    brokers: {brokers}
    topic: {topic}
    shards: {shards}
    statistics_interval: {STATISTICS_INTERVAL}
    batch: {{ max_rows: {max_rows}, max_bytes: {max_bytes}, linger: {linger}ms }}
{inflight}    rdkafka:
{rdkafka}",
        threads = knobs.pipeline_threads,
        max_pending = knobs.max_pending_batches,
        budget = knobs.inflight_budget_bytes(),
        min_pause = knobs.min_pause_ms,
        payload = knobs.payload_bytes,
        partitions = knobs.generator_partitions(),
        brokers = q(brokers),
        topic = q(topic),
        shards = knobs.shards,
        max_rows = knobs.batch_max_rows,
        max_bytes = knobs.batch_max_bytes,
        linger = knobs.batch_linger_ms,
    ))
}

/// The librdkafka configuration spate 0.2.0's Kafka sink builds its one producer from, for the pipeline in
/// `yaml` (spate-kafka 0.2.0 src/sink/config.rs, `client_config_impl`): the `rdkafka` passthrough first, then
/// what the sink owns over it: the typed compression, the brokers, `enable.idempotence=true`, `acks=all`,
/// the delivery timeout as `message.timeout.ms`, `message.max.bytes`, `statistics.interval.ms`. The sink
/// keeps its producer to itself, so this is that function's order of settings, on spate's own parse of the
/// same YAML.
pub(super) fn sink_producer_config(yaml: &str) -> Result<ClientConfig> {
    let config = spate::config::PipelineConfig::from_str(yaml).context("spate refused the pipeline config")?;
    let sink: spate::kafka::KafkaSinkConfig =
        config.sink_config("default")?.deserialize_into().context("spate refused the Kafka sink section")?;
    let mut cc = ClientConfig::new();
    for (k, v) in &sink.rdkafka {
        cc.set(k, v);
    }
    if let Some(compression) = sink.compression {
        // spate's codec names are librdkafka's, its enum's variants in lower case.
        cc.set("compression.codec", format!("{compression:?}").to_ascii_lowercase());
    }
    cc.set("bootstrap.servers", &sink.brokers)
        .set("enable.idempotence", "true")
        .set("acks", "all")
        .set("message.timeout.ms", sink.delivery_timeout.as_millis().to_string())
        .set("message.max.bytes", sink.max_message_bytes.as_u64().to_string());
    if !sink.statistics_interval.is_zero() {
        cc.set("statistics.interval.ms", sink.statistics_interval.as_millis().to_string());
    }
    Ok(cc)
}

/// The `source: { generator: ... }` section.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct GeneratorConfig {
    pub payload_bytes: usize,
    pub partitions: usize,
}

#[cfg(test)]
pub(super) mod tests {
    use std::time::Duration;

    use spate::config::PipelineConfig;

    use super::*;

    /// The seed harness's defaults (spate-etl/spate 6af6861, benchmarks/src/bin/kafka_sink_saturation.rs
    /// l.116-132 and the environment it ran in), knob by knob, as the matrix must carry them.
    pub(in crate::arms::kafka_sink::framework) const SEED_DEFAULTS: &[(&str, i64)] = &[
        ("pipeline_threads", 4),                   // THREADS
        ("io_threads", 4),                         // IO_THREADS
        ("shards", 1),                             // SHARDS
        ("inflight_per_shard", 2),                 // INFLIGHT_PER_SHARD
        ("batch_max_rows", 500_000),               // BATCH_MAX_ROWS
        ("batch_max_bytes", 256 * 1024 * 1024),    // BATCH_MAX_MB 256
        ("batch_linger_ms", 1000),                 // LINGER_MS (spate's batch.linger)
        ("sink_queue_capacity", 64),               // QUEUE_CAP
        ("queue_buffering_max_messages", 100_000), // QUEUE_BUFFERING_MAX_MESSAGES
        ("max_pending_batches", 8192),             // MAX_PENDING_BATCHES
        ("max_inflight_mb", 0),                    // MAX_INFLIGHT_MB unset: derived (l.204-217)
        ("min_pause_ms", 500),                     // backpressure.min_pause unset: spate's 500 ms
        ("linger_ms", 5),                          // linger.ms unset: librdkafka's 5 ms
        ("payload_bytes", 256),                    // PAYLOAD
        ("partitions", 16),                        // PARTITIONS
    ];

    /// The seed's configuration as the knobs JSON the runner hands the arm (quick windows).
    pub(in crate::arms::kafka_sink::framework) fn seed_knobs_json() -> serde_json::Map<String, serde_json::Value> {
        let mut knobs: serde_json::Map<_, _> =
            SEED_DEFAULTS.iter().map(|(k, v)| ((*k).to_owned(), (*v).into())).collect();
        knobs.insert("warmup_s".into(), 1.0.into());
        knobs.insert("window_s".into(), 2.0.into());
        knobs.insert("broker_cores".into(), 0.into());
        knobs
    }

    pub(in crate::arms::kafka_sink::framework) fn seed_knobs() -> Knobs {
        serde_json::from_value(serde_json::Value::Object(seed_knobs_json())).expect("the seed's knobs")
    }

    #[test]
    fn the_matrix_defaults_are_the_seed_harness_defaults() {
        let matrix: toml::Table = include_str!("../../../../matrices/kafka_sink.toml").parse().unwrap();
        let knobs = matrix["knobs"].as_table().unwrap();
        for (name, seed) in SEED_DEFAULTS {
            let default = knobs.get(*name).and_then(|k| k.get("default")).and_then(|d| d.as_integer());
            assert_eq!(default, Some(*seed), "knobs.{name}.default must be the seed harness's {seed}");
        }
    }

    #[test]
    fn the_budget_follows_the_seed_harness_rule() {
        // 2 x (1 shard x 2 in flight x 256 MiB + 1 x 64 chunks x 64 KiB) / 0.5 = 2064 MiB, as the seed logged.
        assert_eq!(seed_knobs().inflight_budget_mib(), 2064);
        let mut k = seed_knobs();
        k.shards = 4;
        assert_eq!(k.inflight_budget_mib(), 8256);
        // Small batches: the seed never went below 1 GiB.
        k.shards = 1;
        k.batch_max_bytes = 1024 * 1024;
        assert_eq!(k.inflight_budget_mib(), 1024);
        // An explicit budget wins (spate's builder default is 256 MiB).
        k.max_inflight_mb = 256;
        assert_eq!(k.inflight_budget_bytes(), 256 * 1024 * 1024);
    }

    #[test]
    fn spate_accepts_the_generated_config() {
        let mut base = ClientConfig::new();
        base.set("bootstrap.servers", "127.0.0.1:39092").set("security.protocol", "plaintext");
        let mut k = seed_knobs();
        k.inflight_per_shard = 3;
        k.io_threads = 1;
        let yaml = pipeline_yaml(&k, &base, "streamlab-kafka-sink-framework").unwrap();
        let config = PipelineConfig::from_str(&yaml).unwrap_or_else(|e| panic!("{e}\n{yaml}"));
        assert_eq!(config.pipeline.threads, Some(4));
        assert_eq!(config.pipeline.io_threads, 1);
        assert_eq!(config.admin.listen, None, "the admin server must not listen");
        assert_eq!(config.backpressure.min_pause, Duration::from_millis(500));
        assert_eq!(config.backpressure.max_inflight_bytes.as_u64(), k.inflight_budget_bytes());
        assert_eq!(config.checkpoint.max_pending_batches, 8192);
        let generator: GeneratorConfig = config.source.deserialize_into().unwrap();
        assert_eq!((generator.payload_bytes, generator.partitions), (256, 16));
        let sink: spate::kafka::KafkaSinkConfig = config.sink_config("default").unwrap().deserialize_into().unwrap();
        sink.validate().unwrap();
        assert_eq!(sink.brokers, "127.0.0.1:39092");
        assert_eq!((sink.batch.max_rows, sink.batch.max_bytes), (500_000, 268_435_456));
        assert_eq!(sink.batch.linger, Duration::from_secs(1));
        assert_eq!(sink.inflight.max_per_shard, 3);
        assert_eq!(sink.rdkafka.get("queue.buffering.max.messages").map(String::as_str), Some("100000"));
        assert_eq!(sink.rdkafka.get("linger.ms").map(String::as_str), Some("5"));
        assert!(!sink.rdkafka.contains_key("bootstrap.servers"));
    }

    #[test]
    fn the_sinks_producer_is_read_with_what_spate_forces_over_the_passthrough() {
        let mut base = ClientConfig::new();
        base.set("bootstrap.servers", "127.0.0.1:39092").set("security.protocol", "plaintext");
        let yaml = pipeline_yaml(&seed_knobs(), &base, "t").unwrap();
        let cc = sink_producer_config(&yaml).unwrap();
        let get = |k| cc.get(k).unwrap_or_default();
        assert_eq!((get("acks"), get("enable.idempotence")), ("all", "true"));
        assert_eq!((get("linger.ms"), get("queue.buffering.max.messages")), ("5", "100000"));
        assert_eq!((get("bootstrap.servers"), get("security.protocol")), ("127.0.0.1:39092", "plaintext"));
        assert_eq!((get("statistics.interval.ms"), get("message.timeout.ms")), ("1000", "30000"));
        assert_eq!(cc.get("compression.codec"), None, "no typed compression: librdkafka's default");
        let applied = crate::arms::kafka_sink::window::applied(256, 16, 3.0, 8.0, &cc).unwrap();
        assert_eq!(applied["producer.max.in.flight.requests.per.connection"], "5");
        assert_eq!(applied["producer.compression.type"], "none");
    }
}
