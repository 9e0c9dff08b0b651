//! The seed's two-axis verdict for a kafka_sink measurement.
//!
//! - upstream (framework arm only): was the framework pushed as hard as it could produce, and what held it?
//!   spate pauses its source for one of two reasons, a sink queue rejecting a chunk or the in-flight byte
//!   budget crossing its high mark, and resumes only once both are back below their low marks. So:
//!   `checkpoint` (the per-partition pending-batch ceiling gated the source), `generator` (the source was
//!   seldom held back: the generator and chain on the pipeline threads were the limit, not the sink),
//!   `budget` (paused with the in-flight bytes above the budget's resume mark: unwritten batches held it),
//!   or `sink` (paused with the budget below its resume mark: the sink's queues were what refused data).
//! - downstream (both arms): is the client or the broker the constraint? From librdkafka's statistics: a
//!   message's time on the broker leg (broker round trip + time in the transmit buffer) against its time in
//!   the client's own producer queue (int_latency). `broker` when the broker leg is at least as long and the
//!   producer queue held a backlog (at least half of queue.buffering.max.messages): a broker can only hold
//!   back a client that offers it more than it takes. Otherwise `client`.
//!
//! The rules are pure functions of recorded signals so they can be tested on concrete values.

use std::collections::BTreeMap;
use std::fmt;

/// A signal must hold in at least this share of the window's samples to decide the verdict.
const MAJORITY: f64 = 0.5;
/// The producer queue is backlogged when its median depth is at least this share of its capacity.
const BACKLOG_SHARE: f64 = 0.5;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Upstream {
    Budget,
    Sink,
    Checkpoint,
    Generator,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Downstream {
    Broker,
    Client,
}

impl fmt::Display for Upstream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Upstream::Budget => "budget",
            Upstream::Sink => "sink",
            Upstream::Checkpoint => "checkpoint",
            Upstream::Generator => "generator",
        })
    }
}

impl fmt::Display for Downstream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Downstream::Broker => "broker",
            Downstream::Client => "client",
        })
    }
}

/// The framework's flow-control signals over the measurement window, as shares of periodic samples.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct UpstreamSignals {
    /// How many samples the shares are over.
    pub samples: usize,
    /// Share of samples with a pipeline thread paused (`spate_backpressure_paused` = 1).
    pub paused_share: f64,
    /// Share of samples with `spate_checkpoint_pending_batches` at `checkpoint.max_pending_batches`.
    pub gated_share: f64,
    /// Among paused samples, the share with the in-flight byte budget above its resume (low) mark.
    pub budget_held_share_of_paused: f64,
    /// Among paused samples, the share with a shard using every write slot
    /// (`spate_sink_inflight_batches` >= `inflight.max_per_shard`): was the sink writing while the source waited?
    pub sink_busy_share_of_paused: f64,
    /// Pause transitions (`spate_backpressure_pause_events_total`) and sink-queue rejections
    /// (`spate_queue_full_events_total`) in the window.
    pub pause_events: f64,
    pub queue_full_events: f64,
    /// Median in-flight bytes over the window (`InflightBudget::usage`), and the budget's resume mark.
    pub inflight_bytes_median: f64,
    pub budget_low_bytes: f64,
}

/// librdkafka's window statistics: medians over the window of each interval's p99 (ms) and queue depth.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DownstreamSignals {
    pub broker_rtt_p99_ms: f64,
    pub outbuf_latency_p99_ms: f64,
    pub int_latency_p99_ms: f64,
    pub producer_queue_messages: f64,
    /// `queue.buffering.max.messages`.
    pub queue_capacity_messages: f64,
}

impl DownstreamSignals {
    fn backlogged(&self) -> bool {
        self.producer_queue_messages >= BACKLOG_SHARE * self.queue_capacity_messages
    }
}

pub fn upstream(s: &UpstreamSignals) -> Option<Upstream> {
    if s.samples == 0 {
        return None;
    }
    Some(if s.gated_share >= MAJORITY {
        Upstream::Checkpoint
    } else if s.paused_share < MAJORITY {
        Upstream::Generator
    } else if s.budget_held_share_of_paused >= MAJORITY {
        Upstream::Budget
    } else {
        Upstream::Sink
    })
}

