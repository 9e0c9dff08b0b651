//! Kafka's Java tools and clients as every JVM the lab starts runs them (the clients bench's perf tools,
//! durability's ledger driver, the CDC arms' Connect workers): Kafka 4.1's JVM flags, the tools' log
//! configuration, and the client configuration block that configuration makes them log.

use std::collections::BTreeMap;

/// `kafka-run-class.sh`'s KAFKA_JVM_PERFORMANCE_OPTS default in Kafka 4.1.
pub const PERFORMANCE_OPTS: &[&str] = &[
    "-server",
    "-XX:+UseG1GC",
    "-XX:MaxGCPauseMillis=20",
    "-XX:InitiatingHeapOccupancyPercent=35",
    "-XX:+ExplicitGCInvokesConcurrent",
    "-XX:MaxInlineLevel=15",
    "-Djava.awt.headless=true",
];
/// WARN and above to stderr, so that the tools' stdout carries only their results, plus the client's
/// configuration block (see the file); compiled in so it holds wherever the harness binary runs from, and
/// written into the private directory for each run.
pub const TOOLS_LOG_CONFIG: &str = include_str!("java-tools-log4j2.yaml");

/// The `<kind> values:` block (`ProducerConfig`, `ConsumerConfig`) the client logs when it is created
/// (AbstractConfig, at INFO, to stderr by the tools' log configuration): every setting as the client holds it,
/// one `\tname = value` line each. None when the block is not there.
pub fn config_values(stderr: &str, kind: &str) -> Option<BTreeMap<String, String>> {
    let header = format!("{kind} values:");
    let mut lines = stderr.lines().skip_while(|l| !l.contains(&header));
    lines.next()?;
    let values: BTreeMap<String, String> = lines
        .map_while(|l| l.strip_prefix('\t'))
        .filter_map(|l| l.split_once(" ="))
        .map(|(k, v)| (k.trim().to_owned(), v.trim().to_owned()))
        .collect();
    (!values.is_empty()).then_some(values)
}
