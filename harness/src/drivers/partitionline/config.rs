//! partitionline's settings from the knobs and the listener, and how the record describes the configuration the
//! crate builds from them (streamlab-partitionline's `Settings`): the settings it runs with, by Java's names, for
//! the record's `applied` map.

use anyhow::{Context, Result};
use partitionline::{ConsumerConfig, ProducerConfig, Sasl};
use streamlab_partitionline::{Security, Settings};
use streamlab_record::descriptor::Listener;

use crate::drivers::contract::{ClientKnobs, Compression, NotRunnable, ProducerSettings};

/// The crate's codec name for the knob; zstd does not exist in partitionline 0.1.0.
pub(super) fn compression(c: Compression) -> Result<&'static str> {
    match c {
        Compression::None => Ok("none"),
        Compression::Lz4 => Ok("lz4"),
        Compression::Zstd => Err(NotRunnable(
            "partitionline 0.1.0 has no zstd (Compression::from_name(\"zstd\") is an error; it offers none, gzip, \
             snappy and lz4)"
                .into(),
        )
        .into()),
    }
}

/// The settings both Kafka benches share, as the crate's `Settings`: the one place acks, linger, idempotence and
/// the payload become partitionline's. Everything else is left to the crate (0 keeps its default: 8 connections
/// per broker, as the seed ran; its batches; no codec); a bench sets what it has a knob or a rule for.
pub(super) fn shared_settings(
    producer: &ProducerSettings,
    listener: &Listener,
    password: Option<String>,
) -> Result<Settings> {
    Ok(Settings {
        listener: listener.clone(),
        password,
        acks: i16::try_from(producer.acks).with_context(|| format!("acks {} is not 0, 1 or -1", producer.acks))?,
        linger_ms: producer.linger_ms,
        idempotence: producer.idempotence,
        payload_bytes: producer.payload_bytes,
        compression: "none".to_owned(),
        connections: 0,
        batch_records: 0,
        batch_bytes: 0,
        // A producer never reads these; the clients bench's fetch sets them from its knobs.
        fetch_max_wait_ms: 0,
        fetch_min_bytes: 0,
        fetch_max_bytes: 0,
    })
}

/// The clients bench's settings: the shared ones, and its knobs where the crate has them (16 in flight per
/// connection stays the crate's), for `listener`.
pub(super) fn settings(knobs: &ClientKnobs, listener: &Listener, password: Option<String>) -> Result<Settings> {
    Ok(Settings {
        compression: compression(knobs.compression)?.to_owned(),
        connections: usize::try_from(knobs.connections)?,
        batch_records: usize::try_from(knobs.batch_messages)?,
        batch_bytes: usize::try_from(knobs.batch_bytes)?,
        fetch_max_wait_ms: i32::try_from(knobs.fetch_max_wait_ms).context("fetch_max_wait_ms")?,
        fetch_min_bytes: i32::try_from(knobs.fetch_min_bytes).context("fetch_min_bytes")?,
        fetch_max_bytes: i32::try_from(knobs.fetch_max_bytes).context("fetch_max_bytes")?,
        ..shared_settings(&knobs.producer(), listener, password)?
    })
}

/// What partitionline runs with, by Java's names: TLS and SASL together are SASL_SSL.
pub(super) fn security_applied(security: &Security) -> Vec<(&'static str, String)> {
    let protocol = match (security.tls.is_some(), security.sasl.is_some()) {
        (false, false) => "PLAINTEXT",
        (true, false) => "SSL",
        (false, true) => "SASL_PLAINTEXT",
        (true, true) => "SASL_SSL",
    };
    let mut out = vec![("security.protocol", protocol.to_owned())];
    if let Some(sasl) = &security.sasl {
        let mechanism = match sasl {
            Sasl::Plain { .. } => "PLAIN",
            Sasl::ScramSha256 { .. } => "SCRAM-SHA-256",
            Sasl::ScramSha512 { .. } => "SCRAM-SHA-512",
            Sasl::OauthBearer { .. } | Sasl::Oidc(_) => "OAUTHBEARER",
        };
        out.push(("sasl.mechanism", mechanism.to_owned()));
    }
    out
}

