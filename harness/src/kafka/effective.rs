//! The settings a librdkafka client actually runs with, for a record's `applied` map (see
//! `streamlab_record::applied`): read back from librdkafka itself, under Kafka's Java property names.
//!
//! Two ways in, one way out: a `ClientConfig` read through rust-rdkafka's `NativeClientConfig::get` (the
//! rust-rdkafka arms, and the configuration spate's Kafka sink builds), or the C tool's `-X dump` listing.
//! Both show the configuration as set, before `rd_kafka_new`; librdkafka then adjusts a few values when it
//! creates the client (`rd_kafka_conf_finalize`, `rd_kafka_topic_conf_finalize`, librdkafka 2.12.1
//! src/rdkafka_conf.c). [`LibrdkafkaConf::producer`] and [`LibrdkafkaConf::consumer`] apply those
//! adjustments for the settings they report, so the values are the ones in force; a test holds them to
//! what a live client reports.

use std::collections::{BTreeMap, BTreeSet};

use anyhow::{Context, Result, bail};
use rdkafka::ClientConfig;

/// librdkafka's idempotent producer caps requests in flight per connection at this (RD_KAFKA_IDEMP_MAX_INFLIGHT).
const IDEMPOTENT_MAX_IN_FLIGHT: i64 = 5;

/// Java producer property -> librdkafka's own (canonical, not alias) name.
const PRODUCER: &[(&str, &str)] = &[
    ("acks", "request.required.acks"),
    ("enable.idempotence", "enable.idempotence"),
    ("compression.type", "compression.codec"),
    ("linger.ms", "queue.buffering.max.ms"),
    ("batch.size", "batch.size"),
    ("max.in.flight.requests.per.connection", "max.in.flight.requests.per.connection"),
];

/// Java consumer property -> librdkafka's name.
const CONSUMER: &[(&str, &str)] = &[
    ("fetch.min.bytes", "fetch.min.bytes"),
    ("fetch.max.wait.ms", "fetch.wait.max.ms"),
    ("fetch.max.bytes", "fetch.max.bytes"),
    ("max.partition.fetch.bytes", "fetch.message.max.bytes"),
];

/// Read as well, for the security settings, the partitioner and the finalize rules.
const OTHER: &[&str] = &[
    "security.protocol",
    "sasl.mechanisms",
    "partitioner",
    "sticky.partitioning.linger.ms",
    "queued.max.messages.kbytes",
    "message.max.bytes",
    "batch.num.messages",
    "queue.buffering.max.messages",
    "queue.buffering.max.kbytes",
    "queued.min.messages",
];

/// Properties of librdkafka's topic scope: in a `-X dump` they are under `# Topic config`.
const TOPIC_SCOPE: &[&str] = &["request.required.acks", "partitioner"];

/// The librdkafka properties one client was configured with, by librdkafka's canonical names.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LibrdkafkaConf {
    values: BTreeMap<String, String>,
    /// Properties the arm set itself (any spelling): where librdkafka adjusts a value only when it was not.
    explicit: BTreeSet<String>,
}

fn wanted() -> impl Iterator<Item = &'static str> {
    PRODUCER.iter().chain(CONSUMER).map(|(_, rd)| *rd).chain(OTHER.iter().copied())
}

impl LibrdkafkaConf {
    /// The configuration as librdkafka holds it once `cfg` is applied (`NativeClientConfig::get`).
    pub fn of_client_config(cfg: &ClientConfig) -> Result<Self> {
        let native = cfg.create_native_config().context("librdkafka refused the client configuration")?;
        // A topic-scope property reads as unknown until some topic property was set: it has its default then,
        // read from a configuration whose only setting is a topic property (message.timeout.ms at its default).
        let mut topic_defaults = ClientConfig::new();
        topic_defaults.set("message.timeout.ms", "300000");
        let topic_defaults = topic_defaults.create_native_config()?;
        let mut values = BTreeMap::new();
        for name in wanted() {
            let v = native
                .get(name)
                .or_else(|e| if TOPIC_SCOPE.contains(&name) { topic_defaults.get(name) } else { Err(e) });
            if let Ok(v) = v {
                values.insert(name.to_owned(), v);
            }
        }
        let explicit = cfg.config_map().keys().map(|k| (*k).to_owned()).collect();
        Ok(LibrdkafkaConf { values, explicit })
    }

