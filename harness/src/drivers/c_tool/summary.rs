//! `rdkafka_performance`'s final summary lines (examples/rdkafka_performance.c, `print_stats` with
//! `_OTYPE_FORCE`; printed even with -q), and the lines worth keeping in a record's note.
//!
//! Producer:
//! `% <msgs> messages produced (<bytes> bytes), <dr_ok> delivered (offset <last>, <dr_err> failed) in <ms>ms:
//!  <msgs/s> msgs/s and <MB/s> MB/s, <tx_err> produce failures, <outq> in queue, <label> compression`
//! Consumer:
//! `% <msgs> messages (<bytes> bytes) consumed in <ms>ms: <msgs/s> msgs/s (<MB/s> MB/s)[, latency ...]`

use std::str::FromStr;
use std::time::Duration;

/// The producer's final line.
#[derive(Debug, Clone, PartialEq)]
pub struct ProducerSummary {
    /// Records handed to librdkafka, minus those still queued at the end.
    pub produced: u64,
    pub bytes: u64,
    /// Delivery reports without an error: the acknowledged records.
    pub delivered: u64,
    /// The offset of the last delivery report, in its own partition (meaningless as a total).
    pub last_offset: i64,
    /// Delivery reports with an error.
    pub failed: u64,
    /// From just before the produce loop to the last delivery report.
    pub elapsed_ms: u64,
    pub msgs_per_s: u64,
    /// 10^6 bytes per second of delivered payload.
    pub mb_per_s: f64,
    /// "produce failures": QUEUE_FULL retries of rd_kafka_produce (backpressure), not broker errors.
    pub backpressures: u64,
    pub in_queue: u64,
    /// `-z`'s codec name, or `no` when compression was set with -X.
    pub compression_label: String,
}

impl ProducerSummary {
    /// The tool's clock, to the µs its msgs/s was computed from (see [`tool_elapsed`]).
    pub fn elapsed(&self) -> Duration {
        tool_elapsed(self.delivered, self.msgs_per_s, self.elapsed_ms)
    }
}

/// The consumer's final line.
#[derive(Debug, Clone, PartialEq)]
pub struct ConsumerSummary {
    pub consumed: u64,
    pub bytes: u64,
    /// From the first message received to the end of the consume loop.
    pub elapsed_ms: u64,
    pub msgs_per_s: u64,
    pub mb_per_s: f64,
}

impl ConsumerSummary {
    /// The tool's clock, to the µs its msgs/s was computed from (see [`tool_elapsed`]).
    pub fn elapsed(&self) -> Duration {
        tool_elapsed(self.consumed, self.msgs_per_s, self.elapsed_ms)
    }
}

/// The tool prints its clock truncated to ms, and `count * 1e6 / t_us` truncated to an integer msgs/s. The
/// latter pins t_us far more finely when msgs/s is large (to 1 / msgs_per_s of itself); taken only where it
/// agrees with the ms figure, else the ms figure.
pub fn tool_elapsed(count: u64, msgs_per_s: u64, elapsed_ms: u64) -> Duration {
    let ms = Duration::from_millis(elapsed_ms);
    if count == 0 || msgs_per_s == 0 {
        return ms;
    }
    // msgs_per_s = floor(count * 1e6 / t_us): t_us lies in (count * 1e6 / (r + 1), count * 1e6 / r].
    let t_us = count as f64 * 1e6 / (msgs_per_s as f64 + 0.5);
    let within = (elapsed_ms as f64 * 1000.0..(elapsed_ms + 1) as f64 * 1000.0).contains(&t_us);
    if within { Duration::from_secs_f64(t_us / 1e6) } else { ms }
}

const PRODUCER: &[&str] = &[
    "% ",
    " messages produced (",
    " bytes), ",
    " delivered (offset ",
    ", ",
    " failed) in ",
    "ms: ",
    " msgs/s and ",
    " MB/s, ",
    " produce failures, ",
    " in queue, ",
    " compression",
];
const CONSUMER: &[&str] = &["% ", " messages (", " bytes) consumed in ", "ms: ", " msgs/s (", " MB/s)"];

/// The last producer summary line of the tool's stdout.
pub fn producer(stdout: &str) -> Option<ProducerSummary> {
    stdout.lines().rev().find_map(producer_line)
}

