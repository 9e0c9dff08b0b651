//! What a durability run's ledger says over time: the window's rate, produce latency, the longest gap between
//! acknowledgements (after the fault, or in the window when there is none, through the window's end), and
//! acknowledgements per 100 ms.

use std::collections::BTreeMap;

use streamlab_record::Metric;

use crate::drivers::contract::ledger::{Ack, Ledger};

/// The measurement window, epoch µs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Window {
    pub start_us: u64,
    pub end_us: u64,
}

impl Window {
    /// `warmup_s` after the first acknowledgement (when the client could send: its start, however slow, is not
    /// in the window), for `window_s`; `None` if nothing was acknowledged.
    pub fn of(ledger: &Ledger, warmup_s: f64, window_s: f64) -> Option<Window> {
        let start_us = first_ack_us(ledger)? + (warmup_s * 1e6) as u64;
        Some(Window { start_us, end_us: start_us + (window_s * 1e6) as u64 })
    }

    /// The same window ending `early_s` seconds sooner.
    pub fn ending_early(self, early_s: f64) -> Window {
        Window { end_us: self.end_us - (early_s * 1e6) as u64, ..self }
    }

    pub fn secs(&self) -> f64 {
        (self.end_us - self.start_us) as f64 / 1e6
    }

    fn contains(&self, us: u64) -> bool {
        (self.start_us..self.end_us).contains(&us)
    }
}

/// The earliest acknowledgement (epoch µs), if any.
pub fn first_ack_us(ledger: &Ledger) -> Option<u64> {
    ledger.entries.iter().filter_map(|e| if let Ack::Ok { at_us, .. } = e.ack { Some(at_us) } else { None }).min()
}

/// Bucket width of the acknowledgement timeline.
pub const BUCKET_US: u64 = 100_000;
/// The timeline stops this long after the window at the latest (a flush after a fault can take minutes).
const TIMELINE_TAIL_US: u64 = 30_000_000;

/// Everything computed from the ledger's times.
#[derive(Debug, Clone, PartialEq)]
pub struct Timing {
    pub acked_in_window: u64,
    pub records_per_s: f64,
    /// Sent in the window and acknowledged: ack time minus send time, ms, sorted.
    pub latencies_ms: Vec<f64>,
    /// The longest time without any acknowledgement, from the last one before `since` through the window's end.
    pub max_gap: Gap,
    /// The same, for partition 0's acknowledgements only.
    pub max_gap_p0: Gap,
    /// Acknowledgements per [`BUCKET_US`] from the window's start.
    pub per_bucket: Vec<u64>,
}

/// The longest time without an acknowledgement.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Gap {
    pub ms: f64,
    /// Where it began, epoch µs: an acknowledgement, or `since` when none came before it.
    pub from_us: u64,
    /// No acknowledgement ended it before the window's end: the producer was still sending, nothing was
    /// acknowledged, and the gap is at least this long.
    pub open: bool,
}

/// The times of `ledger` over `w`; gaps are measured from `since` (the fault's first step, or the window's
/// start when there is no fault) through the window's end.
pub fn timing(ledger: &Ledger, w: Window, since_us: u64) -> Timing {
    let mut acks: Vec<(u64, i32)> = Vec::new();
    let mut latencies_ms = Vec::new();
    for e in &ledger.entries {
        if let Ack::Ok { partition, at_us, .. } = e.ack {
            acks.push((at_us, partition));
            if w.contains(e.sent_us) {
                latencies_ms.push(at_us.saturating_sub(e.sent_us) as f64 / 1e3);
            }
        }
    }
    acks.sort_unstable();
    latencies_ms.sort_by(f64::total_cmp);
    let acked_in_window = acks.iter().filter(|(t, _)| w.contains(*t)).count() as u64;
    let times: Vec<u64> = acks.iter().map(|(t, _)| *t).collect();
    let p0: Vec<u64> = acks.iter().filter(|(_, p)| *p == 0).map(|(t, _)| *t).collect();
    // Exclusive: the last acknowledgement is in the timeline.
    let last = times.last().map_or(w.end_us, |t| t + 1);
    let end = last.min(w.end_us + TIMELINE_TAIL_US).max(w.end_us);
    let buckets = (end.saturating_sub(w.start_us)).div_ceil(BUCKET_US) as usize;
    let mut per_bucket = vec![0u64; buckets];
    for &t in times.iter().filter(|&&t| t >= w.start_us && t < end) {
        per_bucket[((t - w.start_us) / BUCKET_US) as usize] += 1;
    }
    Timing {
        acked_in_window,
        records_per_s: acked_in_window as f64 / w.secs(),
        latencies_ms,
        max_gap: longest_gap(&times, since_us, w.end_us),
        max_gap_p0: longest_gap(&p0, since_us, w.end_us),
        per_bucket,
    }
}

/// The longest gap between consecutive times from the last one before `since` (or `since` itself when none
/// came before it) through `until`: a silence that no time ends before `until` counts up to it, as open. A client
/// that stops acknowledging for good has the longest gap of all, not none.
pub fn longest_gap(sorted: &[u64], since: u64, until: u64) -> Gap {
    let first_after = sorted.partition_point(|&t| t < since);
    // The points the gaps lie between: where the silence may begin, then every time after `since`.
    let start = match first_after {
        0 => since,
        i => sorted[i - 1],
    };
    let mut best = Gap { ms: 0.0, from_us: start, open: false };
    let mut longest = 0;
    let mut prev = start;
    for &t in &sorted[first_after..] {
        if t - prev > longest {
            longest = t - prev;
            best = Gap { ms: 0.0, from_us: prev, open: false };
        }
        prev = t;
    }
    if until > prev && until - prev > longest {
        longest = until - prev;
        best = Gap { ms: 0.0, from_us: prev, open: true };
    }
    Gap { ms: longest as f64 / 1e3, ..best }
}

