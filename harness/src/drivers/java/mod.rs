//! Kafka's Java perf tools as a client arm (seed 002's tool): `ProducerPerformance` for produce and
//! `ConsumerPerformance` for fetch, from the pinned kafka-tools 4.1.0 jar set the tools file names, run as
//! `kafka-run-class.sh` runs them. Settings go in a private properties file (`--producer.config`,
//! `--consumer.config`), so the SASL password never appears on a command line. The numbers are the tools'
//! own (their clocks, their counts); integrity comes from the broker's high watermarks as for every client.
//! What the client ran with is its own `ProducerConfig values:` / `ConsumerConfig values:` log block.
//! Latency is not runnable: neither tool measures a sequential produce -> ack round trip in microseconds.

pub(crate) mod jvm;

pub(crate) mod output;
pub(crate) mod props;

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::time::Duration;

use anyhow::{Context, Result, ensure};
use streamlab_record::EnvDescriptor;

use self::jvm::{Jvm, ToolRun};
use self::output::{ConsumerTotal, ProducerTotal};
use super::contract::{
    self, Asymmetries, ClientInfo, ClientKnobs, Compression, Fetched, JavaTools, KafkaDriver, LedgerProducer,
    NotRunnable, Payload, Produced, QueueFullSeen, Ran, Tool, Tools, Workload, applied as client_applied,
};
use crate::kafka::java_props::Properties;
use crate::kafka::java_tools::config_values;

pub mod ledger;

const PRODUCER_MAIN: &str = "org.apache.kafka.tools.ProducerPerformance";
const CONSUMER_MAIN: &str = "org.apache.kafka.tools.ConsumerPerformance";
/// A JVM still running after this long is killed and the point fails.
const TOOL_DEADLINE: Duration = Duration::from_secs(900);
/// ConsumerPerformance gives up after this long without a record (`--timeout`).
const CONSUMER_STALL_MS: u64 = 60_000;
/// Java 4.1's producer batch.size default, in effect when the knob is 0.
const JAVA_BATCH_SIZE_DEFAULT: u64 = 16_384;

const LATENCY_NOT_RUNNABLE: &str = "Kafka's Java perf tools have no sequential produce->ack latency in microseconds: \
     ProducerPerformance reports send->callback latencies of a full-speed run in integer milliseconds, and \
     EndToEndLatency times produce+consume round trips, also in integer milliseconds";

const PACED_NOT_RUNNABLE: &str = "the lab has no paced loop for the Java client yet; Kafka's ProducerPerformance \
     --throughput paces from its send() calls and times each record from the send, in integer milliseconds, so it \
     cannot stand in for one";

/// Kafka's own perf tools on the pinned Java client, with the tools file's JVM; for durability, Kafka's
/// KafkaProducer through the lab's ledger-writing driver ([`ledger`]).
pub struct Java;

impl Java {
    /// The Java tools the tools file names.
    fn java(&self) -> Result<JavaTools> {
        Tools::load().map_err(anyhow::Error::msg)?.java().cloned().map_err(anyhow::Error::msg)
    }
}

impl KafkaDriver for Java {
    fn name(&self) -> &'static str {
        "java"
    }

    fn ledger(&self) -> Option<&dyn LedgerProducer> {
        Some(self)
    }

    fn tools(&self) -> &'static [Tool] {
        &[Tool::JavaPerfTools]
    }

    fn no_latency(&self) -> Option<&'static str> {
        Some(LATENCY_NOT_RUNNABLE)
    }

    fn refuse(&self, knobs: &ClientKnobs) -> Result<()> {
        if knobs.workload == Workload::Paced {
            return Err(NotRunnable(PACED_NOT_RUNNABLE.into()).into());
        }
        if knobs.workload == Workload::Produce {
            contract::one_connection_per_broker(knobs, "the Java producer")?;
            runnable_producer(knobs)?;
        }
        self.java().map(|_| ())
    }

    fn produce(&self, env: &EnvDescriptor, knobs: &ClientKnobs, topic: &str) -> Result<Ran<Produced>> {
        produce(env, knobs, &self.java()?, topic)
    }

    fn fetch(&self, env: &EnvDescriptor, knobs: &ClientKnobs, topic: &str, records: u64) -> Result<Ran<Fetched>> {
        fetch(env, knobs, &self.java()?, topic, records)
    }
}

