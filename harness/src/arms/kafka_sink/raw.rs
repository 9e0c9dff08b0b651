//! The raw arm: a bare rust-rdkafka ThreadedProducer fed by one thread, acks=all + idempotence,
//! keyless fixed-size payloads, 1 ms sleep on queue full. Rate = successful delivery reports in the window.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result, bail};
use rdkafka::ClientContext;
use rdkafka::error::KafkaError;
use rdkafka::producer::{BaseRecord, DeliveryResult, Producer, ProducerContext, ThreadedProducer};
use rdkafka::statistics::Statistics;
use rdkafka::types::RDKafkaErrorCode;
use serde::Deserialize;
use streamlab_record::{Integrity, Measurement, Metric};

use crate::arms::ArmContext;
use crate::arms::spec::{ArmSpec, KnobSpec, KnobStruct, KnobType};
use crate::kafka::admin::{SHORT_RETENTION, fresh_topic, high_watermark_sum};
use crate::kafka::config::{DEFAULT_LISTENER, client_config};
use crate::kafka::stats::{LatencySampler, StatsWindow};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Knobs {
    pub payload_bytes: usize,
    pub partitions: i32,
    pub warmup_s: f64,
    pub window_s: f64,
    pub linger_ms: u64,
    pub queue_buffering_max_messages: u64,
    /// librdkafka io threads hint; 0 keeps librdkafka's default.
    #[serde(default)]
    pub io_threads: u64,
    /// Applied by the runner to the broker process (CPU affinity); recorded here only.
    #[serde(default)]
    pub broker_cores: u64,
}

pub const ARM: ArmSpec = ArmSpec {
    bench: "kafka_sink",
    arm: "raw",
    knobs: &[
        KnobSpec::required("payload_bytes", KnobType::Integer),
        KnobSpec::required("partitions", KnobType::Integer),
        KnobSpec::required("warmup_s", KnobType::Float),
        KnobSpec::required("window_s", KnobType::Float),
        KnobSpec::required("linger_ms", KnobType::Integer),
        KnobSpec::required("queue_buffering_max_messages", KnobType::Integer),
        KnobSpec::optional("io_threads", KnobType::Integer),
        KnobSpec::optional("broker_cores", KnobType::Integer),
    ],
    run,
    knob_struct: KnobStruct::of::<Knobs>(),
};

/// Counts delivery reports and samples their latency; collects librdkafka statistics.
struct Context_ {
    delivered: AtomicU64,
    failed: AtomicU64,
    first_error: std::sync::Mutex<Option<String>>,
    latency: LatencySampler,
    stats: StatsWindow,
}

impl ClientContext for Context_ {
    fn stats(&self, statistics: Statistics) {
        self.stats.record(&statistics);
    }
}

impl ProducerContext for Context_ {
    type DeliveryOpaque = ();

    fn delivery(&self, result: &DeliveryResult<'_>, _: ()) {
        match result {
            Ok(msg) => {
                self.delivered.fetch_add(1, Ordering::Relaxed);
                if self.latency.wants_sample()
                    && let Some(created_ms) = rdkafka::Message::timestamp(msg).to_millis()
                {
                    self.latency.push((now_ms() - created_ms).max(0) as f64);
                }
            }
            Err((e, _)) => {
                self.failed.fetch_add(1, Ordering::Relaxed);
                self.first_error.lock().expect("error lock").get_or_insert_with(|| e.to_string());
            }
        }
    }
}

fn now_ms() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as i64)
}

