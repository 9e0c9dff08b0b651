//! What an arm actually applied: the settings that change the work it did, as it ran them (not the knobs it
//! was handed). A ratio may divide two records only when their `applied` maps agree on every key its
//! contract does not name as a declared difference (site/headlines.toml); the site and the parity test read
//! these keys, so every arm writes them with the same names and spellings.
//!
//! Keys (values are strings, written the way a reader would compare them):
//! - [`WORKLOAD`]: the operation and its size, e.g. `produce 2000000 x 100 B to 6 partitions`,
//!   `snapshot 200000 rows of benchdb.cart`, `cdc backlog of 200000 rows`, `sink 200000 events into
//!   benchdb.bench_events`. Two records of the same point of the same sweep have the same workload.
//! - [`FORMAT`]: how each record's value is encoded on the wire, e.g. `bytes` (the clients' fixed payload),
//!   `row-json` (bare row JSON, DECIMAL as a string), `debezium-envelope` (JsonConverter with schemas: a
//!   schema and a payload of before/after/source/op), `connect-envelope` (schema + payload of the row).
//! - [`KEY`]: how each record's key is encoded: `none`, `id-text` (`1`), `id-json` (`{"id":1}`),
//!   `id-json-envelope` (`{"schema":...,"payload":{"id":1}}`).
//! - `producer.<name>` / `consumer.<name>`: the client settings that change the work, under Kafka's Java
//!   property names whatever the client (librdkafka's `compression.codec` is `producer.compression.type`):
//!   see [`PRODUCER_KEYS`] and [`CONSUMER_KEYS`]. Values are what the client ran with, defaults included,
//!   read back from the client where it can say, spelled by [`canonical`] (`acks=all` is `-1`, `5.0` is `5`);
//!   where the client caps a setting itself (librdkafka's idempotent producer: at most 5 requests in flight),
//!   the value is the one in force.
//! - [`CONNECTIONS`]: broker connections the client opened (or its cap) for the data path.
//! - [`QUEUE_CAP`]: a producer's cap on records queued and not yet acknowledged, as the client ran it, spelled
//!   by [`queue_cap`]: `1000000 records or 1048576 KiB` (librdkafka's queue.buffering.max.messages and
//!   .kbytes), `32768 KiB` (Java's and partitionline's buffer.memory, a byte cap only). A cap decides when the
//!   client refuses or blocks a send, so two clients with different caps say so.
//! - [`CLOCK_START`]: when the arm's clock starts, e.g. `before connect` or `after metadata`.
//! - [`OFFERED_LOAD`]: what was offered to the arm: `all rows present before the start` (a snapshot or a
//!   backlog), `paced at 20000 rows/s`, `unpaced: one inserting session` (the seed's CDC rig), `unbounded
//!   (the client produces as fast as it can)`.
//! - [`SINK`]: how a sink rig writes: e.g. `multi-row INSERT of 3000 rows, autocommit`, `JDBC batch of
//!   3000 single-row INSERTs, one transaction per batch`.
//! - [`TOPIC_REPLICATION_FACTOR`], [`TOPIC_MIN_INSYNC_REPLICAS`]: the topic the arm produced to, where a matrix
//!   varies it (durability: its replication-cost ratio declares `topic.*` as the difference).
//!
//! Bytes per record (value and key) are metrics (`bytes_per_record`, `key_bytes_per_record`), compared
//! within a contract's tolerance rather than exactly.

use std::collections::BTreeMap;

pub const WORKLOAD: &str = "workload";
pub const FORMAT: &str = "format";
pub const KEY: &str = "key";
pub const CONNECTIONS: &str = "connections";
pub const QUEUE_CAP: &str = "queue_cap";
pub const CLOCK_START: &str = "clock_start";
pub const OFFERED_LOAD: &str = "offered_load";
pub const SINK: &str = "sink";
pub const TOPIC_REPLICATION_FACTOR: &str = "topic.replication.factor";
pub const TOPIC_MIN_INSYNC_REPLICAS: &str = "topic.min.insync.replicas";

/// Producer settings a record names (under `producer.`), whichever of them the client has.
/// Only settings every client family has: a client-only cap (librdkafka's `batch.num.messages`) goes in the
/// record's details, and into a knob where it changes the work.
pub const PRODUCER_KEYS: &[&str] = &[
    "acks",
    "enable.idempotence",
    "compression.type",
    "linger.ms",
    "batch.size",
    "max.in.flight.requests.per.connection",
];

/// Consumer settings a record names (under `consumer.`).
pub const CONSUMER_KEYS: &[&str] =
    &["fetch.min.bytes", "fetch.max.wait.ms", "fetch.max.bytes", "max.partition.fetch.bytes", "max.poll.records"];

/// The applied settings of one record.
pub type Applied = BTreeMap<String, String>;

/// Builds an [`Applied`] map with the keys spelled as above.
#[derive(Debug, Default, Clone)]
pub struct AppliedBuilder(Applied);

impl AppliedBuilder {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn set(mut self, key: &str, value: impl ToString) -> Self {
        self.0.insert(key.to_owned(), value.to_string());
        self
    }

