//! The framework arm: the real spate 0.2.0 pipeline, configured through spate's own YAML
//! (`PipelineConfig`): an in-process generator source of fixed-size keyless payloads -> a chain -> spate's
//! sink pool -> spate's Kafka sink (one shared ThreadedProducer, acks=all + idempotence forced, a batch
//! acknowledged only after every delivery report). Rate = records the sink acknowledged in the window,
//! read from spate's own `spate_sink_records_total` through `MetricsHandle::render()`.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result, bail};
use rdkafka::ClientConfig;
use serde::Deserialize;
use spate::backpressure::InflightBudget;
use spate::checkpoint::{AckIssuer, AckRef};
use spate::config::PipelineConfig;
use spate::deser::{Deserializer, EmitRecord, RecFamily};
use spate::error::{DeserError, SinkError, SourceError};
use spate::kafka::{KafkaMessage, MessageEncoder};
use spate::metrics::MetricsHandle;
use spate::ops::chain;
use spate::pipeline::{ExitReport, ExitState, Pipeline, RuntimeOptions};
use spate::record::{PartitionId, RawPayload, Record};
use spate::sink::{InflightConfig, KeyHashRouter};
use spate::source::{LaneId, PayloadBatch, Source, SourceCtx, SourceEvent, SourceLane};
use streamlab_record::{Integrity, IntegrityStatus, Measurement, Metric};

use super::verdict::{self, DownstreamSignals, UpstreamSignals};
use crate::arms::ArmContext;
use crate::kafka::admin::{SHORT_RETENTION, fresh_topic, high_watermark_sum};
use crate::kafka::config::{DEFAULT_LISTENER, client_config};
use crate::kafka::stats::nearest_rank;

/// How often the window reads spate's exposition (for the flow-control shares and the librdkafka gauges);
/// the sampler's own CPU is subtracted from the client CPU figure.
const SAMPLE_EVERY: Duration = Duration::from_millis(50);
/// librdkafka statistics cadence, the same as the raw arm's `statistics.interval.ms`.
const STATISTICS_INTERVAL: &str = "1s";
/// Publishes `spate_checkpoint_pending_batches` every second (commits are no-ops for the generator).
const CHECKPOINT_INTERVAL: &str = "1s";
/// Long enough to deliver a full in-flight budget (~750k records) at a few hundred thousand records/s;
/// short enough that a sink that cannot deliver fails the arm quickly instead of after spate's 25 s.
const DRAIN_TIMEOUT: &str = "10s";
/// spate's own defaults, written out so the verdict can compare against them.
const MAX_PENDING_BATCHES: u64 = 1024;
const INFLIGHT_BUDGET_BYTES: u64 = 256 * 1024 * 1024;
const BUDGET_HIGH_RATIO: f64 = 0.8;
const BUDGET_LOW_RATIO: f64 = 0.5;
/// Generator partitions (lanes) at least: keyless records are routed to shards by source partition, and
/// the pending-batch ceiling is per partition, so a handful of lanes keeps both from binding by accident.
const MIN_GENERATOR_PARTITIONS: usize = 16;
/// spate's default `max_message_bytes` guard (key + payload + headers).
const MAX_MESSAGE_BYTES: usize = 1_000_000;

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
    #[serde(default = "default_batch_linger_ms")]
    pub batch_linger_ms: u64,
    /// librdkafka `linger.ms`, through the sink's rdkafka passthrough (as in the raw arm).
    pub linger_ms: u64,
    pub queue_buffering_max_messages: u64,
    pub shards: usize,
    pub pipeline_threads: usize,
    /// spate sink `inflight.max_per_shard`; 0 keeps spate's default.
    #[serde(default)]
    pub inflight_per_shard: usize,
    /// spate `pipeline.io_threads` (the I/O runtime the sink workers run on); 0 keeps spate's default.
    #[serde(default)]
    pub io_threads: usize,
    /// spate `backpressure.min_pause`: the least a pause lasts; every sink-queue rejection restarts it.
    #[serde(default = "default_min_pause_ms")]
    pub min_pause_ms: u64,
    /// Applied by the runner to the broker process; recorded only.
    #[serde(default)]
    pub broker_cores: u64,
}

/// spate's default `batch.linger` (1 s).
fn default_batch_linger_ms() -> u64 {
    1000
}

/// spate's default `backpressure.min_pause` (500 ms).
fn default_min_pause_ms() -> u64 {
    500
}

impl Knobs {
    fn check(&self) -> Result<()> {
        if self.payload_bytes == 0 || self.payload_bytes > MAX_MESSAGE_BYTES {
            bail!("payload_bytes must be in 1..={MAX_MESSAGE_BYTES} (spate's default max_message_bytes)");
        }
        if self.shards == 0 || self.pipeline_threads == 0 {
            bail!("shards and pipeline_threads must be at least 1");
        }
        if !(self.warmup_s >= 0.0 && self.window_s > 0.0) {
            bail!("warmup_s must be >= 0 and window_s > 0");
        }
        Ok(())
    }

    /// Write slots per shard the sink runs with.
    fn inflight_per_shard_effective(&self) -> usize {
        if self.inflight_per_shard == 0 { InflightConfig::default().max_per_shard } else { self.inflight_per_shard }
    }

    fn generator_partitions(&self) -> usize {
        MIN_GENERATOR_PARTITIONS.max(self.shards).max(self.pipeline_threads)
    }
}