pub fn run(ctx: &ArmContext) -> Result<Measurement> {
    let knobs: Knobs = ctx.knobs()?;
    let base = client_config(&ctx.env, DEFAULT_LISTENER)?;
    let topic = super::topic_name("raw");
    fresh_topic(&base, &topic, knobs.partitions, SHORT_RETENTION)?;

    let context = Arc::new(Context_ {
        delivered: AtomicU64::new(0),
        failed: AtomicU64::new(0),
        first_error: Default::default(),
        latency: LatencySampler::new(64),
        stats: StatsWindow::default(),
    });
    let mut cfg = base.clone();
    cfg.set("acks", "all")
        .set("enable.idempotence", "true")
        .set("linger.ms", knobs.linger_ms.to_string())
        .set("queue.buffering.max.messages", knobs.queue_buffering_max_messages.to_string())
        .set("statistics.interval.ms", "1000");
    let producer: ThreadedProducer<ArcContext> =
        cfg.create_with_context(ArcContext(context.clone())).context("cannot create the producer")?;

    let payload = vec![b'x'; knobs.payload_bytes];
    let warmup = Duration::from_secs_f64(knobs.warmup_s);
    let window = Duration::from_secs_f64(knobs.window_s);
    let produce_start = Instant::now();
    // The warm-up starts at the first delivery report: until then the producer is starting (idempotence
    // PID, metadata), not running, and a window measured from the first produce() could hold nothing.
    let mut first_ack: Option<Instant> = None;
    let mut window_start: Option<(Instant, u64, f64)> = None;
    let mut queue_full_sleeps = 0u64;
    loop {
        if first_ack.is_none() && context.delivered.load(Ordering::Relaxed) > 0 {
            first_ack = Some(Instant::now());
        }
        match first_ack {
            None if produce_start.elapsed() > super::FIRST_ACK_TIMEOUT => bail!(
                "no delivery report within {} s of the first produce ({} failed; first error: {}): the arm \
                 never reached a steady state to measure",
                super::FIRST_ACK_TIMEOUT.as_secs(),
                context.failed.load(Ordering::Relaxed),
                context.first_error.lock().expect("error lock").as_deref().unwrap_or("none")
            ),
            None => {}
            Some(started) => {
                let elapsed = started.elapsed();
                if window_start.is_none() && elapsed >= warmup {
                    context.stats.open();
                    context.latency.open();
                    window_start = Some((
                        Instant::now(),
                        context.delivered.load(Ordering::Relaxed),
                        crate::cpu::process_cpu_seconds(),
                    ));
                }
                if elapsed >= warmup + window {
                    break;
                }
            }
        }
        match producer.send::<(), [u8]>(BaseRecord::to(&topic).payload(&payload)) {
            Ok(()) => {}
            Err((KafkaError::MessageProduction(RDKafkaErrorCode::QueueFull), _)) => {
                queue_full_sleeps += 1;
                std::thread::sleep(Duration::from_millis(1));
            }
            Err((e, _)) => bail!("produce failed: {e}"),
        }
    }
    let (w_start, d_start, cpu_start) = window_start.context("the window never opened")?;
    let window_elapsed = w_start.elapsed().as_secs_f64();
    let in_window = context.delivered.load(Ordering::Relaxed) - d_start;
    let cpu_s = crate::cpu::process_cpu_seconds() - cpu_start;
    context.stats.close();
    context.latency.close();

    producer.flush(Duration::from_secs(60)).context("flush did not complete within 60 s")?;
    let delivered = context.delivered.load(Ordering::Relaxed);
    let failed = context.failed.load(Ordering::Relaxed);
    let observed = high_watermark_sum(&base, &topic)?;

    if in_window < super::MIN_ACKS_IN_WINDOW {
        bail!(
            "only {in_window} delivery report(s) in the {window_elapsed:.2} s window; at least {} are needed for a \
             rate",
            super::MIN_ACKS_IN_WINDOW
        );
    }
    let first_ack_s = first_ack.map_or(0.0, |t| t.duration_since(produce_start).as_secs_f64());
    let records_per_s = in_window as f64 / window_elapsed;
    let mut metrics = BTreeMap::from([
        ("records_per_s".to_owned(), Metric::new(records_per_s, "records/s", true)),
        ("mb_per_s".to_owned(), Metric::new(records_per_s * knobs.payload_bytes as f64 / 1e6, "MB/s", true)),
        ("delivered_total".to_owned(), Metric::new(delivered as f64, "records", true)),
    ]);
    if in_window > 0 {
        let per_m = cpu_s / (in_window as f64 / 1e6);
        metrics.insert("client_cpu_s_per_m_records".into(), Metric::new(per_m, "CPU s / 1M records", false));
    }
    if let Some(p) = context.latency.percentiles(&[50.0, 99.0]) {
        metrics.insert("e2e_p50_ms".into(), Metric::new(p[0], "ms", false));
        metrics.insert("e2e_p99_ms".into(), Metric::new(p[1], "ms", false));
    }
    if let Some(s) = context.stats.summary() {
        metrics.insert("broker_rtt_p99_ms".into(), Metric::new(s.broker_rtt_p99_ms, "ms", false));
        metrics.insert("outbuf_latency_p99_ms".into(), Metric::new(s.outbuf_latency_p99_ms, "ms", false));
        metrics.insert("int_latency_p99_ms".into(), Metric::new(s.int_latency_p99_ms, "ms", false));
        metrics.insert("producer_queue_messages".into(), Metric::new(s.queue_messages, "messages", false));
    }
    let mut note = format!(
        "window {window_elapsed:.2} s after {:.1} s warm-up, which started at the first delivery report \
         ({first_ack_s:.2} s after the first produce); {in_window} delivery reports in the window; \
         {queue_full_sleeps} queue-full sleeps; e2e = produce() to delivery report (CreateTime, ms), sampled 1/64",
        knobs.warmup_s
    );
    let downstream = context.stats.summary().map(|s| super::verdict::DownstreamSignals {
        broker_rtt_p99_ms: s.broker_rtt_p99_ms,
        outbuf_latency_p99_ms: s.outbuf_latency_p99_ms,
        int_latency_p99_ms: s.int_latency_p99_ms,
        producer_queue_messages: s.queue_messages,
        queue_capacity_messages: knobs.queue_buffering_max_messages as f64,
    });
    let (verdict, verdict_evidence) = super::verdict::verdict(None, downstream.as_ref());
    note.push_str(&format!("; {verdict_evidence}"));
    if failed > 0 {
        let first = context.first_error.lock().expect("error lock").clone().unwrap_or_default();
        note.push_str(&format!("; {failed} deliveries failed (first: {first})"));
    }
    Ok(Measurement {
        kind: "produce".into(),
        metrics,
        integrity: Integrity::compare(
            delivered,
            observed,
            "sum of partition high watermarks == successful delivery reports over the whole arm (warm-up included)",
        ),
        verdict,
        note: Some(note),
        details: BTreeMap::new(),
        versions: crate::versions::client_versions(),
        applied: Default::default(),
    })
}