    /// `producer.<name>` for each `(name, value)`, spelled by [`canonical`].
    pub fn producer<'a>(self, settings: impl IntoIterator<Item = (&'a str, String)>) -> Self {
        self.prefixed("producer.", settings)
    }

    /// `consumer.<name>` for each `(name, value)`, spelled by [`canonical`].
    pub fn consumer<'a>(self, settings: impl IntoIterator<Item = (&'a str, String)>) -> Self {
        self.prefixed("consumer.", settings)
    }

    fn prefixed<'a>(mut self, prefix: &str, settings: impl IntoIterator<Item = (&'a str, String)>) -> Self {
        for (k, v) in settings {
            self.0.insert(format!("{prefix}{k}"), canonical(k, &v));
        }
        self
    }

    pub fn build(self) -> Applied {
        self.0
    }
}

/// One spelling per value, whichever client printed it: `acks` as `-1`/`0`/`1` (`all` is `-1`), booleans in
/// lower case, a number with a zero fraction without it (`5.0` is `5`), everything else trimmed.
pub fn canonical(key: &str, value: &str) -> String {
    let v = value.trim();
    if key == "acks" && v.eq_ignore_ascii_case("all") {
        return "-1".to_owned();
    }
    if v.eq_ignore_ascii_case("true") || v.eq_ignore_ascii_case("false") {
        return v.to_ascii_lowercase();
    }
    match v.parse::<f64>() {
        Ok(x) if x.is_finite() && x.fract() == 0.0 && x.abs() < 1e15 && v.contains('.') => format!("{}", x as i64),
        _ => v.to_owned(),
    }
}

/// The [`QUEUE_CAP`] value: a record-count cap where the client has one, and its byte cap (0 bytes: none).
pub fn queue_cap(records: Option<u64>, bytes: u64) -> String {
    let bytes = match bytes {
        0 => "no byte cap".to_owned(),
        b if b % 1024 == 0 => format!("{} KiB", b / 1024),
        b => format!("{b} B"),
    };
    match records {
        Some(n) => format!("{n} records or {bytes}"),
        None => bytes,
    }
}

/// The keys on which two applied maps differ (a key one side lacks counts as different), sorted.
pub fn differing_keys(a: &Applied, b: &Applied) -> Vec<String> {
    let mut keys: Vec<&String> = a.keys().chain(b.keys()).collect();
    keys.sort();
    keys.dedup();
    keys.into_iter().filter(|k| a.get(*k) != b.get(*k)).cloned().collect()
}

/// Whether `key` is named by `pattern`: the key itself, or a prefix pattern such as `producer.*`.
pub fn matches(pattern: &str, key: &str) -> bool {
    match pattern.strip_suffix('*') {
        Some(prefix) => key.starts_with(prefix),
        None => pattern == key,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_builder_names_client_settings_under_their_prefix() {
        let a = AppliedBuilder::new()
            .set(FORMAT, "row-json")
            .producer([("acks", "all".to_owned())])
            .consumer([("fetch.min.bytes", "1".to_owned())])
            .build();
        assert_eq!(a["producer.acks"], "-1", "acks=all spelled as Java prints it");
        assert_eq!(a["consumer.fetch.min.bytes"], "1");
        assert_eq!(a[FORMAT], "row-json");
    }

    #[test]
    fn values_are_spelled_one_way_whichever_client_printed_them() {
        assert_eq!(canonical("acks", "all"), "-1");
        assert_eq!(canonical("acks", "-1"), "-1");
        assert_eq!(canonical("enable.idempotence", "True"), "true");
        assert_eq!(canonical("linger.ms", "5.0"), "5");
        assert_eq!(canonical("linger.ms", "0.5"), "0.5");
        assert_eq!(canonical("compression.type", " lz4 "), "lz4");
        assert_eq!(canonical("batch.size", "16384"), "16384");
    }

    #[test]
    fn a_queue_cap_names_its_record_count_where_the_client_has_one_and_its_bytes() {
        assert_eq!(queue_cap(Some(1_000_000), 1_048_576 * 1024), "1000000 records or 1048576 KiB");
        assert_eq!(queue_cap(None, 33_554_432), "32768 KiB");
        assert_eq!(queue_cap(None, 1000), "1000 B");
        assert_eq!(queue_cap(None, 0), "no byte cap");
    }

    #[test]
    fn differing_keys_include_keys_only_one_side_has() {
        let a = AppliedBuilder::new().set(FORMAT, "row-json").set("producer.acks", "all").build();
        let b = AppliedBuilder::new().set(FORMAT, "debezium-envelope").set("producer.acks", "all").set(KEY, "none");
        assert_eq!(differing_keys(&a, &b.build()), vec![FORMAT.to_owned(), KEY.to_owned()]);
        assert!(differing_keys(&a, &a).is_empty());
    }

    #[test]
    fn patterns_name_a_key_or_a_prefix() {
        assert!(matches("producer.*", "producer.linger.ms"));
        assert!(matches("format", "format"));
        assert!(!matches("format", "formats"));
        assert!(!matches("producer.*", "consumer.fetch.min.bytes"));
    }
}