fn producer_line(line: &str) -> Option<ProducerSummary> {
    let (f, rest) = fields(line.trim_end(), PRODUCER)?;
    if !rest.is_empty() {
        return None;
    }
    Some(ProducerSummary {
        produced: num(f[0])?,
        bytes: num(f[1])?,
        delivered: num(f[2])?,
        last_offset: num(f[3])?,
        failed: num(f[4])?,
        elapsed_ms: num(f[5])?,
        msgs_per_s: num(f[6])?,
        mb_per_s: num(f[7])?,
        backpressures: num(f[8])?,
        in_queue: num(f[9])?,
        compression_label: f[10].to_owned(),
    })
}

/// The last consumer summary line of the tool's stdout (the `-l` latency suffix, if any, is ignored).
pub fn consumer(stdout: &str) -> Option<ConsumerSummary> {
    stdout.lines().rev().find_map(consumer_line)
}

fn consumer_line(line: &str) -> Option<ConsumerSummary> {
    let (f, rest) = fields(line.trim_end(), CONSUMER)?;
    if !(rest.is_empty() || rest.starts_with(", latency ")) {
        return None;
    }
    Some(ConsumerSummary {
        consumed: num(f[0])?,
        bytes: num(f[1])?,
        elapsed_ms: num(f[2])?,
        msgs_per_s: num(f[3])?,
        mb_per_s: num(f[4])?,
    })
}

/// Splits `line` at `literals` in order: the first must start it; returns the text between consecutive
/// literals (one field each, after the last literal: one field if the last literal is not at the end) and
/// the rest after the last literal.
fn fields<'a>(line: &'a str, literals: &[&str]) -> Option<(Vec<&'a str>, &'a str)> {
    let (first, others) = literals.split_first()?;
    let mut rest = line.strip_prefix(first)?;
    let mut out = Vec::with_capacity(others.len());
    for literal in others {
        let at = rest.find(literal)?;
        out.push(&rest[..at]);
        rest = &rest[at + literal.len()..];
    }
    Some((out, rest))
}

fn num<T: FromStr>(field: &str) -> Option<T> {
    field.parse().ok()
}

