//! The paced workload's bench side: the end-to-end consumer (`harness paced-consume`, a process of its own reading
//! the topic from offset 0 with rust-rdkafka, the same consumer for every client), and the record. A paced record
//! keeps p50/p90/p99/p99.9/p99.99 and max of the publish latency (intended send -> acknowledgement) and of the
//! end-to-end latency (intended send -> the consumer's receipt), both on the host's monotonic clock, and both
//! histograms serialized in its details, so reps can be merged and any percentile read again.
//!
//! A run whose achieved rate fell more than [`RATE_SHORTFALL`] short of the offered one "could not hold the rate":
//! its record keeps its counts and integrity but no latency figure.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::message::Message;
use rdkafka::{Offset, TopicPartitionList};
use serde::{Deserialize, Serialize};
use streamlab_process::Cmd;
use streamlab_process::clock::monotonic_ns;
use streamlab_record::paced::{Latencies, PERCENTILES, PacedLoop, read_stamp};
use streamlab_record::{EnvDescriptor, Integrity, IntegrityStatus, Measurement, Metric};

use super::{Broker, finish, insert_record_bytes, metric};
use crate::drivers::contract::{ClientKnobs, Ran};
use crate::kafka::config::default_client_config;

/// How far short of the offered rate a run may fall and still have a latency figure.
pub const RATE_SHORTFALL: f64 = 0.02;
/// The consumer gives up after this long without a new record once the first came (or without any at all).
const CONSUMER_IDLE: Duration = Duration::from_secs(30);
const CONSUMER_NONE_AT_ALL: Duration = Duration::from_secs(120);
/// How long the consumer's fetchers run before it says it is ready.
const CONSUMER_SETTLE: Duration = Duration::from_millis(500);
/// How long the bench waits for the consumer's receipts once the producer is done.
const RECEIPTS_WAIT: Duration = Duration::from_secs(90);
/// What the consumer prints once it is assigned and its first fetch went out.
const READY: &str = "ready";

/// What the end-to-end consumer received.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Receipts {
    /// Records read, duplicates included.
    pub received: u64,
    /// Distinct sequence numbers below the run's record count.
    pub distinct: u64,
    /// Records whose stamp is missing or names a sequence outside the run.
    pub foreign: u64,
    /// Intended send -> receipt, base64 V2.
    pub end_to_end: String,
}

/// The consumer process, started before the producer.
pub struct EndToEnd {
    child: streamlab_process::Child,
    stdout: BufReader<std::process::ChildStdout>,
}

impl EndToEnd {
    /// Start `harness paced-consume` on `topic` and wait until it is reading.
    pub fn start(descriptor: &Path, topic: &str, partitions: i32, records: u64) -> Result<EndToEnd> {
        let mut child = Cmd::new(harness_binary()?)
            .args(["paced-consume", "--env"])
            .arg(descriptor)
            .args(["--topic", topic, "--partitions", &partitions.to_string(), "--records", &records.to_string()])
            .pipe_stdout_show_stderr()
            .spawn()?;
        let mut stdout = BufReader::new(child.take_stdout().context("the consumer's stdout")?);
        let mut line = String::new();
        stdout.read_line(&mut line).context("reading the consumer's first line")?;
        anyhow::ensure!(line.trim() == READY, "the end-to-end consumer did not start (it said {line:?})");
        Ok(EndToEnd { child, stdout })
    }

    /// The receipts, once the consumer has read every record or given up.
    pub fn finish(mut self) -> Result<Receipts> {
        let mut line = String::new();
        let deadline = Instant::now() + RECEIPTS_WAIT;
        // The consumer ends by itself (all read, or idle); the deadline only catches one that hangs.
        while self.child.try_wait()?.is_none() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        if self.child.try_wait()?.is_none() {
            self.child.kill();
            bail!("the end-to-end consumer gave no receipts within {} s", RECEIPTS_WAIT.as_secs());
        }
        self.stdout.read_line(&mut line).context("reading the consumer's receipts")?;
        serde_json::from_str(&line).with_context(|| format!("the consumer's receipts: {line:?}"))
    }
}