pub fn run(ctx: &ArmContext) -> Result<Measurement> {
    let knobs: Knobs = ctx.knobs()?;
    knobs.check()?;
    let base = client_config(&ctx.env, DEFAULT_LISTENER)?;
    let topic = super::topic_name("framework");
    fresh_topic(&base, &topic, knobs.partitions, SHORT_RETENTION)?;

    let yaml = pipeline_yaml(&knobs, &base, &topic)?;
    let outcome = run_pipeline(&yaml, &knobs)?;
    let observed = high_watermark_sum(&base, &topic)?;
    Ok(measurement(&knobs, &outcome, observed))
}

// ----- configuration -----

/// The whole pipeline as spate YAML. Strings are written as JSON literals, which YAML reads verbatim.
fn pipeline_yaml(knobs: &Knobs, base: &ClientConfig, topic: &str) -> Result<String> {
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
checkpoint: {{ interval: {CHECKPOINT_INTERVAL}, max_pending_batches: {MAX_PENDING_BATCHES}, drain_timeout: {DRAIN_TIMEOUT} }}
backpressure: {{ max_inflight_bytes: {INFLIGHT_BUDGET_BYTES}, high_ratio: {BUDGET_HIGH_RATIO}, low_ratio: {BUDGET_LOW_RATIO}, min_pause: {min_pause}ms }}
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

/// The `source: { generator: ... }` section.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct GeneratorConfig {
    payload_bytes: usize,
    partitions: usize,
}

// ----- the source: fixed-size keyless payloads, as fast as the pipeline threads poll -----

/// Hands out one lane per partition once, then idles. Commits are no-ops: nothing is replayed.
struct Generator {
    config: GeneratorConfig,
    issuer: Option<AckIssuer>,
    handed_out: bool,
    generated: Arc<AtomicU64>,
}

struct GeneratorLane {
    id: LaneId,
    partition: PartitionId,
    issuer: AckIssuer,
    next_offset: i64,
    /// Every payload of a poll borrows this one buffer, like a Kafka lane borrows librdkafka's memory.
    payload: Vec<u8>,
    generated: Arc<AtomicU64>,
}

struct GeneratorBatch<'a> {
    payload: &'a [u8],
    partition: PartitionId,
    base_offset: i64,
    len: usize,
    idx: usize,
    timestamp_ms: i64,
    ack: AckRef,
}

impl Source for Generator {
    type Lane = GeneratorLane;

    fn open(&mut self, ctx: SourceCtx) -> Result<(), SourceError> {
        self.issuer = Some(ctx.issuer);
        Ok(())
    }

    fn poll_events(&mut self, timeout: Duration) -> Result<SourceEvent<GeneratorLane>, SourceError> {
        if self.handed_out {
            std::thread::sleep(timeout);
            return Ok(SourceEvent::Idle);
        }
        self.handed_out = true;
        let issuer = self.issuer.as_ref().expect("spate calls open() before poll_events()");
        let lanes = (0..self.config.partitions as u32)
            .map(|p| GeneratorLane {
                id: LaneId(p),
                partition: PartitionId(p),
                issuer: issuer.clone(),
                next_offset: 0,
                payload: vec![b'x'; self.config.payload_bytes],
                generated: Arc::clone(&self.generated),
            })
            .collect();
        Ok(SourceEvent::LanesAssigned(lanes))
    }

    fn commit(&mut self, _watermarks: &[(PartitionId, i64)]) -> Result<(), SourceError> {
        Ok(())
    }
}

impl SourceLane for GeneratorLane {
    type Batch<'a> = GeneratorBatch<'a>;

    fn id(&self) -> LaneId {
        self.id
    }

    fn partition(&self) -> PartitionId {
        self.partition
    }

    fn poll(&mut self, max_records: usize, _timeout: Duration) -> Result<Option<GeneratorBatch<'_>>, SourceError> {
        let base_offset = self.next_offset;
        self.next_offset += max_records as i64;
        self.generated.fetch_add(max_records as u64, Ordering::Relaxed);
        let ack = self.issuer.issue(self.partition, self.next_offset - 1);
        Ok(Some(GeneratorBatch {
            payload: &self.payload,
            partition: self.partition,
            base_offset,
            len: max_records,
            idx: 0,
            timestamp_ms: now_ms(),
            ack,
        }))
    }
}

impl<'a> PayloadBatch<'a> for GeneratorBatch<'a> {
    fn next_payload(&mut self) -> Option<RawPayload<'a>> {
        if self.idx == self.len {
            return None;
        }
        let offset = self.base_offset + self.idx as i64;
        self.idx += 1;
        Some(RawPayload {
            bytes: self.payload,
            key: None,
            partition: self.partition,
            offset,
            timestamp_ms: self.timestamp_ms,
        })
    }

    fn ack(&self) -> &AckRef {
        &self.ack
    }
}

fn now_ms() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as i64)
}

// ----- the chain: borrowed payloads in, one keyless Kafka message per record out -----

/// Records that borrow the generator's buffer: no copy between the source and the sink's encoder.
struct BorrowedBytes;

impl RecFamily for BorrowedBytes {
    type Rec<'buf> = &'buf [u8];
}

#[derive(Clone, Copy)]
struct BorrowPayload;

