//! The two C tool builds' clients arms against the test environment's broker, with the tools `STREAMLAB_TOOLS` names.

use streamlab_record::{IntegrityStatus, Measurement};

use crate::arms::ArmContext;
use crate::drivers::c_tool::tests::knobs;
use crate::drivers::c_tool::{C_2_12, C_2_15, RdkafkaPerformance};
use crate::drivers::contract::{CTool, KafkaDriver, NotRunnable};

#[test]
fn latency_is_not_runnable_and_says_what_the_tool_could_measure() {
    let env: streamlab_record::EnvDescriptor = serde_json::from_value(serde_json::json!({
        "schema": 1, "id": "t", "backend": "external", "dir": "/nonexistent", "started_ts_ms": 0,
        "kafka": {"version": "x", "listeners": {}}
    }))
    .unwrap();
    for spec in [&C_2_12, &C_2_15] {
        let ctx = ArmContext { env: env.clone(), knobs: knobs("latency", "plaintext", 0) };
        let error = crate::arms::run("clients", spec.name(), &ctx).unwrap_err();
        let reason =
            error.downcast_ref::<NotRunnable>().unwrap_or_else(|| panic!("{}: {error:#}", spec.name())).0.clone();
        assert!(reason.contains("no sequential produce -> ack mode") && reason.contains("-l -A"), "{reason}");
        assert!(reason.contains("rate-limited"), "{reason}");
    }
}

/// Runs an arm against the test environment with the tools `STREAMLAB_TOOLS` names.
fn run_arm(spec: &RdkafkaPerformance, workload: &str, listener: &str, count: u64) -> Measurement {
    let ctx = ArmContext { env: crate::test_env(), knobs: knobs(workload, listener, count) };
    crate::arms::run("clients", spec.name(), &ctx)
        .unwrap_or_else(|e| panic!("{} {workload} on {listener}: {e:#}", spec.name()))
}

fn protocol(listener: &str) -> String {
    crate::test_env().kafka.listeners[listener].security_protocol.to_ascii_uppercase()
}

fn password(listener: &str) -> Option<String> {
    let env = crate::test_env();
    let l = env.listener(listener)?;
    l.password_file.as_ref().map(|p| streamlab_record::descriptor::read_secret(p).unwrap())
}

#[test]
#[ignore = "needs a broker and the built tools: cargo xtask test (STREAMLAB_ENV, STREAMLAB_TOOLS)"]
fn both_builds_produce_on_every_listener_with_integrity_verified() {
    for spec in [&C_2_12, &C_2_15] {
        let mut cpu_read = 0;
        for listener in ["plaintext", "ssl", "scram256", "scram512", "oauth"] {
            let m = run_arm(spec, "produce", listener, 20_000);
            let what = format!("{} on {listener}", spec.name());
            assert_eq!(m.integrity.status, IntegrityStatus::Verified, "{what}: {:?} {:?}", m.integrity, m.note);
            assert_eq!(m.metrics["acked"].value, 20_000.0, "{what}");
            assert!(m.metrics["records_per_s"].value > 0.0, "{what}");
            // The broker's CPU over the tool's run is read beside the tool's own. A side busy for less than the
            // kernel's 10 ms tick reads no CPU at all, and then no rate per CPU second is made up.
            let cpu = |k: &str| m.metrics.get(k).map(|c| c.value);
            match (cpu("client_cpu_s"), cpu("broker_cpu_s")) {
                (Some(client), Some(broker)) => {
                    assert!(client > 0.0 && broker > 0.0, "{what}: {:?}", m.metrics);
                    assert!(cpu("records_per_cpu_s").is_some_and(|r| r > 0.0), "{what}: {:?}", m.metrics);
                    cpu_read += 1;
                }
                _ => assert_eq!(cpu("records_per_cpu_s"), None, "{what}: {:?}", m.metrics),
            }
            let command = &m.details["command"];
            assert!(command.contains(" -P -t ") && command.contains("file=<0600 temp file: "), "{what}: {command}");
            if let Some(pw) = password(listener) {
                assert!(!command.contains(&pw) && command.contains("sasl.password=***"), "{what}: {command}");
            }
            assert_eq!(m.applied["producer.linger.ms"], "5", "{what}: the tool's own 1000 overridden");
            assert_eq!(m.applied["producer.max.in.flight.requests.per.connection"], "1000000", "{what}");
            assert_eq!(m.applied["producer.security.protocol"], protocol(listener), "{what}");
            assert_eq!(m.applied["clock_start"], "before connect", "{what}");
            assert!(m.applied["queue_cap"].ends_with(" records or 1048576 KiB"), "{what}: {:?}", m.applied);
            assert!(m.metrics.contains_key("queue_full_waits"), "{what}: the tool's backpressure count");
            if let Some(pw) = password(listener) {
                assert!(!format!("{:?}", m.applied).contains(&pw), "{what}: no password in applied");
            }
            let library = if spec.name() == "c_2_12" { "2.12.1" } else { "2.15.0" };
            assert!(m.versions[&CTool::provenance_key(library)].starts_with(&format!("librdkafka {library} ")));
        }
        assert!(cpu_read > 0, "{}: no run read both the tool's and the brokers' CPU", spec.name());
    }
}

#[test]
#[ignore = "needs a broker and the built tools: cargo xtask test (STREAMLAB_ENV, STREAMLAB_TOOLS)"]
fn both_builds_fetch_every_preloaded_record() {
    for (spec, listener) in [(&C_2_12, "scram256"), (&C_2_15, "ssl")] {
        let m = run_arm(spec, "fetch", listener, 30_000);
        assert_eq!(m.integrity.status, IntegrityStatus::Verified, "{}: {:?} {:?}", spec.name(), m.integrity, m.note);
        assert_eq!(m.metrics["consumed"].value, 30_000.0);
        assert!(m.details["command"].contains(" -C -t ") && m.details["command"].contains(" -o beginning -c 30000 "));
        assert_eq!(m.applied["consumer.fetch.max.wait.ms"], "100");
        assert_eq!(m.applied["consumer.max.partition.fetch.bytes"], "16777216");
        assert_eq!(m.applied["clock_start"], "first record received");
    }
}