/// Lines that say something went wrong or was throttled (error callbacks, consume errors, backpressure),
/// from both streams, at most `max` of them.
pub fn notable_lines(stdout: &str, stderr: &str, max: usize) -> Vec<String> {
    const MARKERS: &[&str] = &[
        "% ERROR CALLBACK",
        "% FATAL ERROR CALLBACK",
        "% Consume error",
        "% produce error",
        "% No such partition",
        "backpressures for",
        "% THROTTLED",
        "% Error",
        "% Failed",
    ];
    stdout
        .lines()
        .chain(stderr.lines())
        .filter(|l| MARKERS.iter().any(|m| l.contains(m)))
        .take(max)
        .map(|l| l.trim().to_owned())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Real output, captured from the lab's builds against the env's Kafka 4.1.0 (see testdata/README.md).
    fn testdata(name: &str) -> String {
        let path = crate::manifest_dir().join("src/drivers/testdata").join(name);
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    }

    #[test]
    fn the_2_12_producer_summary_on_scram_is_parsed() {
        let s = producer(&testdata("c_2_12_produce_scram512.stdout")).expect("a summary line");
        assert_eq!((s.produced, s.delivered, s.failed, s.in_queue), (200_000, 200_000, 0, 0));
        assert_eq!(s.bytes, 200_000 * 100);
        assert!(s.elapsed_ms > 0 && s.msgs_per_s > 0 && s.mb_per_s > 0.0, "{s:?}");
        assert_eq!(s.compression_label, "no");
        // msgs/s is delivered * 1e6 / t_total_us: within the ms rounding of elapsed_ms.
        let from_ms = s.delivered as f64 * 1000.0 / s.elapsed_ms as f64;
        assert!((s.msgs_per_s as f64 / from_ms - 1.0).abs() < 0.01, "{s:?}");
    }

    #[test]
    fn the_2_15_producer_summary_with_lz4_and_backpressure_is_parsed() {
        let out = testdata("c_2_15_produce_lz4_backpressure.stdout");
        let s = producer(&out).expect("a summary line");
        assert_eq!((s.produced, s.delivered, s.failed), (200_000, 200_000, 0));
        assert!(s.backpressures > 0, "{s:?}");
        let notable = notable_lines(&out, "", 10);
        assert!(notable.iter().any(|l| l.contains("backpressures for")), "{notable:?}");
    }

    #[test]
    fn the_consumer_summaries_of_both_builds_are_parsed() {
        for file in ["c_2_12_fetch_plaintext.stdout", "c_2_15_fetch_oauth.stdout"] {
            let s = consumer(&testdata(file)).unwrap_or_else(|| panic!("{file}: a summary line"));
            assert_eq!((s.consumed, s.bytes), (200_000, 200_000 * 100), "{file}");
            assert!(s.elapsed_ms > 0 && s.msgs_per_s > 0, "{file}: {s:?}");
            assert!(producer(&testdata(file)).is_none(), "{file}: a consumer line is not a producer line");
        }
    }

    #[test]
    fn a_run_whose_deliveries_all_failed_reports_them_as_failed_not_delivered() {
        // A real 2.12.1 run to a topic that does not exist (auto-create off): every record timed out.
        let s = producer(&testdata("c_2_12_produce_failed.stdout")).expect("a summary line");
        assert_eq!((s.produced, s.delivered, s.failed, s.msgs_per_s), (5000, 0, 5000, 0), "{s:?}");
        assert!(s.last_offset < 0, "no record got an offset: {s:?}");
    }

    #[test]
    fn librdkafkas_config_warnings_on_stderr_are_not_notable() {
        let stderr = testdata("c_2_12_produce_scram512.stderr");
        assert!(stderr.contains("CONFWARN"));
        assert!(notable_lines(&testdata("c_2_12_produce_scram512.stdout"), &stderr, 10).is_empty());
    }

    #[test]
    fn the_elapsed_time_is_refined_by_the_rate_within_the_printed_ms() {
        for file in ["c_2_12_produce_scram512.stdout", "c_2_15_produce_lz4_backpressure.stdout"] {
            let s = producer(&testdata(file)).unwrap();
            let t = s.elapsed();
            assert!(
                t >= Duration::from_millis(s.elapsed_ms) && t < Duration::from_millis(s.elapsed_ms + 1),
                "{file}: {t:?}"
            );
            // The rate over the refined time is the tool's own msgs/s, to within 1 record/s.
            assert!((s.delivered as f64 / t.as_secs_f64() - s.msgs_per_s as f64).abs() < 1.0, "{file}: {t:?} {s:?}");
        }
        let c = consumer(&testdata("c_2_15_fetch_oauth.stdout")).unwrap();
        assert!((c.consumed as f64 / c.elapsed().as_secs_f64() - c.msgs_per_s as f64).abs() < 1.0, "{c:?}");
        // Nothing to refine with, or a rate that disagrees with the ms: the ms as printed.
        assert_eq!(tool_elapsed(0, 0, 3006), Duration::from_millis(3006));
        assert_eq!(tool_elapsed(1000, 5, 20), Duration::from_millis(20));
    }

    #[test]
    fn a_short_or_cut_output_has_no_summary() {
        let out = testdata("c_2_12_produce_scram512.stdout");
        let without_summary: String =
            out.lines().filter(|l| !l.contains("messages produced")).map(|l| format!("{l}\n")).collect();
        assert_eq!(producer(&without_summary), None);
        let line = out.lines().find(|l| l.contains("messages produced")).unwrap();
        // Cut mid-line (a tool killed while printing) or with one number mangled: refused, not half-read.
        assert_eq!(producer(&line[..line.len() - 12]), None);
        assert_eq!(producer(&line.replacen("200000 delivered", "2e5 delivered", 1)), None);
        assert_eq!(consumer(line), None);
    }

    #[test]
    fn a_latency_suffix_on_the_consumer_line_is_allowed() {
        let line = "% 1000 messages (100000 bytes) consumed in 25ms: 40000 msgs/s (4.00 MB/s), latency curr/avg/lo/hi 1.00/2.00/0.50/3.00ms";
        assert_eq!(consumer(line).unwrap().consumed, 1000);
        assert_eq!(consumer(&format!("{line} trailing")).map(|s| s.consumed), Some(1000));
        assert_eq!(
            consumer("% 1000 messages (100000 bytes) consumed in 25ms: 40000 msgs/s (4.00 MB/s) and more"),
            None
        );
    }
}
