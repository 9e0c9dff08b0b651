//! A durability run's record: rates, latency and unavailability from the ledger's times, the ledger's
//! comparison with the topic as integrity, CPU per million records, the fault's steps and the timeline.

use std::collections::BTreeMap;

use anyhow::{Result, bail};
use streamlab_record::applied::{self, AppliedBuilder};
use streamlab_record::integrity::REORDERING_NOT_JUDGED;
use streamlab_record::{Integrity, IntegrityStatus, Measurement, Metric};

use super::Knobs;
use super::cluster::{PartitionState, TopicSpec};
use super::fault::{Happened, Isr};
use super::ledger::{Comparison, PartitionLog, compare};
use super::metrics::{Window, latency_metrics, timeline_text, timing};
use crate::drivers::contract::LedgerProduced;
use crate::drivers::contract::ledger::Ledger;

/// A record's detail when its longest gap ran to the window's end (the site shows such a gap as "at least").
pub const GAP_OPEN: &str = "no acknowledgement ended it before the window's end: it is at least this long";

/// Lost offsets named in a reason at most.
const NAMED_OFFSETS: usize = 20;

pub struct Inputs<'a> {
    pub knobs: &'a Knobs,
    pub topic: &'a TopicSpec,
    pub initial: &'a [PartitionState],
    pub produced: LedgerProduced,
    pub logs: &'a [PartitionLog],
    pub happened: Option<&'a Happened>,
    /// Every partition had its full ISR again before the read-back.
    pub healed: bool,
    /// CPU seconds per broker node over the run.
    pub brokers_cpu: BTreeMap<u32, Option<f64>>,
    /// The whole host's CPU over the producer's run (the span the client's and brokers' CPU are read over).
    pub host: crate::cpu::HostReading,
}

fn count(value: u64) -> Metric {
    Metric::new(value as f64, "records", false)
}

pub fn measurement(i: Inputs) -> Result<Measurement> {
    let k = i.knobs;
    let ledger = &i.produced.ledger;
    let (window, capped) = measured_window(ledger, k)?;
    let fault_us = i.happened.and_then(|h| h.result.started_ms()).map(|ms| ms * 1000);
    let t = timing(ledger, window, fault_us.unwrap_or(window.start_us));
    if t.acked_in_window == 0 {
        bail!(
            "no record was acknowledged in the {} s window (a window with nothing in it is not a rate of zero)",
            k.window_s
        );
    }
    let c = compare(ledger, i.logs);
    let mut m = BTreeMap::from([
        ("records_per_s".to_owned(), Metric::new(t.records_per_s, "records/s", true)),
        ("mb_per_s".to_owned(), Metric::new(t.records_per_s * k.payload_bytes as f64 / 1e6, "MB/s", true)),
        ("acked_in_window".to_owned(), Metric::new(t.acked_in_window as f64, "records", true)),
        ("window_s".to_owned(), Metric::new(window.secs(), "s", true)),
        ("sent".to_owned(), count(c.sent)),
        ("acked".to_owned(), count(c.acked)),
        ("failed".to_owned(), count(c.failed)),
        ("unanswered".to_owned(), count(c.unanswered)),
        ("read_back".to_owned(), count(c.read)),
        ("lost".to_owned(), count(c.lost.len() as u64)),
        ("misplaced".to_owned(), count(c.misplaced)),
        ("duplicated".to_owned(), count(c.duplicated)),
        ("reordered".to_owned(), count(c.reordered)),
        ("unacked_present".to_owned(), count(c.unacked_present)),
        ("unknown".to_owned(), count(c.unknown)),
        ("bytes_per_record".to_owned(), Metric::new(k.payload_bytes.max(8) as f64, "B", false)),
        ("key_bytes_per_record".to_owned(), Metric::new(0.0, "B", false)),
    ]);
    latency_metrics(&t.latencies_ms, &mut m);
    if let Some(ms) = first_ack_ms(ledger) {
        m.insert("first_ack_ms".into(), Metric::new(ms, "ms from the first send", false));
    }
    m.insert("max_ack_gap_ms".into(), Metric::new(t.max_gap.ms, "ms", false));
    m.insert("max_ack_gap_p0_ms".into(), Metric::new(t.max_gap_p0.ms, "ms", false));
    add_cpu_per_m_acked(&mut m, c.acked, i.produced.client_cpu_s, &i.brokers_cpu);
    add_cores(&mut m, &i.host, i.produced.client_cpu_s, &i.brokers_cpu);
    let mut details = BTreeMap::from([
        ("command".to_owned(), i.produced.command.clone()),
        ("connections".to_owned(), i.produced.connections.clone()),
        ("acks_per_100ms".to_owned(), timeline_text(&t.per_bucket)),
        ("timeline_start_ms".to_owned(), (window.start_us / 1000).to_string()),
        ("window".to_owned(), window_text(k, window, capped)),
        ("window_opened".to_owned(), window_opened(ledger, window)),
        ("topic".to_owned(), topic_text(i.topic, i.initial)),
        ("delivery_timeout_ms".to_owned(), k.delivery_timeout_ms.to_string()),
    ]);
    // Where the longest gap starts, ms into the window (negative: before it), for the timeline.
    let at_ms = (t.max_gap.from_us as f64 - window.start_us as f64) / 1e3;
    details.insert("max_ack_gap_at_ms".into(), format!("{at_ms:.0}"));
    for (key, gap) in [("max_ack_gap_open", t.max_gap), ("max_ack_gap_p0_open", t.max_gap_p0)] {
        if gap.open {
            details.insert(key.into(), GAP_OPEN.into());
        }
    }
    if !ledger.errors.is_empty() {
        details.insert("client_errors".into(), client_errors(&ledger.errors));
    }
    if let Some(h) = i.happened {
        add_fault(&mut m, &mut details, h, window, k);
    }
    details.insert(
        "isr_after".into(),
        if i.healed {
            "every partition's ISR full again before the read-back".into()
        } else {
            format!("not every partition's ISR was full within {} s", super::fault::ISR_WATCH.as_secs())
        },
    );
    let integrity = integrity(k, &c, i.produced.unordered_handoff);
    let note = Some(note(k, &c, i.happened, i.produced.note.as_deref()));
    Ok(Measurement {
        kind: "produce".into(),
        metrics: m,
        integrity,
        verdict: BTreeMap::new(),
        note,
        details,
        applied: applied(k, &i.produced),
        versions: i.produced.versions,
    })
}

