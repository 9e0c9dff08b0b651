//! The paced workload's clock and histograms, shared by every client's loop (the harness's drivers and
//! partitionline's bench binary), the end-to-end consumer and the site.
//!
//! Open loop: record `i` is due at `start + i / rate` ([`Schedule`]), whatever became of the records before it, and
//! its latency is measured from that intended time, so a stall delays the records behind it and shows in the tail
//! (coordinated omission, as the OpenMessaging Benchmark fixed it). Each record's value begins with its sequence
//! number and its intended time on the host's monotonic clock ([`stamp`]), so a consumer in another process can
//! time it end to end and count it exactly once.

use std::time::Duration;

use base64::Engine;
use hdrhistogram::Histogram;
use hdrhistogram::serialization::{Deserializer, Serializer, V2Serializer};
use serde::{Deserialize, Serialize};

/// Bytes a stamp takes at the start of every value: the sequence number, then the intended time (both u64 LE).
pub const STAMP_BYTES: usize = 16;

/// Significant digits every latency histogram keeps (HdrHistogram's usual 3: within 0.1%).
const SIGNIFICANT_DIGITS: u8 = 3;
/// The longest latency a histogram holds, in microseconds (an hour); longer ones are clamped to it.
const HIGHEST_US: u64 = 3_600_000_000;

/// When each record of a paced run is due.
#[derive(Debug, Clone, Copy)]
pub struct Schedule {
    /// The first record's intended time, on the monotonic clock (ns).
    pub start_ns: u64,
    /// Records per second offered.
    pub rate: u64,
}

impl Schedule {
    /// A schedule whose first record is due now.
    pub fn starting_now(rate: u64) -> Schedule {
        assert!(rate > 0, "a paced run offers at least one record a second");
        Schedule { start_ns: streamlab_process::clock::monotonic_ns(), rate }
    }

    /// Record `seq`'s intended send time (monotonic ns).
    pub fn intended_ns(&self, seq: u64) -> u64 {
        self.start_ns + (u128::from(seq) * 1_000_000_000 / u128::from(self.rate)) as u64
    }

    /// How long until record `seq` is due (zero when it is due or late).
    pub fn until(&self, seq: u64) -> Duration {
        Duration::from_nanos(self.intended_ns(seq).saturating_sub(streamlab_process::clock::monotonic_ns()))
    }
}

/// A value of `bytes` (at least [`STAMP_BYTES`]): the stamp, then 'x' as every clients workload sends.
pub fn stamped_value(bytes: usize, seq: u64, intended_ns: u64) -> Vec<u8> {
    let mut value = vec![b'x'; bytes.max(STAMP_BYTES)];
    stamp(&mut value, seq, intended_ns);
    value
}

/// Write `seq` and `intended_ns` over the first [`STAMP_BYTES`] of `value`.
pub fn stamp(value: &mut [u8], seq: u64, intended_ns: u64) {
    value[..8].copy_from_slice(&seq.to_le_bytes());
    value[8..16].copy_from_slice(&intended_ns.to_le_bytes());
}

/// The sequence number and intended time a value was stamped with; `None` for a value too short to hold them.
pub fn read_stamp(value: &[u8]) -> Option<(u64, u64)> {
    let seq = u64::from_le_bytes(value.get(..8)?.try_into().ok()?);
    let intended = u64::from_le_bytes(value.get(8..16)?.try_into().ok()?);
    Some((seq, intended))
}

/// Latencies in microseconds, kept as an HdrHistogram (3 significant digits, 1 µs to an hour).
#[derive(Debug, Clone)]
pub struct Latencies(Histogram<u64>);

impl Default for Latencies {
    fn default() -> Self {
        Latencies(Histogram::new_with_bounds(1, HIGHEST_US, SIGNIFICANT_DIGITS).expect("valid histogram bounds"))
    }
}

/// The percentiles every paced record keeps, with their metric suffixes.
pub const PERCENTILES: [(&str, f64); 5] =
    [("p50", 50.0), ("p90", 90.0), ("p99", 99.0), ("p99_9", 99.9), ("p99_99", 99.99)];

impl Latencies {
    /// One latency from `from_ns` to `to_ns` (monotonic); below a microsecond counts as one.
    pub fn record_between(&mut self, from_ns: u64, to_ns: u64) {
        self.record_us(to_ns.saturating_sub(from_ns) / 1_000);
    }

    pub fn record_us(&mut self, us: u64) {
        self.0.saturating_record(us.max(1));
    }

    pub fn add(&mut self, other: &Latencies) {
        self.0.add(&other.0).expect("histograms of the same bounds add");
    }

