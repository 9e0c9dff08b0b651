//! The clients matrix (seeds 003 and 002): every Kafka client driver ([`crate::drivers`]) reading the same
//! knobs, talking to the same broker and checked the same way. Every record's `applied` map says the work and
//! the settings the client ran it with, read back from the client where it can say; what the knobs cannot make
//! equal between clients (requests in flight, partitioner) shows there with the value in force, and each driver
//! describes it in words in its record's details ([`Asymmetries`]).
//!
//! The bench owns the run ([`run`]): the fresh topic, the preload, the high watermarks, integrity and the record.
//!
//! Workloads:
//! - produce: `count` records of `payload_bytes` into a fresh topic of `partitions` partitions; the rate is
//!   acknowledged records over the client's own elapsed time; integrity: the sum of the partitions' high
//!   watermarks equals `count` and the client acknowledged exactly `count` (a flush that said Ok while the
//!   broker holds fewer records fails integrity);
//! - fetch: the topic is filled first (untimed, by rust-rdkafka), then read from offset 0 across all
//!   partitions; integrity: consumed == the high-watermark sum;
//! - latency: `latency_warmup` + `latency_samples` sequential produce -> ack round trips on one partition,
//!   nearest-rank percentiles in microseconds;
//! - paced: `rate` records a second for `paced_seconds`, open loop, each record timed from its intended send to
//!   its acknowledgement and to a separate consumer's receipt ([`paced`]).

#[cfg(test)]
mod on_a_broker;
pub mod paced;
mod run;

use std::collections::BTreeMap;

use anyhow::Result;
use rdkafka::ClientConfig;
use streamlab_record::{EnvDescriptor, Integrity, Measurement, Metric};

pub use self::run::run;
use crate::arms::ArmContext;
use crate::drivers::contract::{ClientInfo, ClientKnobs, Fetched, Produced, QueueFullSeen, Ran, Workload};
use crate::kafka::admin::{fresh_topic, high_watermark_sum};
use crate::kafka::config::default_client_config;

pub const BENCH: &str = "clients";

/// What the broker side says of a run: the topic's high-watermark sum after it, the brokers' CPU seconds over the
/// driver's call (`None` where they cannot be read), and the whole host's CPU over the same call.
#[derive(Debug, Clone, Copy)]
pub struct Broker {
    pub high_watermark: u64,
    pub cpu_s: Option<f64>,
    pub host: Option<crate::cpu::HostReading>,
}

fn metric(value: f64, unit: &str, higher_is_better: bool) -> Metric {
    Metric::new(value, unit, higher_is_better)
}

/// What each record weighs: its value's bytes and its key's (every clients arm sends records without a key), so
/// a ratio can check that both sides did the same work.
fn insert_record_bytes(metrics: &mut BTreeMap<String, Metric>, value_bytes: f64) {
    metrics.insert("bytes_per_record".into(), metric(value_bytes, "B", false));
    metrics.insert("key_bytes_per_record".into(), metric(0.0, "B", false));
}

/// The produce record: rates from acknowledged records, integrity from the broker's high watermarks.
pub fn produce_measurement(knobs: &ClientKnobs, ran: Ran<Produced>, broker: Broker) -> Measurement {
    let Broker { high_watermark, cpu_s: broker_cpu_s, host } = broker;
    let Ran { measured: p, mut info } = ran;
    let secs = p.elapsed.as_secs_f64();
    let mut metrics = BTreeMap::from([
        ("acked".into(), metric(p.acked as f64, "records", true)),
        ("high_watermark".into(), metric(high_watermark as f64, "records", true)),
        ("elapsed_s".into(), metric(secs, "s", false)),
    ]);
    if secs > 0.0 && p.acked > 0 {
        metrics.insert("records_per_s".into(), metric(p.acked as f64 / secs, "records/s", true));
        let mb = p.acked as f64 * knobs.payload_bytes as f64 / 1e6;
        metrics.insert("mb_per_s".into(), metric(mb / secs, "MB/s", true));
        insert_record_bytes(&mut metrics, knobs.payload_bytes as f64);
    }
    crate::cpu::add_cpu(&mut metrics, p.acked, p.client_cpu_s, broker_cpu_s, host);
    match p.queue_full {
        QueueFullSeen::NotCounted => {}
        QueueFullSeen::Refusals(n) => {
            metrics.insert("queue_full_waits".into(), metric(n as f64, "queue-full refusals", false));
        }
        QueueFullSeen::BlockedMs(ms) => {
            metrics.insert("queue_full_blocked_ms".into(), metric(ms, "ms blocked on a full queue", false));
        }
    }
    let integrity = produce_integrity(knobs.count, &p, high_watermark);
    if p.failed > 0 {
        let failed = failed_note(&p, knobs.count, high_watermark);
        info.note = Some(info.note.map_or(failed.clone(), |n| format!("{n}; {failed}")));
    }
    finish("produce", metrics, integrity, info)
}