/// The window measured: after the warm-up, for `window_s`, or up to the last send of a producer that sent all its
/// max_records early (not over an idle tail), with how early; one that stopped before half the window is no
/// measurement.
fn measured_window(ledger: &Ledger, k: &Knobs) -> Result<(Window, Option<f64>)> {
    let Some(window) = Window::of(ledger, k.warmup_s, k.window_s) else {
        bail!("the producer had no record acknowledged");
    };
    let capped = capped_early(ledger, k, window);
    let window = match capped {
        None => window,
        Some(early_s) if early_s <= k.window_s / 2.0 => window.ending_early(early_s),
        Some(early_s) => bail!(
            "the producer reached max_records ({}) {early_s:.1} s before the {} s window ended, leaving less than half \
             of it measured (raise max_records)",
            k.max_records,
            k.window_s
        ),
    };
    Ok((window, capped))
}

/// CPU seconds per million acknowledged records: the client's, all brokers' and each broker's, each where it is a
/// reading ([`crate::cpu::reading`]; the brokers' total only when every broker's is, never a total of some).
fn add_cpu_per_m_acked(
    m: &mut BTreeMap<String, Metric>,
    acked: u64,
    client_cpu_s: f64,
    brokers_cpu: &BTreeMap<u32, Option<f64>>,
) {
    let acked_m = acked as f64 / 1e6;
    if acked_m <= 0.0 {
        return;
    }
    let per_m = |cpu: f64| Metric::new(cpu / acked_m, "CPU s / 1M records", false);
    if let Some(client) = crate::cpu::reading(client_cpu_s, acked) {
        m.insert("client_cpu_s_per_m_records".into(), per_m(client));
    }
    let brokers: BTreeMap<u32, f64> =
        brokers_cpu.iter().filter_map(|(node, cpu)| Some((*node, crate::cpu::reading((*cpu)?, acked)?))).collect();
    if !brokers.is_empty() && brokers.len() == brokers_cpu.len() {
        m.insert("broker_cpu_s_per_m_records".into(), per_m(brokers.values().sum()));
    }
    for (node, cpu) in brokers {
        m.insert(format!("broker_{node}_cpu_s_per_m_records"), per_m(cpu));
    }
}

