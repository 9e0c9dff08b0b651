//! The sink's whole-batch acknowledgements in the window, counted from spate's exposition: what the window
//! waits for (`pipeline`) and what the acknowledged rate is read from (`report`).

use anyhow::Result;

use super::exposition::Snapshot;
use crate::arms::kafka_sink::window::{self, MIN_ACKS_IN_WINDOW};

/// The sink's acknowledgements in the window. Batches are acknowledged whole, so the count over a fixed
/// window is off by at most the batch straddling each edge; `largest_step` says how big that can be.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct AckCount {
    pub records: f64,
    pub seconds: f64,
    /// Acknowledgement events (sample steps where the counter rose).
    pub acks: usize,
    /// The largest single rise of the counter between two samples.
    pub largest_step: f64,
}

impl AckCount {
    pub(super) fn records_per_s(&self) -> f64 {
        if self.seconds > 0.0 { self.records / self.seconds } else { 0.0 }
    }

    /// Whether the window holds the acknowledgements a rate needs.
    pub(super) fn enough(&self) -> bool {
        self.acks as u64 >= MIN_ACKS_IN_WINDOW
    }
}

pub(super) fn acks_in_window(open: &Snapshot, samples: &[Snapshot]) -> AckCount {
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

/// A window needs acknowledgements: batches are acknowledged whole, and a window fewer than
/// [`window::MIN_ACKS_IN_WINDOW`] of them touch is not a steady state of the sink (the arm fails with the reason).
pub(super) fn enough_acks(acks: &AckCount) -> Result<()> {
    window::enough_acks(
        acks.acks as u64,
        &format!("whole-batch acknowledgements ({:.0} records)", acks.records),
        acks.seconds,
        ": lengthen window_s or shorten batch_linger_ms",
    )
}

#[cfg(test)]
pub(super) mod tests {
    use std::time::{Duration, Instant};

    use super::*;

    /// A snapshot `ms` after `t0` whose sink has acknowledged `records`.
    pub fn at(t0: Instant, ms: u64, records: f64) -> Snapshot {
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
        assert!(!a.enough());
        let three = enough_acks(&a).unwrap_err().to_string();
        assert!(three.contains("only 3 whole-batch acknowledgements (1250000 records)"), "{three}");
        // Ten batches of 100k, one every 100 ms.
        let ten: Vec<Snapshot> = (1..=10).map(|i| at(t0, 100 * i, 1_000_000.0 + 100_000.0 * i as f64)).collect();
        enough_acks(&acks_in_window(&open, &ten)).unwrap();
        assert!(acks_in_window(&open, &ten).enough());
    }

    #[test]
    fn a_window_without_enough_acknowledgements_is_not_a_rate() {
        let t0 = Instant::now();
        let open = at(t0, 0, 1_000_000.0);
        let empty = acks_in_window(&open, &[at(t0, 2000, 1_000_000.0)]);
        let err = enough_acks(&empty).unwrap_err().to_string();
        assert!(err.starts_with("only 0 whole-batch acknowledgements (0 records) in the 2.00 s window"), "{err}");
        let one = acks_in_window(&open, &[at(t0, 1000, 1_200_000.0), at(t0, 2000, 1_200_000.0)]);
        assert!(enough_acks(&one).is_err(), "one batch in the window is not a rate");
        assert!(enough_acks(&acks_in_window(&open, &[])).is_err());
    }
}
