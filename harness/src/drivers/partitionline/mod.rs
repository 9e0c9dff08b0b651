//! The partitionline 0.1.0 arm (pure Rust: tokio + rustls, no librdkafka). It runs the seed's own
//! `examples/bench_*.rs` shapes through the crate's public API, with one correction: a produce run counts what
//! the broker acknowledged (`metrics().records_acked`), not the `try_send` calls that returned Ok, which is
//! what the seed's bench_produce printed as "acked". The loops run in `partitionline-bench`
//! (harness/partitionline), built as the seed built its benches; this arm makes the topic, describes the
//! configuration, measures the brokers and checks the high watermark.

use std::time::Duration;

use anyhow::{Context, Result, bail};
use partitionline::ProducerConfig;
use streamlab_partitionline::{FLUSH_TIMEOUT, Job, Outcome, STALL_TIMEOUT, Work};
use streamlab_process::Cmd;
use streamlab_record::applied::Applied;
use streamlab_record::tools::Tools;
use streamlab_record::{EnvDescriptor, Metric};

pub(crate) mod config;

use self::config::{compression, consumer_applied, describe_producer, producer_applied, queue_cap, settings};
use super::contract::{
    self, Asymmetries, ClientInfo, ClientKnobs, Fetched, KafkaDriver, LedgerProducer, PacedLoop, Produced,
    QueueFullSeen, Ran, Tool, Workload, applied as client_applied,
};

pub mod ledger;

/// The longest one bench loop may take in its binary: the loops stop themselves sooner (a 60 s stall, a 300 s
/// flush), so this only catches a binary that hangs.
const JOB_TIMEOUT: Duration = Duration::from_secs(3600);

/// partitionline 0.1.0, in seed 003's own build of its bench loops.
pub struct Partitionline;