/// The host's busy cores over the producer's run, and the client's and all brokers' (where each broker was read)
/// over the same span.
fn add_cores(
    m: &mut BTreeMap<String, Metric>,
    host: &crate::cpu::HostReading,
    client_cpu_s: f64,
    brokers_cpu: &BTreeMap<u32, Option<f64>>,
) {
    crate::cpu::add_host_cores(m, host);
    let brokers: Option<f64> = brokers_cpu.values().copied().sum();
    for (side, cpu) in [("client", Some(client_cpu_s)), ("broker", brokers.filter(|_| !brokers_cpu.is_empty()))] {
        if let Some(cores) = cpu.and_then(|s| host.cores_of(s)) {
            m.insert(format!("{side}_cores"), Metric::new(cores, "cores over the measured span", false));
        }
    }
}

fn add_fault(
    m: &mut BTreeMap<String, Metric>,
    details: &mut BTreeMap<String, String>,
    h: &Happened,
    w: Window,
    k: &Knobs,
) {
    let offset = super::fault::offset_s(k.fault_seed, k.window_s);
    m.insert("fault_offset_s".into(), Metric::new(offset, "s", false));
    if let Some(start_ms) = h.result.started_ms() {
        let at_ms = (start_ms * 1000).saturating_sub(w.start_us) as f64 / 1e3;
        m.insert("fault_at_ms".into(), Metric::new(at_ms, "ms into the window", false));
        details.insert("fault_at_ms".into(), format!("{at_ms:.0}"));
    }
    let isr = match h.isr {
        Isr::Refilled(d) => {
            m.insert("isr_full_after_ms".into(), Metric::new(d.as_secs_f64() * 1e3, "ms", false));
            format!("a replica left the ISR; every partition's ISR was full again {} ms after the fault", d.as_millis())
        }
        Isr::NotRefilled => format!(
            "a replica left the ISR and was not back within {} s (or the end of the run)",
            super::fault::ISR_WATCH.as_secs()
        ),
        Isr::NeverShrank => "no replica left any partition's ISR from the fault to the end of the run".into(),
    };
    details.insert("isr_during_fault".into(), isr);
    details.insert("fault".into(), h.result.describe());
    if let Some(start_ms) = h.result.started_ms() {
        // The handshake's cost: from the arm's request to the runner's first step (it polls every 100 ms).
        details.insert("fault_handshake_ms".into(), start_ms.saturating_sub(h.asked_ms).to_string());
    }
    let p = &h.before;
    details.insert(
        "fault_target".into(),
        format!(
            "broker {} ({} of partition 0: leader {}, replicas {:?}, ISR {:?} when it was asked for)",
            h.result.request.node_id,
            if p.leader == h.result.request.node_id as i32 { "the leader" } else { "a follower" },
            p.leader,
            p.replicas,
            p.isr
        ),
    );
}

fn topic_text(t: &TopicSpec, initial: &[PartitionState]) -> String {
    let leaders: Vec<String> = initial.iter().map(|p| format!("{}:{}", p.id, p.leader)).collect();
    format!(
        "{} partitions, replication factor {}, min.insync.replicas {}, unclean.leader.election.enable false; leaders at the start (partition:broker) {}",
        t.partitions,
        t.replication,
        t.min_insync,
        leaders.join(" ")
    )
}

/// How long the first record waited for its acknowledgement: the client's start (connections, authentication,
/// metadata, a producer id), kept out of the window.
fn first_ack_ms(ledger: &Ledger) -> Option<f64> {
    let first_send = ledger.entries.first()?.sent_us;
    Some(super::metrics::first_ack_us(ledger)?.saturating_sub(first_send) as f64 / 1e3)
}

/// When the window opened, in epoch ms and from the first send.
fn window_opened(ledger: &Ledger, window: Window) -> String {
    let first_send = ledger.entries.first().map_or(window.start_us, |e| e.sent_us);
    let ack = first_ack_ms(ledger).map_or("?".to_owned(), |ms| format!("{ms:.0}"));
    format!(
        "at {} ms (epoch), {:.0} ms after the first send: its acknowledgement came after {ack} ms, then the warm-up",
        window.start_us / 1000,
        window.start_us.saturating_sub(first_send) as f64 / 1e3
    )
}

/// When the window starts and how long it is, and why it is shorter than the knob asked if it is.
fn window_text(k: &Knobs, window: Window, capped_early_s: Option<f64>) -> String {
    match capped_early_s {
        None => format!("{} s after the first acknowledgement, for {} s", k.warmup_s, k.window_s),
        Some(early_s) => format!(
            "{} s after the first acknowledgement, for {:.1} s of the {} s asked: the producer had sent its max_records ({}) \
             {early_s:.1} s before the window's end",
            k.warmup_s,
            window.secs(),
            k.window_s,
            k.max_records
        ),
    }
}

