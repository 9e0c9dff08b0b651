//! Running spate: assemble the pipeline from its YAML, start it on a plain thread, watch its exposition
//! through the warm-up and the window, stop it and keep its exit report.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use spate::config::PipelineConfig;
use spate::ops::chain;
use spate::pipeline::{ExitReport, ExitState, Pipeline, RuntimeOptions, SinkOptions};
use spate::sink::KeyHashRouter;
use streamlab_process::procfs;
use streamlab_record::EnvDescriptor;

use super::SAMPLE_EVERY;
use super::config::{GeneratorConfig, Knobs};
use super::exposition::{Observer, Snapshot};
use super::source::{BorrowPayload, BorrowedBytes, Generator, KeylessPayload};
use crate::arms::kafka_sink::FIRST_ACK_TIMEOUT;
use crate::kafka::watermarks::{WatermarkSampler, WatermarkWindow};

/// What one run of the pipeline left behind.
pub(super) struct Outcome {
    pub window: Window,
    /// `spate_sink_records_total` over the whole run (warm-up and drain included).
    pub delivered: u64,
    pub generated: u64,
    pub retries: f64,
    /// From spate's ExitReport: the sink drain (absent if spate could not run it) and the final watermarks.
    pub drain: Option<Drain>,
    pub final_watermark_sum: i64,
    /// Seconds from the pipeline's start to its first acknowledged batch (the warm-up starts then).
    pub first_ack_s: f64,
}

/// `ExitReport.sink_drain`: batches written and abandoned over the pool's lifetime.
#[derive(Debug, Clone, Copy)]
pub(super) struct Drain {
    pub flushed: u64,
    pub abandoned: u64,
}

impl Drain {
    fn of(report: &ExitReport) -> Option<Drain> {
        report.sink_drain.as_ref().map(|d| Drain { flushed: d.flushed, abandoned: d.abandoned })
    }
}

pub(super) fn run_pipeline(
    yaml: &str,
    knobs: &Knobs,
    sampler: &WatermarkSampler,
    env: &EnvDescriptor,
) -> Result<Outcome> {
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
    let source = Generator::new(generator_config, Arc::clone(&generated));
    let runtime = pipeline
        .sink_with(sink, SinkOptions::default().with_queue_capacity(knobs.sink_queue_capacity))?
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
    let observed = observe_window(&observer, sampler, env, &baseline, started, knobs, &running);
    shutdown.trigger();
    let report = running
        .join()
        .map_err(|_| anyhow::anyhow!("the spate runtime thread panicked"))?
        .context("the spate runtime did not start")?;
    if let ExitState::Failed(failure) = &report.state {
        bail!("the spate pipeline failed: {failure}");
    }
    let (window, first_ack_s) = observed?;
    let end = observer.snapshot();
    Ok(Outcome {
        window,
        delivered: (end.sink_records - baseline.sink_records).round() as u64,
        generated: generated.load(Ordering::Relaxed),
        retries: end.sink_retries - baseline.sink_retries,
        drain: Drain::of(&report),
        final_watermark_sum: report.final_watermarks.iter().map(|(_, w)| *w).sum(),
        first_ack_s,
    })
}

/// The exposition at the window's open, every [`SAMPLE_EVERY`] through it (the last sample is the close),
/// the topic's high watermarks at both edges, and the client's and brokers' CPU spent in it.
pub(super) struct Window {
    pub open: Snapshot,
    pub samples: Vec<Snapshot>,
    pub watermarks: WatermarkWindow,
    /// Process CPU seconds over the window, minus this sampling thread's own.
    pub client_cpu_s: f64,
    /// The brokers' CPU seconds over the window, where they can be read.
    pub brokers_cpu_s: Option<f64>,
    /// The whole host's CPU over the window.
    pub host: crate::cpu::HostReading,
}

impl Window {
    pub fn close(&self) -> &Snapshot {
        self.samples.last().unwrap_or(&self.open)
    }
}

/// How far a window may stretch past `window_s` while it holds too few whole-batch acknowledgements for a rate:
/// batches of 100k-500k records take a second or more each, so a quick profile's 4 s window held 2-9 of the 10
/// (11 of kafka_sink's 31 quick points failed on a quiet machine). A rate is per second, so the longer window
/// changes no record's work; its length is the `window_s` metric, and the note says when it stretched.
const MAX_WINDOW_STRETCH: f64 = 4.0;

/// Wait for the first acknowledged batch (a pipeline that has not delivered yet is not warming up, it is
/// starting), then the warm-up, then sample through the window. Returns the window and when the first
/// acknowledgement came, in seconds from the start.
fn observe_window<T>(
    observer: &Observer,
    sampler: &WatermarkSampler,
    env: &EnvDescriptor,
    baseline: &Snapshot,
    started: Instant,
    knobs: &Knobs,
    running: &JoinHandle<T>,
) -> Result<(Window, f64)> {
    let first_ack = wait_for_first_ack(observer, baseline, started, running)?;
    sleep_until(first_ack + Duration::from_secs_f64(knobs.warmup_s), running)?;
    let cpu_open = procfs::self_cpu_seconds();
    let sampler_open = streamlab_process::procfs::thread_cpu_seconds();
    let brokers = crate::cpu::BrokersCpu::start(env);
    let host = crate::cpu::HostSpan::start();
    // The broker's count at each edge, from the sampler's own client (this thread is not spate's).
    let hw_open = sampler.sample()?;
    let open = observer.snapshot();
    let close_at = hw_open.at() + Duration::from_secs_f64(knobs.window_s);
    let longest = hw_open.at() + Duration::from_secs_f64(knobs.window_s * MAX_WINDOW_STRETCH);
    let mut samples = Vec::new();
    loop {
        let now = Instant::now();
        let held = now >= close_at && super::acks::acks_in_window(&open, &samples).enough();
        if held || now >= longest {
            break;
        }
        sleep_until((now + SAMPLE_EVERY).min(if now < close_at { close_at } else { longest }), running)?;
        samples.push(observer.snapshot());
    }
    let hw_close = sampler.sample()?;
    let sampler_s = streamlab_process::procfs::thread_cpu_seconds() - sampler_open;
    let client_cpu_s = procfs::self_cpu_seconds() - cpu_open - sampler_s;
    let brokers_cpu_s = brokers.spent();
    let host = host.finish();
    let watermarks = WatermarkWindow { open: hw_open, close: hw_close };
    let window = Window { open, samples, watermarks, client_cpu_s, brokers_cpu_s, host };
    Ok((window, first_ack.duration_since(started).as_secs_f64()))
}

fn wait_for_first_ack<T>(
    observer: &Observer,
    baseline: &Snapshot,
    started: Instant,
    running: &JoinHandle<T>,
) -> Result<Instant> {
    let deadline = started + FIRST_ACK_TIMEOUT;
    loop {
        let now = observer.snapshot();
        if now.sink_records > baseline.sink_records {
            return Ok(now.at);
        }
        if now.at >= deadline {
            bail!(
                "the sink acknowledged no batch within {} s of the pipeline's start ({} sink-queue rejections, \
                 {} pause events): the arm never reached a steady state to measure",
                FIRST_ACK_TIMEOUT.as_secs(),
                now.queue_full_events - baseline.queue_full_events,
                now.pause_events - baseline.pause_events
            );
        }
        sleep_until(Instant::now() + SAMPLE_EVERY, running)?;
    }
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