impl KafkaDriver for Partitionline {
    fn name(&self) -> &'static str {
        "partitionline"
    }

    fn refuse(&self, knobs: &ClientKnobs) -> Result<()> {
        contract::x_payload_only(knobs, "partitionline")?;
        if matches!(knobs.workload, Workload::Produce | Workload::Paced) {
            compression(knobs.compression)?;
        }
        Ok(())
    }

    fn ledger(&self) -> Option<&dyn LedgerProducer> {
        Some(self)
    }

    fn tools(&self) -> &'static [Tool] {
        &[Tool::PartitionlineBench]
    }

    fn produce(&self, env: &EnvDescriptor, knobs: &ClientKnobs, topic: &str) -> Result<Ran<Produced>> {
        let (listener, password) = contract::listener(env, knobs)?;
        let settings = settings(knobs, listener, password)?;
        let (cfg, security) = (settings.producer()?, settings.security()?);
        let described = describe_producer(&cfg);
        let asymmetries = produce_asymmetries(&cfg, knobs.partitions);
        let applied = client_applied::base(knobs, cfg.connections, client_applied::CLOCK_BEFORE_CONNECT)
            .producer(producer_applied(&cfg, &security))
            .set(streamlab_record::applied::QUEUE_CAP, queue_cap(&cfg))
            .build();
        let job = Job {
            settings,
            topic: topic.to_owned(),
            work: Work::Produce { count: knobs.count, on_full: knobs.queue_full },
        };
        let (outcome, build) = in_seed_build(&job)?;
        let Outcome::Produced(outcome) = outcome else {
            bail!("partitionline-bench answered a produce job with {outcome:?}")
        };
        let produced = Produced {
            acked: outcome.acked,
            failed: outcome.failed,
            elapsed: outcome.elapsed,
            client_cpu_s: outcome.client_cpu_s,
            queue_full: QueueFullSeen::Refusals(outcome.queue_full_refusals),
        };
        let mut notes: Vec<String> = outcome.setup_note.iter().cloned().collect();
        if let Some(queued) = outcome.stalled_at {
            notes.push(format!(
                "try_send refused every record for {}s; stopped after {queued}",
                STALL_TIMEOUT.as_secs()
            ));
        }
        if let Some(e) = &outcome.flush_error {
            notes.push(format!("flush returned an error: {e}"));
        }
        if let Some(e) = &outcome.close_error {
            notes.push(format!("close after flush returned an error: {e}"));
        }
        let command = format!(
            "partitionline {} Producer on {} ({}): {described}; queue_messages={} has no equivalent (buffer_memory \
             bytes only); try_send, on QueueFull {}, then flush_timeout({}s); acked = metrics().records_acked, failed = metrics().produce_errors",
            partitionline::CLIENT_VERSION,
            knobs.listener,
            security.described,
            knobs.queue_messages,
            knobs.queue_full.described(),
            FLUSH_TIMEOUT.as_secs(),
        );
        let note = (!notes.is_empty()).then(|| notes.join("; "));
        let mut info = info(command, asymmetries, note, applied, build);
        // How much of the clock went to connecting, metadata and the leader connections.
        info.metrics
            .insert("first_queued_ms".into(), Metric::new(outcome.first_queued.as_secs_f64() * 1e3, "ms", false));
        Ok(Ran { measured: produced, info })
    }

    fn fetch(&self, env: &EnvDescriptor, knobs: &ClientKnobs, topic: &str, hw: u64) -> Result<Ran<Fetched>> {
        let (listener, password) = contract::listener(env, knobs)?;
        let settings = settings(knobs, listener, password)?;
        let (cfg, security) = (settings.consumer()?, settings.security()?);
        let described = format!(
            "max_wait_ms={} min_bytes={} max_bytes={} max_partition_fetch_bytes={} isolation={}",
            cfg.max_wait_ms, cfg.min_bytes, cfg.max_bytes, cfg.max_partition_fetch_bytes, cfg.isolation_level
        );
        let job = Job { settings, topic: topic.to_owned(), work: Work::Fetch { high_watermark: hw } };
        let (outcome, build) = in_seed_build(&job)?;
        let Outcome::Fetched(outcome) = outcome else {
            bail!("partitionline-bench answered a fetch job with {outcome:?}")
        };
        let fetched = Fetched {
            consumed: outcome.consumed,
            bytes: outcome.bytes,
            elapsed: outcome.elapsed,
            client_cpu_s: outcome.client_cpu_s,
            fetch_request_us: outcome.fetch_request_us,
        };
        let asymmetries = Asymmetries {
            connections: "1 per broker (plus the bootstrap connection, not counted)".into(),
            in_flight: "1 Fetch per broker at a time (one fetch() round)".into(),
            partitioner: "all partitions assigned with assign_topic, from offset 0".into(),
            clock: "from the return of the first fetch() that brought records to the fetch() that reached the high \
                    watermark: connect, metadata, the leader connection and the first Fetch round trip outside it, as \
                    for the C tool (whose clock starts at its first message); the seed's bench_fetch started after \
                    assign_topic. The first fetch_request sample holds the leader connection"
                .into(),
            payload: "preloaded by rust-rdkafka: 'x' repeated".into(),
        };
        let command = format!(
            "partitionline {} Consumer on {} ({}): {described}; assign_topic({topic}, 0), fetch() until consumed == \
             high watermark ({hw}); every non-empty fetch() timed as fetch_request_us",
            partitionline::CLIENT_VERSION,
            knobs.listener,
            security.described,
        );
        let note = outcome
            .stalled
            .then(|| format!("no progress for {}s; stopped at {}", STALL_TIMEOUT.as_secs(), fetched.consumed));
        let requests = fetched.fetch_request_us.len() as f64;
        let first_round = outcome.first_round_records as f64;
        let applied = client_applied::base(knobs, 1, client_applied::CLOCK_FIRST_RECORD)
            .consumer(consumer_applied(&cfg, &security))
            .build();
        let mut info = info(command, asymmetries, note, applied, build);
        // How many samples the fetch_request percentiles stand on (a 16 MiB fetch returns a lot per round).
        info.metrics.insert("fetch_requests".into(), Metric::new(requests, "requests", false));
        // Records the first round brought before the clock started (counted, not timed; as the C tool's first
        // message set): with few rounds they weigh on the rate.
        info.metrics.insert("first_round_records".into(), Metric::new(first_round, "records", false));
        Ok(Ran { measured: fetched, info })
    }

    fn latency(&self, env: &EnvDescriptor, knobs: &ClientKnobs, topic: &str) -> Result<Ran<Vec<f64>>> {
        let (listener, password) = contract::listener(env, knobs)?;
        let settings = settings(knobs, listener, password)?;
        let (cfg, security) = (settings.latency_producer()?, settings.security()?);
        let described = describe_producer(&cfg);
        let applied = client_applied::base(knobs, cfg.connections, client_applied::CLOCK_PER_ROUND_TRIP)
            .producer(producer_applied(&cfg, &security))
            .set("producer.partitioner.class", client_applied::EXPLICIT_PARTITION)
            .set(streamlab_record::applied::QUEUE_CAP, queue_cap(&cfg))
            .build();
        let work = Work::Latency { warmup: knobs.latency_warmup, samples: knobs.latency_samples };
        let (outcome, build) = in_seed_build(&Job { settings, topic: topic.to_owned(), work })?;
        let Outcome::Latencies(outcome) = outcome else {
            bail!("partitionline-bench answered a latency job with {outcome:?}")
        };
        let asymmetries = Asymmetries {
            connections: "1 per broker for produce + 1 metadata connection, not counted".into(),
            in_flight: "1 (max_in_flight=1, one send().await at a time)".into(),
            partitioner: "partition 0".into(),
            clock: "from send() to its future resolving with the Produce response (RecordMetadata), as the seed's \
                    bench_latency"
                .into(),
            payload: "'x' repeated".into(),
        };
        let command = format!(
            "partitionline {} Producer, sequential send().await to partition 0 on {} ({}): {described}",
            partitionline::CLIENT_VERSION,
            knobs.listener,
            security.described,
        );
        let info = info(command, asymmetries, outcome.setup_note, applied, build);
        Ok(Ran { measured: outcome.samples_us, info })
    }

    fn paced(&self, env: &EnvDescriptor, knobs: &ClientKnobs, topic: &str) -> Result<Ran<PacedLoop>> {
        let (listener, password) = contract::listener(env, knobs)?;
        let settings = settings(knobs, listener, password)?;
        let (cfg, security) = (settings.producer()?, settings.security()?);
        let described = describe_producer(&cfg);
        let asymmetries = paced_asymmetries(&cfg, knobs.partitions);
        let applied = client_applied::base(knobs, cfg.connections, client_applied::CLOCK_INTENDED_SEND)
            .producer(producer_applied(&cfg, &security))
            .set(streamlab_record::applied::QUEUE_CAP, queue_cap(&cfg))
            .build();
        let work = Work::Paced { rate: knobs.rate, records: knobs.paced_records() };
        let (outcome, build) = in_seed_build(&Job { settings, topic: topic.to_owned(), work })?;
        let Outcome::Paced { run, setup_note } = outcome else {
            bail!("partitionline-bench answered a paced job with {outcome:?}")
        };
        let command = format!(
            "partitionline {} Producer on {} ({}): {described}; a plain thread offers each stamped record when due \
             and spawns send(record).await on the runtime; each record timed from its intended send to its \
             RecordMetadata",
            partitionline::CLIENT_VERSION,
            knobs.listener,
            security.described,
        );
        Ok(Ran { measured: run, info: info(command, asymmetries, setup_note, applied, build) })
    }
}