impl Deserializer<BorrowedBytes> for BorrowPayload {
    fn deserialize<'buf>(
        &mut self,
        raw: &RawPayload<'buf>,
        ack: &AckRef,
        out: &mut dyn EmitRecord<'buf, &'buf [u8]>,
    ) -> Result<(), DeserError> {
        // One record per payload: a Blocked flow is retried by the driver from this payload on.
        let _ = out.emit(Record { payload: raw.bytes, meta: raw.meta(), ack: ack.clone() });
        Ok(())
    }
}

#[derive(Clone, Copy)]
struct KeylessPayload;

impl MessageEncoder<BorrowedBytes> for KeylessPayload {
    fn encode(&mut self, rec: &Record<&[u8]>, msg: &mut KafkaMessage) -> Result<(), SinkError> {
        msg.set_payload(rec.payload);
        Ok(())
    }
}

// ----- running the pipeline and watching its exposition -----

/// What one run of the pipeline left behind.
struct Outcome {
    window: Window,
    /// `spate_sink_records_total` over the whole run (warm-up and drain included).
    delivered: u64,
    generated: u64,
    retries: f64,
    /// From spate's ExitReport: the sink drain (absent if spate could not run it) and the final watermarks.
    drain: Option<Drain>,
    final_watermark_sum: i64,
}

/// `ExitReport.sink_drain`: batches written and abandoned over the pool's lifetime.
#[derive(Debug, Clone, Copy)]
struct Drain {
    flushed: u64,
    abandoned: u64,
}

impl Drain {
    fn of(report: &ExitReport) -> Option<Drain> {
        report.sink_drain.as_ref().map(|d| Drain { flushed: d.flushed, abandoned: d.abandoned })
    }
}

fn run_pipeline(yaml: &str, knobs: &Knobs) -> Result<Outcome> {
    let config = PipelineConfig::from_str(yaml).context("spate refused the pipeline config")?;
    let generator_config: GeneratorConfig =
        config.source.deserialize_into().context("spate refused the generator section")?;
    // Must run on a plain thread: spate builds its own I/O runtime and refuses to nest in another.
    let pipeline = Pipeline::from_config(config).context("cannot build the spate pipeline")?;
    let observer = Observer { metrics: pipeline.metrics().clone(), budget: Arc::clone(pipeline.budget()) };
    let baseline = observer.snapshot();

    let sink = spate::kafka::sink::from_component_config(pipeline.config().sink_config("default")?)
        .context("cannot build spate's Kafka sink")?;
    let encoder = sink.encoder_with(KeylessPayload);
    let generated = Arc::new(AtomicU64::new(0));
    let source =
        Generator { config: generator_config, issuer: None, handed_out: false, generated: Arc::clone(&generated) };
    let runtime = pipeline
        .sink(sink)?
        .chains(move |ctx| {
            let chunk = ctx.chunk();
            chain::<BorrowedBytes, _>(BorrowPayload)
                .with_metrics(ctx.pipeline, "generator")
                .sink(encoder.clone(), KeyHashRouter, chunk, ctx.queues, ctx.budget)
                .build()
        })
        .runtime_options(RuntimeOptions { handle_signals: false, ..RuntimeOptions::default() })
        .into_runtime(source)
        .context("cannot assemble the spate runtime")?;

    let shutdown = runtime.shutdown_handle();
    let started = Instant::now();
    let running = std::thread::Builder::new().name("spate-runtime".into()).spawn(move || runtime.run())?;
    let window = observe_window(&observer, started, knobs, &running);
    shutdown.trigger();
    let report = running
        .join()
        .map_err(|_| anyhow::anyhow!("the spate runtime thread panicked"))?
        .context("the spate runtime did not start")?;
    if let ExitState::Failed(failure) = &report.state {
        bail!("the spate pipeline failed: {failure}");
    }
    let window = window?;
    let end = observer.snapshot();
    Ok(Outcome {
        window,
        delivered: (end.sink_records - baseline.sink_records).round() as u64,
        generated: generated.load(Ordering::Relaxed),
        retries: end.sink_retries - baseline.sink_retries,
        drain: Drain::of(&report),
        final_watermark_sum: report.final_watermarks.iter().map(|(_, w)| *w).sum(),
    })
}

/// The exposition at the window's open, every [`SAMPLE_EVERY`] through it (the last sample is the close),
/// and the client CPU spent in it.
struct Window {
    open: Snapshot,
    samples: Vec<Snapshot>,
    /// Process CPU seconds over the window, minus this sampling thread's own.
    client_cpu_s: f64,
}

impl Window {
    fn close(&self) -> &Snapshot {
        self.samples.last().unwrap_or(&self.open)
    }
}

fn observe_window<T>(observer: &Observer, started: Instant, knobs: &Knobs, running: &JoinHandle<T>) -> Result<Window> {
    sleep_until(started + Duration::from_secs_f64(knobs.warmup_s), running)?;
    let cpu_open = crate::cpu::process_cpu_seconds();
    let sampler_open = thread_cpu_seconds();
    let open = observer.snapshot();
    let close_at = open.at + Duration::from_secs_f64(knobs.window_s);
    let mut samples = Vec::new();
    while Instant::now() < close_at {
        sleep_until((Instant::now() + SAMPLE_EVERY).min(close_at), running)?;
        samples.push(observer.snapshot());
    }
    let sampler_s = thread_cpu_seconds() - sampler_open;
    let client_cpu_s = crate::cpu::process_cpu_seconds() - cpu_open - sampler_s;
    Ok(Window { open, samples, client_cpu_s })
}