/// The producer settings both Kafka benches record, as the crate runs them: `Producer::new` forces acks=-1 and at
/// most 5 requests in flight per connection on an idempotent producer (partitionline 0.1.0 src/producer.rs,
/// `Producer::new`). The crate has no read-back; these are its fields, after what idempotence forces.
pub(super) fn producer_settings_applied(cfg: &ProducerConfig) -> Vec<(&'static str, String)> {
    let (acks, in_flight) =
        if cfg.enable_idempotence { (-1, cfg.max_in_flight.min(5)) } else { (cfg.acks, cfg.max_in_flight) };
    vec![
        ("acks", acks.to_string()),
        ("enable.idempotence", cfg.enable_idempotence.to_string()),
        ("compression.type", cfg.compression.as_str().to_owned()),
        ("linger.ms", cfg.linger.as_millis().to_string()),
        ("batch.size", cfg.batch_bytes.to_string()),
        ("max.in.flight.requests.per.connection", in_flight.to_string()),
    ]
}

/// The clients bench's producer as the crate runs it: the shared settings, its partitioner and its security.
pub(super) fn producer_applied(cfg: &ProducerConfig, security: &Security) -> Vec<(&'static str, String)> {
    let mut out = producer_settings_applied(cfg);
    out.push(("partitioner.class", crate::drivers::contract::applied::PARTITIONLINE_PARTITIONER.to_owned()));
    out.extend(security_applied(security));
    out
}

/// The producer's queue cap: buffer.memory bytes, no record-count cap (the crate's default is Java's 32 MiB).
pub(super) fn queue_cap(cfg: &ProducerConfig) -> String {
    streamlab_record::applied::queue_cap(None, cfg.buffer_memory as u64)
}

/// The consumer settings as configured (a `max_poll_records` of None is no cap, as in librdkafka: no key).
pub(super) fn consumer_applied(cfg: &ConsumerConfig, security: &Security) -> Vec<(&'static str, String)> {
    let mut out = vec![
        ("fetch.min.bytes", cfg.min_bytes.to_string()),
        ("fetch.max.wait.ms", cfg.max_wait_ms.to_string()),
        ("fetch.max.bytes", cfg.max_bytes.to_string()),
        ("max.partition.fetch.bytes", cfg.max_partition_fetch_bytes.to_string()),
    ];
    if let Some(n) = cfg.max_poll_records {
        out.push(("max.poll.records", n.to_string()));
    }
    out.extend(security_applied(security));
    out
}