    /// The listing `rdkafka_performance ... -X dump` prints (`# Global config`, then `# Topic config`, one
    /// `name = value` a line). Only the properties read here are kept: the listing also holds passwords.
    pub fn parse_dump(dump: &str, explicit: impl IntoIterator<Item = String>) -> Result<Self> {
        let mut values = BTreeMap::new();
        let mut topic = None;
        for line in dump.lines() {
            match line.trim() {
                "# Global config" => topic = Some(false),
                "# Topic config" => topic = Some(true),
                "" => {}
                l => {
                    let Some(topic) = topic else { continue };
                    let Some((k, v)) = l.split_once(" = ") else { continue };
                    let is_topic_name = TOPIC_SCOPE.contains(&k);
                    if is_topic_name == topic && wanted().any(|w| w == k) {
                        values.insert(k.to_owned(), v.to_owned());
                    }
                }
            }
        }
        if topic.is_none() || !values.contains_key("security.protocol") {
            bail!("not a librdkafka configuration listing (no \"# Global config\" with security.protocol)");
        }
        Ok(LibrdkafkaConf { values, explicit: explicit.into_iter().collect() })
    }

    fn get(&self, name: &str) -> Option<&str> {
        self.values.get(name).map(String::as_str)
    }

    fn int(&self, name: &str) -> Option<i64> {
        self.get(name).and_then(|v| v.trim().parse::<f64>().ok()).map(|v| v as i64)
    }

    fn idempotent(&self) -> bool {
        self.get("enable.idempotence") == Some("true")
    }

