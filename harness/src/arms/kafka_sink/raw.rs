//! The raw arm: a bare rust-rdkafka ThreadedProducer fed by one thread, acks=all + idempotence,
//! keyless fixed-size payloads, 1 ms sleep on queue full. Rate = the rise of the topic's high watermarks over
//! the window (sampled by a client of its own); the delivery reports are the integrity check, and a window
//! needs at least ten of them.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use rdkafka::error::KafkaError;
use rdkafka::producer::{BaseRecord, DeliveryResult, Producer, ProducerContext, ThreadedProducer};
use rdkafka::statistics::Statistics;
use rdkafka::types::RDKafkaErrorCode;
use rdkafka::{ClientConfig, ClientContext};
use serde::Deserialize;
use streamlab_process::procfs;
use streamlab_record::{EnvDescriptor, Integrity, Measurement, Metric};

use crate::arms::ArmContext;
use crate::arms::spec::ArmSpec;
use crate::kafka::admin::{SHORT_RETENTION, fresh_topic, high_watermark_sum};
use crate::kafka::config::default_client_config;
use crate::kafka::stats::{LatencySampler, StatsWindow};
use crate::kafka::watermarks::{WatermarkSample, WatermarkSampler, WatermarkWindow};

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
    pub io_threads: u64,
    /// Applied by the runner to the broker process (CPU affinity); recorded here only.
    pub broker_cores: u64,
}

pub const ARM: ArmSpec = ArmSpec::new::<Knobs>("kafka_sink", "raw", run);

/// Counts delivery reports and samples their latency; collects librdkafka statistics.
struct Context_ {
    delivered: AtomicU64,
    failed: AtomicU64,
    first_error: std::sync::Mutex<Option<String>>,
    latency: LatencySampler,
    stats: StatsWindow,
}

impl Context_ {
    fn new() -> Self {
        Context_ {
            delivered: AtomicU64::new(0),
            failed: AtomicU64::new(0),
            first_error: Default::default(),
            latency: LatencySampler::new(64),
            stats: StatsWindow::default(),
        }
    }

    /// The sampled produce-to-report latency, and librdkafka's per-interval p99s and queue depth (medians).
    fn add_latency_and_gauges(&self, metrics: &mut BTreeMap<String, Metric>) {
        if let Some(p) = self.latency.percentiles(&[50.0, 99.0]) {
            metrics.insert("e2e_p50_ms".into(), Metric::new(p[0], "ms", false));
            metrics.insert("e2e_p99_ms".into(), Metric::new(p[1], "ms", false));
        }
        if let Some(s) = self.stats.summary() {
            metrics.insert("broker_rtt_p99_ms".into(), Metric::new(s.broker_rtt_p99_ms, "ms", false));
            metrics.insert("outbuf_latency_p99_ms".into(), Metric::new(s.outbuf_latency_p99_ms, "ms", false));
            metrics.insert("int_latency_p99_ms".into(), Metric::new(s.int_latency_p99_ms, "ms", false));
            metrics.insert("producer_queue_messages".into(), Metric::new(s.queue_messages, "messages", false));
        }
    }

    /// What the verdict reads of the producer's side, against its queue of `queue_capacity` messages.
    fn downstream(&self, queue_capacity: u64) -> Option<super::verdict::DownstreamSignals> {
        self.stats.summary().map(|s| super::verdict::DownstreamSignals {
            broker_rtt_p99_ms: s.broker_rtt_p99_ms,
            outbuf_latency_p99_ms: s.outbuf_latency_p99_ms,
            int_latency_p99_ms: s.int_latency_p99_ms,
            producer_queue_messages: s.queue_messages,
            queue_capacity_messages: queue_capacity as f64,
        })
    }
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
                    self.latency.push((streamlab_process::clock::now_ms_i64() - created_ms).max(0) as f64);
                }
            }
            Err((e, _)) => {
                self.failed.fetch_add(1, Ordering::Relaxed);
                self.first_error.lock().expect("error lock").get_or_insert_with(|| e.to_string());
            }
        }
    }
}