/// The harness binary: this process, or, in a test binary (target/<profile>/deps/), the harness that
/// `cargo build --workspace` put beside it.
fn harness_binary() -> Result<std::path::PathBuf> {
    let exe = std::env::current_exe().context("the harness's own path")?;
    if exe.file_name().is_some_and(|n| n == "harness") {
        return Ok(exe);
    }
    let beside = exe.parent().and_then(Path::parent).map(|dir| dir.join("harness"));
    beside.filter(|p| p.is_file()).with_context(|| format!("no harness binary beside {}", exe.display()))
}

/// The consumer process's body: read `topic` from offset 0 on every partition until `records` distinct stamped
/// records came, timing each from its intended send; `ready` is called once it is reading.
pub fn consume(
    env: &EnvDescriptor,
    topic: &str,
    partitions: i32,
    records: u64,
    ready: impl FnOnce(),
) -> Result<Receipts> {
    let mut cfg = default_client_config(env)?;
    cfg.set("group.id", format!("streamlab-paced-{topic}")).set("enable.auto.commit", "false");
    let consumer: BaseConsumer = cfg.create().context("cannot create the end-to-end consumer")?;
    // The topic is fresh, so offset 0 is its start: no offset lookup delays the first fetch. The fetchers run for
    // a moment before the producer is told to start (nothing can arrive yet); with `Offset::Beginning` and a single
    // poll, the first quarter second of records waited for the lookup and held the end-to-end p99 at 250-330 ms.
    let mut tpl = TopicPartitionList::new();
    for p in 0..partitions {
        tpl.add_partition_offset(topic, p, Offset::Offset(0))?;
    }
    consumer.assign(&tpl)?;
    let settle = Instant::now() + CONSUMER_SETTLE;
    while Instant::now() < settle {
        if let Some(Err(e)) = consumer.poll(Duration::from_millis(50)) {
            bail!("the end-to-end consumer failed before the run: {e}");
        }
    }
    ready();
    let mut seen = vec![0u64; records.div_ceil(64) as usize];
    let (mut received, mut distinct, mut foreign) = (0u64, 0u64, 0u64);
    let mut end_to_end = Latencies::default();
    let started = Instant::now();
    let mut last = None::<Instant>;
    while distinct < records {
        match consumer.poll(Duration::from_millis(100)) {
            Some(Ok(msg)) => {
                let now = monotonic_ns();
                received += 1;
                last = Some(Instant::now());
                match msg.payload().and_then(read_stamp) {
                    Some((seq, intended)) if seq < records => {
                        let (word, bit) = ((seq / 64) as usize, 1u64 << (seq % 64));
                        if seen[word] & bit == 0 {
                            seen[word] |= bit;
                            distinct += 1;
                            end_to_end.record_between(intended, now);
                        }
                    }
                    _ => foreign += 1,
                }
            }
            Some(Err(e)) => bail!("the end-to-end consumer failed after {received} records: {e}"),
            None => {
                let idle = last.map_or(started.elapsed() > CONSUMER_NONE_AT_ALL, |t| t.elapsed() > CONSUMER_IDLE);
                if idle {
                    break;
                }
            }
        }
    }
    Ok(Receipts { received, distinct, foreign, end_to_end: end_to_end.to_base64() })
}

