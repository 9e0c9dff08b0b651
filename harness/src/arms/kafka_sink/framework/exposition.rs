//! Reading spate's Prometheus text exposition (and its in-flight budget) into the series the arm needs.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;

use spate::backpressure::InflightBudget;
use spate::metrics::MetricsHandle;

/// Where the window reads the pipeline: spate's exposition, and its in-flight byte budget directly
/// (spate 0.2.0 registers `spate_backpressure_inflight_bytes` but never sets it).
pub(super) struct Observer {
    pub metrics: MetricsHandle,
    pub budget: Arc<InflightBudget>,
}

impl Observer {
    pub fn snapshot(&self) -> Snapshot {
        let mut s = Snapshot::parse(&self.metrics.render(), Instant::now());
        s.inflight_bytes = self.budget.usage() as f64;
        s
    }
}

/// One render of spate's exposition, reduced to the series this arm reads.
#[derive(Debug, Clone)]
pub(super) struct Snapshot {
    pub at: Instant,
    /// Σ `spate_sink_records_total` over shards: records in batches whose every delivery report confirmed.
    pub sink_records: f64,
    pub sink_retries: f64,
    /// Σ `spate_backpressure_paused` over pipeline threads.
    pub paused_threads: f64,
    pub pause_events: f64,
    /// Σ `spate_queue_full_events_total`: chunks a sink queue refused.
    pub queue_full_events: f64,
    /// `InflightBudget::usage()` (set by [`Observer`]; not in the exposition).
    pub inflight_bytes: f64,
    /// max over shards of `spate_sink_inflight_batches`.
    pub busiest_shard_inflight: f64,
    pub pending_batches: f64,
    /// max over brokers of the librdkafka window p99s, in seconds; absent until a window has samples.
    pub broker_rtt_p99_s: Option<f64>,
    pub outbuf_latency_p99_s: Option<f64>,
    pub int_latency_p99_s: Option<f64>,
    pub produce_queue_messages: Option<f64>,
    /// `spate_e2e_latency_seconds` cumulative buckets (upper bound, count), summed over series.
    pub e2e_buckets: Vec<(f64, f64)>,
}

impl Snapshot {
    pub fn parse(text: &str, at: Instant) -> Snapshot {
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
pub(super) fn histogram_quantile(q: f64, buckets: &[(f64, f64)]) -> Option<f64> {
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
pub(super) fn bucket_delta(open: &[(f64, f64)], close: &[(f64, f64)]) -> Vec<(f64, f64)> {
    close
        .iter()
        .map(|&(le, count)| {
            let before = open.iter().find(|(l, _)| *l == le).map_or(0.0, |(_, c)| *c);
            (le, count - before)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
