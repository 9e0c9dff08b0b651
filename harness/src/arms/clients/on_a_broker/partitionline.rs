//! partitionline's clients arm against the test environment's broker.

use anyhow::Result;
use streamlab_record::{IntegrityStatus, Measurement};

use crate::arms::ArmContext;
use crate::drivers::contract::NotRunnable;
use crate::drivers::partitionline::tests::knobs_json;

/// The arm, bench and driver, as the runner runs it.
fn run(ctx: &ArmContext) -> Result<Measurement> {
    crate::arms::run("clients", "partitionline", ctx)
}

#[test]
fn a_zstd_produce_is_refused_before_the_broker_is_touched() {
    // An environment with no listeners at all: reaching for the broker would fail with another error.
    let env = serde_json::from_value(serde_json::json!({
        "schema": 1, "id": "t", "backend": "external", "dir": "/nonexistent", "started_ts_ms": 0,
        "kafka": {"version": "x", "listeners": {}}
    }))
    .unwrap();
    let err = run(&ArmContext { env, knobs: knobs_json(serde_json::json!({"compression": "zstd"})) }).unwrap_err();
    assert!(err.downcast_ref::<NotRunnable>().is_some(), "{err:#}");
}

fn run_with(overrides: serde_json::Value) -> Measurement {
    run(&ArmContext { env: crate::test_env(), knobs: knobs_json(overrides) }).unwrap()
}

fn assert_produced_all(m: &Measurement, count: u64) {
    assert_eq!(m.integrity.status, IntegrityStatus::Verified, "{:?} {:?}", m.integrity, m.note);
    assert_eq!(m.metrics["acked"].value, count as f64);
    assert_eq!(m.metrics["high_watermark"].value, count as f64);
    assert!(m.metrics["records_per_s"].value > 0.0);
    assert_eq!(m.versions.get("partitionline").map(String::as_str), Some("0.1.0"));
    // The loops ran in the binary built as seed 003 built its benches, and the record says so.
    let build = m.versions.get("build:partitionline-bench").map(String::as_str);
    assert_eq!(build, Some("cargo build --profile seed-003: opt-level 3, lto thin, codegen-units 1, debug off"));
    assert_eq!(m.applied["queue_cap"], "32768 KiB", "the crate's buffer.memory");
    assert!(m.metrics.contains_key("queue_full_waits"), "{:?}", m.metrics);
}

/// Every listener carries every record to the broker, and the verdict follows the client's own count.
/// partitionline 0.1.0 now and then reports records as failed on one listener of a run: a few hundred the
/// broker did append (once in six CI runs), or a few thousand it did not (3,039 of 20,000 on plaintext, CI at
/// 3a73794). Either way that run must be a failed record whose note says which, never a verified one. More
/// than one listener doing it in a run would point at the adapter, not the client.
#[test]
#[ignore = "needs a broker: cargo xtask test"]
fn produce_reaches_the_broker_on_every_listener_and_the_verdict_follows_the_client_count() {
    let mut client_faults = Vec::new();
    for listener in ["plaintext", "ssl", "scram256", "scram512", "oauth"] {
        let m = run_with(serde_json::json!({"listener": listener}));
        assert!(m.details["command"].contains(listener), "{listener}: {}", m.details["command"]);
        if m.integrity.status == IntegrityStatus::Verified {
            assert_produced_all(&m, 20000);
            continue;
        }
        assert_a_client_fault(&m, listener);
        client_faults.push(listener);
    }
    assert!(client_faults.len() <= 1, "the client failed records on {client_faults:?}");
}

/// A run in which the client itself failed records: a failed record, nothing the client counted as
/// acknowledged missing, nothing beyond what it sent there, and a note naming the failures (and whether the
/// topic holds them: the clients bench's test).
fn assert_a_client_fault(m: &Measurement, what: &str) {
    eprintln!("{what}: the client reported failures: {:?}", m.note);
    assert_eq!(m.integrity.status, IntegrityStatus::Failed, "{what}");
    let (acked, hw) = (m.metrics["acked"].value, m.metrics["high_watermark"].value);
    assert!(acked < 20000.0, "{what}: {:?}", m.integrity);
    assert!(acked <= hw && hw <= 20000.0, "{what}: {:?} {:?}", m.integrity, m.note);
    let note = m.note.as_deref().unwrap_or_default();
    assert!(note.contains("records failed"), "{what}: {note}");
}

/// A setting's run, verified. The client's occasional fault (the listener test's; at 31aaf68 once on lz4 and
/// idempotent each while the other test lane ran a three-broker cluster on the same 2 cores: 4,166 records
/// failed, none acknowledged) must read as a failed record that says so, and a second run must carry
/// every record: the adapter's own failure would fail both.
fn run_verified(overrides: serde_json::Value) -> Measurement {
    let first = run_with(overrides.clone());
    if first.integrity.status == IntegrityStatus::Verified {
        return first;
    }
    assert_a_client_fault(&first, &overrides.to_string());
    run_with(overrides)
}

#[test]
#[ignore = "needs a broker: cargo xtask test"]
fn lz4_produce_is_verified() {
    let m = run_verified(serde_json::json!({"compression": "lz4"}));
    assert_produced_all(&m, 20000);
    assert!(m.details["command"].contains("compression=lz4"));
}

#[test]
#[ignore = "needs a broker: cargo xtask test"]
fn idempotent_produce_is_verified() {
    let m = run_verified(serde_json::json!({"acks": -1, "idempotence": true}));
    assert_produced_all(&m, 20000);
    assert!(m.metrics["total_cpu_s_per_m_records"].value > m.metrics["client_cpu_s_per_m_records"].value);
    assert!(m.details["command"].contains("acks=-1") && m.details["in_flight"].starts_with("5 "));
    assert_eq!(m.applied["producer.max.in.flight.requests.per.connection"], "5");
    assert_eq!(m.applied["clock_start"], "before connect");
}

#[test]
#[ignore = "needs a broker: cargo xtask test"]
fn fetch_reads_exactly_the_high_watermark_and_times_fetch_requests() {
    // 30 MB: more than one 16 MiB fetch round, so the clock (from the first records) has rounds to time.
    let m = run_with(serde_json::json!({"workload": "fetch", "count": 300000}));
    assert_eq!(m.integrity.status, IntegrityStatus::Verified, "{:?}", m.integrity);
    assert_eq!(m.metrics["consumed"].value, 300000.0);
    // Bytes are the values' lengths: 300000 x 100.
    let bytes = m.metrics["mb_per_s"].value * m.metrics["elapsed_s"].value * 1e6;
    assert!((bytes - 3e7).abs() < 1.0, "{bytes}");
    assert!(m.metrics["fetch_rpc_p50_us"].value > 0.0 && m.metrics["fetch_requests"].value >= 2.0);
    assert_eq!(m.applied["clock_start"], "first record received");
    assert_eq!(m.applied["consumer.fetch.max.wait.ms"], "100");
    assert_eq!(m.applied["consumer.max.partition.fetch.bytes"], "16777216");
}

#[test]
#[ignore = "needs a broker: cargo xtask test"]
fn latency_measures_every_sample_in_microseconds() {
    let m = run_with(serde_json::json!({"workload": "latency"}));
    assert_eq!(m.integrity.status, IntegrityStatus::Verified, "{:?}", m.integrity);
    assert_eq!(m.metrics["samples"].value, 200.0);
    assert!(m.metrics["produce_ack_p50_us"].value > 0.0);
    assert!(m.metrics["produce_ack_p99_us"].value >= m.metrics["produce_ack_p50_us"].value);
}