/// The paced record. Integrity: the topic holds exactly the records sent, the client acknowledged every one, none
/// failed, and the consumer read each exactly once.
pub fn paced_measurement(
    knobs: &ClientKnobs,
    ran: Ran<PacedLoop>,
    receipts: Result<Receipts>,
    broker: Broker,
) -> Measurement {
    let Ran { measured: run, mut info } = ran;
    let records = knobs.paced_records();
    let mut metrics = BTreeMap::from([
        ("offered_rate".into(), metric(run.rate as f64, "records/s", true)),
        ("sent".into(), metric(run.sent as f64, "records", true)),
        ("acked".into(), metric(run.acked as f64, "records", true)),
        ("high_watermark".into(), metric(broker.high_watermark as f64, "records", true)),
    ]);
    insert_record_bytes(&mut metrics, knobs.payload_bytes.max(streamlab_record::paced::STAMP_BYTES) as f64);
    if let Some(h) = &broker.host {
        crate::cpu::add_host_cores(&mut metrics, h);
    }
    let achieved = run.achieved_rate();
    if let Some(a) = achieved {
        metrics.insert("achieved_rate".into(), metric(a, "records/s", true));
    }
    let held = achieved.is_some_and(|a| a >= run.rate as f64 * (1.0 - RATE_SHORTFALL));
    let mut notes: Vec<String> = info.note.take().into_iter().collect();
    let mut details = BTreeMap::new();
    let e2e = receipts.as_ref().ok().and_then(|r| Latencies::from_base64(&r.end_to_end).ok());
    if held {
        for (name, text) in [("publish", &run.publish), ("publish_from_send", &run.publish_from_send)] {
            if let Ok(h) = Latencies::from_base64(text) {
                add_latencies(&mut metrics, name, &h);
                details.insert(format!("{name}_histogram"), text.clone());
            }
        }
        if let (Some(h), Ok(r)) = (&e2e, &receipts) {
            add_latencies(&mut metrics, "end_to_end", h);
            details.insert("end_to_end_histogram".into(), r.end_to_end.clone());
        }
    } else {
        notes.push(format!(
            "could not hold the rate: {} records/s offered, {} achieved (more than {:.0}% short): no latency figure",
            run.rate,
            achieved.map_or("none".into(), |a| format!("{a:.0}")),
            RATE_SHORTFALL * 100.0
        ));
    }
    if run.queue_full > 0 {
        metrics.insert("queue_full_waits".into(), metric(run.queue_full as f64, "queue-full refusals", false));
    }
    let receipts_said = match &receipts {
        Ok(r) => {
            metrics.insert("consumed".into(), metric(r.received as f64, "records", true));
            format!("the consumer read {} ({} distinct, {} foreign)", r.received, r.distinct, r.foreign)
        }
        Err(e) => {
            notes.push(format!("the end-to-end consumer failed: {e:#}"));
            "the consumer gave no receipts".into()
        }
    };
    let consumer_ok = receipts.as_ref().is_ok_and(|r| r.distinct == records && r.received == records && r.foreign == 0);
    let ok = run.sent == records
        && run.acked == records
        && run.failed == 0
        && broker.high_watermark == records
        && consumer_ok;
    let integrity = Integrity {
        status: if ok { IntegrityStatus::Verified } else { IntegrityStatus::Failed },
        expected: Some(records),
        observed: Some(broker.high_watermark),
        method: format!(
            "sum of partition high watermarks == records sent ({records}) == acknowledged ({}), none failed ({}), \
             and the end-to-end consumer read each exactly once: {receipts_said}",
            run.acked, run.failed
        ),
    };
    info.note = (!notes.is_empty()).then(|| notes.join("; "));
    let mut m = finish("paced", metrics, integrity, info);
    m.details.extend(details);
    m
}

/// `<name>_p50_us` ... `_p99_99_us` and `_max_us`, when the histogram holds anything.
fn add_latencies(metrics: &mut BTreeMap<String, Metric>, name: &str, h: &Latencies) {
    for (suffix, p) in PERCENTILES {
        if let Some(v) = h.percentile_us(p) {
            metrics.insert(format!("{name}_{suffix}_us"), metric(v, "µs", false));
        }
    }
    if let Some(v) = h.max_us() {
        metrics.insert(format!("{name}_max_us"), metric(v, "µs", false));
    }
}

#[cfg(test)]
mod tests {
    use streamlab_record::paced::{Schedule, Sent, Tally};

    use super::*;
    use crate::drivers::contract::ClientInfo;
    use crate::drivers::contract::tests::knobs;