/// Sleep until `deadline`, failing early if the pipeline stopped on its own.
fn sleep_until<T>(deadline: Instant, running: &JoinHandle<T>) -> Result<()> {
    loop {
        if running.is_finished() {
            bail!("the spate pipeline stopped before the window closed");
        }
        let now = Instant::now();
        if now >= deadline {
            return Ok(());
        }
        std::thread::sleep((deadline - now).min(SAMPLE_EVERY));
    }
}

/// CPU seconds the calling thread has used.
fn thread_cpu_seconds() -> f64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime only writes into the timespec we pass.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    if rc != 0 {
        return f64::NAN;
    }
    ts.tv_sec as f64 + ts.tv_nsec as f64 / 1e9
}

// ----- reading spate's Prometheus exposition -----

/// Where the window reads the pipeline: spate's exposition, and its in-flight byte budget directly
/// (spate 0.2.0 registers `spate_backpressure_inflight_bytes` but never sets it).
struct Observer {
    metrics: MetricsHandle,
    budget: Arc<InflightBudget>,
}

impl Observer {
    fn snapshot(&self) -> Snapshot {
        let mut s = Snapshot::parse(&self.metrics.render(), Instant::now());
        s.inflight_bytes = self.budget.usage() as f64;
        s
    }
}

/// One render of spate's exposition, reduced to the series this arm reads.
#[derive(Debug, Clone)]
struct Snapshot {
    at: Instant,
    /// Σ `spate_sink_records_total` over shards: records in batches whose every delivery report confirmed.
    sink_records: f64,
    sink_retries: f64,
    /// Σ `spate_backpressure_paused` over pipeline threads.
    paused_threads: f64,
    pause_events: f64,
    /// Σ `spate_queue_full_events_total`: chunks a sink queue refused.
    queue_full_events: f64,
    /// `InflightBudget::usage()` (set by [`Observer`]; not in the exposition).
    inflight_bytes: f64,
    /// max over shards of `spate_sink_inflight_batches`.
    busiest_shard_inflight: f64,
    pending_batches: f64,
    /// max over brokers of the librdkafka window p99s, in seconds; absent until a window has samples.
    broker_rtt_p99_s: Option<f64>,
    outbuf_latency_p99_s: Option<f64>,
    int_latency_p99_s: Option<f64>,
    produce_queue_messages: Option<f64>,
    /// `spate_e2e_latency_seconds` cumulative buckets (upper bound, count), summed over series.
    e2e_buckets: Vec<(f64, f64)>,
}

impl Snapshot {
    fn parse(text: &str, at: Instant) -> Snapshot {
        let e = Exposition::parse(text);
        Snapshot {
            at,
            sink_records: e.sum("spate_sink_records_total"),
            sink_retries: e.sum("spate_sink_retries_total"),
            paused_threads: e.sum("spate_backpressure_paused"),
            pause_events: e.sum("spate_backpressure_pause_events_total"),
            queue_full_events: e.sum("spate_queue_full_events_total"),
            inflight_bytes: 0.0,
            busiest_shard_inflight: e.max("spate_sink_inflight_batches").unwrap_or(0.0),
            pending_batches: e.max("spate_checkpoint_pending_batches").unwrap_or(0.0),
            broker_rtt_p99_s: e.max("spate_kafka_sink_broker_rtt_p99_seconds"),
            outbuf_latency_p99_s: e.max("spate_kafka_sink_broker_outbuf_latency_p99_seconds"),
            int_latency_p99_s: e.max("spate_kafka_sink_broker_int_latency_p99_seconds"),
            produce_queue_messages: e.max("spate_kafka_sink_produce_queue_messages"),
            e2e_buckets: e.buckets("spate_e2e_latency_seconds"),
        }
    }
}

/// Samples of a Prometheus text exposition: (name, label block, value).
struct Exposition<'a> {
    samples: Vec<(&'a str, &'a str, f64)>,
}

impl<'a> Exposition<'a> {
    fn parse(text: &'a str) -> Self {
        let samples = text
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty() && !l.starts_with('#'))
            .filter_map(|line| {
                let (name, labels, rest) = match (line.find('{'), line.rfind('}')) {
                    (Some(open), Some(close)) if open < close => {
                        (&line[..open], &line[open + 1..close], &line[close + 1..])
                    }
                    _ => {
                        let (name, rest) = line.split_once(char::is_whitespace)?;
                        (name, "", rest)
                    }
                };
                Some((name, labels, parse_value(rest.split_whitespace().next()?)?))
            })
            .collect();
        Exposition { samples }
    }

    fn values(&self, name: &str) -> impl Iterator<Item = f64> + '_ {
        let name = name.to_owned();
        self.samples.iter().filter(move |(n, _, _)| *n == name).map(|(_, _, v)| *v)
    }

    fn sum(&self, name: &str) -> f64 {
        self.values(name).sum()
    }

    fn max(&self, name: &str) -> Option<f64> {
        self.values(name).reduce(f64::max)
    }

    /// A histogram's cumulative buckets, summed over its series and sorted by upper bound.
    fn buckets(&self, histogram: &str) -> Vec<(f64, f64)> {
        let bucket = format!("{histogram}_bucket");
        let mut by_le: BTreeMap<u64, (f64, f64)> = BTreeMap::new();
        for (name, labels, value) in &self.samples {
            if *name != bucket {
                continue;
            }
            let Some(le) = label(labels, "le").and_then(parse_value) else { continue };
            by_le.entry(le.to_bits()).or_insert((le, 0.0)).1 += value;
        }
        let mut buckets: Vec<(f64, f64)> = by_le.into_values().collect();
        buckets.sort_by(|a, b| a.0.total_cmp(&b.0));
        buckets
    }
}