pub fn run(ctx: &ArmContext) -> Result<Measurement> {
    let knobs: Knobs = ctx.knobs()?;
    let base = default_client_config(&ctx.env)?;
    let topic = super::topic_name("raw");
    fresh_topic(&base, &topic, knobs.partitions, SHORT_RETENTION)?;
    let sampler = WatermarkSampler::new(&base, &topic, knobs.partitions)?;

    let context = Arc::new(Context_::new());
    let cfg = producer_config(&base, &knobs);
    let applied = super::window::applied(knobs.payload_bytes, knobs.partitions, knobs.warmup_s, knobs.window_s, &cfg)?;
    let producer: ThreadedProducer<ArcContext> =
        cfg.create_with_context(ArcContext(context.clone())).context("cannot create the producer")?;

    let payload = vec![b'x'; knobs.payload_bytes];
    let produce_start = Instant::now();
    let done = AtomicBool::new(false);
    let mut queue_full_sleeps = 0u64;
    // The feeder produces on this thread until the window's watcher says it is over; the watcher samples the
    // watermarks from its own client, so neither the producer nor its feeder waits on a sample.
    let (edges, fed) = std::thread::scope(|s| {
        let watcher = s.spawn(|| watch_window(&context, &sampler, &ctx.env, &knobs, produce_start, &done));
        let fed = feed(&producer, &topic, &payload, &done, &mut queue_full_sleeps);
        done.store(true, Ordering::Release);
        (watcher.join().map_err(|_| anyhow::anyhow!("the window's watcher panicked")), fed)
    });
    fed?;
    let edges = edges??;
    let window = WatermarkWindow { open: edges.open.hw, close: edges.close.hw };
    let acks = edges.close.delivered - edges.open.delivered;
    let cpu_s = edges.close.cpu_s - edges.open.cpu_s;
    let brokers_cpu_s = edges.close.brokers_cpu_s.zip(edges.open.brokers_cpu_s).map(|(close, open)| close - open);

    producer.flush(Duration::from_secs(60)).context("flush did not complete within 60 s")?;
    let delivered = context.delivered.load(Ordering::Relaxed);
    let failed = context.failed.load(Ordering::Relaxed);
    let observed = high_watermark_sum(&base, &topic)?;

    super::window::enough_acks(acks, "delivery reports", window.seconds(), "")?;
    let mut metrics = super::window::rate_metrics(&window, knobs.payload_bytes)?;
    let window_s = window.seconds();
    metrics.insert("acks_in_window".into(), Metric::new(acks as f64, "delivery reports", true));
    metrics.insert("acked_records_per_s".into(), Metric::new(acks as f64 / window_s, "records/s", true));
    metrics.insert("delivered_total".into(), Metric::new(delivered as f64, "records", true));
    crate::cpu::add_cpu(&mut metrics, window.records(), cpu_s, brokers_cpu_s, Some(edges.host));
    context.add_latency_and_gauges(&mut metrics);
    let mut note = format!(
        "{}; window {window_s:.2} s after {:.1} s warm-up, which started at the first delivery report \
         ({:.2} s after the first produce); {acks} delivery reports in the window ({:.0} records/s); \
         {queue_full_sleeps} queue-full sleeps; e2e = produce() to delivery report (CreateTime, ms), sampled 1/64",
        super::window::rate_note(&window),
        knobs.warmup_s,
        edges.first_ack_s,
        acks as f64 / window_s,
    );
    let downstream = context.downstream(knobs.queue_buffering_max_messages);
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
        applied,
    })
}

/// The seed's raw producer: acks=all with idempotence, its linger and queue cap, statistics every second.
fn producer_config(base: &ClientConfig, knobs: &Knobs) -> ClientConfig {
    let mut cfg = base.clone();
    cfg.set("acks", "all")
        .set("enable.idempotence", "true")
        .set("linger.ms", knobs.linger_ms.to_string())
        .set("queue.buffering.max.messages", knobs.queue_buffering_max_messages.to_string())
        .set("statistics.interval.ms", "1000");
    cfg
}

/// Produce keyless records until `done`, sleeping 1 ms whenever librdkafka's queue is full.
fn feed(
    producer: &ThreadedProducer<ArcContext>,
    topic: &str,
    payload: &[u8],
    done: &AtomicBool,
    queue_full_sleeps: &mut u64,
) -> Result<()> {
    while !done.load(Ordering::Acquire) {
        match producer.send::<(), [u8]>(BaseRecord::to(topic).payload(payload)) {
            Ok(()) => {}
            Err((KafkaError::MessageProduction(RDKafkaErrorCode::QueueFull), _)) => {
                *queue_full_sleeps += 1;
                std::thread::sleep(Duration::from_millis(1));
            }
            Err((e, _)) => bail!("produce failed: {e}"),
        }
    }
    Ok(())
}

/// One edge of the window: the broker's count, and the arm's own, and the process's and the brokers' CPU.
struct Edge {
    hw: WatermarkSample,
    delivered: u64,
    cpu_s: f64,
    brokers_cpu_s: Option<f64>,
}

struct Edges {
    open: Edge,
    close: Edge,
    /// The whole host's CPU from the open edge to the close.
    host: crate::cpu::HostReading,
    /// From the first produce to the first delivery report.
    first_ack_s: f64,
}

