//! What Kafka 4.1.0's perf tools print on stdout (their logging goes to stderr), parsed.
//!
//! ProducerPerformance: optional `Reading payloads from:` / `Number of messages read: N` lines, a window line
//! every 5 s, then the total line (the only one with "50th"), then with `--print-metrics` a table of
//! `group:name:{tags} : value` rows. ConsumerPerformance: a header line, maybe a `WARNING: Exiting before
//! consuming the expected number of messages` line, then one CSV line of 10 fields. On stderr, the client's
//! `ProducerConfig values:` / `ConsumerConfig values:` block: what it ran with.

use std::collections::BTreeMap;

use anyhow::{Context, Result, bail};

/// ProducerPerformance's total line:
/// `N records sent, R records/sec (M MB/sec), A ms avg latency, X ms max latency, P ms 50th, .. 95th, .. 99th, .. 99.9th.`
#[derive(Debug, Clone, PartialEq)]
pub struct ProducerTotal {
    /// Records whose send callback completed without an exception (acknowledged).
    pub sent: u64,
    /// `sent` over the tool's window, printed with one decimal.
    pub records_per_s: f64,
    /// MB = 2^20 bytes.
    pub mib_per_s: f64,
    pub avg_latency_ms: f64,
    pub max_latency_ms: f64,
    /// Send -> callback latencies, integer milliseconds.
    pub p50_ms: u64,
    pub p95_ms: u64,
    pub p99_ms: u64,
    pub p99_9_ms: u64,
}

impl ProducerTotal {
    /// The tool's window in seconds: records sent over its own rate (None when nothing was sent).
    pub fn window_s(&self) -> Option<f64> {
        (self.sent > 0 && self.records_per_s > 0.0).then(|| self.sent as f64 / self.records_per_s)
    }
}

/// The total line of a ProducerPerformance run; an error (showing the output) when the tool printed none.
pub fn producer_total(stdout: &str) -> Result<ProducerTotal> {
    let line = stdout
        .lines()
        .find(|l| l.contains(" ms 50th,"))
        .with_context(|| format!("ProducerPerformance printed no total line (the one with \"50th\"):\n{stdout}"))?;
    parse_producer_total(line).with_context(|| format!("cannot read ProducerPerformance's total line {line:?}"))
}

fn parse_producer_total(line: &str) -> Result<ProducerTotal> {
    let fields: Vec<&str> = line.trim_end().trim_end_matches('.').split(", ").collect();
    let [sent, rate, avg, max, p50, p95, p99, p999] = fields.as_slice() else {
        bail!("expected 8 comma-separated fields, found {}", fields.len());
    };
    let (records_per_s, mib_per_s) = rate
        .strip_suffix(" MB/sec)")
        .and_then(|r| r.split_once(" records/sec ("))
        .with_context(|| format!("{rate:?} is not \"R records/sec (M MB/sec)\""))?;
    Ok(ProducerTotal {
        sent: number_before(sent, " records sent")?,
        records_per_s: number(records_per_s)?,
        mib_per_s: number(mib_per_s)?,
        avg_latency_ms: number_before(avg, " ms avg latency")?,
        max_latency_ms: number_before(max, " ms max latency")?,
        p50_ms: number_before(p50, " ms 50th")?,
        p95_ms: number_before(p95, " ms 95th")?,
        p99_ms: number_before(p99, " ms 99th")?,
        p99_9_ms: number_before(p999, " ms 99.9th")?,
    })
}

/// How many payloads `--payload-file` gave the tool (`Number of messages read: N`), if it read a file.
pub fn payloads_read(stdout: &str) -> Option<u64> {
    stdout.lines().find_map(|l| l.strip_prefix("Number of messages read: ")).and_then(|n| n.trim().parse().ok())
}

/// One `producer-metrics:<name>:{client-id=..} : value` row of `--print-metrics`.
pub fn producer_metric(stdout: &str, name: &str) -> Option<f64> {
    let prefix = format!("producer-metrics:{name}:{{");
    let row = stdout.lines().find(|l| l.starts_with(&prefix))?;
    row.rsplit_once(" : ").and_then(|(_, value)| value.trim().parse().ok())
}