fn parse_value(s: &str) -> Option<f64> {
    match s {
        "+Inf" => Some(f64::INFINITY),
        "-Inf" => Some(f64::NEG_INFINITY),
        _ => s.parse().ok(),
    }
}

/// The value of `key` in a label block like `a="1",le="0.5"` (values here carry no escaped quotes).
fn label<'a>(labels: &'a str, key: &str) -> Option<&'a str> {
    labels.split(',').find_map(|pair| {
        let (k, v) = pair.split_once('=')?;
        (k.trim() == key).then(|| v.trim().trim_matches('"'))
    })
}

/// Prometheus `histogram_quantile`: linear interpolation inside the bucket holding rank q x total.
fn histogram_quantile(q: f64, buckets: &[(f64, f64)]) -> Option<f64> {
    let total = buckets.last()?.1;
    if total <= 0.0 {
        return None;
    }
    let rank = q * total;
    let i = buckets.iter().position(|&(_, count)| count >= rank)?;
    let (upper, count) = buckets[i];
    let (lower, below) = if i == 0 { (0.0, 0.0) } else { buckets[i - 1] };
    if upper.is_infinite() {
        return Some(lower);
    }
    if count == below {
        return Some(upper);
    }
    Some(lower + (upper - lower) * (rank - below) / (count - below))
}

/// Bucket counts that arrived between two snapshots.
fn bucket_delta(open: &[(f64, f64)], close: &[(f64, f64)]) -> Vec<(f64, f64)> {
    close
        .iter()
        .map(|&(le, count)| {
            let before = open.iter().find(|(l, _)| *l == le).map_or(0.0, |(_, c)| *c);
            (le, count - before)
        })
        .collect()
}

// ----- from the window to the record -----

/// The sink's acknowledgements in the window. Batches are acknowledged whole, so the count over a fixed
/// window is off by at most the batch straddling each edge; `largest_step` says how big that can be.
#[derive(Debug, Clone, Copy, PartialEq)]
struct AckCount {
    records: f64,
    seconds: f64,
    /// Acknowledgement events (sample steps where the counter rose).
    acks: usize,
    /// The largest single rise of the counter between two samples.
    largest_step: f64,
}

impl AckCount {
    fn records_per_s(&self) -> f64 {
        if self.seconds > 0.0 { self.records / self.seconds } else { 0.0 }
    }
}

fn acks_in_window(open: &Snapshot, samples: &[Snapshot]) -> AckCount {
    let close = samples.last().unwrap_or(open);
    let mut previous = open.sink_records;
    let (mut acks, mut largest_step) = (0, 0.0f64);
    for s in samples {
        if s.sink_records > previous {
            acks += 1;
            largest_step = largest_step.max(s.sink_records - previous);
        }
        previous = s.sink_records;
    }
    AckCount {
        records: close.sink_records - open.sink_records,
        seconds: close.at.duration_since(open.at).as_secs_f64(),
        acks,
        largest_step,
    }
}

fn upstream_signals(window: &Window, knobs: &Knobs) -> UpstreamSignals {
    let samples = &window.samples;
    let share = |pred: &dyn Fn(&Snapshot) -> bool, of: &[&Snapshot]| {
        if of.is_empty() { 0.0 } else { of.iter().filter(|s| pred(s)).count() as f64 / of.len() as f64 }
    };
    let all: Vec<&Snapshot> = samples.iter().collect();
    let threads = knobs.pipeline_threads as f64;
    let paused_share = if all.is_empty() {
        0.0
    } else {
        all.iter().map(|s| s.paused_threads / threads).sum::<f64>() / all.len() as f64
    };
    let paused: Vec<&Snapshot> = all.iter().copied().filter(|s| s.paused_threads > 0.0).collect();
    let slots = knobs.inflight_per_shard_effective() as f64;
    let budget_low_bytes = INFLIGHT_BUDGET_BYTES as f64 * BUDGET_LOW_RATIO;
    let inflight: Vec<f64> = samples.iter().map(|s| s.inflight_bytes).collect();
    let (open, close) = (&window.open, window.close());
    UpstreamSignals {
        samples: samples.len(),
        paused_share,
        gated_share: share(&|s| s.pending_batches >= MAX_PENDING_BATCHES as f64, &all),
        budget_held_share_of_paused: share(&|s| s.inflight_bytes > budget_low_bytes, &paused),
        sink_busy_share_of_paused: share(&|s| s.busiest_shard_inflight >= slots, &paused),
        pause_events: close.pause_events - open.pause_events,
        queue_full_events: close.queue_full_events - open.queue_full_events,
        inflight_bytes_median: median(&inflight).unwrap_or(0.0),
        budget_low_bytes,
    }
}