/// Java 4.1 refuses an explicit enable.idempotence=true with acks other than all (a ConfigException).
fn runnable_producer(knobs: &ClientKnobs) -> Result<()> {
    if knobs.idempotence && knobs.acks != -1 {
        return Err(NotRunnable(format!(
            "the Java producer refuses enable.idempotence=true with acks={} (ConfigException: \"Must set acks to \
             all in order to use the idempotent producer\")",
            knobs.acks
        ))
        .into());
    }
    Ok(())
}

fn produce(env: &EnvDescriptor, knobs: &ClientKnobs, tools: &JavaTools, topic: &str) -> Result<Ran<Produced>> {
    ensure!(knobs.payload_bytes > 0, "payload_bytes is 0: ProducerPerformance needs a non-empty payload");
    let (listener, password) = contract::listener(env, knobs)?;
    let mut config = Properties::for_listener(&knobs.listener, listener, password.as_deref())?;
    for (k, v) in props::producer(knobs) {
        config.set(k, &v);
    }
    let jvm = Jvm::new(tools)?;
    let config_file = jvm.write_private("producer.properties", config.render().as_bytes())?;
    let payload_args: Vec<OsString> = match knobs.payload {
        // One token of `payload_bytes` 'x' (no delimiter in it): every record carries the other clients' bytes.
        Payload::X => {
            let file = jvm.write_private("payload", &contract::payload(knobs.payload_bytes))?;
            vec!["--payload-file".into(), file.into()]
        }
        // The tool's own: random A-Z drawn for every record, as seed 002 ran it.
        Payload::RandomAz => vec!["--record-size".into(), knobs.payload_bytes.to_string().into()],
    };
    let mut args: Vec<OsString> =
        vec!["--topic".into(), topic.into(), "--num-records".into(), knobs.count.to_string().into()];
    args.extend(payload_args);
    args.extend::<[OsString; _]>([
        "--throughput".into(),
        "-1".into(),
        "--producer.config".into(),
        config_file.into(),
        // Flush, print the total, then close: close() stays out of the tool's window.
        "--print-metrics".into(),
    ]);
    let cmd = jvm.command(PRODUCER_MAIN, &args);
    let command = format!("{}; producer.config: {}", jvm.describe(&cmd), config.describe());
    let run = jvm.run("producer", cmd, TOOL_DEADLINE)?;
    ensure_exited_ok("ProducerPerformance", &run)?;
    let total = output::producer_total(&run.stdout)?;
    let payloads = output::payloads_read(&run.stdout);
    ensure!(
        knobs.payload != Payload::X || payloads == Some(1),
        "ProducerPerformance read {payloads:?} payloads from its payload file, expected exactly 1 ({} x 'x')",
        knobs.payload_bytes
    );
    let produced = Produced {
        acked: total.sent,
        failed: knobs.count.saturating_sub(total.sent),
        elapsed: Duration::from_secs_f64(total.window_s().unwrap_or(0.0)),
        client_cpu_s: run.cpu_s,
        queue_full: output::producer_metric(&run.stdout, "bufferpool-wait-time-ns-total")
            .map_or(QueueFullSeen::NotCounted, |ns| QueueFullSeen::BlockedMs(ns / 1e6)),
    };
    let values = config_values(&run.stderr, "ProducerConfig")
        .context("ProducerPerformance's log has no \"ProducerConfig values:\" block")?;
    let info = ClientInfo {
        versions: versions(tools),
        command,
        asymmetries: produce_asymmetries(knobs, &run.stdout),
        note: Some(produce_note(knobs, &total, &produced, &run)),
        applied: client_applied::base(knobs, 1, client_applied::CLOCK_BEFORE_CONNECT)
            .producer(output::producer_applied(&values)?)
            .set(streamlab_record::applied::QUEUE_CAP, output::queue_cap(&values)?)
            .build(),
        metrics: Default::default(),
    };
    Ok(Ran { measured: produced, info })
}