/// ConsumerPerformance's CSV line (`data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec,
/// rebalance.time.ms, fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec` after the two timestamps).
#[derive(Debug, Clone, PartialEq)]
pub struct ConsumerTotal {
    /// Key + value bytes, in MB of 2^20 bytes, printed with 4 decimals.
    pub mib: f64,
    pub consumed: u64,
    /// Over the whole window, the group join included.
    pub records_per_s: f64,
    /// The group join (subscribe -> partitions assigned).
    pub rebalance_ms: u64,
    /// The window without the join.
    pub fetch_ms: u64,
    pub fetch_mib_per_s: f64,
    /// `consumed` over `fetch_ms`.
    pub fetch_records_per_s: f64,
    /// The tool's `WARNING: Exiting before consuming the expected number of messages ...` line, if it gave up.
    pub warning: Option<String>,
}

const CONSUMER_HEADER: &str = "start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg";

/// The CSV line of a ConsumerPerformance run; an error (showing the output) when there is none.
pub fn consumer_total(stdout: &str) -> Result<ConsumerTotal> {
    let mut lines = stdout.lines().skip_while(|l| !l.starts_with(CONSUMER_HEADER));
    lines.next().with_context(|| format!("ConsumerPerformance printed no header line:\n{stdout}"))?;
    let mut warning = None;
    for line in lines {
        if line.starts_with("WARNING: ") {
            warning = Some(line.trim().to_owned());
            continue;
        }
        if line.split(", ").count() == 10 {
            let total = parse_consumer_line(line)
                .with_context(|| format!("cannot read ConsumerPerformance's line {line:?}"))?;
            return Ok(ConsumerTotal { warning, ..total });
        }
    }
    bail!("ConsumerPerformance printed no result line after its header:\n{stdout}")
}

fn parse_consumer_line(line: &str) -> Result<ConsumerTotal> {
    let fields: Vec<&str> = line.trim().split(", ").collect();
    let [_start, _end, mib, _mib_s, consumed, rate, rebalance, fetch, fetch_mib_s, fetch_rate] = fields.as_slice()
    else {
        bail!("expected 10 fields, found {}", fields.len());
    };
    Ok(ConsumerTotal {
        mib: number(mib)?,
        consumed: number(consumed)?,
        records_per_s: number(rate)?,
        rebalance_ms: number(rebalance)?,
        fetch_ms: number(fetch)?,
        fetch_mib_per_s: number(fetch_mib_s)?,
        fetch_records_per_s: number(fetch_rate)?,
        warning: None,
    })
}

/// Java's producer settings for the record, from its `ProducerConfig values:` block.
pub fn producer_applied(values: &BTreeMap<String, String>) -> Result<Vec<(&'static str, String)>> {
    // Java logs each setting the record names under the record's own name.
    let mut out = pick(values, streamlab_record::applied::PRODUCER_KEYS)?;
    out.extend(security(values)?);
    let adaptive = values.get("partitioner.adaptive.partitioning.enable").map(String::as_str) == Some("true");
    let partitioner = match values.get("partitioner.class").map(String::as_str) {
        None | Some("null") | Some("") if adaptive => "Java built-in sticky, adaptive".to_owned(),
        None | Some("null") | Some("") => "Java built-in sticky".to_owned(),
        Some(class) => class.trim_start_matches("class ").to_owned(),
    };
    out.push(("partitioner.class", partitioner));
    Ok(out)
}

/// Java's queue cap (`buffer.memory`, bytes only), from its `ProducerConfig values:` block.
pub fn queue_cap(values: &BTreeMap<String, String>) -> Result<String> {
    let bytes = values.get("buffer.memory").context("the client's configuration block has no buffer.memory")?;
    let bytes: u64 = number(bytes)?;
    Ok(streamlab_record::applied::queue_cap(None, bytes))
}

/// Java's consumer settings for the record, from its `ConsumerConfig values:` block.
pub fn consumer_applied(values: &BTreeMap<String, String>) -> Result<Vec<(&'static str, String)>> {
    let mut out = pick(
        values,
        &["fetch.min.bytes", "fetch.max.wait.ms", "fetch.max.bytes", "max.partition.fetch.bytes", "max.poll.records"],
    )?;
    out.extend(security(values)?);
    Ok(out)
}

