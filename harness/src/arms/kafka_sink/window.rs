//! What both kafka_sink arms share about their window: the rate from the broker's own count (the topic's
//! high watermarks sampled at the window's edges by a client of its own), the least number of
//! acknowledgements a window must hold, and the `applied` map.

use std::collections::BTreeMap;

use anyhow::{Result, bail};
use rdkafka::ClientConfig;
use streamlab_record::Metric;
use streamlab_record::applied::{self, Applied, AppliedBuilder};

use crate::kafka::effective::LibrdkafkaConf;
use crate::kafka::watermarks::WatermarkWindow;

/// Acknowledgements a window needs to be a rate at all; with fewer, the arm fails with the reason. The rate
/// comes from the watermarks, but a window the arm's own acknowledgements barely touch is not a steady state.
pub const MIN_ACKS_IN_WINDOW: u64 = 10;

/// Fails unless the window held [`MIN_ACKS_IN_WINDOW`] acknowledgements; `what` names them (`delivery
/// reports`, `whole-batch acknowledgements`), `hint` says what would give more.
pub fn enough_acks(acks: u64, what: &str, seconds: f64, hint: &str) -> Result<()> {
    if acks < MIN_ACKS_IN_WINDOW {
        bail!(
            "only {acks} {what} in the {seconds:.2} s window; at least {MIN_ACKS_IN_WINDOW} are needed for a \
             rate{hint}"
        );
    }
    Ok(())
}

/// The rate metrics from the watermark window: `records_per_s` and `mb_per_s` (payload bytes), the bytes a
/// record weighs (value and key), the
/// records the broker appended, and how long each sample took with the error that implies. A window with
/// nothing in it fails: that is no rate, not a rate of zero.
pub fn rate_metrics(w: &WatermarkWindow, payload_bytes: usize) -> Result<BTreeMap<String, Metric>> {
    let Some(rate) = w.records_per_s() else {
        bail!(
            "the topic's high watermarks did not move in the {:.2} s window ({} at its start, {} at its end)",
            w.seconds(),
            w.open.sum,
            w.close.sum
        );
    };
    Ok(BTreeMap::from([
        ("records_per_s".to_owned(), Metric::new(rate, "records/s", true)),
        ("mb_per_s".to_owned(), Metric::new(rate * payload_bytes as f64 / 1e6, "MB/s", true)),
        // What each record weighs, so a ratio can check both sides did the same work (both arms send no key).
        ("bytes_per_record".to_owned(), Metric::new(payload_bytes as f64, "B", false)),
        ("key_bytes_per_record".to_owned(), Metric::new(0.0, "B", false)),
        ("window_records".to_owned(), Metric::new(w.records() as f64, "records", true)),
        ("window_s".to_owned(), Metric::new(w.seconds(), "s", false)),
        ("watermark_sample_open_ms".to_owned(), Metric::new(w.open.took.as_secs_f64() * 1e3, "ms", false)),
        ("watermark_sample_close_ms".to_owned(), Metric::new(w.close.took.as_secs_f64() * 1e3, "ms", false)),
        ("watermark_timing_error_pct".to_owned(), Metric::new(w.timing_error() * 100.0, "%", false)),
    ]))
}

/// The note's sentence on how the rate was counted.
pub fn rate_note(w: &WatermarkWindow) -> String {
    format!(
        "rate = rise of the sum of the topic's partition high watermarks ({} -> {}, {} records) between two \
         ListOffsets samples from a client of its own, {:.3} s apart (midpoint to midpoint; the samples took \
         {:.2} and {:.2} ms: the rate is known to +-{:.3}%)",
        w.open.sum,
        w.close.sum,
        w.records(),
        w.seconds(),
        w.open.took.as_secs_f64() * 1e3,
        w.close.took.as_secs_f64() * 1e3,
        w.timing_error() * 100.0
    )
}

/// The settings both arms' work is made of, as the arm's producer runs them: keyless fixed-size byte
/// payloads, one librdkafka producer (one connection per broker), the clock from the end of the warm-up.
pub fn applied(
    payload_bytes: usize,
    partitions: i32,
    warmup_s: f64,
    window_s: f64,
    producer: &ClientConfig,
) -> Result<Applied> {
    let conf = LibrdkafkaConf::of_client_config(producer)?;
    Ok(AppliedBuilder::new()
        .set(
            applied::WORKLOAD,
            format!("produce {payload_bytes} B records to {partitions} partitions for {window_s} s after {warmup_s} s warm-up"),
        )
        .set(applied::FORMAT, "bytes")
        .set(applied::KEY, "none")
        .set(applied::CONNECTIONS, "1 per broker")
        .set(applied::CLOCK_START, "after warm-up")
        .set(applied::OFFERED_LOAD, "unbounded")
        .producer(conf.producer())
        .build())
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use crate::kafka::watermarks::WatermarkSample;

    use super::*;

    #[test]
    fn a_window_needs_ten_acknowledgements() {
        let err = enough_acks(7, "whole-batch acknowledgements", 8.0, ": lengthen window_s").unwrap_err().to_string();
        assert!(err.starts_with("only 7 whole-batch acknowledgements in the 8.00 s window; at least 10"), "{err}");
        assert!(enough_acks(10, "delivery reports", 8.0, "").is_ok());
    }

    #[test]
    fn the_rate_is_the_brokers_count_over_the_window() {
        let t0 = Instant::now();
        let s = |ms, sum| WatermarkSample { sum, sent: t0 + Duration::from_millis(ms), took: Duration::from_millis(2) };
        let m = rate_metrics(&WatermarkWindow { open: s(0, 100), close: s(4000, 1_000_100) }, 256).unwrap();
        assert_eq!(m["records_per_s"].value, 250_000.0);
        assert_eq!(m["mb_per_s"].value, 64.0);
        assert_eq!((m["bytes_per_record"].value, m["key_bytes_per_record"].value), (256.0, 0.0));
        assert_eq!(m["watermark_sample_open_ms"].value, 2.0);
        assert!((m["watermark_timing_error_pct"].value - 0.05).abs() < 1e-9);
        let still = rate_metrics(&WatermarkWindow { open: s(0, 100), close: s(4000, 100) }, 256).unwrap_err();
        assert!(still.to_string().contains("did not move"), "{still}");
    }

    #[test]
    fn the_applied_map_reads_the_producer_back_from_librdkafka() {
        let mut cfg = ClientConfig::new();
        cfg.set("bootstrap.servers", "127.0.0.1:1").set("acks", "all").set("enable.idempotence", "true");
        let a = applied(256, 16, 3.0, 8.0, &cfg).unwrap();
        assert_eq!(a[applied::WORKLOAD], "produce 256 B records to 16 partitions for 8 s after 3 s warm-up");
        assert_eq!(a["producer.acks"], "-1");
        assert_eq!(a["producer.max.in.flight.requests.per.connection"], "5");
        assert_eq!(a["producer.linger.ms"], "5", "librdkafka's default, read back");
        assert_eq!(a[applied::FORMAT], "bytes");
    }
}