/// The producer settings that decide throughput, as the crate will run them.
pub(super) fn describe_producer(cfg: &ProducerConfig) -> String {
    let effective =
        if cfg.enable_idempotence { " (idempotence: the crate forces acks=-1 and max_in_flight<=5)" } else { "" };
    format!(
        "acks={} linger={}ms batch_records={} batch_bytes={} max_request_size={} buffer_memory={} compression={} \
         idempotence={} connections={} max_in_flight={}{effective}",
        cfg.acks,
        cfg.linger.as_millis(),
        cfg.batch_records,
        cfg.batch_bytes,
        cfg.max_request_size,
        cfg.buffer_memory,
        cfg.compression.as_str(),
        cfg.enable_idempotence,
        cfg.connections,
        cfg.max_in_flight,
    )
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use partitionline::TlsConfig;

    use super::*;
    use crate::drivers::partitionline::tests::{knobs, listener};

    fn plaintext(overrides: serde_json::Value) -> Settings {
        settings(&knobs(overrides), &listener("PLAINTEXT", None, None), None).unwrap()
    }

    fn producer(overrides: serde_json::Value) -> ProducerConfig {
        plaintext(overrides).producer().unwrap()
    }

    #[test]
    fn the_seed_knobs_map_onto_the_producer_config_and_leave_connections_at_the_crate_default() {
        let cfg = producer(serde_json::json!({}));
        assert_eq!(
            (cfg.acks, cfg.linger, cfg.batch_records, cfg.batch_bytes),
            (1, Duration::from_millis(5), 32768, 1_000_000)
        );
        assert_eq!(cfg.compression, partitionline::Compression::None);
        assert_eq!((cfg.connections, cfg.max_in_flight), (8, 16));
        assert_eq!(cfg.bootstrap, vec!["127.0.0.1:9095".to_owned()]);
        let lz4 = producer(serde_json::json!({"compression": "lz4", "acks": -1, "idempotence": true}));
        assert_eq!((lz4.compression, lz4.acks, lz4.enable_idempotence), (partitionline::Compression::Lz4, -1, true));
    }

    #[test]
    fn the_connections_knob_sets_the_producers_connections_and_the_record_says_so() {
        let one = producer(serde_json::json!({"connections": 1}));
        assert_eq!((one.connections, one.max_in_flight), (1, 16));
        let security = Security::of(&listener("PLAINTEXT", None, None), None).unwrap();
        let applied = crate::drivers::contract::applied::base(
            &knobs(serde_json::json!({"connections": 1})),
            one.connections,
            crate::drivers::contract::applied::CLOCK_BEFORE_CONNECT,
        )
        .producer(producer_applied(&one, &security))
        .build();
        assert_eq!(applied["connections"], "1 per broker");
        assert_eq!(applied["producer.max.in.flight.requests.per.connection"], "16");
        assert_eq!(applied["producer.security.protocol"], "PLAINTEXT");
        assert!(super::super::produce_asymmetries(&one, 6).connections.contains("set by the connections knob"));
        let seed = producer(serde_json::json!({}));
        assert!(
            super::super::produce_asymmetries(&seed, 6).connections.contains("the crate's default, as the seed ran")
        );
    }

    #[test]
    fn an_idempotent_producer_is_recorded_as_the_crate_runs_it() {
        let cfg = producer(serde_json::json!({"acks": 1, "idempotence": true}));
        let scram = listener("SASL_SSL", Some("SCRAM-SHA-256"), Some("u"));
        let security = Security { tls: Some(TlsConfig::default()), ..Security::of(&scram, Some("p".into())).unwrap() };
        let applied: std::collections::BTreeMap<_, _> = producer_applied(&cfg, &security).into_iter().collect();
        assert_eq!((applied["acks"].as_str(), applied["max.in.flight.requests.per.connection"].as_str()), ("-1", "5"));
        assert_eq!(
            (applied["security.protocol"].as_str(), applied["sasl.mechanism"].as_str()),
            ("SASL_SSL", "SCRAM-SHA-256")
        );
        assert_eq!(applied["batch.size"], "1000000");
    }

    #[test]
    fn zero_batch_knobs_keep_the_crate_defaults() {
        let cfg = producer(serde_json::json!({"batch_messages": 0, "batch_bytes": 0}));
        let default = ProducerConfig::default();
        assert_eq!((cfg.batch_records, cfg.batch_bytes), (default.batch_records, default.batch_bytes));
        assert_eq!((default.batch_records, default.batch_bytes), (32_768, 1_000_000));
        let set = producer(serde_json::json!({"batch_messages": 500, "batch_bytes": 200000}));
        assert_eq!((set.batch_records, set.batch_bytes), (500, 200_000));
    }

    #[test]
    fn zstd_is_not_runnable_and_says_why() {
        let err =
            settings(&knobs(serde_json::json!({"compression": "zstd"})), &listener("PLAINTEXT", None, None), None)
                .err()
                .expect("zstd is refused");
        let not_runnable = err.downcast_ref::<NotRunnable>().expect("a NotRunnable");
        assert!(not_runnable.0.contains("no zstd"), "{not_runnable}");
    }

    #[test]
    fn acks_outside_0_1_and_minus_1_are_refused() {
        assert!(plaintext(serde_json::json!({"acks": 2})).producer().is_err());
        let huge = settings(&knobs(serde_json::json!({"acks": 70000})), &listener("PLAINTEXT", None, None), None);
        assert!(huge.is_err());
    }

    #[test]
    fn the_latency_producer_is_one_record_at_a_time_on_one_connection() {
        let cfg = plaintext(serde_json::json!({"workload": "latency", "acks": -1})).latency_producer().unwrap();
        assert_eq!((cfg.linger, cfg.batch_records, cfg.connections, cfg.max_in_flight), (Duration::ZERO, 1, 1, 1));
        assert_eq!((cfg.acks, cfg.batch_bytes), (-1, 356));
    }

    #[test]
    fn the_fetch_knobs_set_both_byte_caps() {
        let cfg =
            plaintext(serde_json::json!({"fetch_max_bytes": 1048576, "fetch_max_wait_ms": 50})).consumer().unwrap();
        assert_eq!(
            (cfg.max_wait_ms, cfg.min_bytes, cfg.max_bytes, cfg.max_partition_fetch_bytes),
            (50, 1, 1 << 20, 1 << 20)
        );
    }

    #[test]
    fn the_settings_reach_the_bench_binary_unchanged() {
        // What the harness describes is what the binary builds: the settings cross the process boundary as JSON.
        let sent = plaintext(serde_json::json!({"compression": "lz4", "connections": 3, "batch_messages": 500}));
        let received: Settings = serde_json::from_str(&serde_json::to_string(&sent).unwrap()).unwrap();
        assert_eq!(describe_producer(&received.producer().unwrap()), describe_producer(&sent.producer().unwrap()));
        let consumer = |s: &Settings| format!("{:?}", consumer_applied(&s.consumer().unwrap(), &s.security().unwrap()));
        assert_eq!(consumer(&received), consumer(&sent));
    }
}