pub fn downstream(s: &DownstreamSignals) -> Option<Downstream> {
    let values = [s.broker_rtt_p99_ms, s.outbuf_latency_p99_ms, s.int_latency_p99_ms];
    if values.iter().any(|v| !v.is_finite() || *v < 0.0) || values.iter().all(|v| *v == 0.0) {
        return None;
    }
    let broker_leg = s.broker_rtt_p99_ms + s.outbuf_latency_p99_ms;
    Some(if s.backlogged() && broker_leg >= s.int_latency_p99_ms { Downstream::Broker } else { Downstream::Client })
}

impl UpstreamSignals {
    /// The evidence behind [`upstream`], for the record's note.
    pub fn evidence(&self) -> String {
        format!(
            "source paused in {:.0}% of {} samples ({} pause events, {} sink-queue rejections); of the paused \
             samples {:.0}% had the in-flight budget above its resume mark ({:.0} MB; median in flight {:.0} MB) \
             and {:.0}% had every sink write slot busy; pending-batch ceiling hit in {:.0}%",
            self.paused_share * 100.0,
            self.samples,
            self.pause_events,
            self.queue_full_events,
            self.budget_held_share_of_paused * 100.0,
            self.budget_low_bytes / 1e6,
            self.inflight_bytes_median / 1e6,
            self.sink_busy_share_of_paused * 100.0,
            self.gated_share * 100.0,
        )
    }
}

impl DownstreamSignals {
    /// The evidence behind [`downstream`], for the record's note.
    pub fn evidence(&self) -> String {
        format!(
            "broker leg p99 {:.1} ms (rtt {:.1} + outbuf {:.1}) vs client queue int_latency p99 {:.1} ms; \
             producer queue {:.0} of {:.0} messages{}",
            self.broker_rtt_p99_ms + self.outbuf_latency_p99_ms,
            self.broker_rtt_p99_ms,
            self.outbuf_latency_p99_ms,
            self.int_latency_p99_ms,
            self.producer_queue_messages,
            self.queue_capacity_messages,
            if self.backlogged() { "" } else { " (under half full: no standing backlog for a broker to hold back)" },
        )
    }
}