/// Medians over the window's samples of librdkafka's per-interval p99s and queue depth (as the raw arm takes
/// per statistics callback).
fn downstream_signals(window: &Window, knobs: &Knobs) -> Option<DownstreamSignals> {
    let median_of = |f: fn(&Snapshot) -> Option<f64>| {
        let xs: Vec<f64> = window.samples.iter().filter_map(f).collect();
        median(&xs)
    };
    Some(DownstreamSignals {
        broker_rtt_p99_ms: median_of(|s| s.broker_rtt_p99_s)? * 1000.0,
        outbuf_latency_p99_ms: median_of(|s| s.outbuf_latency_p99_s)? * 1000.0,
        int_latency_p99_ms: median_of(|s| s.int_latency_p99_s)? * 1000.0,
        producer_queue_messages: median_of(|s| s.produce_queue_messages)?,
        queue_capacity_messages: knobs.queue_buffering_max_messages as f64,
    })
}

fn median(xs: &[f64]) -> Option<f64> {
    let mut xs: Vec<f64> = xs.iter().copied().filter(|x| x.is_finite()).collect();
    if xs.is_empty() {
        return None;
    }
    xs.sort_by(f64::total_cmp);
    Some(nearest_rank(&xs, 50.0))
}

fn measurement(knobs: &Knobs, outcome: &Outcome, observed: u64) -> Measurement {
    let window = &outcome.window;
    let acks = acks_in_window(&window.open, &window.samples);
    let records_per_s = acks.records_per_s();
    let mut metrics = BTreeMap::from([
        ("records_per_s".to_owned(), Metric::new(records_per_s, "records/s", true)),
        ("mb_per_s".to_owned(), Metric::new(records_per_s * knobs.payload_bytes as f64 / 1e6, "MB/s", true)),
        ("delivered_total".to_owned(), Metric::new(outcome.delivered as f64, "records", true)),
    ]);
    if acks.records > 0.0 && window.client_cpu_s.is_finite() {
        let per_m = window.client_cpu_s / (acks.records / 1e6);
        metrics.insert("client_cpu_s_per_m_records".into(), Metric::new(per_m, "CPU s / 1M records", false));
    }
    let e2e = bucket_delta(&window.open.e2e_buckets, &window.close().e2e_buckets);
    let e2e_batches = e2e.last().map_or(0.0, |b| b.1);
    if let (Some(p50), Some(p99)) = (histogram_quantile(0.5, &e2e), histogram_quantile(0.99, &e2e)) {
        metrics.insert("e2e_p50_ms".into(), Metric::new(p50 * 1000.0, "ms", false));
        metrics.insert("e2e_p99_ms".into(), Metric::new(p99 * 1000.0, "ms", false));
    }
    let downstream = downstream_signals(window, knobs);
    if let Some(d) = &downstream {
        metrics.insert("broker_rtt_p99_ms".into(), Metric::new(d.broker_rtt_p99_ms, "ms", false));
        metrics.insert("outbuf_latency_p99_ms".into(), Metric::new(d.outbuf_latency_p99_ms, "ms", false));
        metrics.insert("int_latency_p99_ms".into(), Metric::new(d.int_latency_p99_ms, "ms", false));
        metrics.insert("producer_queue_messages".into(), Metric::new(d.producer_queue_messages, "messages", false));
    }
    let (verdict, evidence) = verdict::verdict(Some(&upstream_signals(window, knobs)), downstream.as_ref());
    let integrity = integrity(outcome.delivered, observed, outcome.drain);

    let note = format!(
        "rate = rise of spate_sink_records_total (records in batches whose every delivery report confirmed, read \
         via MetricsHandle::render every {sample_ms} ms) over the {seconds:.2} s window after {warmup:.1} s \
         warm-up: {records:.0} records in {acks} acknowledgements, the largest {largest:.0} (a batch straddling \
         an edge moves the count by at most that); e2e = spate_e2e_latency_seconds over {e2e_batches:.0} batches \
         (ingest of the batch's oldest record to its acknowledgement, bucket-interpolated); librdkafka figures are \
         medians of spate_kafka_sink_* gauges (per-interval p99s, worst broker) over the window; {verdict_evidence}; \
         generator {partitions} partitions x {payload} B keyless payloads; {generated} generated, {delivered} \
         acknowledged over the run, final watermarks sum {watermarks}; sink retries {retries:.0}; drain {drain}; \
         inflight.max_per_shard {slots}, batch.linger {linger} ms, budget {budget_mib} MiB, min_pause {min_pause} ms",
        sample_ms = SAMPLE_EVERY.as_millis(),
        seconds = acks.seconds,
        warmup = knobs.warmup_s,
        records = acks.records,
        acks = acks.acks,
        largest = acks.largest_step,
        verdict_evidence = evidence,
        partitions = knobs.generator_partitions(),
        payload = knobs.payload_bytes,
        generated = outcome.generated,
        delivered = outcome.delivered,
        watermarks = outcome.final_watermark_sum,
        retries = outcome.retries,
        drain = outcome.drain.map_or("report missing".to_owned(), |d| format!(
            "{} batches flushed, {} abandoned",
            d.flushed, d.abandoned
        )),
        slots = knobs.inflight_per_shard_effective(),
        linger = knobs.batch_linger_ms,
        budget_mib = INFLIGHT_BUDGET_BYTES / (1024 * 1024),
        min_pause = knobs.min_pause_ms,
    );
    Measurement {
        kind: "produce".into(),
        metrics,
        integrity,
        verdict,
        note: Some(note),
        versions: crate::versions::client_versions(),
    }
}