/// How long before the window's end the producer stopped because it had sent `max_records`, if it did.
fn capped_early(ledger: &Ledger, k: &Knobs, window: Window) -> Option<f64> {
    let last = ledger.entries.last()?;
    let early_us = window.end_us.checked_sub(last.sent_us)?;
    (ledger.entries.len() as u64 >= k.max_records && early_us > 0).then(|| early_us as f64 / 1e6)
}

/// Distinct client errors, at most [`ERROR_KINDS`], most frequent first, with their counts. Messages that differ
/// only in their numbers (correlation ids, offsets) are one kind, shown by its first message.
fn client_errors(errors: &BTreeMap<String, u64>) -> String {
    let mut kinds: BTreeMap<String, (String, u64)> = BTreeMap::new();
    for (message, n) in errors {
        let mut kind = String::with_capacity(message.len());
        for c in message.chars() {
            match c.is_ascii_digit() {
                true if kind.ends_with('#') => {}
                true => kind.push('#'),
                false => kind.push(c),
            }
        }
        kinds.entry(kind).or_insert_with(|| (message.clone(), 0)).1 += n;
    }
    let mut kinds: Vec<(String, u64)> = kinds.into_values().collect();
    kinds.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    let more = kinds.len().saturating_sub(ERROR_KINDS);
    let mut shown: Vec<String> = kinds.iter().take(ERROR_KINDS).map(|(e, n)| format!("{n} x {e}")).collect();
    if more > 0 {
        shown.push(format!("and {more} more kinds"));
    }
    shown.join("; ")
}

/// How many kinds of client error a record names.
const ERROR_KINDS: usize = 5;

/// Loss of an acknowledged record fails the record where the configuration promises it cannot happen; a
/// duplicate or a reordering fails it where the producer is idempotent. Elsewhere they are findings.
pub fn integrity(k: &Knobs, c: &Comparison, unordered_handoff: Option<&str>) -> Integrity {
    let compared = format!(
        "every partition read back from its first offset to its high watermark ({} records) and compared with the \
         producer's ledger ({} sent, {} acknowledged at a partition and offset): {} acknowledged-but-lost, {} found at \
         another offset, {} duplicated, {} reordered within a partition, {} unacknowledged-yet-present",
        c.read,
        c.sent,
        c.acked,
        c.lost.len(),
        c.misplaced,
        c.duplicated,
        c.reordered,
        c.unacked_present
    );
    let mut violations = Vec::new();
    if k.promises_durability() && (!c.lost.is_empty() || c.misplaced > 0) {
        violations.push(format!(
            "durability violation at acks=all, replication {}, min.insync.replicas {}: {} acknowledged records lost ({}){}",
            k.replication,
            k.min_insync(),
            c.lost.len(),
            c.lost_offsets(NAMED_OFFSETS),
            if c.misplaced > 0 { format!(", {} found at another offset than acknowledged", c.misplaced) } else { String::new() }
        ));
    }
    // A reordering is the client's only where it was handed the records in their sequence order.
    let reordered = if unordered_handoff.is_some() { 0 } else { c.reordered };
    if k.idempotence && (c.duplicated > 0 || reordered > 0) {
        violations.push(format!(
            "idempotence violation: {} duplicated, {reordered} reordered within a partition",
            c.duplicated
        ));
    }
    let rule = if k.promises_durability() {
        "loss fails the record (acks=all, replication 3, min.insync.replicas 2)"
    } else {
        "loss is a finding here, not a failure (the configuration does not promise it)"
    };
    let mut method = match violations.is_empty() {
        true => format!("{compared}; {rule}"),
        false => format!("{}; {compared}", violations.join("; ")),
    };
    if let Some(why) = unordered_handoff {
        method.push_str(&format!("; {REORDERING_NOT_JUDGED}: {why}"));
    }
    Integrity {
        status: if violations.is_empty() { IntegrityStatus::Verified } else { IntegrityStatus::Failed },
        expected: Some(c.acked),
        observed: Some(c.acked_present()),
        method,
    }
}

