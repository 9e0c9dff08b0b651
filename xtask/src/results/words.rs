//! Metric keys in words, for chart titles and headings: `records_per_s` is "Records per second".

/// Every metric the arms report, in words. A key not listed is spelled out by [`spell_out`].
const TITLES: &[(&str, &str)] = &[
    ("records_per_s", "Records per second"),
    ("mb_per_s", "Megabytes per second"),
    ("total_cpu_s", "CPU seconds, all processes"),
    ("total_cpu_s_per_m_rows", "CPU seconds per million rows, all processes"),
    ("arm_cpu_s", "CPU seconds of the arm"),
    ("arm_cpu_s_per_m_rows", "CPU seconds per million rows, the arm alone"),
    ("arm_startup_cpu_s", "CPU seconds of the arm's start-up"),
    ("broker_cpu_s", "CPU seconds of the broker"),
    ("server_cpu_s", "CPU seconds of the database server"),
    ("harness_cpu_s", "CPU seconds of the harness process"),
    ("client_cpu_s", "CPU seconds of the client"),
    ("client_cpu_s_per_m_records", "Client CPU seconds per million records"),
    ("broker_cpu_s_per_m_records", "Broker CPU seconds per million records"),
    ("total_cpu_s_per_m_records", "CPU seconds per million records, client and brokers"),
    ("records_per_cpu_s", "Records per CPU second, client and brokers"),
    ("startup_s", "Start-up time, seconds"),
    ("idle_tail_s", "Idle tail after the last record, seconds"),
    ("window_s", "Measured window, seconds"),
    ("elapsed_s", "Elapsed time, seconds"),
    ("load_s", "Load time, seconds"),
    ("lag_p50_ms", "Commit-to-broker lag, median (ms)"),
    ("lag_p99_ms", "Commit-to-broker lag, 99th percentile (ms)"),
    ("lag_max_ms", "Commit-to-broker lag, maximum (ms)"),
    ("insert_rows_per_s", "Rows per second the inserting session reached"),
    ("bytes_per_record", "Bytes per record (value)"),
    ("key_bytes_per_record", "Bytes per record (key)"),
    ("landed", "Records landed"),
    ("rows", "Rows"),
    ("acked", "Records acknowledged"),
    ("consumed", "Records consumed"),
    ("high_watermark", "Sum of the partitions' high watermarks"),
    ("delivered_total", "Records delivered"),
    ("samples", "Round trips measured"),
    ("fetch_requests", "Fetch requests"),
    ("first_queued_ms", "Time to the first queued record (ms)"),
    ("produce_ack_p50_us", "Produce-to-acknowledgement latency, median (µs)"),
    ("produce_ack_p99_us", "Produce-to-acknowledgement latency, 99th percentile (µs)"),
    ("produce_ack_p99_9_us", "Produce-to-acknowledgement latency, 99.9th percentile (µs)"),
    ("produce_ack_max_us", "Produce-to-acknowledgement latency, maximum (µs)"),
    ("publish_p50_us", "Publish latency from the intended send, median (µs)"),
    ("publish_p90_us", "Publish latency from the intended send, 90th percentile (µs)"),
    ("publish_p99_us", "Publish latency from the intended send, 99th percentile (µs)"),
    ("publish_p99_9_us", "Publish latency from the intended send, 99.9th percentile (µs)"),
    ("publish_p99_99_us", "Publish latency from the intended send, 99.99th percentile (µs)"),
    ("publish_max_us", "Publish latency from the intended send, maximum (µs)"),
    ("publish_from_send_p99_9_us", "Publish latency from the actual send, 99.9th percentile (µs)"),
    ("end_to_end_p50_us", "End-to-end latency from the intended send, median (µs)"),
    ("end_to_end_p99_us", "End-to-end latency from the intended send, 99th percentile (µs)"),
    ("end_to_end_p99_9_us", "End-to-end latency from the intended send, 99.9th percentile (µs)"),
    ("offered_rate", "Offered rate (records/s)"),
    ("achieved_rate", "Achieved rate (records/s)"),
    ("fetch_rpc_p50_us", "Fetch request latency, median (µs)"),
    ("fetch_rpc_p99_us", "Fetch request latency, 99th percentile (µs)"),
    ("fetch_rpc_p99_9_us", "Fetch request latency, 99.9th percentile (µs)"),
    ("fetch_rpc_max_us", "Fetch request latency, maximum (µs)"),
    ("e2e_p50_ms", "End-to-end latency, median (ms)"),
    ("e2e_p99_ms", "End-to-end latency, 99th percentile (ms)"),
    ("broker_rtt_p99_ms", "Broker round-trip time, 99th percentile (ms)"),
    ("outbuf_latency_p99_ms", "Time in librdkafka's output buffer, 99th percentile (ms)"),
    ("int_latency_p99_ms", "Time in librdkafka's internal queue, 99th percentile (ms)"),
    ("producer_queue_messages", "Messages waiting in the producer's queue"),
];

/// A metric key in words.
pub fn metric_title(key: &str) -> String {
    TITLES.iter().find(|(k, _)| *k == key).map_or_else(|| spell_out(key), |(_, t)| (*t).to_owned())
}

/// A key no one named: its words, with the usual abbreviations spelled out (`_per_s` is "per second").
fn spell_out(key: &str) -> String {
    let words: Vec<&str> = key
        .split('_')
        .map(|w| match w {
            "s" => "seconds",
            "ms" => "milliseconds",
            "us" => "microseconds",
            "m" => "million",
            "cpu" => "CPU",
            "mb" => "megabytes",
            "p50" => "median",
            "p99" => "99th percentile",
            other => other,
        })
        .collect();
    let text = words.join(" ").replace("per seconds", "per second");
    let mut chars = text.chars();
    chars.next().map_or_else(String::new, |c| c.to_uppercase().chain(chars).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metric_keys_read_as_words() {
        assert_eq!(metric_title("records_per_s"), "Records per second");
        assert_eq!(metric_title("total_cpu_s_per_m_rows"), "CPU seconds per million rows, all processes");
        assert_eq!(metric_title("widgets_per_s"), "Widgets per second");
        assert_eq!(metric_title("queue_p99_ms"), "Queue 99th percentile milliseconds");
        for (key, title) in TITLES {
            assert!(!title.contains('_'), "{key}: {title}");
        }
    }
}