/// Broker high watermarks against the sink's acknowledgements; a drain that abandoned batches (or left no
/// report) fails integrity whatever the counts say.
fn integrity(delivered: u64, observed: u64, drain: Option<Drain>) -> Integrity {
    const METHOD: &str = "sum of partition high watermarks == spate_sink_records_total over the whole arm \
                          (warm-up and drain included), and spate's drain abandoned no batch";
    let mut integrity = Integrity::compare(delivered, observed, METHOD);
    match drain {
        Some(d) if d.abandoned == 0 => {}
        Some(d) => {
            integrity.status = IntegrityStatus::Failed;
            integrity.method = format!("{METHOD}; the drain abandoned {} batches", d.abandoned);
        }
        None => {
            integrity.status = IntegrityStatus::Failed;
            integrity.method = format!("{METHOD}; spate returned no sink drain report");
        }
    }
    integrity
}

#[cfg(test)]
mod tests {
    use super::*;

    fn knobs() -> Knobs {
        serde_json::from_value(serde_json::json!({
            "payload_bytes": 256, "partitions": 16, "warmup_s": 1.0, "window_s": 2.0, "broker_cores": 0,
            "batch_max_rows": 500000, "batch_max_bytes": 268435456, "linger_ms": 5,
            "queue_buffering_max_messages": 100000, "shards": 1, "pipeline_threads": 1,
            "inflight_per_shard": 0, "io_threads": 0
        }))
        .expect("the matrix's knobs")
    }

    const EXPOSITION: &str = r#"
# TYPE spate_sink_records_total counter
spate_sink_records_total{pipeline="p",component="default",component_type="kafka",shard="0"} 1000000
spate_sink_records_total{pipeline="p",component="default",component_type="kafka",shard="1"} 500000
spate_backpressure_paused{pipeline="p",component="driver-0",component_type="pipeline"} 1
spate_queue_full_events_total{pipeline="p",component="default",component_type="kafka",queue="chain->sink/shard-0"} 29
spate_sink_inflight_batches{pipeline="p",component="default",component_type="kafka",shard="0"} 2
spate_sink_inflight_batches{pipeline="p",component="default",component_type="kafka",shard="1"} 1
spate_kafka_sink_broker_rtt_p99_seconds{pipeline="p",component="default",component_type="kafka",broker="127.0.0.1:9092/1"} 0.007
spate_e2e_latency_seconds_bucket{pipeline="p",component="default",component_type="kafka",le="0.5"} 2
spate_e2e_latency_seconds_bucket{pipeline="p",component="default",component_type="kafka",le="1"} 6
spate_e2e_latency_seconds_bucket{pipeline="p",component="default",component_type="kafka",le="+Inf"} 8
spate_e2e_latency_seconds_count{pipeline="p",component="default",component_type="kafka"} 8
process_cpu_seconds_total 3.5
"#;

    #[test]
    fn a_snapshot_reads_the_series_the_arm_needs() {
        let s = Snapshot::parse(EXPOSITION, Instant::now());
        assert_eq!(s.sink_records, 1_500_000.0);
        assert_eq!(s.paused_threads, 1.0);
        assert_eq!(s.busiest_shard_inflight, 2.0);
        assert_eq!(s.queue_full_events, 29.0);
        assert_eq!(s.broker_rtt_p99_s, Some(0.007));
        assert_eq!(s.int_latency_p99_s, None);
        assert_eq!(s.e2e_buckets, vec![(0.5, 2.0), (1.0, 6.0), (f64::INFINITY, 8.0)]);
    }

    #[test]
    fn histogram_quantiles_interpolate_inside_buckets() {
        let b = [(0.5, 2.0), (1.0, 6.0), (2.5, 10.0), (f64::INFINITY, 10.0)];
        assert_eq!(histogram_quantile(0.5, &b), Some(0.5 + 0.5 * (5.0 - 2.0) / 4.0));
        assert_eq!(histogram_quantile(0.1, &b), Some(0.25));
        assert_eq!(histogram_quantile(0.99, &b), Some(1.0 + 1.5 * (9.9 - 6.0) / 4.0));
        // Mass in +Inf reads as the highest finite bound, as Prometheus does.
        assert_eq!(histogram_quantile(0.99, &[(1.0, 1.0), (f64::INFINITY, 10.0)]), Some(1.0));
        assert_eq!(histogram_quantile(0.5, &[(1.0, 0.0), (f64::INFINITY, 0.0)]), None);
        assert_eq!(
            bucket_delta(&[(1.0, 3.0)], &[(1.0, 5.0), (f64::INFINITY, 9.0)]),
            vec![(1.0, 2.0), (f64::INFINITY, 9.0)]
        );
    }

    fn at(t0: Instant, ms: u64, records: f64) -> Snapshot {
        let mut s = Snapshot::parse("", t0 + Duration::from_millis(ms));
        s.sink_records = records;
        s
    }