fn fetch(env: &EnvDescriptor, knobs: &ClientKnobs, tools: &JavaTools, topic: &str, hw: u64) -> Result<Ran<Fetched>> {
    let (listener, password) = contract::listener(env, knobs)?;
    let mut config = Properties::for_listener(&knobs.listener, listener, password.as_deref())?;
    for (k, v) in props::consumer(knobs) {
        config.set(k, &v);
    }
    let jvm = Jvm::new(tools)?;
    let config_file = jvm.write_private("consumer.properties", config.render().as_bytes())?;
    let args: Vec<OsString> = vec![
        "--bootstrap-server".into(),
        listener.bootstrap.clone().into(),
        "--topic".into(),
        topic.into(),
        // Exactly the high watermark: more would end only after --timeout, with a WARNING.
        "--messages".into(),
        hw.to_string().into(),
        // max.partition.fetch.bytes (the tool overwrites any value from the file with this).
        "--fetch-size".into(),
        knobs.fetch_max_bytes.to_string().into(),
        "--consumer.config".into(),
        config_file.into(),
        "--timeout".into(),
        CONSUMER_STALL_MS.to_string().into(),
    ];
    let cmd = jvm.command(CONSUMER_MAIN, &args);
    let command = format!("{}; consumer.config: {}", jvm.describe(&cmd), config.describe());
    let run = jvm.run("consumer", cmd, TOOL_DEADLINE)?;
    ensure_exited_ok("ConsumerPerformance", &run)?;
    let total = output::consumer_total(&run.stdout)?;
    let fetched = Fetched {
        consumed: total.consumed,
        bytes: (total.mib * MIB).round() as u64,
        elapsed: Duration::from_millis(total.fetch_ms),
        client_cpu_s: run.cpu_s,
        fetch_request_us: Vec::new(),
    };
    let values = config_values(&run.stderr, "ConsumerConfig")
        .context("ConsumerPerformance's log has no \"ConsumerConfig values:\" block")?;
    let info = ClientInfo {
        versions: versions(tools),
        command,
        asymmetries: fetch_asymmetries(),
        note: Some(fetch_note(knobs, &total, &run)),
        applied: client_applied::base(knobs, 1, client_applied::CLOCK_AFTER_GROUP_JOIN)
            .consumer(output::consumer_applied(&values)?)
            .build(),
        metrics: Default::default(),
    };
    Ok(Ran { measured: fetched, info })
}

/// The tools' MB.
const MIB: f64 = 1_048_576.0;

fn ensure_exited_ok(tool: &str, run: &ToolRun) -> Result<()> {
    ensure!(
        run.status.success(),
        "{tool} exited with {}; stderr ends:\n{}\nstdout:\n{}",
        run.status,
        run.stderr_tail(20),
        run.stdout.lines().filter(|l| !l.contains(" : ")).collect::<Vec<_>>().join("\n")
    );
    Ok(())
}

fn versions(tools: &JavaTools) -> BTreeMap<String, String> {
    BTreeMap::from([
        ("kafka-tools".to_owned(), tools.kafka_tools.clone()),
        ("java".to_owned(), tools.java_version.clone()),
    ])
}

fn batch_size(knobs: &ClientKnobs) -> u64 {
    if knobs.batch_bytes > 0 { knobs.batch_bytes } else { JAVA_BATCH_SIZE_DEFAULT }
}