/// `ThreadedProducer` wants the context by value; share ours through an `Arc`.
struct ArcContext(Arc<Context_>);

impl ClientContext for ArcContext {
    fn stats(&self, statistics: Statistics) {
        self.0.stats(statistics);
    }
}

impl ProducerContext for ArcContext {
    type DeliveryOpaque = ();
    fn delivery(&self, result: &DeliveryResult<'_>, opaque: ()) {
        self.0.delivery(result, opaque);
    }
}

#[cfg(test)]
mod tests {
    use streamlab_record::IntegrityStatus;

    use super::*;

    #[test]
    #[ignore = "needs a running environment: cargo xtask test"]
    fn the_raw_arm_delivers_and_verifies_against_the_broker() {
        let knobs = serde_json::json!({
            "payload_bytes": 256, "partitions": 4, "warmup_s": 0.5, "window_s": 1.5, "linger_ms": 5,
            "queue_buffering_max_messages": 100000, "io_threads": 0, "broker_cores": 0,
        });
        let ctx = ArmContext { env: crate::test_env(), knobs: knobs.as_object().unwrap().clone() };
        let m = run(&ctx).unwrap();
        assert_eq!(m.integrity.status, IntegrityStatus::Verified, "{:?}", m.integrity);
        let delivered = m.integrity.expected.unwrap();
        assert!(m.metrics["records_per_s"].value > 0.0 && delivered > 0);
        // The window's rate cannot exceed everything delivered over warm-up + window.
        assert!(m.metrics["records_per_s"].value * 1.5 <= delivered as f64 * 1.01);
        assert!(m.metrics.contains_key("e2e_p99_ms") && m.metrics.contains_key("broker_rtt_p99_ms"));
        assert!(m.verdict.contains_key("downstream"));
    }

    #[test]
    fn unknown_knobs_are_refused_by_name() {
        let knobs = serde_json::json!({"payload_bytes": 256, "shards": 2});
        let ctx = ArmContext {
            env: serde_json::from_value(serde_json::json!({
                "schema": 1, "id": "t", "backend": "external", "dir": "/nonexistent", "started_ts_ms": 0,
                "kafka": {"version": "x", "listeners": {}}
            }))
            .unwrap(),
            knobs: knobs.as_object().unwrap().clone(),
        };
        let err = run(&ctx).unwrap_err().to_string();
        assert!(err.contains("unknown field `shards`"), "{err}");
    }
}