    #[test]
    fn the_rate_counts_acknowledgements_inside_the_window() {
        let t0 = Instant::now();
        let open = at(t0, 0, 1_000_000.0);
        // Batches of 500k and 250k land at 0.3 s, 0.8 s and 1.3 s of a 2 s window.
        let samples = [
            at(t0, 300, 1_500_000.0),
            at(t0, 500, 1_500_000.0),
            at(t0, 800, 1_750_000.0),
            at(t0, 1300, 2_250_000.0),
            at(t0, 2000, 2_250_000.0),
        ];
        let a = acks_in_window(&open, &samples);
        assert_eq!((a.records, a.acks, a.largest_step), (1_250_000.0, 3, 500_000.0));
        assert!((a.seconds - 2.0).abs() < 1e-9);
        assert!((a.records_per_s() - 625_000.0).abs() < 1e-6, "{a:?}");
        let none = acks_in_window(&open, &[at(t0, 2000, 1_000_000.0)]);
        assert_eq!((none.records_per_s(), none.acks), (0.0, 0));
        assert_eq!(acks_in_window(&open, &[]).records_per_s(), 0.0);
    }

    #[test]
    fn the_upstream_signals_come_from_the_samples() {
        let t0 = Instant::now();
        // Paused with both write slots busy and 200 MB unwritten, twice; paused on a queue rejection with
        // little in flight, once; running, once.
        let mut held = at(t0, 50, 0.0);
        held.paused_threads = 1.0;
        held.busiest_shard_inflight = 2.0;
        held.inflight_bytes = 200e6;
        held.queue_full_events = 3.0;
        let mut rejected = held.clone();
        rejected.busiest_shard_inflight = 0.0;
        rejected.inflight_bytes = 2e6;
        let mut running = at(t0, 100, 0.0);
        running.queue_full_events = 3.0;
        let window =
            Window { open: at(t0, 0, 0.0), samples: vec![held.clone(), held, rejected, running], client_cpu_s: 1.0 };
        let s = upstream_signals(&window, &knobs());
        assert_eq!(s.samples, 4);
        assert_eq!(s.paused_share, 0.75);
        assert!((s.budget_held_share_of_paused - 2.0 / 3.0).abs() < 1e-9);
        assert!((s.sink_busy_share_of_paused - 2.0 / 3.0).abs() < 1e-9);
        assert_eq!((s.gated_share, s.queue_full_events), (0.0, 3.0));
        assert_eq!(verdict::upstream(&s), Some(verdict::Upstream::Budget));
    }

    #[test]
    fn spate_accepts_the_generated_config() {
        let mut base = ClientConfig::new();
        base.set("bootstrap.servers", "127.0.0.1:39092").set("security.protocol", "plaintext");
        let mut k = knobs();
        k.inflight_per_shard = 3;
        k.io_threads = 1;
        let yaml = pipeline_yaml(&k, &base, "streamlab-kafka-sink-framework").unwrap();
        let config = PipelineConfig::from_str(&yaml).unwrap_or_else(|e| panic!("{e}\n{yaml}"));
        assert_eq!(config.pipeline.threads, Some(1));
        assert_eq!(config.pipeline.io_threads, 1);
        assert_eq!(config.admin.listen, None, "the admin server must not listen");
        assert_eq!(config.backpressure.min_pause, Duration::from_millis(500));
        assert_eq!(config.backpressure.max_inflight_bytes.as_u64(), INFLIGHT_BUDGET_BYTES);
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
    fn an_abandoned_batch_fails_integrity_even_when_counts_match() {
        let drain = |abandoned| Some(Drain { flushed: 10, abandoned });
        assert_eq!(integrity(5, 5, drain(0)).status, IntegrityStatus::Verified);
        let failed = integrity(5, 5, drain(1));
        assert_eq!(failed.status, IntegrityStatus::Failed);
        assert!(failed.method.contains("abandoned 1 batches"), "{}", failed.method);
        assert_eq!(integrity(5, 5, None).status, IntegrityStatus::Failed);
        assert_eq!(integrity(5, 6, drain(0)).status, IntegrityStatus::Failed);
    }

    /// One quick run of the framework arm against the environment's broker.
    #[test]
    #[ignore = "needs a running environment: cargo xtask test"]
    fn the_framework_arm_delivers_and_verifies_against_the_broker() {
        // spate installs a JSON subscriber on stdout unless one exists; keep logs on stderr.
        let _ = tracing_subscriber::fmt().with_writer(std::io::stderr).try_init();
        let serde_json::Value::Object(knobs) = serde_json::to_value(serde_json::json!({
            "payload_bytes": 256, "partitions": 16, "warmup_s": 1.0, "window_s": 3.0, "broker_cores": 0,
            "batch_max_rows": 100000, "batch_max_bytes": 268435456, "batch_linger_ms": 200, "linger_ms": 5,
            "queue_buffering_max_messages": 100000, "shards": 1, "pipeline_threads": 1,
            "inflight_per_shard": 0, "io_threads": 0
        }))
        .unwrap() else {
            unreachable!()
        };
        let m = run(&ArmContext { env: crate::test_env(), knobs }).expect("the framework arm runs");
        let rate = m.metrics["records_per_s"].value;
        assert!(rate > 0.0, "records_per_s = {rate}; note: {:?}", m.note);
        assert_eq!(m.integrity.status, IntegrityStatus::Verified, "{:?}", m.integrity);
        assert!(m.verdict.contains_key("upstream"), "{:?}", m.verdict);
    }
}