/// What the record says of records the client counted as failed, and whether the broker holds them anyway:
/// every record was either acked or failed, and the topic holds exactly all of them (the writes went through
/// but the client never took the acknowledgements).
fn failed_note(p: &Produced, count: u64, high_watermark: u64) -> String {
    let mut note = format!("{} records failed", p.failed);
    if p.acked + p.failed == count && high_watermark == count {
        note.push_str(&format!(
            ", yet the topic holds {high_watermark}: the broker appended records the client reported as failed"
        ));
    }
    note
}

/// Verified only if the client acknowledged every record, reported none failed, and the broker holds them all.
pub fn produce_integrity(count: u64, p: &Produced, high_watermark: u64) -> Integrity {
    let method = format!(
        "sum of partition high watermarks == records sent ({count}) == records the client counted as acknowledged \
         ({}), none failed ({})",
        p.acked, p.failed
    );
    let ok = high_watermark == count && p.acked == count && p.failed == 0;
    Integrity {
        status: if ok {
            streamlab_record::IntegrityStatus::Verified
        } else {
            streamlab_record::IntegrityStatus::Failed
        },
        expected: Some(count),
        observed: Some(high_watermark),
        method,
    }
}

/// The fetch record: consumed must equal the high-watermark sum.
pub fn fetch_measurement(ran: Ran<Fetched>, broker: Broker) -> Measurement {
    let Broker { high_watermark, cpu_s: broker_cpu_s, host } = broker;
    let Ran { measured: f, info } = ran;
    let secs = f.elapsed.as_secs_f64();
    let mut metrics = BTreeMap::from([
        ("consumed".into(), metric(f.consumed as f64, "records", true)),
        ("high_watermark".into(), metric(high_watermark as f64, "records", true)),
        ("elapsed_s".into(), metric(secs, "s", false)),
    ]);
    if secs > 0.0 && f.consumed > 0 {
        metrics.insert("records_per_s".into(), metric(f.consumed as f64 / secs, "records/s", true));
        metrics.insert("mb_per_s".into(), metric(f.bytes as f64 / 1e6 / secs, "MB/s", true));
        insert_record_bytes(&mut metrics, f.bytes as f64 / f.consumed as f64);
    }
    crate::cpu::add_cpu(&mut metrics, f.consumed, f.client_cpu_s, broker_cpu_s, host);
    add_percentiles(&mut metrics, "fetch_rpc", &f.fetch_request_us);
    let ok = f.consumed == high_watermark && high_watermark > 0;
    let integrity = Integrity {
        status: if ok {
            streamlab_record::IntegrityStatus::Verified
        } else {
            streamlab_record::IntegrityStatus::Failed
        },
        expected: Some(high_watermark),
        observed: Some(f.consumed),
        method: "records consumed from offset 0 == sum of partition high watermarks".into(),
    };
    finish("fetch", metrics, integrity, info)
}