fn produce_asymmetries(knobs: &ClientKnobs, stdout: &str) -> Asymmetries {
    let connections = output::producer_metric(stdout, "connection-count")
        .map_or_else(|| "not printed".to_owned(), |n| format!("{n:.0}"));
    Asymmetries {
        connections: format!(
            "1 per broker for produce requests, plus the bootstrap connection used for metadata (the producer's \
             connection-count metric at the end: {connections})"
        ),
        in_flight: format!(
            "5 per connection (max.in.flight.requests.per.connection, Java's default; idempotence {})",
            if knobs.idempotence { "on" } else { "off" }
        ),
        partitioner: format!(
            "Java's built-in sticky partitioner: keyless records fill one partition's batch (batch.size {} B) \
             before it moves on; adaptive partitioning on (its default)",
            batch_size(knobs)
        ),
        clock: "ProducerPerformance's own, System.currentTimeMillis (ms): from after KafkaProducer is constructed, \
                before it has connected (its sender thread connects, fetches metadata and, idempotent, gets its \
                producer id inside the window, as for the C tool) to the end of flush() \
                (--print-metrics, so close() is outside); elapsed = records sent / its records/sec (printed with \
                one decimal); JVM start-up outside"
            .into(),
        payload: match knobs.payload {
            Payload::X => format!(
                "--payload-file of {} x 'x': the same bytes as the other clients (--record-size would send random \
                 A-Z per record)",
                knobs.payload_bytes
            ),
            Payload::RandomAz => {
                format!("--record-size {}: random A-Z drawn for every record, as seed 002 ran it", knobs.payload_bytes)
            }
        },
    }
}

fn produce_note(knobs: &ClientKnobs, total: &ProducerTotal, produced: &Produced, run: &ToolRun) -> String {
    let window = produced.elapsed.as_secs_f64();
    let mut parts = vec![
        jvm_cost(run, window),
        format!(
            "its send->callback latencies at full speed, integer ms: avg {:.2}, p50 {}, p95 {}, p99 {}, p99.9 {}, \
             max {:.0} (not a sequential round trip; the latency workload is not run for Java)",
            total.avg_latency_ms, total.p50_ms, total.p95_ms, total.p99_ms, total.p99_9_ms, total.max_latency_ms
        ),
    ];
    let metric = |name| output::producer_metric(&run.stdout, name).map_or("?".to_owned(), |v| format!("{v}"));
    parts.push(format!(
        "producer metrics: batch-size-avg {} B, records-per-request-avg {}, compression-rate-avg {}, \
         record-retry-total {}, record-error-total {}",
        metric("batch-size-avg"),
        metric("records-per-request-avg"),
        metric("compression-rate-avg"),
        metric("record-retry-total"),
        metric("record-error-total")
    ));
    parts.extend(knob_gaps(knobs));
    if produced.failed > 0 {
        let first = run.stderr.lines().find(|l| l.contains("Exception")).unwrap_or("none on stderr");
        parts.push(format!(
            "{} of {} records were not acknowledged; first error: {first}",
            produced.failed, knobs.count
        ));
    }
    parts.join("; ")
}

/// Knobs Java cannot apply as asked, and defaults worth naming.
fn knob_gaps(knobs: &ClientKnobs) -> Vec<String> {
    let mut gaps = Vec::new();
    if knobs.batch_messages > 0 {
        gaps.push(format!(
            "batch_messages={} not applied: Java has no records-per-batch cap (batch.size is bytes per partition batch)",
            knobs.batch_messages
        ));
    }
    if knobs.queue_messages > 0 {
        gaps.push(format!(
            "queue_messages={} not applied: Java caps its queue in bytes only (buffer.memory, default 33554432)",
            knobs.queue_messages
        ));
    }
    if knobs.batch_bytes == 0 {
        gaps.push(format!("batch.size left at Java's default {JAVA_BATCH_SIZE_DEFAULT}"));
    }
    if knobs.compression == Compression::Lz4 {
        gaps.push("compression.lz4.level left at Java's default 9 (lz4-java's fast compressor)".into());
    }
    gaps
}

