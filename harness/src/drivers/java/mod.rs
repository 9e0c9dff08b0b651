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
use streamlab_record::Measurement;

use self::jvm::{Jvm, ToolRun};
use self::output::{ConsumerTotal, ProducerTotal};
use crate::arms::clients::driver::Driver;
use crate::arms::clients::{
    self, Asymmetries, ClientInfo, Compression, Fetched, JavaTools, Knobs, NotRunnable, Payload, Produced,
    QueueFullSeen, Tools, Workload,
};
use crate::arms::{ArmContext, ArmSpec, durability};
use crate::kafka::java_props::Properties;
use crate::kafka::java_tools::config_values;

pub mod ledger;

pub const CLIENTS_ARM: ArmSpec = ArmSpec::new::<Knobs>(clients::BENCH, "java", run);
pub const DURABILITY_ARM: ArmSpec = ArmSpec::new::<durability::Knobs>(durability::BENCH, "java", |ctx| {
    durability::run_with(ctx, "java", ledger::produce)
});

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

pub fn run(ctx: &ArmContext) -> Result<Measurement> {
    clients::driver::run(ctx, &mut Java { tools: None })
}

/// Kafka's own perf tools on the pinned Java client, with the tools file's JVM.
struct Java {
    tools: Option<Tools>,
}

impl Java {
    fn java(&self) -> Result<&JavaTools> {
        self.tools.as_ref().context("the Java tools were not loaded")?.java().map_err(anyhow::Error::msg)
    }
}

impl Driver for Java {
    fn arm(&self) -> &str {
        "java"
    }

    fn no_latency(&self) -> Option<&'static str> {
        Some(LATENCY_NOT_RUNNABLE)
    }

    fn prepare(&mut self, knobs: &Knobs) -> Result<()> {
        if knobs.workload == Workload::Produce {
            clients::one_connection_per_broker(knobs, "the Java producer")?;
            runnable_producer(knobs)?;
        }
        self.tools = Some(Tools::load().map_err(anyhow::Error::msg)?);
        self.java().map(|_| ())
    }

    fn produce(&self, ctx: &ArmContext, knobs: &Knobs, topic: &str) -> Result<Measurement> {
        produce(ctx, knobs, self.java()?, topic)
    }

    fn fetch(&self, ctx: &ArmContext, knobs: &Knobs, topic: &str) -> Result<Measurement> {
        fetch(ctx, knobs, self.java()?, topic)
    }
}