/// The latency record: nearest-rank p50/p99/p99.9/max of the measured samples (the warm-up is not in them);
/// integrity: every sample was acknowledged and the partition holds warm-up + samples.
pub fn latency_measurement(knobs: &ClientKnobs, ran: Ran<Vec<f64>>, broker: Broker) -> Measurement {
    let Ran { measured: samples_us, info } = ran;
    let Broker { high_watermark, host, .. } = broker;
    let mut metrics = BTreeMap::from([
        ("samples".into(), metric(samples_us.len() as f64, "round trips", true)),
        ("high_watermark".into(), metric(high_watermark as f64, "records", true)),
    ]);
    if let Some(h) = &host {
        crate::cpu::add_host_cores(&mut metrics, h);
    }
    add_percentiles(&mut metrics, "produce_ack", &samples_us);
    insert_record_bytes(&mut metrics, knobs.payload_bytes as f64);
    let expected = knobs.latency_warmup + knobs.latency_samples;
    let ok = samples_us.len() as u64 == knobs.latency_samples && high_watermark == expected;
    let integrity = Integrity {
        status: if ok {
            streamlab_record::IntegrityStatus::Verified
        } else {
            streamlab_record::IntegrityStatus::Failed
        },
        expected: Some(expected),
        observed: Some(high_watermark),
        method: format!(
            "{} sequential round trips measured after {} warm-up ones; the partition's high watermark == their sum",
            knobs.latency_samples, knobs.latency_warmup
        ),
    };
    finish("latency", metrics, integrity, info)
}

/// `<name>_p50_us`, `_p99_us`, `_p99_9_us`, `_max_us` by nearest rank, when there are samples.
fn add_percentiles(metrics: &mut BTreeMap<String, Metric>, name: &str, samples_us: &[f64]) {
    if samples_us.is_empty() {
        return;
    }
    let mut sorted = samples_us.to_vec();
    sorted.sort_by(f64::total_cmp);
    for (suffix, p) in [("p50", 50.0), ("p99", 99.0), ("p99_9", 99.9), ("max", 100.0)] {
        if let Some(v) = streamlab_record::stats::percentile(&sorted, p) {
            metrics.insert(format!("{name}_{suffix}_us"), metric(v, "µs", false));
        }
    }
}

fn finish(kind: &str, mut metrics: BTreeMap<String, Metric>, integrity: Integrity, info: ClientInfo) -> Measurement {
    metrics.extend(info.metrics);
    let mut details = info.asymmetries.into_details();
    details.insert("command".into(), info.command);
    Measurement {
        kind: kind.into(),
        metrics,
        integrity,
        verdict: BTreeMap::new(),
        note: info.note,
        details,
        versions: info.versions,
        applied: info.applied,
    }
}

/// The knob value that names the environment's default listener.
pub const DEFAULT_LISTENER_KNOB: &str = "default";

/// The point's knobs, with `listener = "default"` resolved to the environment's default listener (what every
/// driver and its record then name).
pub fn read_knobs(ctx: &ArmContext) -> Result<ClientKnobs> {
    let mut knobs: ClientKnobs = ctx.knobs()?;
    if knobs.listener == DEFAULT_LISTENER_KNOB {
        knobs.listener = ctx.env.default_listener().to_owned();
    }
    Ok(knobs)
}

/// The admin/offsets config: the plaintext listener, whatever listener the client under test uses.
pub fn admin_config(env: &EnvDescriptor) -> Result<ClientConfig> {
    default_client_config(env)
}

/// A fresh topic for this run, deleted and created again (one name per arm and workload, so a long matrix
/// never holds more than one copy of each); `partitions` partitions (1 for latency), replication 1.
/// Retention is long enough that nothing is deleted before the run has read and counted it.
pub fn fresh_run_topic(env: &EnvDescriptor, knobs: &ClientKnobs, arm: &str) -> Result<String> {
    let topic = format!("clients-{arm}-{:?}", knobs.workload).to_lowercase();
    let partitions = if knobs.workload == Workload::Latency { 1 } else { knobs.partitions };
    fresh_topic(&admin_config(env)?, &topic, partitions, RUN_RETENTION)?;
    Ok(topic)
}