/// The record's `verdict` map (axes that could be decided) and the evidence sentence for its note.
pub fn verdict(
    upstream_signals: Option<&UpstreamSignals>,
    downstream_signals: Option<&DownstreamSignals>,
) -> (BTreeMap<String, String>, String) {
    let mut axes = BTreeMap::new();
    let mut evidence = Vec::new();
    if let Some(s) = upstream_signals {
        match upstream(s) {
            Some(u) => {
                axes.insert("upstream".to_owned(), u.to_string());
                evidence.push(format!("upstream={u}: {}", s.evidence()));
            }
            None => evidence.push("upstream undecided: no samples in the window".to_owned()),
        }
    }
    match downstream_signals.map(|s| (s, downstream(s))) {
        Some((s, Some(d))) => {
            axes.insert("downstream".to_owned(), d.to_string());
            evidence.push(format!("downstream={d}: {}", s.evidence()));
        }
        _ => evidence.push("downstream undecided: no librdkafka broker latency statistics in the window".to_owned()),
    }
    (axes, evidence.join("; "))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn signals(paused: f64, gated: f64, budget_held: f64) -> UpstreamSignals {
        UpstreamSignals {
            samples: 160,
            paused_share: paused,
            gated_share: gated,
            budget_held_share_of_paused: budget_held,
            sink_busy_share_of_paused: 0.4,
            pause_events: 12.0,
            queue_full_events: 30.0,
            inflight_bytes_median: 170e6,
            budget_low_bytes: 134.2e6,
        }
    }

    #[test]
    fn a_source_paused_by_sink_queue_rejections_is_sink_bound() {
        assert_eq!(upstream(&signals(0.92, 0.0, 0.10)), Some(Upstream::Sink));
        assert_eq!(upstream(&signals(0.99, 0.0, 0.0)), Some(Upstream::Sink));
    }

    #[test]
    fn a_source_held_by_unwritten_bytes_is_budget_bound() {
        assert_eq!(upstream(&signals(0.88, 0.0, 0.81)), Some(Upstream::Budget));
        assert_eq!(upstream(&signals(0.60, 0.0, 0.50)), Some(Upstream::Budget));
    }

    #[test]
    fn a_source_seldom_paused_is_generator_bound() {
        assert_eq!(upstream(&signals(0.05, 0.0, 1.0)), Some(Upstream::Generator));
        assert_eq!(upstream(&signals(0.49, 0.0, 1.0)), Some(Upstream::Generator));
    }

    #[test]
    fn the_pending_batch_ceiling_wins_over_backpressure() {
        assert_eq!(upstream(&signals(0.9, 0.75, 0.9)), Some(Upstream::Checkpoint));
        assert_eq!(upstream(&signals(0.0, 0.5, 0.0)), Some(Upstream::Checkpoint));
    }

    #[test]
    fn no_samples_no_upstream_verdict() {
        assert_eq!(upstream(&UpstreamSignals { samples: 0, ..signals(1.0, 0.0, 1.0) }), None);
    }

    fn ds(rtt: f64, outbuf: f64, int: f64, queue: f64) -> DownstreamSignals {
        DownstreamSignals {
            broker_rtt_p99_ms: rtt,
            outbuf_latency_p99_ms: outbuf,
            int_latency_p99_ms: int,
            producer_queue_messages: queue,
            queue_capacity_messages: 100_000.0,
        }
    }

    #[test]
    fn an_idle_producer_queue_is_never_broker_bound() {
        // A client that keeps librdkafka's queue near empty sees only the broker's baseline latency.
        let idle = ds(32.8, 5.5, 18.7, 0.0);
        assert_eq!(downstream(&idle), Some(Downstream::Client));
        assert!(idle.evidence().contains("no standing backlog"), "{}", idle.evidence());
        assert_eq!(downstream(&ds(32.8, 5.5, 18.7, 49_999.0)), Some(Downstream::Client));
        assert_eq!(downstream(&ds(32.8, 5.5, 18.7, 50_000.0)), Some(Downstream::Broker));
    }

    #[test]
    fn the_seed_default_arm_statistics_read_client() {
        // Seed 000's default arm: rtt 7 ms, outbuf 0.4 ms, int_latency 67 ms.
        let s = ds(7.0, 0.4, 67.0, 100_000.0);
        assert_eq!(downstream(&s), Some(Downstream::Client));
    }

    #[test]
    fn a_slow_broker_reads_broker() {
        let rtt = ds(180.0, 3.0, 90.0, 95_000.0);
        assert_eq!(downstream(&rtt), Some(Downstream::Broker));
        // Requests stuck in the transmit buffer (broker not reading) count on the broker leg too.
        let outbuf = ds(20.0, 45.0, 60.0, 60_000.0);
        assert_eq!(downstream(&outbuf), Some(Downstream::Broker));
    }

    #[test]
    fn missing_statistics_decide_nothing() {
        let zero = ds(0.0, 0.0, 0.0, 0.0);
        assert_eq!(downstream(&zero), None);
        let nan = DownstreamSignals { broker_rtt_p99_ms: f64::NAN, ..zero };
        assert_eq!(downstream(&nan), None);
    }

    #[test]
    fn the_verdict_map_names_both_axes_with_evidence() {
        let d = ds(7.0, 0.4, 67.0, 100_000.0);
        let (axes, note) = verdict(Some(&signals(0.92, 0.0, 0.10)), Some(&d));
        assert_eq!(axes.get("upstream").map(String::as_str), Some("sink"));
        assert_eq!(axes.get("downstream").map(String::as_str), Some("client"));
        assert!(note.contains("upstream=sink: source paused in 92% of 160 samples (12 pause events"), "{note}");
        assert!(note.contains("downstream=client: broker leg p99 7.4 ms"), "{note}");
    }

    #[test]
    fn the_raw_arm_gets_only_a_downstream_axis() {
        let d = ds(150.0, 1.0, 20.0, 100_000.0);
        let (axes, note) = verdict(None, Some(&d));
        assert_eq!(axes.len(), 1);
        assert_eq!(axes.get("downstream").map(String::as_str), Some("broker"));
        assert!(!note.contains("upstream"), "{note}");
        let (axes, note) = verdict(None, None);
        assert!(axes.is_empty());
        assert!(note.contains("downstream undecided"), "{note}");
    }
}