/// Nearest-rank percentiles of sorted latencies, ms: `produce_latency_p50_ms`, `_p99_ms`, `_p99_9_ms`.
pub fn latency_metrics(latencies_ms: &[f64], out: &mut BTreeMap<String, Metric>) {
    for (suffix, p) in [("p50", 50.0), ("p99", 99.0), ("p99_9", 99.9)] {
        if let Some(v) = streamlab_record::stats::percentile(latencies_ms, p) {
            out.insert(format!("produce_latency_{suffix}_ms"), Metric::new(v, "ms", false));
        }
    }
}

/// The timeline as the record keeps it: counts separated by commas.
pub fn timeline_text(per_bucket: &[u64]) -> String {
    per_bucket.iter().map(u64::to_string).collect::<Vec<_>>().join(",")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::drivers::contract::ledger::Entry;

    fn ledger(acks: &[(u64, u64, i32)]) -> Ledger {
        let entries = acks
            .iter()
            .enumerate()
            .map(|(i, &(sent, at, partition))| Entry {
                sent_us: sent,
                ack: Ack::Ok { partition, offset: i as i64, at_us: at },
            })
            .collect();
        Ledger { entries, errors: BTreeMap::new() }
    }

    #[test]
    fn the_window_counts_acknowledgements_inside_it() {
        // First send at 0, first acknowledgement at 0.5 s; warm-up 1 s; window 2 s = [1.5 s, 3.5 s).
        let l =
            ledger(&[(0, 500_000, 0), (900_000, 1_600_000, 1), (1_500_000, 2_500_000, 0), (3_000_000, 3_600_000, 1)]);
        let w = Window::of(&l, 1.0, 2.0).unwrap();
        assert_eq!((w.start_us, w.end_us), (1_500_000, 3_500_000), "from the first acknowledgement, not the send");
        let t = timing(&l, w, w.start_us);
        assert_eq!(t.acked_in_window, 2);
        assert_eq!(t.records_per_s, 1.0);
        assert_eq!(t.latencies_ms, vec![600.0, 1000.0], "records sent in the window only");
        assert_eq!(t.per_bucket.len(), 22, "through the last acknowledgement after the window");
        assert_eq!((t.per_bucket[1], t.per_bucket[10], t.per_bucket[21]), (1, 1, 1));
        let failed_first = Ledger {
            entries: vec![Entry { sent_us: 0, ack: Ack::Failed { at_us: 100 } }, l.entries[1]],
            errors: BTreeMap::new(),
        };
        assert_eq!(first_ack_us(&failed_first), Some(1_600_000), "a failure is no acknowledgement");
        assert!(Window::of(&Ledger::default(), 1.0, 2.0).is_none());
    }

    fn gap(ms: f64, from_us: u64, open: bool) -> Gap {
        Gap { ms, from_us, open }
    }

    #[test]
    fn the_longest_gap_starts_at_the_last_acknowledgement_before_the_fault() {
        let times = [100, 200, 300, 2_300, 2_400, 2_450];
        assert_eq!(longest_gap(&times, 1_000, 2_500), gap(2.0, 300, false), "300 µs -> 2300 µs");
        assert_eq!(longest_gap(&times, 2_400, 2_500), gap(0.1, 2_300, false), "gaps before the fault do not count");
        assert_eq!(longest_gap(&[4_000, 4_100], 1_000, 5_000), gap(3.0, 1_000, false), "from the fault to the first");
        assert_eq!(longest_gap(&times, 1_000, 2_000), gap(2.0, 300, false), "acks after the window's end end a gap");
    }

    #[test]
    fn a_silence_that_lasts_to_the_windows_end_is_the_longest_gap_and_open() {
        // Acknowledgements every 10 µs until 3,200 µs, then none: a 32 µs blip after the fault is not the gap.
        let times: Vec<u64> = (0..=320).map(|i| i * 10).collect();
        assert_eq!(longest_gap(&times, 3_000, 14_000), gap(10.8, 3_200, true));
        assert_eq!(longest_gap(&times, 5_000, 14_000), gap(10.8, 3_200, true), "nothing after the fault at all");
        assert_eq!(longest_gap(&[], 1_000, 4_000), gap(3.0, 1_000, true), "nothing acknowledged ever");
        assert_eq!(longest_gap(&[1_000, 3_990], 1_000, 4_000), gap(2.99, 1_000, false), "a short tail stays shut");
    }

    #[test]
    fn partition_0_has_its_own_gap() {
        let l = ledger(&[(0, 100_000, 0), (0, 150_000, 1), (0, 200_000, 1), (0, 900_000, 0)]);
        let w = Window { start_us: 0, end_us: 1_000_000 };
        let t = timing(&l, w, 120_000);
        assert_eq!(t.max_gap, Gap { ms: 700.0, from_us: 200_000, open: false });
        assert_eq!(t.max_gap_p0, Gap { ms: 800.0, from_us: 100_000, open: false });
        assert_eq!(timeline_text(&t.per_bucket), "0,2,1,0,0,0,0,0,0,1");
    }

    #[test]
    fn latency_percentiles_are_nearest_rank() {
        let lat: Vec<f64> = (1..=1000).map(f64::from).collect();
        let mut m = BTreeMap::new();
        latency_metrics(&lat, &mut m);
        assert_eq!(m["produce_latency_p50_ms"].value, 500.0);
        assert_eq!(m["produce_latency_p99_ms"].value, 990.0);
        // As the record crate's nearest rank computes it (0.999 x 1000 rounds up in floating point).
        assert_eq!(Some(m["produce_latency_p99_9_ms"].value), streamlab_record::stats::percentile(&lat, 99.9));
    }
}