/// Kept for the whole run (segments roll so that a deleted topic frees its disk quickly).
const RUN_RETENTION: &[(&str, &str)] = &[("retention.ms", "1800000"), ("segment.bytes", "268435456")];

/// The sum of the topic's partition high watermarks, read on the plaintext listener.
pub fn topic_high_watermark(env: &EnvDescriptor, topic: &str) -> Result<u64> {
    high_watermark_sum(&admin_config(env)?, topic)
}

/// Fill `topic` with `knobs.count` records of `knobs.payload_bytes` for a fetch run (untimed; rust-rdkafka on
/// the plaintext listener, acks=1, no compression). Fails unless the broker holds exactly `count` records.
pub fn preload(env: &EnvDescriptor, topic: &str, knobs: &ClientKnobs) -> Result<u64> {
    crate::kafka::fill::fill(&admin_config(env)?, topic, knobs.count, knobs.payload_bytes)?;
    let hw = topic_high_watermark(env, topic)?;
    anyhow::ensure!(hw == knobs.count, "preloading {topic} left {hw} records, not {}", knobs.count);
    Ok(hw)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::drivers::contract::tests::knobs;

    fn broker(high_watermark: u64) -> Broker {
        Broker { high_watermark, cpu_s: Some(1.5), host: None }
    }

    fn ran<T>(measured: T) -> Ran<T> {
        Ran { measured, info: ClientInfo::default() }
    }

    fn produced(acked: u64, failed: u64) -> Produced {
        Produced {
            acked,
            failed,
            elapsed: Duration::from_secs(1),
            client_cpu_s: 0.5,
            queue_full: QueueFullSeen::Refusals(7),
        }
    }

    #[test]
    fn a_produce_record_says_how_full_the_queue_was_in_the_clients_own_terms() {
        let with = |queue_full| {
            let p = Produced { queue_full, ..produced(10, 0) };
            produce_measurement(&knobs(serde_json::json!({})), ran(p), broker(10)).metrics
        };
        let counted = with(QueueFullSeen::Refusals(7));
        assert_eq!(counted["queue_full_waits"].value, 7.0);
        assert!(!counted.contains_key("queue_full_blocked_ms"));
        let blocked = with(QueueFullSeen::BlockedMs(12.5));
        assert_eq!(blocked["queue_full_blocked_ms"].value, 12.5);
        assert!(!blocked.contains_key("queue_full_waits"));
        let silent = with(QueueFullSeen::NotCounted);
        assert!(!silent.contains_key("queue_full_waits") && !silent.contains_key("queue_full_blocked_ms"));
    }

    #[test]
    fn a_flush_that_said_ok_while_the_broker_holds_fewer_records_fails_integrity() {
        let short = produce_integrity(1000, &produced(1000, 0), 968);
        assert_eq!(short.status, streamlab_record::IntegrityStatus::Failed);
        assert_eq!((short.expected, short.observed), (Some(1000), Some(968)));
        let counted_short = produce_integrity(1000, &produced(990, 0), 1000);
        assert_eq!(counted_short.status, streamlab_record::IntegrityStatus::Failed);
        let with_failures = produce_integrity(1000, &produced(1000, 3), 1000);
        assert_eq!(with_failures.status, streamlab_record::IntegrityStatus::Failed);
        assert_eq!(
            produce_integrity(1000, &produced(1000, 0), 1000).status,
            streamlab_record::IntegrityStatus::Verified
        );
    }

    #[test]
    fn records_the_client_called_failed_that_the_broker_holds_are_named_in_the_note() {
        let held = produce_measurement(&knobs(serde_json::json!({})), ran(produced(7, 3)), broker(10));
        assert_eq!(held.integrity.status, streamlab_record::IntegrityStatus::Failed);
        let note = held.note.unwrap();
        assert!(note.contains("3 records failed, yet the topic holds 10"), "{note}");
        let lost = produce_measurement(&knobs(serde_json::json!({})), ran(produced(7, 3)), broker(7));
        assert_eq!(lost.note.as_deref(), Some("3 records failed"));
        // Records neither acked nor failed (a flush that timed out) may be what landed: no conclusion drawn.
        let unaccounted = produce_measurement(&knobs(serde_json::json!({})), ran(produced(6, 3)), broker(10));
        assert_eq!(unaccounted.note.as_deref(), Some("3 records failed"));
        assert_eq!(produce_measurement(&knobs(serde_json::json!({})), ran(produced(10, 0)), broker(10)).note, None);
    }

    #[test]
    fn a_fetch_that_stops_short_or_reads_too_much_fails_integrity() {
        let fetched = |consumed| Fetched {
            consumed,
            bytes: consumed * 100,
            elapsed: Duration::from_millis(500),
            client_cpu_s: 0.1,
            fetch_request_us: vec![],
        };
        let ok = fetch_measurement(ran(fetched(1000)), Broker { high_watermark: 1000, cpu_s: Some(0.3), host: None });
        assert_eq!(ok.integrity.status, streamlab_record::IntegrityStatus::Verified);
        assert_eq!(ok.metrics["records_per_s"].value, 2000.0);
        // The broker's share beside the client's: 0.4 CPU s for 1000 records.
        assert!((ok.metrics["records_per_cpu_s"].value - 2500.0).abs() < 1e-6, "{:?}", ok.metrics);
        for consumed in [999, 1001] {
            let bad = fetch_measurement(ran(fetched(consumed)), broker(1000));
            assert_eq!(bad.integrity.status, streamlab_record::IntegrityStatus::Failed);
        }
    }

    #[test]
    fn an_empty_run_has_no_rate_rather_than_a_rate_of_zero() {
        let m = fetch_measurement(
            ran(Fetched {
                consumed: 0,
                bytes: 0,
                elapsed: Duration::ZERO,
                client_cpu_s: 0.0,
                fetch_request_us: vec![],
            }),
            Broker { high_watermark: 0, cpu_s: None, host: None },
        );
        assert!(!m.metrics.contains_key("records_per_s"));
        assert_eq!(m.integrity.status, streamlab_record::IntegrityStatus::Failed);
    }

    #[test]
    fn latency_percentiles_are_nearest_rank_in_microseconds() {
        let knobs_json = serde_json::json!({
            "workload": "latency", "listener": "plaintext", "compression": "none", "acks": 1, "idempotence": false,
            "count": 0, "payload_bytes": 100, "partitions": 1, "linger_ms": 0, "batch_messages": 1,
            "payload": "x", "queue_full": "park", "connections": 0,
            "batch_bytes": 0, "queue_messages": 0, "fetch_max_wait_ms": 100, "fetch_min_bytes": 1,
            "fetch_max_bytes": 16777216, "latency_warmup": 10, "latency_samples": 100, "kafka_version": "3.9.1"
        });
        let knobs: ClientKnobs = serde_json::from_value(knobs_json).unwrap();
        let samples: Vec<f64> = (1..=100).map(f64::from).collect();
        let m =
            latency_measurement(&knobs, ran(samples.clone()), Broker { high_watermark: 110, cpu_s: None, host: None });
        assert_eq!(m.metrics["produce_ack_p50_us"].value, 50.0);
        assert_eq!(m.metrics["produce_ack_p99_us"].value, 99.0);
        assert_eq!(m.metrics["produce_ack_max_us"].value, 100.0);
        assert_eq!(m.metrics["bytes_per_record"].value, 100.0, "the record's weight, for the parity check");
        assert_eq!(m.integrity.status, streamlab_record::IntegrityStatus::Verified);
        let short = latency_measurement(
            &knobs,
            ran(samples[..99].to_vec()),
            Broker { high_watermark: 109, cpu_s: None, host: None },
        );
        assert_eq!(short.integrity.status, streamlab_record::IntegrityStatus::Failed);
    }
}