    pub fn len(&self) -> u64 {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The value at percentile `p` (0-100), in microseconds; `None` when empty.
    pub fn percentile_us(&self, p: f64) -> Option<f64> {
        (!self.is_empty()).then(|| self.0.value_at_quantile(p / 100.0) as f64)
    }

    pub fn max_us(&self) -> Option<f64> {
        (!self.is_empty()).then(|| self.0.max() as f64)
    }

    /// `(percentile, µs)` at HdrHistogram's classic steps (ticks halving the distance to 100%), for the
    /// percentile-distribution chart.
    pub fn distribution(&self) -> Vec<(f64, f64)> {
        self.0.iter_quantiles(1).map(|v| (v.quantile_iterated_to() * 100.0, v.value_iterated_to() as f64)).collect()
    }

    /// The V2 serialization, base64: what a record keeps so that anyone can merge reps and read any percentile.
    pub fn to_base64(&self) -> String {
        let mut bytes = Vec::new();
        V2Serializer::new().serialize(&self.0, &mut bytes).expect("serializing to memory");
        base64::engine::general_purpose::STANDARD.encode(bytes)
    }

    pub fn from_base64(text: &str) -> Result<Latencies, String> {
        let bytes = base64::engine::general_purpose::STANDARD.decode(text).map_err(|e| format!("not base64: {e}"))?;
        let h: Histogram<u64> =
            Deserializer::new().deserialize(&mut bytes.as_slice()).map_err(|e| format!("not a V2 histogram: {e:?}"))?;
        Ok(Latencies(h))
    }
}

/// One record's times, carried through the client to its acknowledgement.
#[derive(Debug, Clone, Copy)]
pub struct Sent {
    pub intended_ns: u64,
    pub actual_ns: u64,
}

/// The acknowledgements of a paced run, tallied as they arrive.
#[derive(Debug, Default, Clone)]
pub struct Tally {
    pub acked: u64,
    pub failed: u64,
    /// Intended send -> acknowledgement: the publish latency.
    pub publish: Latencies,
    /// Actual send -> acknowledgement: what a tool timing from its send call reports, which hides the time a
    /// record waited to be sent.
    pub publish_from_send: Latencies,
}

impl Tally {
    /// `sent` was acknowledged at `now_ns` (monotonic).
    pub fn acked(&mut self, sent: Sent, now_ns: u64) {
        self.acked += 1;
        self.publish.record_between(sent.intended_ns, now_ns);
        self.publish_from_send.record_between(sent.actual_ns, now_ns);
    }

    pub fn failed(&mut self) {
        self.failed += 1;
    }

    pub fn answered(&self) -> u64 {
        self.acked + self.failed
    }
}

/// A paced run as the client's loop saw it, in a form a loop in another process can print (partitionline's bench
/// binary): the histograms base64 V2.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PacedLoop {
    pub start_ns: u64,
    pub rate: u64,
    /// Records handed to the client (each when due, or as soon after as the client took it).
    pub sent: u64,
    pub acked: u64,
    pub failed: u64,
    /// From the first record's intended time to the last record's actual send: the span the offered rate was held
    /// over (a client that fell behind stretches it).
    pub send_span_ns: u64,
    pub publish: String,
    pub publish_from_send: String,
    pub client_cpu_s: f64,
    /// Times the client refused a record because its queue was full (the loop then waited and tried again).
    pub queue_full: u64,
}

impl PacedLoop {
    pub fn new(
        schedule: Schedule,
        sent: u64,
        last_send_ns: u64,
        tally: &Tally,
        client_cpu_s: f64,
        queue_full: u64,
    ) -> Self {
        PacedLoop {
            start_ns: schedule.start_ns,
            rate: schedule.rate,
            sent,
            acked: tally.acked,
            failed: tally.failed,
            send_span_ns: last_send_ns.saturating_sub(schedule.start_ns),
            publish: tally.publish.to_base64(),
            publish_from_send: tally.publish_from_send.to_base64(),
            client_cpu_s,
            queue_full,
        }
    }

    /// The offered rate it achieved: records after the first over the span they were sent in; `None` for fewer than
    /// two records.
    pub fn achieved_rate(&self) -> Option<f64> {
        (self.sent >= 2 && self.send_span_ns > 0).then(|| (self.sent - 1) as f64 / (self.send_span_ns as f64 / 1e9))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_are_due_at_even_intervals_from_the_start() {
        let s = Schedule { start_ns: 1_000, rate: 4 };
        assert_eq!(s.intended_ns(0), 1_000);
        assert_eq!(s.intended_ns(1), 1_000 + 250_000_000);
        assert_eq!(s.intended_ns(4), 1_000 + 1_000_000_000);
        // No drift over a long run: record n is due at exactly n / rate seconds.
        let fast = Schedule { start_ns: 0, rate: 300_000 };
        assert_eq!(fast.intended_ns(300_000 * 3600), 3600 * 1_000_000_000);
    }

    #[test]
    fn a_stamp_reads_back_and_a_short_value_has_none() {
        let v = stamped_value(100, 42, 7_000_000_123);
        assert_eq!(v.len(), 100);
        assert_eq!(read_stamp(&v), Some((42, 7_000_000_123)));
        assert!(v[16..].iter().all(|&b| b == b'x'));
        assert_eq!(stamped_value(4, 1, 2).len(), STAMP_BYTES, "room for the stamp");
        assert_eq!(read_stamp(b"short"), None);
    }

    #[test]
    fn a_histogram_survives_its_serialization_and_merges() {
        let mut a = Latencies::default();
        for us in 1..=1000 {
            a.record_us(us);
        }
        let back = Latencies::from_base64(&a.to_base64()).unwrap();
        assert_eq!(back.len(), 1000);
        assert_eq!(back.percentile_us(50.0), Some(500.0));
        assert_eq!(back.percentile_us(99.0), Some(990.0));
        let mut b = Latencies::default();
        b.record_between(0, 200_000_000); // 200 ms
        let mut merged = back.clone();
        merged.add(&b);
        assert_eq!(merged.len(), 1001);
        let max = merged.max_us().unwrap();
        assert!((max - 200_000.0).abs() / 200_000.0 < 0.001, "3 significant digits: {max}");
        assert!(Latencies::from_base64("not base64!").is_err());
        assert_eq!(Latencies::default().percentile_us(50.0), None, "no figure from no samples");
    }
}
