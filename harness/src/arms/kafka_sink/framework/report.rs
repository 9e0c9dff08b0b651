//! From the window to the measurement: the rate from the sink's acknowledgements, the two-axis verdict
//! from spate's flow-control signals and librdkafka's gauges, and integrity against the broker.

use std::collections::BTreeMap;

use anyhow::Result;
use streamlab_record::applied::Applied;
use streamlab_record::stats::median;
use streamlab_record::{Integrity, IntegrityStatus, Measurement, Metric};

use super::SAMPLE_EVERY;
use super::acks::{acks_in_window, enough_acks};
use super::config::{BUDGET_LOW_RATIO, Knobs};
use super::exposition::{Snapshot, bucket_delta, histogram_quantile};
use super::pipeline::{Drain, Outcome, Window};
use crate::arms::kafka_sink::verdict::{self, DownstreamSignals, UpstreamSignals};
use crate::arms::kafka_sink::window::{MIN_ACKS_IN_WINDOW, rate_metrics, rate_note};

/// Said when the window stayed open past `window_s` to hold the acknowledgements a rate needs.
fn stretch_note(window_s: f64, seconds: f64) -> String {
    if seconds > window_s * 1.05 {
        format!(
            ", stretched past window_s {window_s} s to {seconds:.2} s until it held {MIN_ACKS_IN_WINDOW} whole-batch \
             acknowledgements"
        )
    } else {
        String::new()
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
    let budget_low_bytes = knobs.inflight_budget_bytes() as f64 * BUDGET_LOW_RATIO;
    let inflight: Vec<f64> = samples.iter().map(|s| s.inflight_bytes).collect();
    let (open, close) = (&window.open, window.close());
    UpstreamSignals {
        samples: samples.len(),
        paused_share,
        gated_share: share(&|s| s.pending_batches >= knobs.max_pending_batches as f64, &all),
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

pub(super) fn measurement(knobs: &Knobs, outcome: &Outcome, observed: u64, applied: Applied) -> Result<Measurement> {
    let window = &outcome.window;
    let acks = acks_in_window(&window.open, &window.samples);
    enough_acks(&acks)?;
    let mut metrics = rate_metrics(&window.watermarks, knobs.payload_bytes)?;
    metrics.insert("acks_in_window".into(), Metric::new(acks.acks as f64, "batch acknowledgements", true));
    metrics.insert("acked_records_per_s".into(), Metric::new(acks.records_per_s(), "records/s", true));
    metrics.insert("delivered_total".into(), Metric::new(outcome.delivered as f64, "records", true));
    crate::cpu::add_cpu(
        &mut metrics,
        window.watermarks.records(),
        window.client_cpu_s,
        window.brokers_cpu_s,
        Some(window.host),
    );
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
        "{rate}; window after {warmup:.1} s warm-up{stretched}; the sink's own count, spate_sink_records_total (records in \
         batches whose every delivery report confirmed, read via MetricsHandle::render every {sample_ms} ms), rose \
         by {records:.0} in {seconds:.2} s in {acks} whole-batch acknowledgements, the largest {largest:.0}; e2e = spate_e2e_latency_seconds over {e2e_batches:.0} batches \
         (ingest of the batch's oldest record to its acknowledgement, bucket-interpolated); librdkafka figures are \
         medians of spate_kafka_sink_* gauges (per-interval p99s, worst broker) over the window; {verdict_evidence}; \
         generator {partitions} partitions x {payload} B keyless payloads; {generated} generated, {delivered} \
         acknowledged over the run, final watermarks sum {watermarks}; sink retries {retries:.0}; drain {drain}; \
         first acknowledgement {first_ack:.2} s after the start (the warm-up starts then); pipeline threads \
         {threads}, io threads {io_threads}, sink queue {queue_cap} chunks, inflight.max_per_shard {slots}, \
         max pending batches {max_pending}, batch.linger {linger} ms, budget {budget_mib} MiB, min_pause {min_pause} ms",
        rate = rate_note(&window.watermarks),
        stretched = stretch_note(knobs.window_s, acks.seconds),
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
        budget_mib = knobs.inflight_budget_mib(),
        first_ack = outcome.first_ack_s,
        threads = knobs.pipeline_threads,
        io_threads = if knobs.io_threads == 0 { "spate's default".to_owned() } else { knobs.io_threads.to_string() },
        queue_cap = knobs.sink_queue_capacity,
        max_pending = knobs.max_pending_batches,
        min_pause = knobs.min_pause_ms,
    );
    Ok(Measurement {
        kind: "produce".into(),
        metrics,
        integrity,
        verdict,
        note: Some(note),
        details: BTreeMap::new(),
        versions: crate::versions::client_versions(),
        applied,
    })
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
    use std::time::{Duration, Instant};

    use super::*;
    use crate::arms::kafka_sink::framework::acks::tests::at;
    use crate::arms::kafka_sink::framework::config::tests::seed_knobs;
    use crate::kafka::watermarks::{WatermarkSample, WatermarkWindow};

    #[test]
    fn a_window_stretched_to_hold_its_acknowledgements_says_so() {
        assert_eq!(stretch_note(4.0, 4.1), "", "a window's own jitter is no stretch");
        assert_eq!(
            stretch_note(4.0, 9.35),
            ", stretched past window_s 4 s to 9.35 s until it held 10 whole-batch acknowledgements"
        );
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
        let hw = WatermarkSample { sum: 0, sent: t0, took: Duration::from_millis(1) };
        let window = Window {
            open: at(t0, 0, 0.0),
            samples: vec![held.clone(), held, rejected, running],
            watermarks: WatermarkWindow { open: hw, close: hw },
            client_cpu_s: 1.0,
            brokers_cpu_s: None,
            host: crate::cpu::HostReading { wall_s: 1.0, busy_s: None, cpus: None },
        };
        let mut k = seed_knobs();
        k.pipeline_threads = 1;
        k.max_inflight_mb = 256;
        let s = upstream_signals(&window, &k);
        assert_eq!(s.samples, 4);
        assert_eq!(s.paused_share, 0.75);
        assert!((s.budget_held_share_of_paused - 2.0 / 3.0).abs() < 1e-9);
        assert!((s.sink_busy_share_of_paused - 2.0 / 3.0).abs() < 1e-9);
        assert_eq!((s.gated_share, s.queue_full_events), (0.0, 3.0));
        assert_eq!(verdict::upstream(&s), Some(verdict::Upstream::Budget));
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
}