fn fetch_asymmetries() -> Asymmetries {
    Asymmetries {
        connections: "1 per broker for fetches, plus the bootstrap and group-coordinator connections".into(),
        in_flight: "1 Fetch per broker at a time (Java's fetcher)".into(),
        partitioner: "subscribe() with a fresh group (classic protocol): the one member is assigned every \
                      partition, read from offset 0 (auto.offset.reset=earliest, forced by the tool)"
            .into(),
        clock: "ConsumerPerformance's fetch.time.ms, System.currentTimeMillis (ms): from after KafkaConsumer is \
                constructed to the last record, minus the group join (rebalance.time.ms); JVM start-up outside"
            .into(),
        payload: "preloaded by rust-rdkafka: 'x' repeated".into(),
    }
}

fn fetch_note(knobs: &ClientKnobs, total: &ConsumerTotal, run: &ToolRun) -> String {
    let window = (total.rebalance_ms + total.fetch_ms) as f64 / 1e3;
    let mut parts = vec![
        format!(
            "elapsed is fetch.time.ms {} ms, the group join (rebalance.time.ms {} ms) excluded: the tool's \
             fetch.nMsg.sec {:.1}; with the join, nMsg.sec {:.1}",
            total.fetch_ms, total.rebalance_ms, total.fetch_records_per_s, total.records_per_s
        ),
        jvm_cost(run, window),
        format!(
            "bytes from data.consumed.in.MB ({:.4} MB of 2^20 B, key+value); max.partition.fetch.bytes = --fetch-size \
             {}; the tool forces check.crcs=false; max.poll.records 500 (Java default)",
            total.mib, knobs.fetch_max_bytes
        ),
    ];
    if let Some(warning) = &total.warning {
        parts.push(format!("the tool gave up: {warning}"));
    }
    parts.join("; ")
}

/// What the JVM cost around the tool's own window.
fn jvm_cost(run: &ToolRun, window_s: f64) -> String {
    let wall = run.wall.as_secs_f64();
    format!(
        "the JVM ran {wall:.2} s wall and {:.2} CPU s (client_cpu_s; JIT and class loading included) for a {window_s:.3} s \
         window: {:.2} s of start-up, client construction and shutdown outside it",
        run.cpu_s,
        wall - window_s
    )
}

#[cfg(test)]
mod tests {

    use super::*;

    fn knobs(workload: &str, listener: &str) -> ClientKnobs {
        serde_json::from_value(serde_json::json!({
            "workload": workload, "listener": listener, "compression": "none", "acks": 1, "idempotence": false,
            "count": 20000, "payload_bytes": 100, "partitions": 6, "linger_ms": 5, "batch_messages": 32768,
            "payload": "x", "queue_full": "park", "connections": 0,
            "batch_bytes": 1000000, "queue_messages": 1000000, "fetch_max_wait_ms": 100, "fetch_min_bytes": 1,
            "fetch_max_bytes": 16777216, "latency_warmup": 100, "latency_samples": 1000, "kafka_version": "4.1.0"
        }))
        .unwrap()
    }

    #[test]
    fn idempotence_with_acks_1_is_not_runnable_in_java() {
        let mut k = knobs("produce", "plaintext");
        k.idempotence = true;
        let reason = runnable_producer(&k).unwrap_err().downcast::<NotRunnable>().unwrap().0;
        assert!(reason.contains("acks=1"), "{reason}");
        k.acks = -1;
        assert!(runnable_producer(&k).is_ok());
    }

    #[test]
    fn knobs_java_cannot_apply_are_named() {
        let mut k = knobs("produce", "plaintext");
        let gaps = knob_gaps(&k).join("; ");
        assert!(gaps.contains("batch_messages=32768 not applied") && gaps.contains("queue_messages=1000000"), "{gaps}");
        k.batch_messages = 0;
        k.queue_messages = 0;
        k.batch_bytes = 0;
        k.compression = Compression::Lz4;
        let gaps = knob_gaps(&k).join("; ");
        assert!(!gaps.contains("not applied") && gaps.contains("16384") && gaps.contains("lz4.level"), "{gaps}");
        assert_eq!(props::producer(&k).iter().find(|(key, _)| *key == "batch.size"), None);
        assert!(props::producer(&k).contains(&("enable.idempotence", "false".to_owned())));
    }
}