/// The paced loop's asymmetries: the produce shape, a record's acknowledgement read from its own send future.
fn paced_asymmetries(cfg: &ProducerConfig, partitions: i32) -> Asymmetries {
    Asymmetries {
        clock: "each record from its intended send time (the schedule's) to its send() future resolving; the \
                producer connected and the topic's metadata read before the first record is due"
            .into(),
        payload: "a 16-byte stamp (sequence, intended send), then 'x'".into(),
        ..produce_asymmetries(cfg, partitions)
    }
}

/// Run `job` in `partitionline-bench`, the loops built as seed 003 built its benches (thin LTO, one codegen
/// unit), which the tools file names; its outcome and how it was built.
fn in_seed_build(job: &Job) -> Result<(Outcome, String)> {
    let tools = Tools::load().map_err(anyhow::Error::msg)?;
    let bench = tools.partitionline_bench.as_ref().context(
        "the tools file names no partitionline-bench: `cargo xtask lab run` builds it (cargo build --profile seed-003 \
         -p streamlab-partitionline)",
    )?;
    let out = Cmd::new(&bench.path).stdin(serde_json::to_vec(job)?).output(JOB_TIMEOUT)?;
    if !out.status.success() {
        bail!("{} failed ({}):\n{}", bench.path.display(), out.status, out.tail(20));
    }
    let outcome = serde_json::from_str(&out.stdout)
        .with_context(|| format!("{} printed no outcome:\n{}", bench.path.display(), out.tail(20)))?;
    Ok((outcome, bench.build.clone()))
}