    /// 1,000 records offered at 1,000/s, the last sent `span_ms` after the first was due, each acknowledged 2 ms
    /// after its actual send, which is `late_ms` after the intended one for the first twenty.
    fn run(span_ms: u64, late_ms: u64) -> Ran<PacedLoop> {
        let schedule = Schedule { start_ns: 1_000_000_000, rate: 1000 };
        let mut tally = Tally::default();
        for seq in 0..1000 {
            let intended = schedule.intended_ns(seq);
            let late = if seq < 20 { late_ms * 1_000_000 } else { 0 };
            tally.acked(Sent { intended_ns: intended, actual_ns: intended + late }, intended + late + 2_000_000);
        }
        let last = schedule.start_ns + span_ms * 1_000_000;
        Ran { measured: PacedLoop::new(schedule, 1000, last, &tally, 0.1, 0), info: ClientInfo::default() }
    }

    fn receipts(distinct: u64) -> Result<Receipts> {
        let mut h = Latencies::default();
        (0..distinct).for_each(|_| h.record_us(3_000));
        Ok(Receipts { received: distinct, distinct, foreign: 0, end_to_end: h.to_base64() })
    }

    fn paced_knobs() -> ClientKnobs {
        knobs(serde_json::json!({"workload": "paced", "rate": 1000, "paced_seconds": 1, "payload_bytes": 100}))
    }

    fn broker(high_watermark: u64) -> Broker {
        Broker { high_watermark, cpu_s: None, host: None }
    }

    #[test]
    fn a_run_that_held_its_rate_keeps_every_percentile_of_both_clocks_and_its_histograms() {
        let m = paced_measurement(&paced_knobs(), run(999, 50), receipts(1000), broker(1000));
        assert_eq!(m.integrity.status, IntegrityStatus::Verified, "{:?}", m.integrity);
        assert!((m.metrics["achieved_rate"].value - 1000.0).abs() < 1.0);
        // Twenty records (2%) sent 50 ms late: from the intended send they took 52 ms, from the actual send 2 ms.
        assert!((m.metrics["publish_max_us"].value - 52_000.0).abs() < 100.0, "{:?}", m.metrics);
        assert!((m.metrics["publish_from_send_max_us"].value - 2_000.0).abs() < 10.0);
        assert!((m.metrics["publish_p99_us"].value - 52_000.0).abs() < 100.0, "2% of the records were late");
        assert!((m.metrics["publish_p50_us"].value - 2_000.0).abs() < 10.0);
        assert!((m.metrics["end_to_end_p99_99_us"].value - 3_000.0).abs() <= 3.0, "3 significant digits");
        assert_eq!(m.metrics["bytes_per_record"].value, 100.0);
        let back = Latencies::from_base64(&m.details["publish_histogram"]).unwrap();
        assert_eq!(back.len(), 1000);
    }

    #[test]
    fn a_run_more_than_two_percent_short_of_its_rate_has_no_latency_figure_and_says_so() {
        // 999 intervals in 1,030 ms: 970 records/s, 3% short.
        let m = paced_measurement(&paced_knobs(), run(1030, 0), receipts(1000), broker(1000));
        assert!(m.metrics.keys().all(|k| !k.ends_with("_us")), "{:?}", m.metrics.keys());
        assert!(!m.details.contains_key("publish_histogram"));
        assert!(m.note.as_deref().unwrap().contains("could not hold the rate: 1000 records/s offered, 970 achieved"));
        assert_eq!(m.integrity.status, IntegrityStatus::Verified, "every record still landed");
        // 1.5% short still holds it.
        let held = paced_measurement(&paced_knobs(), run(1014, 0), receipts(1000), broker(1000));
        assert!(held.metrics.contains_key("publish_p99_us"));
    }

    #[test]
    fn a_record_the_consumer_missed_or_the_broker_lacks_fails_integrity() {
        let missed = paced_measurement(&paced_knobs(), run(999, 0), receipts(999), broker(1000));
        assert_eq!(missed.integrity.status, IntegrityStatus::Failed);
        let short = paced_measurement(&paced_knobs(), run(999, 0), receipts(1000), broker(999));
        assert_eq!(short.integrity.status, IntegrityStatus::Failed);
        let no_consumer = paced_measurement(&paced_knobs(), run(999, 0), Err(anyhow::anyhow!("it died")), broker(1000));
        assert_eq!(no_consumer.integrity.status, IntegrityStatus::Failed);
        assert!(no_consumer.note.unwrap().contains("the end-to-end consumer failed: it died"));
    }
}