fn note(k: &Knobs, c: &Comparison, h: Option<&Happened>, client: Option<&str>) -> String {
    let mut parts = vec![format!(
        "{} acknowledged of {} sent ({} failed, {} never answered); {} lost, {} duplicated, {} reordered, {} unacknowledged-yet-present",
        c.acked,
        c.sent,
        c.failed,
        c.unanswered,
        c.lost.len(),
        c.duplicated,
        c.reordered,
        c.unacked_present
    )];
    if !c.lost.is_empty() && !k.promises_durability() {
        parts.push(format!("lost at {}", c.lost_offsets(NAMED_OFFSETS)));
    }
    if let Some(h) = h {
        parts.push(format!("fault: {}", h.result.describe()));
    }
    parts.extend(client.map(str::to_owned));
    parts.join("; ")
}

fn applied(k: &Knobs, p: &LedgerProduced) -> applied::Applied {
    AppliedBuilder::new()
        .set(
            applied::WORKLOAD,
            format!(
                "produce {} B keyless records for {} s + {} s to {} partitions, fault {}",
                k.payload_bytes.max(8),
                k.warmup_s,
                k.window_s,
                k.partitions,
                k.fault.name()
            ),
        )
        .set(applied::FORMAT, "seq-bytes")
        .set(applied::KEY, "none")
        .producer(p.settings.iter().map(|(k, v)| (*k, v.clone())))
        .set(applied::CONNECTIONS, &p.connections)
        .set(applied::CLOCK_START, "window from warmup_s after the first acknowledgement")
        .set(applied::OFFERED_LOAD, "unbounded (the client produces as fast as it can)")
        .set(applied::TOPIC_REPLICATION_FACTOR, k.replication)
        .set(applied::TOPIC_MIN_INSYNC_REPLICAS, k.min_insync())
        .build()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::arms::durability::ledger::Lost;

    fn knobs(acks: i32, replication: i32, idempotence: bool) -> Knobs {
        serde_json::from_value(serde_json::json!({
            "partitions": 6, "replication": replication, "min_insync": 2, "acks": acks, "idempotence": idempotence,
            "fault": "kill", "fault_seed": 1, "stop_s": 5.0, "down_s": 4.0, "warmup_s": 1.0, "window_s": 4.0,
            "payload_bytes": 100, "linger_ms": 5, "max_in_flight": 5, "max_records": 1000, "delivery_timeout_ms": 1000
        }))
        .unwrap()
    }

    fn lossy() -> Comparison {
        let lost = vec![Lost { seq: 9, partition: 0, offset: 17 }, Lost { seq: 10, partition: 0, offset: 18 }];
        Comparison { sent: 12, acked: 10, read: 8, lost, ..Comparison::default() }
    }

    #[test]
    fn loss_at_acks_all_on_three_replicas_fails_with_the_offsets() {
        let i = integrity(&knobs(-1, 3, false), &lossy(), None);
        assert_eq!((i.status, i.expected, i.observed), (IntegrityStatus::Failed, Some(10), Some(8)));
        assert!(i.method.starts_with("durability violation at acks=all, replication 3, min.insync.replicas 2: 2 acknowledged records lost (partition 0 offsets 17, 18)"), "{}", i.method);
    }

    #[test]
    fn loss_at_acks_1_or_one_replica_is_a_finding() {
        for k in [knobs(1, 3, false), knobs(-1, 1, false)] {
            let i = integrity(&k, &lossy(), None);
            assert_eq!(i.status, IntegrityStatus::Verified, "{}", i.method);
            assert!(i.method.contains("2 acknowledged-but-lost") && i.method.contains("a finding"), "{}", i.method);
        }
    }

    #[test]
    fn a_producer_that_sent_its_max_records_before_the_window_ended_is_measured_up_to_its_last_send() {
        use crate::drivers::contract::ledger::{Ack, Entry};
        let sent = |us: u64| Entry { sent_us: us, ack: Ack::Ok { partition: 0, offset: 0, at_us: us + 1 } };
        let k = Knobs { max_records: 2, ..knobs(-1, 3, true) };
        let w = Window { start_us: 1_000_000, end_us: 5_000_000 };
        let early = Ledger { entries: vec![sent(0), sent(2_000_000)], errors: BTreeMap::new() };
        assert_eq!(capped_early(&early, &k, w), Some(3.0));
        let through = Ledger { entries: vec![sent(0), sent(5_000_000)], errors: BTreeMap::new() };
        assert_eq!(capped_early(&through, &k, w), None, "sent until the window's end");
        assert_eq!(capped_early(&early, &Knobs { max_records: 3, ..k }, w), None, "below the cap");
        let shortened = w.ending_early(3.0);
        assert_eq!((shortened, shortened.secs()), (Window { start_us: 1_000_000, end_us: 2_000_000 }, 1.0));
        let k = Knobs { window_s: 4.0, ..k };
        assert_eq!(
            window_text(&k, shortened, Some(3.0)),
            format!(
                "{} s after the first acknowledgement, for 1.0 s of the 4 s asked: the producer had sent its max_records (2) 3.0 s \
                 before the window's end",
                k.warmup_s
            )
        );
    }

    #[test]
    fn cpu_per_million_acked_counts_only_readings_and_totals_the_brokers_only_when_each_is_one() {
        let mut m = BTreeMap::new();
        add_cpu_per_m_acked(&mut m, 2_000_000, 3.0, &BTreeMap::from([(1, Some(4.0)), (2, Some(6.0))]));
        let got = |m: &BTreeMap<String, Metric>, k: &str| m.get(k).map(|x| x.value);
        assert_eq!(got(&m, "client_cpu_s_per_m_records"), Some(1.5));
        assert_eq!(
            (got(&m, "broker_cpu_s_per_m_records"), got(&m, "broker_2_cpu_s_per_m_records")),
            (Some(5.0), Some(3.0))
        );
        // 0 s while two million records moved is a span shorter than a tick, not a free broker; NaN a failed read.
        let mut m = BTreeMap::new();
        add_cpu_per_m_acked(&mut m, 2_000_000, f64::NAN, &BTreeMap::from([(1, Some(4.0)), (2, Some(0.0)), (3, None)]));
        assert_eq!(got(&m, "client_cpu_s_per_m_records"), None);
        assert_eq!(got(&m, "broker_1_cpu_s_per_m_records"), Some(2.0));
        assert_eq!((got(&m, "broker_2_cpu_s_per_m_records"), got(&m, "broker_cpu_s_per_m_records")), (None, None));
        let mut none = BTreeMap::new();
        add_cpu_per_m_acked(&mut none, 0, 3.0, &BTreeMap::from([(1, Some(4.0))]));
        assert!(none.is_empty(), "nothing acknowledged, nothing per record: {none:?}");
    }

    #[test]
    fn client_errors_that_differ_only_in_their_numbers_are_one_kind() {
        let errors: BTreeMap<String, u64> = (0..40)
            .map(|i| (format!("Correlation id for response ({i}) does not match request ({})", i + 100), 2))
            .chain([("broker error 45 (OUT_OF_ORDER_SEQUENCE_NUMBER)".to_owned(), 7), ("timeout".to_owned(), 1)])
            .collect();
        assert_eq!(
            client_errors(&errors),
            "80 x Correlation id for response (0) does not match request (100); \
             7 x broker error 45 (OUT_OF_ORDER_SEQUENCE_NUMBER); 1 x timeout"
        );
        let many: BTreeMap<String, u64> =
            ["a", "b", "c", "d", "e", "f", "g"].iter().map(|e| (e.to_string(), 1)).collect();
        assert!(client_errors(&many).ends_with("; and 2 more kinds"), "{}", client_errors(&many));
    }

    #[test]
    fn a_duplicate_fails_an_idempotent_producer_only() {
        let dup = Comparison { sent: 3, acked: 3, read: 4, duplicated: 1, ..Comparison::default() };
        assert_eq!(integrity(&knobs(-1, 3, true), &dup, None).status, IntegrityStatus::Failed);
        assert!(integrity(&knobs(-1, 3, true), &dup, None).method.starts_with("idempotence violation: 1 duplicated"));
        assert_eq!(integrity(&knobs(-1, 3, false), &dup, None).status, IntegrityStatus::Verified);
    }

    #[test]
    fn a_reordering_fails_an_idempotent_producer_only_where_it_was_handed_the_records_in_order() {
        let swapped = Comparison { sent: 3, acked: 3, read: 3, reordered: 1, ..Comparison::default() };
        let k = knobs(-1, 3, true);
        assert_eq!(integrity(&k, &swapped, None).status, IntegrityStatus::Failed);
        let concurrent = integrity(&k, &swapped, Some("records are handed over from concurrent tasks"));
        assert_eq!(concurrent.status, IntegrityStatus::Verified, "{}", concurrent.method);
        assert!(concurrent.method.contains("1 reordered within a partition"), "still counted: {}", concurrent.method);
        assert!(
            concurrent.method.ends_with("not judged for this client: records are handed over from concurrent tasks")
        );
    }
}
