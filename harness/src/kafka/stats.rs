//! librdkafka statistics over a measurement window, and delivery-latency samples.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use rdkafka::statistics::Statistics;
use streamlab_record::stats;

/// One statistics callback's view of the (real) brokers, in microseconds, plus the producer queue depth.
#[derive(Debug, Clone, Copy, Default)]
struct Sample {
    rtt_p99_us: f64,
    outbuf_latency_p99_us: f64,
    int_latency_p99_us: f64,
    queue_messages: f64,
}

/// Collects statistics while a window is open.
#[derive(Default)]
pub struct StatsWindow {
    open: AtomicBool,
    samples: Mutex<Vec<Sample>>,
}

/// Medians over the window's statistics callbacks.
#[derive(Debug, Clone, Copy)]
pub struct StatsSummary {
    pub samples: usize,
    pub broker_rtt_p99_ms: f64,
    pub outbuf_latency_p99_ms: f64,
    pub int_latency_p99_ms: f64,
    pub queue_messages: f64,
}

impl StatsWindow {
    pub fn open(&self) {
        self.open.store(true, Ordering::Release);
    }

    pub fn close(&self) {
        self.open.store(false, Ordering::Release);
    }

    /// Feed one librdkafka statistics callback.
    pub fn record(&self, stats: &Statistics) {
        if !self.open.load(Ordering::Acquire) {
            return;
        }
        // Bootstrap and controller pseudo-brokers have negative node ids; take the worst real broker.
        let brokers = stats.brokers.values().filter(|b| b.nodeid >= 0);
        let mut s = Sample { queue_messages: stats.msg_cnt as f64, ..Sample::default() };
        for b in brokers {
            let p99 = |w: &Option<rdkafka::statistics::Window>| w.as_ref().map_or(0.0, |w| w.p99 as f64);
            s.rtt_p99_us = s.rtt_p99_us.max(p99(&b.rtt));
            s.outbuf_latency_p99_us = s.outbuf_latency_p99_us.max(p99(&b.outbuf_latency));
            s.int_latency_p99_us = s.int_latency_p99_us.max(p99(&b.int_latency));
        }
        self.samples.lock().expect("stats lock").push(s);
    }

    pub fn summary(&self) -> Option<StatsSummary> {
        let samples = self.samples.lock().expect("stats lock");
        if samples.is_empty() {
            return None;
        }
        let median = |f: fn(&Sample) -> f64| {
            let xs: Vec<f64> = samples.iter().map(f).collect();
            stats::median(&xs).unwrap_or(f64::NAN)
        };
        Some(StatsSummary {
            samples: samples.len(),
            broker_rtt_p99_ms: median(|s| s.rtt_p99_us) / 1000.0,
            outbuf_latency_p99_ms: median(|s| s.outbuf_latency_p99_us) / 1000.0,
            int_latency_p99_ms: median(|s| s.int_latency_p99_us) / 1000.0,
            queue_messages: median(|s| s.queue_messages),
        })
    }
}

/// Delivery latencies in milliseconds, sampled 1-in-`every` while the window is open.
pub struct LatencySampler {
    every: u64,
    seen: std::sync::atomic::AtomicU64,
    open: AtomicBool,
    samples_ms: Mutex<Vec<f64>>,
}

impl LatencySampler {
    pub fn new(every: u64) -> Self {
        LatencySampler {
            every: every.max(1),
            seen: Default::default(),
            open: AtomicBool::new(false),
            samples_ms: Mutex::new(Vec::new()),
        }
    }

    pub fn open(&self) {
        self.open.store(true, Ordering::Release);
    }

    pub fn close(&self) {
        self.open.store(false, Ordering::Release);
    }

    /// Whether the caller should measure this delivery (cheap: one atomic increment).
    pub fn wants_sample(&self) -> bool {
        self.open.load(Ordering::Relaxed) && self.seen.fetch_add(1, Ordering::Relaxed).is_multiple_of(self.every)
    }

    pub fn push(&self, ms: f64) {
        self.samples_ms.lock().expect("latency lock").push(ms);
    }

    /// Nearest-rank percentiles (p in 0..=100) of the samples, or `None` if there are none.
    pub fn percentiles(&self, ps: &[f64]) -> Option<Vec<f64>> {
        let mut xs = self.samples_ms.lock().expect("latency lock").clone();
        if xs.is_empty() {
            return None;
        }
        xs.sort_by(f64::total_cmp);
        Some(ps.iter().map(|&p| nearest_rank(&xs, p)).collect())
    }
}

/// Nearest-rank percentile of sorted samples (the record crate's one definition); NaN if there are none.
pub fn nearest_rank(sorted: &[f64], p: f64) -> f64 {
    stats::percentile(sorted, p).unwrap_or(f64::NAN)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_percentiles() {
        let xs: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(nearest_rank(&xs, 50.0), 50.0);
        assert_eq!(nearest_rank(&xs, 99.0), 99.0);
        assert_eq!(nearest_rank(&xs, 0.0), 1.0);
        assert_eq!(nearest_rank(&[3.0], 99.0), 3.0);
    }

    #[test]
    fn the_sampler_records_only_while_open() {
        let s = LatencySampler::new(2);
        assert!(!s.wants_sample());
        s.open();
        let wanted = (0..10).filter(|_| s.wants_sample()).count();
        assert_eq!(wanted, 5);
        s.push(1.0);
        s.push(3.0);
        assert_eq!(s.percentiles(&[50.0, 99.0]).unwrap(), vec![1.0, 3.0]);
    }
}