/// The client's description; `build` is how its binary was built (`Measurement::versions`, so a record says it).
fn info(
    command: String,
    asymmetries: Asymmetries,
    note: Option<String>,
    applied: Applied,
    build: String,
) -> ClientInfo {
    ClientInfo {
        versions: [
            ("partitionline".to_owned(), partitionline::CLIENT_VERSION.to_owned()),
            ("build:partitionline-bench".to_owned(), build),
        ]
        .into(),
        command,
        asymmetries,
        note,
        applied,
        metrics: Default::default(),
    }
}

fn produce_asymmetries(cfg: &ProducerConfig, partitions: i32) -> Asymmetries {
    let in_flight = if cfg.enable_idempotence { cfg.max_in_flight.min(5) } else { cfg.max_in_flight };
    let carrying = usize::try_from(partitions).unwrap_or(0).min(cfg.connections);
    Asymmetries {
        connections: format!(
            "{} per broker for produce (partition p on connection p % {}; {carrying} of them carry the topic's \
             {partitions} partitions on one broker) + 1 metadata connection, not counted; {}",
            cfg.connections,
            cfg.connections,
            if cfg.connections == ProducerConfig::default().connections {
                "the crate's default, as the seed ran"
            } else {
                "set by the connections knob"
            }
        ),
        in_flight: format!("{in_flight} Produce requests per connection (crate default 16; 5 when idempotent)"),
        partitioner: "keyless records round-robin per record (DefaultPartitioner)".into(),
        clock: "from before Producer::new (bootstrap connect, ApiVersions, SASL, InitProducerId, metadata and the \
                leader connections, which try_send waits for through QueueFull, all inside: the C tool's clock \
                starts before it connects too; the seed's bench_produce started after Producer::new) to flush \
                returning"
            .into(),
        payload: "'x' repeated".into(),
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use streamlab_record::descriptor::Listener;

    use super::*;

    /// The seed's locked produce knobs at a small count, with `overrides`.
    pub(crate) fn knobs_json(overrides: serde_json::Value) -> serde_json::Map<String, serde_json::Value> {
        let mut v = serde_json::json!({
            "workload": "produce", "listener": "plaintext", "compression": "none", "acks": 1, "idempotence": false,
            "count": 20000, "payload_bytes": 100, "partitions": 6, "linger_ms": 5, "batch_messages": 32768,
            "payload": "x", "queue_full": "park", "connections": 0,
            "batch_bytes": 1000000, "queue_messages": 1000000, "fetch_max_wait_ms": 100, "fetch_min_bytes": 1,
            "fetch_max_bytes": 16777216, "latency_warmup": 20, "latency_samples": 200, "kafka_version": "4.1.0"
        });
        for (k, val) in overrides.as_object().unwrap() {
            v[k] = val.clone();
        }
        v.as_object().unwrap().clone()
    }

    pub(crate) fn knobs(overrides: serde_json::Value) -> ClientKnobs {
        serde_json::from_value(serde_json::Value::Object(knobs_json(overrides))).unwrap()
    }

    pub(super) fn listener(security_protocol: &str, mechanism: Option<&str>, user: Option<&str>) -> Listener {
        Listener {
            bootstrap: "127.0.0.1:9095".into(),
            security_protocol: security_protocol.into(),
            sasl_mechanism: mechanism.map(Into::into),
            username: user.map(Into::into),
            password_file: None,
            ca_file: None,
        }
    }

    // Against a broker.
}