/// Java 4.1 refuses an explicit enable.idempotence=true with acks other than all (a ConfigException).
fn runnable_producer(knobs: &Knobs) -> Result<()> {
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

fn produce(ctx: &ArmContext, knobs: &Knobs, tools: &JavaTools, topic: &str) -> Result<Measurement> {
    ensure!(knobs.payload_bytes > 0, "payload_bytes is 0: ProducerPerformance needs a non-empty payload");
    let (listener, password) = clients::listener(&ctx.env, knobs)?;
    let mut config = Properties::for_listener(&knobs.listener, listener, password.as_deref())?;
    for (k, v) in props::producer(knobs) {
        config.set(k, &v);
    }
    let jvm = Jvm::new(tools)?;
    let config_file = jvm.write_private("producer.properties", config.render().as_bytes())?;
    let payload_args: Vec<OsString> = match knobs.payload {
        // One token of `payload_bytes` 'x' (no delimiter in it): every record carries the other clients' bytes.
        Payload::X => {
            let file = jvm.write_private("payload", &clients::payload(knobs.payload_bytes))?;
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
    let brokers = crate::cpu::BrokersCpu::start(&ctx.env);
    let run = jvm.run("producer", cmd, TOOL_DEADLINE)?;
    let broker_cpu_s = brokers.spent();
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
        broker_cpu_s,
        queue_full: output::producer_metric(&run.stdout, "bufferpool-wait-time-ns-total")
            .map_or(QueueFullSeen::NotCounted, |ns| QueueFullSeen::BlockedMs(ns / 1e6)),
    };
    let hw = clients::topic_high_watermark(&ctx.env, topic)?;
    let values = config_values(&run.stderr, "ProducerConfig")
        .context("ProducerPerformance's log has no \"ProducerConfig values:\" block")?;
    let info = ClientInfo {
        versions: versions(tools),
        command,
        asymmetries: produce_asymmetries(knobs, &run.stdout),
        note: Some(produce_note(knobs, &total, &produced, &run)),
        applied: clients::applied::base(knobs, 1, clients::applied::CLOCK_BEFORE_CONNECT)
            .producer(output::producer_applied(&values)?)
            .set(streamlab_record::applied::QUEUE_CAP, output::queue_cap(&values)?)
            .build(),
    };
    Ok(clients::produce_measurement(knobs, &produced, hw, info))
}

fn fetch(ctx: &ArmContext, knobs: &Knobs, tools: &JavaTools, topic: &str) -> Result<Measurement> {
    let hw = clients::preload(&ctx.env, topic, knobs)?;
    let (listener, password) = clients::listener(&ctx.env, knobs)?;
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
    let brokers = crate::cpu::BrokersCpu::start(&ctx.env);
    let run = jvm.run("consumer", cmd, TOOL_DEADLINE)?;
    let broker_cpu_s = brokers.spent();
    ensure_exited_ok("ConsumerPerformance", &run)?;
    let total = output::consumer_total(&run.stdout)?;
    let fetched = Fetched {
        consumed: total.consumed,
        bytes: (total.mib * MIB).round() as u64,
        elapsed: Duration::from_millis(total.fetch_ms),
        client_cpu_s: run.cpu_s,
        broker_cpu_s,
        fetch_request_us: Vec::new(),
    };
    let values = config_values(&run.stderr, "ConsumerConfig")
        .context("ConsumerPerformance's log has no \"ConsumerConfig values:\" block")?;
    let info = ClientInfo {
        versions: versions(tools),
        command,
        asymmetries: fetch_asymmetries(),
        note: Some(fetch_note(knobs, &total, &run)),
        applied: clients::applied::base(knobs, 1, clients::applied::CLOCK_AFTER_GROUP_JOIN)
            .consumer(output::consumer_applied(&values)?)
            .build(),
    };
    Ok(clients::fetch_measurement(&fetched, hw, info))
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

fn batch_size(knobs: &Knobs) -> u64 {
    if knobs.batch_bytes > 0 { knobs.batch_bytes } else { JAVA_BATCH_SIZE_DEFAULT }
}

fn produce_asymmetries(knobs: &Knobs, stdout: &str) -> Asymmetries {
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

fn produce_note(knobs: &Knobs, total: &ProducerTotal, produced: &Produced, run: &ToolRun) -> String {
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
fn knob_gaps(knobs: &Knobs) -> Vec<String> {
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

fn fetch_note(knobs: &Knobs, total: &ConsumerTotal, run: &ToolRun) -> String {
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
    use serde_json::json;
    use streamlab_record::IntegrityStatus;

    use super::*;

    fn knob_map(workload: &str, listener: &str) -> serde_json::Map<String, serde_json::Value> {
        let serde_json::Value::Object(map) = serde_json::json!({
            "workload": workload, "listener": listener, "compression": "none", "acks": 1, "idempotence": false,
            "count": 20000, "payload_bytes": 100, "partitions": 6, "linger_ms": 5, "batch_messages": 32768,
            "payload": "x", "queue_full": "park", "connections": 0,
            "batch_bytes": 1000000, "queue_messages": 1000000, "fetch_max_wait_ms": 100, "fetch_min_bytes": 1,
            "fetch_max_bytes": 16777216, "latency_warmup": 100, "latency_samples": 1000, "kafka_version": "4.1.0"
        }) else {
            unreachable!("an object literal")
        };
        map
    }

    fn knobs(workload: &str, listener: &str) -> Knobs {
        crate::arms::spec::parse_knobs(&knob_map(workload, listener)).unwrap()
    }

    fn context(knobs: serde_json::Map<String, serde_json::Value>) -> ArmContext {
        ArmContext { env: crate::test_env(), knobs }
    }

    fn not_runnable(result: Result<Measurement>) -> String {
        let e = result.expect_err("not runnable");
        e.downcast_ref::<NotRunnable>().unwrap_or_else(|| panic!("not a NotRunnable: {e:#}")).0.clone()
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

    #[test]
    #[ignore = "needs a broker and the Java tools: cargo xtask test"]
    fn produces_on_every_listener_with_integrity_verified() {
        for listener in ["plaintext", "ssl", "scram256", "scram512", "oauth"] {
            let m = run(&context(knob_map("produce", listener))).unwrap_or_else(|e| panic!("{listener}: {e:#}"));
            assert_eq!(m.integrity.status, IntegrityStatus::Verified, "{listener}: {:?} {:?}", m.integrity, m.note);
            assert_eq!(m.metrics["acked"].value, 20000.0, "{listener}");
            assert!(m.metrics["records_per_s"].value > 0.0 && m.metrics["client_cpu_s"].value > 0.0, "{listener}");
            assert!(m.metrics["broker_cpu_s_per_m_records"].value > 0.0, "{listener}: {:?}", m.metrics);
            assert!(m.details["command"].contains("--payload-file <private>/payload"), "{}", m.details["command"]);
            let protocol = &crate::test_env().kafka.listeners[listener].security_protocol;
            assert!(m.details["command"].contains(&format!("security.protocol={protocol}")), "{listener}");
            assert!(!m.details["command"].contains(&scram_password()), "{listener}: the password is masked");
            assert!(m.note.as_deref().unwrap().contains("batch_messages=32768 not applied"), "{:?}", m.note);
            assert_eq!(m.applied["producer.security.protocol"], *protocol, "{listener}");
            assert_eq!(m.applied["producer.max.in.flight.requests.per.connection"], "5", "{listener}");
            assert_eq!(m.applied["producer.batch.size"], "1000000", "{listener}");
            assert_eq!(m.applied["queue_cap"], "32768 KiB", "{listener}: buffer.memory");
            assert!(m.metrics["queue_full_blocked_ms"].value >= 0.0, "{listener}: {:?}", m.metrics);
        }
    }

    #[test]
    #[ignore = "needs a broker and the Java tools: cargo xtask test"]
    fn idempotent_lz4_produce_is_verified() {
        let mut k = knob_map("produce", "plaintext");
        for (name, value) in [
            ("acks", json!(-1)),
            ("idempotence", json!(true)),
            ("compression", json!("lz4")),
            ("batch_bytes", json!(0)),
        ] {
            k.insert(name.into(), value);
        }
        let m = run(&context(k)).unwrap();
        assert_eq!(m.integrity.status, IntegrityStatus::Verified, "{:?}", m.note);
        assert!(m.details["command"].contains("acks=-1 enable.idempotence=true"), "{}", m.details["command"]);
        assert_eq!(
            (m.applied["producer.acks"].as_str(), m.applied["producer.enable.idempotence"].as_str()),
            ("-1", "true")
        );
        assert_eq!(m.applied["producer.compression.type"], "lz4");
        assert_eq!(m.applied["producer.batch.size"], "16384", "Java's default, read back");
        let note = m.note.unwrap();
        assert!(note.contains("compression-rate-avg 0.") && note.contains("16384"), "lz4 compressed 'x': {note}");
    }

    #[test]
    #[ignore = "needs a broker and the Java tools: cargo xtask test"]
    fn fetches_everything_from_offset_0() {
        for listener in ["plaintext", "scram512"] {
            let m = run(&context(knob_map("fetch", listener))).unwrap_or_else(|e| panic!("{listener}: {e:#}"));
            assert_eq!(m.integrity.status, IntegrityStatus::Verified, "{listener}: {:?}", m.integrity);
            assert_eq!(m.metrics["consumed"].value, 20000.0);
            assert!(m.metrics["mb_per_s"].value > 0.0, "{listener}");
            assert!(m.note.as_deref().unwrap().contains("rebalance.time.ms"), "{:?}", m.note);
            assert_eq!(m.applied["consumer.max.poll.records"], "500", "{listener}");
            assert_eq!(m.applied["consumer.max.partition.fetch.bytes"], "16777216", "{listener}: --fetch-size");
            assert_eq!(m.applied["clock_start"], "after group join");
        }
    }

    #[test]
    #[ignore = "needs a broker: cargo xtask test"]
    fn latency_is_not_runnable_and_says_why() {
        let reason = not_runnable(run(&context(knob_map("latency", "plaintext"))));
        assert!(reason.contains("integer milliseconds"), "{reason}");
    }

    fn scram_password() -> String {
        let env = crate::test_env();
        let file = env.kafka.listeners["scram256"].password_file.clone().unwrap();
        streamlab_record::descriptor::read_secret(&file).unwrap()
    }
}