fn pick(values: &BTreeMap<String, String>, names: &[&'static str]) -> Result<Vec<(&'static str, String)>> {
    names
        .iter()
        .map(|n| {
            let v = values.get(*n).with_context(|| format!("the client's configuration block has no {n}"))?;
            Ok((*n, v.clone()))
        })
        .collect()
}

/// security.protocol, and sasl.mechanism where SASL is on (Java prints its GSSAPI default otherwise).
fn security(values: &BTreeMap<String, String>) -> Result<Vec<(&'static str, String)>> {
    let mut out = pick(values, &["security.protocol"])?;
    if out[0].1.starts_with("SASL") {
        out.extend(pick(values, &["sasl.mechanism"])?);
    }
    Ok(out)
}

fn number_before<T: std::str::FromStr>(field: &str, suffix: &str) -> Result<T> {
    let n = field.strip_suffix(suffix).with_context(|| format!("{field:?} does not end in {suffix:?}"))?;
    number(n)
}

fn number<T: std::str::FromStr>(text: &str) -> Result<T> {
    text.trim().parse().map_err(|_| anyhow::anyhow!("{text:?} is not a number"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kafka::java_tools::config_values;

    // Real stdout of ProducerPerformance / ConsumerPerformance 4.1.0 against the lab's 4.1.0 broker.
    const PRODUCER: &str = include_str!("../testdata/java-producer-plaintext.txt");
    const PRODUCER_THROTTLED: &str = include_str!("../testdata/java-producer-throttled.txt");
    const PRODUCER_PARTIAL: &str = include_str!("../testdata/java-producer-partial.txt");
    const PRODUCER_CONFIG_ERROR: &str = include_str!("../testdata/java-producer-config-error.txt");
    const CONSUMER: &str = include_str!("../testdata/java-consumer-plaintext.txt");
    const CONSUMER_SHORT: &str = include_str!("../testdata/java-consumer-short.txt");
    const CONSUMER_UNKNOWN_TOPIC: &str = include_str!("../testdata/java-consumer-unknown-topic.txt");

    #[test]
    fn the_producer_total_line_is_read_field_by_field() {
        let t = producer_total(PRODUCER).unwrap();
        assert_eq!(
            t,
            ProducerTotal {
                sent: 200_000,
                records_per_s: 105_207.8,
                mib_per_s: 10.03,
                avg_latency_ms: 72.36,
                max_latency_ms: 497.0,
                p50_ms: 49,
                p95_ms: 179,
                p99_ms: 189,
                p99_9_ms: 190,
            }
        );
        let window = t.window_s().unwrap();
        assert!((window - 1.901).abs() < 0.001, "{window}");
        assert_eq!(payloads_read(PRODUCER), Some(1));
    }

    #[test]
    fn window_lines_are_not_mistaken_for_the_total() {
        assert!(PRODUCER_THROTTLED.contains("44958 records sent, 8982.6 records/sec"), "the sample has a window line");
        let t = producer_total(PRODUCER_THROTTLED).unwrap();
        assert_eq!((t.sent, t.records_per_s, t.p99_9_ms), (60_000, 8994.2, 169));
    }

    #[test]
    fn the_metrics_table_gives_errors_batches_and_connections() {
        assert_eq!(producer_metric(PRODUCER, "record-send-total"), Some(200_000.0));
        assert_eq!(producer_metric(PRODUCER, "record-error-total"), Some(0.0));
        assert_eq!(producer_metric(PRODUCER, "batch-size-avg"), Some(372_990.831));
        assert_eq!(producer_metric(PRODUCER, "connection-count"), Some(2.0));
        assert_eq!(producer_metric(PRODUCER, "no-such-metric"), None);
        assert_eq!(producer_metric(PRODUCER_CONFIG_ERROR, "record-send-total"), None);
    }

    #[test]
    fn failed_sends_show_as_fewer_records_sent_and_as_record_errors() {
        // 2000 records, 978 of them over max.request.size: their callbacks failed, the tool still exited 0.
        let t = producer_total(PRODUCER_PARTIAL).unwrap();
        assert_eq!(t.sent, 1022);
        assert_eq!(producer_metric(PRODUCER_PARTIAL, "record-error-total"), Some(978.0));
        assert_eq!(payloads_read(PRODUCER_PARTIAL), Some(2));
    }

    #[test]
    fn output_without_a_total_line_is_an_error_that_shows_it() {
        let e = producer_total(PRODUCER_CONFIG_ERROR).unwrap_err().to_string();
        assert!(e.contains("no total line") && e.contains("Number of messages read: 1"), "{e}");
        // Cut off before the total: the window line alone is not a total.
        let cut: String = PRODUCER_THROTTLED.lines().take(3).map(|l| format!("{l}\n")).collect();
        assert!(cut.contains("records sent") && producer_total(&cut).is_err());
        // A total line with a field torn off is refused, not half-read.
        let line = PRODUCER.lines().find(|l| l.contains("50th")).unwrap();
        let torn = line.rsplit_once(", ").unwrap().0;
        assert!(producer_total(&format!("{torn}, 3 ms 50th,x\n")).is_err());
        assert!(producer_total(&format!("{}\n", line.replace("105207.8", "many"))).is_err());
    }

    #[test]
    fn the_consumer_csv_line_is_read_field_by_field() {
        let t = consumer_total(CONSUMER).unwrap();
        assert_eq!(
            t,
            ConsumerTotal {
                mib: 38.147,
                consumed: 400_000,
                records_per_s: 157047.5069,
                rebalance_ms: 753,
                fetch_ms: 1794,
                fetch_mib_per_s: 21.2636,
                fetch_records_per_s: 222965.4404,
                warning: None,
            }
        );
    }

    #[test]
    fn a_consumer_that_gave_up_reports_its_warning_and_what_it_read() {
        let short = consumer_total(CONSUMER_SHORT).unwrap();
        assert_eq!(short.consumed, 400_000);
        assert!(short.warning.as_deref().unwrap().contains("timeout (3000 ms) exceeded"));
        let none = consumer_total(CONSUMER_UNKNOWN_TOPIC).unwrap();
        assert_eq!((none.consumed, none.fetch_records_per_s), (0, 0.0));
        assert!(none.warning.is_some());
    }

    #[test]
    fn the_clients_configuration_block_gives_what_it_ran_with() {
        let stderr = include_str!("../testdata/java-producer-plaintext.stderr");
        let values = config_values(stderr, "ProducerConfig").unwrap();
        assert_eq!(values["client.id"], "perf-producer-client");
        assert_eq!(values["ssl.truststore.type"], "JKS", "the block is read to its last line");
        let applied: BTreeMap<_, _> = producer_applied(&values).unwrap().into_iter().collect();
        assert_eq!(applied["acks"], "1");
        assert_eq!(applied["enable.idempotence"], "false");
        assert_eq!(applied["batch.size"], "1000000");
        assert_eq!(applied["max.in.flight.requests.per.connection"], "5");
        assert_eq!(applied["partitioner.class"], "Java built-in sticky, adaptive");
        assert_eq!(queue_cap(&values).unwrap(), "32768 KiB", "buffer.memory's default, 33554432 B");
        assert_eq!(applied["security.protocol"], "PLAINTEXT");
        assert!(!applied.contains_key("sasl.mechanism"), "GSSAPI is Java's default, not in use");
        assert!(config_values(stderr, "ConsumerConfig").is_none());
        let consumer = include_str!("../testdata/java-consumer-plaintext.stderr");
        let values = config_values(consumer, "ConsumerConfig").unwrap();
        let applied: BTreeMap<_, _> = consumer_applied(&values).unwrap().into_iter().collect();
        assert_eq!(applied["max.poll.records"], "500");
        assert_eq!(applied["max.partition.fetch.bytes"], "16777216", "--fetch-size");
        assert_eq!((applied["fetch.max.wait.ms"].as_str(), applied["fetch.max.bytes"].as_str()), ("100", "16777216"));
        let mut without = values.clone();
        without.remove("fetch.min.bytes");
        assert!(consumer_applied(&without).unwrap_err().to_string().contains("no fetch.min.bytes"));
    }

    #[test]
    fn consumer_output_without_its_csv_line_is_an_error() {
        let header_only: String = CONSUMER.lines().take(1).map(|l| format!("{l}\n")).collect();
        assert!(consumer_total(&header_only).unwrap_err().to_string().contains("no result line"));
        let data_only: String = CONSUMER.lines().skip(1).collect();
        assert!(consumer_total(&data_only).unwrap_err().to_string().contains("no header line"));
        let garbled = CONSUMER.replace("400000", "lots");
        assert!(consumer_total(&garbled).is_err());
    }
}