/// Waits for the first delivery report (until then the producer is starting: idempotence PID, metadata),
/// then the warm-up, then takes the window's edges; says `done` when it is over or has failed.
fn watch_window(
    context: &Context_,
    sampler: &WatermarkSampler,
    env: &EnvDescriptor,
    knobs: &Knobs,
    produce_start: Instant,
    done: &AtomicBool,
) -> Result<Edges> {
    let edges = (|| {
        let first_ack = loop {
            if context.delivered.load(Ordering::Relaxed) > 0 {
                break Instant::now();
            }
            if produce_start.elapsed() > super::FIRST_ACK_TIMEOUT {
                bail!(
                    "no delivery report within {} s of the first produce ({} failed; first error: {}): the arm \
                     never reached a steady state to measure",
                    super::FIRST_ACK_TIMEOUT.as_secs(),
                    context.failed.load(Ordering::Relaxed),
                    context.first_error.lock().expect("error lock").as_deref().unwrap_or("none")
                );
            }
            sleep_until(Instant::now() + Duration::from_millis(1), done)?;
        };
        sleep_until(first_ack + Duration::from_secs_f64(knobs.warmup_s), done)?;
        context.stats.open();
        context.latency.open();
        let edge = || -> Result<Edge> {
            let hw = sampler.sample()?;
            Ok(Edge {
                hw,
                delivered: context.delivered.load(Ordering::Relaxed),
                cpu_s: procfs::self_cpu_seconds(),
                brokers_cpu_s: crate::cpu::brokers_cpu_seconds(env),
            })
        };
        let open = edge()?;
        let host = crate::cpu::HostSpan::start();
        sleep_until(open.hw.at() + Duration::from_secs_f64(knobs.window_s), done)?;
        let host = host.finish();
        let close = edge()?;
        context.stats.close();
        context.latency.close();
        Ok(Edges { open, close, host, first_ack_s: first_ack.duration_since(produce_start).as_secs_f64() })
    })();
    done.store(true, Ordering::Release);
    edges
}

/// Sleeps until `deadline`; an error if the feeder stopped first (it failed: its error is the arm's).
fn sleep_until(deadline: Instant, done: &AtomicBool) -> Result<()> {
    loop {
        if done.load(Ordering::Acquire) {
            bail!("the feeder stopped before the window closed");
        }
        let now = Instant::now();
        if now >= deadline {
            return Ok(());
        }
        std::thread::sleep((deadline - now).min(Duration::from_millis(10)));
    }
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
            // 3 s: the statistics callback (every 1 s) must land in the window on a loaded host too.
            "payload_bytes": 256, "partitions": 4, "warmup_s": 0.5, "window_s": 3.0, "linger_ms": 5,
            "queue_buffering_max_messages": 100000, "io_threads": 0, "broker_cores": 0,
        });
        let ctx = ArmContext { env: crate::test_env(), knobs: knobs.as_object().unwrap().clone() };
        let m = run(&ctx).unwrap();
        assert_eq!(m.integrity.status, IntegrityStatus::Verified, "{:?}", m.integrity);
        let delivered = m.integrity.expected.unwrap();
        assert!(m.metrics["records_per_s"].value > 0.0 && delivered > 0);
        // The window's rate cannot exceed everything delivered over warm-up + window.
        assert!(m.metrics["records_per_s"].value * 3.0 <= delivered as f64 * 1.01);
        assert!(m.metrics.contains_key("e2e_p99_ms") && m.metrics.contains_key("broker_rtt_p99_ms"));
        assert!(m.verdict.contains_key("downstream"));
        // The broker's count and the delivery reports over the same window agree (they differ by what is in flight).
        let (hw_rate, acked_rate) = (m.metrics["records_per_s"].value, m.metrics["acked_records_per_s"].value);
        assert!((hw_rate / acked_rate - 1.0).abs() < 0.25, "{hw_rate} vs {acked_rate}");
        assert!(m.metrics["watermark_timing_error_pct"].value < 5.0, "{:?}", m.metrics);
        // The broker's CPU over the same window, beside the client's.
        assert!(m.metrics["broker_cpu_s"].value > 0.0 && m.metrics["records_per_cpu_s"].value > 0.0, "{:?}", m.metrics);
        assert_eq!(m.applied["producer.acks"], "-1");
        assert_eq!(m.applied["producer.max.in.flight.requests.per.connection"], "5");
        assert_eq!(m.applied["workload"], "produce 256 B records to 4 partitions for 3 s after 0.5 s warm-up");
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