    /// The producer settings in force (Java names; spelled by the record crate's `canonical` when the
    /// builder takes them), with librdkafka's creation-time adjustments: an idempotent producer runs
    /// acks=all and at most 5 requests in flight per connection (a client configured otherwise is refused).
    pub fn producer(&self) -> Vec<(&'static str, String)> {
        let mut out: Vec<(&'static str, String)> = Vec::new();
        for (java, rd) in PRODUCER {
            let Some(v) = self.get(rd) else { continue };
            let v = match *java {
                "acks" if self.idempotent() => "-1".to_owned(),
                "max.in.flight.requests.per.connection" if self.idempotent() => {
                    self.int(rd).map_or(v.to_owned(), |n| n.min(IDEMPOTENT_MAX_IN_FLIGHT).to_string())
                }
                _ => v.to_owned(),
            };
            out.push((java, v));
        }
        out.extend(self.security());
        if let Some(p) = self.partitioner() {
            out.push(("partitioner.class", p));
        }
        out
    }

    /// The consumer settings in force: fetch.max.bytes, unless set, is held between message.max.bytes and
    /// queued.max.messages.kbytes.
    pub fn consumer(&self) -> Vec<(&'static str, String)> {
        let mut out: Vec<(&'static str, String)> = Vec::new();
        for (java, rd) in CONSUMER {
            let Some(v) = self.get(rd) else { continue };
            let v = match *java {
                "fetch.max.bytes" if !self.explicit.contains(*rd) => {
                    match (self.int(rd), self.int("queued.max.messages.kbytes"), self.int("message.max.bytes")) {
                        (Some(f), Some(kb), Some(max_msg)) => f.min(kb * 1024).max(max_msg).to_string(),
                        _ => v.to_owned(),
                    }
                }
                _ => v.to_owned(),
            };
            out.push((java, v));
        }
        out.extend(self.security());
        out
    }

    /// `security.protocol` as Java spells it (upper case), and the SASL mechanism where SASL is on.
    fn security(&self) -> Vec<(&'static str, String)> {
        let Some(protocol) = self.get("security.protocol").map(str::to_ascii_uppercase) else { return vec![] };
        let mut out = Vec::new();
        if protocol.starts_with("SASL")
            && let Some(m) = self.get("sasl.mechanisms")
        {
            out.push(("sasl.mechanism", m.to_owned()));
        }
        out.insert(0, ("security.protocol", protocol));
        out
    }

    /// How keyless records are spread: the partitioner and, unless set, its sticky linger of 2 x linger.ms
    /// (at most 900 s).
    fn partitioner(&self) -> Option<String> {
        let name = self.get("partitioner")?;
        let sticky = if self.explicit.contains("sticky.partitioning.linger.ms") {
            self.int("sticky.partitioning.linger.ms")?
        } else {
            let linger: f64 = self.get("queue.buffering.max.ms")?.parse().ok()?;
            (2.0 * linger).min(900_000.0) as i64
        };
        Some(format!("librdkafka {name}, sticky for {sticky} ms"))
    }

    /// The producer's queue cap (`streamlab_record::applied::QUEUE_CAP`): queue.buffering.max.messages and
    /// queue.buffering.max.kbytes, whichever fills first.
    pub fn queue_cap(&self) -> Option<String> {
        let records = u64::try_from(self.int("queue.buffering.max.messages")?).ok()?;
        let kbytes = u64::try_from(self.int("queue.buffering.max.kbytes")?).ok()?;
        Some(streamlab_record::applied::queue_cap(Some(records), kbytes.saturating_mul(1024)))
    }

    /// A librdkafka-only setting the record names in its details (e.g. `batch.num.messages`).
    pub fn detail(&self, name: &str) -> Option<&str> {
        self.get(name)
    }
}

#[cfg(test)]
mod tests {
    use std::ffi::{CStr, CString};

    use rdkafka::consumer::BaseConsumer;
    use rdkafka::producer::{BaseProducer, Producer};
    use streamlab_record::applied::AppliedBuilder;

    use super::*;

    fn config(pairs: &[(&str, &str)]) -> ClientConfig {
        let mut cfg = ClientConfig::new();
        // Nothing listens there: creating a client never needs a broker.
        cfg.set("bootstrap.servers", "127.0.0.1:1");
        for (k, v) in pairs {
            cfg.set(*k, *v);
        }
        cfg
    }

    /// What a live client's own configuration (`rd_kafka_conf(rk)`, after librdkafka finalized it) holds.
    fn live(rk: *mut rdkafka::bindings::rd_kafka_t, name: &str) -> String {
        let name = CString::new(name).unwrap();
        let mut buf = vec![0u8; 512];
        let mut size = buf.len();
        // SAFETY: rk is a live client owned by the caller; rd_kafka_conf returns its own configuration, valid as
        // long as the client; rd_kafka_conf_get writes at most `size` bytes into buf.
        let res = unsafe {
            let conf = rdkafka::bindings::rd_kafka_conf(rk);
            rdkafka::bindings::rd_kafka_conf_get(conf, name.as_ptr(), buf.as_mut_ptr().cast(), &mut size)
        };
        assert_eq!(res, rdkafka::bindings::rd_kafka_conf_res_t::RD_KAFKA_CONF_OK, "{name:?}");
        CStr::from_bytes_until_nul(&buf).unwrap().to_str().unwrap().to_owned()
    }

    #[test]
    fn an_idempotent_producer_reports_the_values_librdkafka_runs_it_with() {
        // A topic property (at its default) so that the live client has a default topic configuration to show.
        let cfg = config(&[
            ("enable.idempotence", "true"),
            ("linger.ms", "5"),
            ("compression.codec", "lz4"),
            ("message.timeout.ms", "300000"),
        ]);
        let reported = LibrdkafkaConf::of_client_config(&cfg).unwrap().producer();
        let without_topic_conf = config(&[("enable.idempotence", "true")]);
        let without = LibrdkafkaConf::of_client_config(&without_topic_conf).unwrap().producer();
        assert!(without.contains(&("acks", "-1".to_owned())), "{without:?}");
        let producer: BaseProducer = cfg.create().unwrap();
        let rk = producer.client().native_ptr();
        let get = |k: &str| reported.iter().find(|(j, _)| *j == k).map(|(_, v)| v.clone()).unwrap();
        assert_eq!(get("max.in.flight.requests.per.connection"), "5");
        assert_eq!(get("max.in.flight.requests.per.connection"), live(rk, "max.in.flight.requests.per.connection"));
        assert_eq!(get("acks"), "-1");
        assert_eq!(get("acks"), live(rk, "request.required.acks"));
        assert_eq!(get("compression.type"), "lz4");
        assert_eq!(get("linger.ms"), live(rk, "linger.ms"));
        assert_eq!(get("batch.size"), live(rk, "batch.size"));
        assert_eq!(get("partitioner.class"), format!("librdkafka consistent_random, sticky for {} ms", 10));
        assert_eq!(live(rk, "sticky.partitioning.linger.ms"), "10");
        assert_eq!(get("security.protocol"), "PLAINTEXT");
    }

    #[test]
    fn a_plain_producer_keeps_its_million_requests_in_flight_and_its_acks() {
        let cfg = config(&[("acks", "1"), ("enable.idempotence", "false"), ("linger.ms", "100")]);
        let applied =
            AppliedBuilder::new().producer(LibrdkafkaConf::of_client_config(&cfg).unwrap().producer()).build();
        let producer: BaseProducer = cfg.create().unwrap();
        let rk = producer.client().native_ptr();
        assert_eq!(applied["producer.max.in.flight.requests.per.connection"], "1000000");
        assert_eq!(applied["producer.acks"], "1");
        assert_eq!(applied["producer.acks"], live(rk, "request.required.acks"));
        assert_eq!(applied["producer.linger.ms"], "100");
        assert_eq!(live(rk, "sticky.partitioning.linger.ms"), "200");
        assert!(applied["producer.partitioner.class"].ends_with("sticky for 200 ms"));
        assert_eq!(applied["producer.enable.idempotence"], "false");
    }

    #[test]
    fn a_consumer_reports_its_fetch_settings_as_librdkafka_adjusts_them() {
        let set = config(&[("group.id", "g"), ("fetch.wait.max.ms", "100"), ("fetch.max.bytes", "16777216")]);
        let reported = LibrdkafkaConf::of_client_config(&set).unwrap().consumer();
        let consumer: BaseConsumer = set.create().unwrap();
        let get = |k: &str| reported.iter().find(|(j, _)| *j == k).map(|(_, v)| v.clone()).unwrap();
        let rk = rdkafka::consumer::Consumer::client(&consumer).native_ptr();
        assert_eq!((get("fetch.max.wait.ms"), get("fetch.max.bytes")), ("100".into(), "16777216".into()));
        assert_eq!(get("fetch.max.bytes"), live(rk, "fetch.max.bytes"));
        // Left unset, fetch.max.bytes is clamped to the prefetch queue's size.
        let unset = config(&[("group.id", "g"), ("queued.max.messages.kbytes", "4096")]);
        let reported = LibrdkafkaConf::of_client_config(&unset).unwrap().consumer();
        let consumer: BaseConsumer = unset.create().unwrap();
        let rk = rdkafka::consumer::Consumer::client(&consumer).native_ptr();
        let fetch_max = reported.iter().find(|(j, _)| *j == "fetch.max.bytes").unwrap().1.clone();
        assert_eq!(fetch_max, (4096 * 1024).to_string());
        assert_eq!(fetch_max, live(rk, "fetch.max.bytes"));
        assert_eq!(get("max.partition.fetch.bytes"), live(rk, "max.partition.fetch.bytes"));
    }

    #[test]
    fn the_c_tools_dump_reads_like_the_native_config() {
        let dump = "# Global config\nclient.id = rdkafka\nsecurity.protocol = sasl_plaintext\nsasl.mechanisms = \
                    SCRAM-SHA-512\nsasl.password = hunter2\nqueue.buffering.max.ms = 5\nbatch.size = 1000000\n\
                    compression.codec = none\nenable.idempotence = true\nmax.in.flight.requests.per.connection = \
                    1000000\npartitioner = wrong-scope\n\n# Topic config\nrequest.required.acks = -1\n\
                    compression.codec = inherit\npartitioner = consistent_random\n\n";
        let conf = LibrdkafkaConf::parse_dump(dump, []).unwrap();
        assert!(!format!("{conf:?}").contains("hunter2"), "passwords are never kept");
        let applied = AppliedBuilder::new().producer(conf.producer()).build();
        assert_eq!(applied["producer.security.protocol"], "SASL_PLAINTEXT");
        assert_eq!(applied["producer.sasl.mechanism"], "SCRAM-SHA-512");
        assert_eq!(applied["producer.compression.type"], "none", "the global codec, not the topic's inherit");
        assert_eq!(applied["producer.max.in.flight.requests.per.connection"], "5");
        assert_eq!(applied["producer.partitioner.class"], "librdkafka consistent_random, sticky for 10 ms");
        assert!(LibrdkafkaConf::parse_dump("% usage: rdkafka_performance\n", []).is_err());
    }

    #[test]
    fn both_ways_in_give_the_same_applied_settings() {
        let cfg = config(&[("acks", "1"), ("linger.ms", "5"), ("batch.size", "16384"), ("compression.codec", "lz4")]);
        let native = LibrdkafkaConf::of_client_config(&cfg).unwrap();
        let dump: String = std::iter::once("# Global config".to_owned())
            .chain(
                native
                    .values
                    .iter()
                    .filter(|(k, _)| !TOPIC_SCOPE.contains(&k.as_str()))
                    .map(|(k, v)| format!("{k} = {v}")),
            )
            .chain(["".to_owned(), "# Topic config".to_owned()])
            .chain(
                native
                    .values
                    .iter()
                    .filter(|(k, _)| TOPIC_SCOPE.contains(&k.as_str()))
                    .map(|(k, v)| format!("{k} = {v}")),
            )
            .collect::<Vec<_>>()
            .join("\n");
        let parsed = LibrdkafkaConf::parse_dump(&dump, native.explicit.iter().cloned()).unwrap();
        assert_eq!(parsed.producer(), native.producer());
        assert_eq!(parsed.queue_cap(), native.queue_cap());
    }

    #[test]
    fn the_queue_cap_is_the_one_the_client_runs_with() {
        let set = config(&[("queue.buffering.max.messages", "1000000")]);
        let cap = LibrdkafkaConf::of_client_config(&set).unwrap().queue_cap().unwrap();
        let producer: BaseProducer = set.create().unwrap();
        let rk = producer.client().native_ptr();
        let kbytes: u64 = live(rk, "queue.buffering.max.kbytes").parse().unwrap();
        assert_eq!(cap, format!("{} records or {kbytes} KiB", live(rk, "queue.buffering.max.messages")));
        assert_eq!(cap, "1000000 records or 1048576 KiB", "librdkafka's byte cap default, 1 GiB");
        let dump = include_str!("../drivers/testdata/c_2_15_produce_idempotent_dump.stdout");
        let tool = LibrdkafkaConf::parse_dump(dump, []).unwrap();
        assert_eq!(tool.queue_cap().as_deref(), Some("1000000 records or 1048576 KiB"), "the C tool 2.15.0's");
    }
}
