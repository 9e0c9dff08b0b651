//! The Java perf tools' clients arm against the test environment's broker.

use anyhow::Result;
use serde_json::json;
use streamlab_record::{IntegrityStatus, Measurement};

use crate::arms::ArmContext;
use crate::drivers::contract::NotRunnable;

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

/// The arm, bench and driver, as the runner runs it.
fn run(ctx: &ArmContext) -> Result<Measurement> {
    crate::arms::run("clients", "java", ctx)
}

fn context(knobs: serde_json::Map<String, serde_json::Value>) -> ArmContext {
    ArmContext { env: crate::test_env(), knobs }
}

fn not_runnable(result: Result<Measurement>) -> String {
    let e = result.expect_err("not runnable");
    e.downcast_ref::<NotRunnable>().unwrap_or_else(|| panic!("not a NotRunnable: {e:#}")).0.clone()
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
    for (name, value) in
        [("acks", json!(-1)), ("idempotence", json!(true)), ("compression", json!("lz4")), ("batch_bytes", json!(0))]
    {
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
